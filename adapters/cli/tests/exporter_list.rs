//! The demo refuses a `NIXL_TELEMETRY_EXPORTER` list that names an exporter twice (in
//! any case) or has an empty entry, before anything starts, naming the variable (or
//! the configuration file's key); a plug-in that cannot be loaded is said why, in the
//! dynamic loader's own words, and a missing one with the built-in exporters and the
//! folder searched.

mod common;

use common::*;
use std::path::Path;
use std::process::Output;

/// `telering demo` as a new user runs it: enabled, a directory, a plug-in folder.
fn demo(dir: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = telering();
    cmd.args(["demo", "--events", "20", "--no-serve", "--json"])
        .env("NIXL_TELEMETRY_ENABLE", "y")
        .env("NIXL_TELEMETRY_DIR", dir.join("rings"))
        .env("NIXL_PLUGIN_DIR", dir.join("plugins"))
        .env_remove("NIXL_TELEMETRY_EXPORTER")
        .env_remove("NIXL_CONFIG_FILE")
        .envs(env.iter().copied());
    run_in(dir, &mut cmd)
}

/// Nothing was started: no ring file written.
fn nothing_written(dir: &Path) {
    let rings = dir.join("rings");
    let written = std::fs::read_dir(&rings).map_or(0, |d| d.count());
    assert_eq!(written, 0, "{} holds files", rings.display());
}

#[test]
fn an_exporter_listed_twice_is_refused_naming_it_not_as_another_writer() {
    let dir = scratch();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    for (list, entries) in [
        ("buffer,buffer", "1 and 2"),
        ("Buffer,csv,BUFFER", "1 and 3"),
    ] {
        let o = demo(dir.path(), &[("NIXL_TELEMETRY_EXPORTER", list)]);
        let named =
            format!("buffer is listed twice in NIXL_TELEMETRY_EXPORTER={list} (entries {entries}");
        assert_fails(&o, 2, &[&named]);
        assert!(!stderr(&o).contains("another writer"), "{}", stderr(&o));
        nothing_written(dir.path());
    }
    // From the configuration file: its key is named.
    let cfg = dir.path().join("nixl.cfg");
    std::fs::write(&cfg, "NIXL_TELEMETRY_EXPORTER = ['buffer', 'buffer']\n").unwrap();
    let o = demo(dir.path(), &[("NIXL_CONFIG_FILE", path_str(&cfg))]);
    let key = format!(
        "configuration file {}, key NIXL_TELEMETRY_EXPORTER: ",
        cfg.display()
    );
    assert_fails(
        &o,
        2,
        &[&key, "buffer is listed twice in NIXL_TELEMETRY_EXPORTER"],
    );
    nothing_written(dir.path());
}

#[test]
fn an_empty_entry_in_the_exporter_list_is_refused_naming_its_position() {
    let dir = scratch();
    for (list, position) in [("buffer,,prometheus", 2), ("buffer,", 2), (",csv", 1)] {
        let o = demo(dir.path(), &[("NIXL_TELEMETRY_EXPORTER", list)]);
        let named =
            format!("NIXL_TELEMETRY_EXPORTER={list} has an empty entry at position {position}");
        assert_fails(&o, 2, &[&named]);
        nothing_written(dir.path());
    }
}

#[test]
fn a_plugin_that_cannot_be_loaded_says_why() {
    let dir = scratch();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();

    // No such library: the built-in exporters and the folder searched.
    let o = demo(dir.path(), &[("NIXL_TELEMETRY_EXPORTER", "buffer,kafka")]);
    let searched = format!(
        "NIXL_PLUGIN_DIR={} was searched for libtelemetry_exporter_kafka.so",
        plugins.display()
    );
    assert_fails(
        &o,
        2,
        &[
            "NIXL_TELEMETRY_EXPORTER=kafka is neither a built-in exporter (buffer, csv, nop, otlp, prometheus, prometheus_mp) nor a plug-in",
            &searched,
            "No such file or directory",
        ],
    );
    nothing_written(dir.path());

    // A file that is no shared library: the dynamic loader's words.
    let junk = plugins.join("libtelemetry_exporter_junk.so");
    std::fs::write(&junk, "").unwrap();
    let o = demo(dir.path(), &[("NIXL_TELEMETRY_EXPORTER", "junk")]);
    let text = format!(
        "exporter plug-in {} cannot be loaded: file too short",
        junk.display()
    );
    assert_fails(&o, 1, &[&text]);
    // Long enough for an ELF header, but not one.
    std::fs::write(&junk, "not a shared library\n".repeat(100)).unwrap();
    let o = demo(dir.path(), &[("NIXL_TELEMETRY_EXPORTER", "junk")]);
    let text = format!(
        "exporter plug-in {} cannot be loaded: invalid ELF header",
        junk.display()
    );
    assert_fails(&o, 1, &[&text]);
    nothing_written(dir.path());

    // A real shared library that needs a symbol nothing defines (a data reference,
    // which the loader resolves at `dlopen` even with lazy binding).
    let unresolved = plugins.join("libtelemetry_exporter_unresolved.so");
    shared_library(
        "extern int telering_test_nowhere; int get(void) { return telering_test_nowhere; }",
        &unresolved,
    );
    let o = demo(dir.path(), &[("NIXL_TELEMETRY_EXPORTER", "unresolved")]);
    let text = format!(
        "exporter plug-in {} cannot be loaded: undefined symbol: telering_test_nowhere",
        unresolved.display()
    );
    assert_fails(&o, 1, &[&text]);
    nothing_written(dir.path());

    // A real shared library that is no telering plug-in: the missing entry symbol,
    // in the loader's words.
    let stranger = plugins.join("libtelemetry_exporter_stranger.so");
    shared_library("int get(void) { return 1; }", &stranger);
    let o = demo(dir.path(), &[("NIXL_TELEMETRY_EXPORTER", "stranger")]);
    let text = format!(
        "exporter plug-in {} has no `telering_exporter_entry`",
        stranger.display()
    );
    assert_fails(&o, 1, &[&text, "undefined symbol: telering_exporter_entry"]);
    nothing_written(dir.path());
}

/// Compiles the C `source` into the shared library `out` with the system's `cc`.
fn shared_library(source: &str, out: &Path) {
    let c = out.with_extension("c");
    std::fs::write(&c, source).unwrap();
    let status = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(out)
        .arg(&c)
        .status()
        .expect("run cc");
    assert!(status.success(), "cc failed on {}", c.display());
}
