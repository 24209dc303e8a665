//! Checks that need a tool beyond the C compiler: valgrind's memory checker on the C
//! test programs, and cbindgen for the header's freshness. `.ci/run` installs both
//! and runs these with `--ignored`.

mod common;

use common::{clean_env, compile, run_ok};
use std::path::Path;
use std::process::Command;

fn valgrind(exe: &Path) -> Command {
    let mut cmd = Command::new("valgrind");
    cmd.args([
        "--leak-check=full",
        "--error-exitcode=1",
        "--errors-for-leak-kinds=definite,possible",
        "--quiet",
    ])
    .arg(exe);
    clean_env(&mut cmd);
    cmd
}

#[test]
#[ignore = "needs valgrind"]
fn c_programs_under_valgrind_leak_nothing_and_touch_no_invalid_memory() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("rings");

    let record = compile("record.c", scratch.path());
    run_ok(
        valgrind(&record)
            .env("NIXL_TELEMETRY_ENABLE", "y")
            .env("NIXL_TELEMETRY_DIR", &dir)
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "16384")
            .env("NIXL_TELEMETRY_RUN_INTERVAL", "60000"),
    );

    // Every error path, including destroying twice and a handle of the wrong type.
    let errors = compile("errors.c", scratch.path());
    let corrupt = scratch.path().join("corrupt-agent");
    std::fs::write(&corrupt, vec![0xA5u8; 4096]).unwrap();
    run_ok(valgrind(&errors).arg(scratch.path()).arg(&corrupt));

    // The reader, on the ring record.c left.
    let reader = compile("reader.c", scratch.path());
    let out = run_ok(
        valgrind(&reader)
            .arg(dir.join("c-agent"))
            .arg("7613")
            .arg("drain"),
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("total 7613 lost 0"));
}

#[path = "../../otlp/tests/common/failing.rs"]
mod failing;

#[test]
#[ignore = "needs valgrind"]
fn c_details_under_valgrind_touch_no_invalid_memory() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("details.c", scratch.path());
    let dir = scratch.path().join("rings");
    std::fs::create_dir(&dir).unwrap();
    let out = run_ok(valgrind(&exe).arg(&dir));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("backend_add_after_destroy TELERING_ERR_INVALID_HANDLE"),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs valgrind"]
fn a_c_agent_against_three_failing_collectors_under_valgrind_counts_and_warns() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("failing.c", scratch.path());
    for (collector, warning) in [
        (failing::answering_500(), "HTTP 500"),
        (failing::down(), "cannot reach the collector"),
        (failing::never_answering(), "cannot reach the collector"),
    ] {
        let mut cmd = valgrind(&exe);
        cmd.arg("2");
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            if name.starts_with("OTEL_") || name == "TELERING_LOG" || name == "NIXL_LOG_LEVEL" {
                cmd.env_remove(name);
            }
        }
        // Valgrind is slow: a request may take 2 s, shutting down 10 s.
        let out = run_ok(
            cmd.env("NIXL_TELEMETRY_ENABLE", "y")
                .env("NIXL_TELEMETRY_EXPORTER", "otlp")
                .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.endpoint)
                .env("OTEL_METRIC_EXPORT_INTERVAL", "50")
                .env("OTEL_EXPORTER_OTLP_TIMEOUT", "2000")
                .env("TELERING_OTLP_SHUTDOWN_TIMEOUT", "10000"),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("stats recorded 10 exported 0 undelivered 10 errors ")
                && stdout.contains("closed recorded 10 exported 0 undelivered 10 errors ")
                && stdout.contains(" failing 1"),
            "{}: {stdout}",
            collector.endpoint
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("OTLP export to {}/v1/metrics", collector.endpoint))
                && stderr.contains(warning)
                && stderr.contains("10 events were not delivered by shutdown"),
            "{stderr}"
        );
    }
}

#[test]
#[ignore = "needs cbindgen (cargo install cbindgen --locked)"]
fn checked_in_header_matches_a_fresh_cbindgen_generation() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fresh = tempfile::NamedTempFile::new().unwrap();
    let status = Command::new("cbindgen")
        .arg("--quiet")
        .arg("--config")
        .arg(crate_dir.join("cbindgen.toml"))
        .args(["--crate", "telering-ffi", "--output"])
        .arg(fresh.path())
        .arg(crate_dir)
        .status()
        .expect("run cbindgen");
    assert!(status.success());
    let checked_in = std::fs::read_to_string(crate_dir.join("include/telering.h")).unwrap();
    let generated = std::fs::read_to_string(fresh.path()).unwrap();
    assert!(
        checked_in == generated,
        "include/telering.h is stale: regenerate it with\n  cbindgen --config adapters/ffi/cbindgen.toml --crate telering-ffi --output adapters/ffi/include/telering.h adapters/ffi"
    );
}
