//! A C agent's exporter list (`options.exporter` or `NIXL_TELEMETRY_EXPORTER`,
//! `exporter_list.c`): an exporter listed twice, in any case, and an empty entry are
//! refused before anything starts, naming the variable; a plug-in that cannot be
//! loaded is said why, and a missing one with the built-in exporters and the folder
//! searched. Under valgrind too (`--ignored`): the refusals leak nothing.

mod common;

use common::{clean_env, compile, program, run_ok};
use std::path::Path;
use std::process::Command;

/// Runs `exporter_list.c` on `lists` with plug-ins from `plugins`: for each list, the
/// (status, last error) of `telering_create` and of `telering_create_from_env`.
fn outcomes(dir: &Path, plugins: &Path, lists: &[&str]) -> Vec<[(String, String); 2]> {
    let exe = compile("exporter_list.c", dir);
    let rings = dir.join("rings");
    let out = run_ok(
        program(&exe)
            .env("NIXL_PLUGIN_DIR", plugins)
            .env_remove("NIXL_CONFIG_FILE")
            .arg(&rings)
            .args(lists),
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<(String, String)> = stdout
        .lines()
        .map(|l| {
            let mut parts = l.splitn(3, ' ');
            let _how = parts.next().unwrap();
            (parts.next().unwrap().into(), parts.next().unwrap().into())
        })
        .collect();
    assert_eq!(lines.len(), 2 * lists.len(), "{stdout}");
    let written = std::fs::read_dir(&rings).map_or(0, |d| d.count());
    assert_eq!(written, 0, "nothing starts: {stdout}");
    lines
        .chunks(2)
        .map(|pair| [pair[0].clone(), pair[1].clone()])
        .collect()
}

#[test]
fn a_c_agent_is_refused_a_repeated_or_empty_exporter_entry_naming_it() {
    let scratch = tempfile::tempdir().unwrap();
    let plugins = scratch.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let lists = ["buffer,buffer", "Buffer,csv,BUFFER", "buffer,,csv", "csv,"];
    let want = [
        "telering_create: buffer is listed twice in NIXL_TELEMETRY_EXPORTER=buffer,buffer (entries 1 and 2",
        "telering_create: buffer is listed twice in NIXL_TELEMETRY_EXPORTER=Buffer,csv,BUFFER (entries 1 and 3",
        "telering_create: NIXL_TELEMETRY_EXPORTER=buffer,,csv has an empty entry at position 2",
        "telering_create: NIXL_TELEMETRY_EXPORTER=csv, has an empty entry at position 2",
    ];
    for ((list, want), both) in
        lists
            .iter()
            .zip(want)
            .zip(outcomes(scratch.path(), &plugins, &lists))
    {
        for (how, (status, error)) in ["options", "env"].iter().zip(both) {
            assert_eq!(status, "TELERING_ERR_CONFIG", "{list} by {how}: {error}");
            let want = match *how {
                "env" => want.replace("telering_create:", "telering_create_from_env:"),
                _ => want.to_string(),
            };
            assert!(error.starts_with(&want), "{list} by {how}: {error}");
            assert!(!error.contains("another writer"), "{error}");
        }
    }
}

#[test]
fn a_c_agent_is_told_why_a_plugin_cannot_be_loaded() {
    let scratch = tempfile::tempdir().unwrap();
    let plugins = scratch.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let junk = plugins.join("libtelemetry_exporter_junk.so");
    std::fs::write(&junk, "").unwrap();
    let got = outcomes(scratch.path(), &plugins, &["buffer,kafka", "junk"]);
    let searched = format!(
        "NIXL_PLUGIN_DIR={} was searched for libtelemetry_exporter_kafka.so: No such file or directory",
        plugins.display()
    );
    for (status, error) in &got[0] {
        assert_eq!(status, "TELERING_ERR_CONFIG", "{error}");
        assert!(
            error.contains(
                "NIXL_TELEMETRY_EXPORTER=kafka is neither a built-in exporter (buffer, csv, nop, "
            ),
            "{error}"
        );
        assert!(error.contains(&searched), "{error}");
    }
    let loader = format!(
        "exporter plug-in {} cannot be loaded: file too short",
        junk.display()
    );
    for (status, error) in &got[1] {
        assert_eq!(status, "TELERING_ERR_CONFIG", "{error}");
        assert!(error.contains(&loader), "{error}");
    }
}

#[test]
#[ignore = "needs valgrind"]
fn refused_exporter_lists_under_valgrind_leak_nothing_and_touch_no_invalid_memory() {
    let scratch = tempfile::tempdir().unwrap();
    let plugins = scratch.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::write(plugins.join("libtelemetry_exporter_junk.so"), "").unwrap();
    let exe = compile("exporter_list.c", scratch.path());
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--leak-check=full",
        "--error-exitcode=1",
        "--errors-for-leak-kinds=definite,possible",
        "--quiet",
    ])
    .arg(&exe);
    clean_env(&mut cmd);
    let out = run_ok(
        cmd.env("NIXL_PLUGIN_DIR", &plugins)
            .arg(scratch.path().join("rings"))
            .args([
                "buffer,buffer",
                "buffer,,csv",
                "buffer,kafka",
                "junk",
                "nop",
            ]),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let refused = stdout
        .lines()
        .filter(|l| l.contains(" TELERING_ERR_CONFIG "))
        .count();
    assert_eq!(refused, 8, "{stdout}");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.contains(" TELERING_OK "))
            .count(),
        2,
        "{stdout}"
    );
}
