//! `telering demo` checks its whole configuration — every exporter of `--exporter`,
//! every variable — before it creates, replaces or truncates any file: a ring file
//! holding unread events keeps every byte when the last exporter of the list is
//! misconfigured, and the error names the variable or flag at fault.

mod common;

use common::*;
use std::path::Path;
use std::process::Output;

/// The demo in `dir`, writing `dir/tel`, with `args` and `env`.
fn demo(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = telering();
    cmd.args([
        "demo",
        "--dir",
        "tel",
        "--agent",
        "keep",
        "--no-serve",
        "--json",
    ])
    .args(["--events", "50", "--rate", "0"])
    .args(args)
    .env_remove("NIXL_TELEMETRY_EXPORTER")
    .env_remove("NIXL_CONFIG_FILE")
    .env_remove("OTEL_EXPORTER_OTLP_TIMEOUT")
    .envs(env.iter().copied());
    run_in(dir, &mut cmd)
}

#[test]
fn a_misconfigured_exporter_of_the_list_leaves_the_ring_file_as_it_was() {
    let dir = scratch();
    // A ring of 8192 slots with the 50 events of a first run, read by nobody.
    let first = demo(
        dir.path(),
        &["--exporter", "buffer"],
        &[("NIXL_TELEMETRY_BUFFER_SIZE", "8192")],
    );
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let ring = dir.path().join("tel/keep");
    let before = std::fs::read(&ring).unwrap();

    // The second run would make a ring of 4096 slots, but its OTLP timeout is no
    // number: refused (exit 2) before the ring is touched.
    let o = demo(
        dir.path(),
        &["--exporter", "buffer,otlp"],
        &[
            ("NIXL_TELEMETRY_BUFFER_SIZE", "4096"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "abc"),
        ],
    );
    assert_fails(&o, 2, &["OTEL_EXPORTER_OTLP_TIMEOUT", "`otlp`"]);
    assert!(
        std::fs::read(&ring).unwrap() == before,
        "the ring file changed"
    );
    assert!(!dir.path().join("tel/keep.csv").exists());
}

#[test]
fn an_empty_exporter_flag_is_refused_naming_the_flag() {
    let dir = scratch();
    for list in ["", " ", "buffer,,csv"] {
        let o = demo(dir.path(), &["--exporter", list], &[]);
        assert_fails(&o, 2, &["--exporter"]);
        assert!(
            !stderr(&o).contains("NIXL_TELEMETRY_EXPORTER="),
            "{list:?}: {}",
            stderr(&o)
        );
        assert!(
            !dir.path().join("tel").exists(),
            "{list:?}: tel was created"
        );
    }
}
