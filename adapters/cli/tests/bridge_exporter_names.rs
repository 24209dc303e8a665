//! `telering bridge`'s exporter list errors offer only the names the bridge accepts:
//! an unknown name given by `--exporter`, `TELERING_EXPORTERS` or the configuration
//! file exits 2 with one line that does not offer `buffer` (which the bridge refuses,
//! as it writes each link's ring itself), names hostile text escaped, and creates
//! nothing; `telering config` says the bridge reads `TELERING_EXPORTERS` too.

mod common;

use common::{assert_fails, scratch, stderr, stdout, telering};
use std::path::Path;
use std::process::Output;

const ACCEPTED: &str = "use one of: csv, nop, otlp, prometheus, prometheus_mp";

fn bridge(dir: &Path, flag: Option<&str>, env: &[(&str, &str)]) -> Output {
    let capture = dir.join("uart.bin");
    std::fs::write(&capture, b"").unwrap();
    let mut cmd = telering();
    cmd.env_remove("TELERING_EXPORTERS")
        .env("HOME", "/nonexistent")
        .args(["bridge", "--dir"])
        .arg(dir.join("rings"));
    if let Some(list) = flag {
        cmd.args(["--exporter", list]);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.arg(format!("dev=file:{}", capture.display()))
        .output()
        .unwrap()
}

fn assert_refused_offering_only_accepted_names(dir: &Path, o: &Output, needles: &[&str]) {
    let mut all = needles.to_vec();
    all.push(ACCEPTED);
    assert_fails(o, 2, &all);
    assert!(!stderr(o).contains("buffer"), "{}", stderr(o));
    assert!(!dir.join("rings").exists(), "nothing is created");
}

#[test]
fn an_unknown_exporter_flag_offers_only_the_names_the_bridge_accepts() {
    let dir = scratch();
    let o = bridge(dir.path(), Some("bogus"), &[]);
    assert_refused_offering_only_accepted_names(
        dir.path(),
        &o,
        &["--exporter=bogus is not a known exporter"],
    );
    // In a list, after a name the bridge accepts.
    let o = bridge(dir.path(), Some("csv,bogus"), &[]);
    assert_refused_offering_only_accepted_names(dir.path(), &o, &["bogus"]);
}

#[test]
fn an_unknown_name_in_telering_exporters_offers_only_the_names_the_bridge_accepts() {
    let dir = scratch();
    let o = bridge(dir.path(), None, &[("TELERING_EXPORTERS", "bogus")]);
    assert_refused_offering_only_accepted_names(
        dir.path(),
        &o,
        &["TELERING_EXPORTERS=bogus is not a known exporter"],
    );
    // Set in the configuration file: the message names the file, and still offers
    // only what the bridge accepts.
    let file = dir.path().join("nixl.cfg");
    std::fs::write(&file, "TELERING_EXPORTERS = \"bogus\"\n").unwrap();
    let o = bridge(
        dir.path(),
        None,
        &[("NIXL_CONFIG_FILE", file.to_str().unwrap())],
    );
    assert_refused_offering_only_accepted_names(dir.path(), &o, &["nixl.cfg", "bogus"]);
}

#[test]
fn with_a_plugin_dir_an_unknown_name_offers_only_the_built_ins_the_bridge_accepts() {
    let dir = scratch();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let o = bridge(
        dir.path(),
        Some("bogus"),
        &[("NIXL_PLUGIN_DIR", plugins.to_str().unwrap())],
    );
    assert_fails(
        &o,
        2,
        &[
            "--exporter=bogus is neither a built-in exporter (csv, nop, otlp, prometheus, prometheus_mp)",
            "libtelemetry_exporter_bogus.so",
        ],
    );
    assert!(!dir.path().join("rings").exists());
}

#[test]
fn a_hostile_exporter_name_is_escaped_in_the_one_line_error() {
    let dir = scratch();
    let o = bridge(dir.path(), Some("b\u{1b}[2J\nx"), &[]);
    assert_refused_offering_only_accepted_names(
        dir.path(),
        &o,
        &["--exporter=b\\u{1b}[2J\\nx is not a known exporter"],
    );
    assert!(!stderr(&o).contains('\u{1b}'));
    let o = bridge(dir.path(), None, &[("TELERING_EXPORTERS", "bo\u{1b}gus")]);
    assert_refused_offering_only_accepted_names(
        dir.path(),
        &o,
        &["TELERING_EXPORTERS=bo\\u{1b}gus"],
    );
}

#[test]
fn an_empty_exporter_flag_offers_only_the_names_the_bridge_accepts() {
    let dir = scratch();
    let o = bridge(dir.path(), Some(""), &[]);
    let err = stderr(&o);
    assert_fails(&o, 2, &["--exporter is empty", "csv, nop, otlp"]);
    assert!(!err.contains("buffer"), "{err}");
    assert!(!dir.path().join("rings").exists());
}

#[test]
fn config_says_the_bridge_reads_telering_exporters_too() {
    let o = telering()
        .env_remove("TELERING_EXPORTERS")
        .env("HOME", "/nonexistent")
        .arg("config")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("TELERING_EXPORTERS"))
        .unwrap_or_else(|| panic!("no TELERING_EXPORTERS line in:\n{text}"));
    assert!(line.contains("NIXL plug-in"), "{line}");
    assert!(line.contains("telering bridge"), "{line}");
}

#[test]
fn a_huge_exporter_list_with_a_duplicate_is_echoed_only_in_part() {
    let dir = scratch();
    let list = vec!["csv"; 10_000].join(",");
    for (flag, env) in [
        (Some(list.as_str()), vec![]),
        (None, vec![("TELERING_EXPORTERS", list.as_str())]),
    ] {
        let o = bridge(dir.path(), flag, &env);
        assert_fails(&o, 2, &["csv is listed twice", "bytes more)"]);
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.len() < 600, "{} bytes: {err}", err.len());
        assert!(!dir.path().join("rings").exists(), "nothing is created");
    }
}
