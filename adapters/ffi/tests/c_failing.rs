//! Nothing silent in C: a C agent against three real failing collectors (a 500 to
//! every push, one that is down, one that never answers) counts the failures in
//! `telering_stats` and logs the warning on stderr, or to its log callback; the
//! configuration warnings reach stderr at the level `NIXL_LOG_LEVEL` or
//! `TELERING_LOG` sets. The valgrind runs are in `tooling.rs`.

mod common;
#[path = "../../otlp/tests/common/failing.rs"]
mod failing;

use common::{compile, program, run_ok};
use failing::Failing;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::OnceLock;

/// `failing.c`, run against `collector` (pushes every 50 ms, 300 ms per request).
pub fn against(cmd: &mut Command, collector: &Failing) -> Output {
    against_list(cmd.env("NIXL_TELEMETRY_EXPORTER", "otlp"), collector)
}

/// [`against`], with the exporter or list `cmd` names.
fn against_list(cmd: &mut Command, collector: &Failing) -> Output {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if name.starts_with("OTEL_") || name == "TELERING_LOG" || name == "NIXL_LOG_LEVEL" {
            cmd.env_remove(name);
        }
    }
    run_ok(
        cmd.env("NIXL_TELEMETRY_ENABLE", "y")
            .env("NIXL_TELEMETRY_RUN_INTERVAL", "20")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.endpoint)
            .env("OTEL_METRIC_EXPORT_INTERVAL", "50")
            .env("OTEL_EXPORTER_OTLP_TIMEOUT", "300"),
    )
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The statistics lines, while running and after `telering_close` (whose last push
/// failed too): nothing exported, all 10 undelivered, at least 2 errors, failing.
fn check_stats(stdout: &str) {
    let mut errors = 0;
    for prefix in ["stats ", "closed "] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix}line: {stdout}"));
        let words: Vec<&str> = line.split(' ').collect();
        let field = |name: &str| -> u64 {
            let i = words.iter().position(|w| *w == name).unwrap();
            words[i + 1].parse().unwrap()
        };
        assert_eq!(field("recorded"), 10, "{line}");
        assert_eq!(field("exported"), 0, "{line}");
        assert_eq!(field("undelivered"), 10, "{line}");
        assert!(field("errors") >= 2, "{line}");
        // The last push is one more failed attempt.
        assert!(field("errors") > errors, "{stdout}");
        errors = field("errors");
        assert_eq!(field("failing"), 1, "{line}");
    }
}

/// `failing.c`, compiled once for every test of this file.
fn exe(_scratch: &Path) -> std::path::PathBuf {
    static EXE: OnceLock<(tempfile::TempDir, std::path::PathBuf)> = OnceLock::new();
    let (_, exe) = EXE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let exe = compile("failing.c", dir.path());
        (dir, exe)
    });
    exe.clone()
}

#[test]
fn a_c_agent_against_a_collector_answering_500_counts_failures_and_warns_on_stderr() {
    let scratch = tempfile::tempdir().unwrap();
    let collector = failing::answering_500();
    let out = against(program(&exe(scratch.path())).arg("2"), &collector);
    check_stats(&text(&out.stdout));
    let stderr = text(&out.stderr);
    let url = format!("{}/v1/metrics", collector.endpoint);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("telering: error: OTLP export to ")
                && l.contains(&url)
                && l.contains("HTTP 500")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "telering: warning: OTLP export to {url}: 10 events were not delivered by shutdown"
        )),
        "{stderr}"
    );
}

#[test]
fn a_c_agent_against_a_collector_that_is_down_counts_failures_and_warns_on_stderr() {
    let scratch = tempfile::tempdir().unwrap();
    let collector = failing::down();
    let out = against(program(&exe(scratch.path())).arg("2"), &collector);
    check_stats(&text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("telering: warning: OTLP export to ")
                && l.contains(&collector.endpoint)
                && l.contains("cannot reach the collector")),
        "{stderr}"
    );
}

#[test]
fn a_c_agent_against_a_collector_that_never_answers_hands_the_warning_to_its_callback() {
    let scratch = tempfile::tempdir().unwrap();
    let collector = failing::never_answering();
    let out = against(
        program(&exe(scratch.path())).args(["2", "callback"]),
        &collector,
    );
    let stdout = text(&out.stdout);
    check_stats(&stdout);
    // Level 2 is TELERING_LOG_WARN; the target is the module that logged.
    assert!(
        stdout.lines().any(
            |l| l.starts_with("log 2 telering_otlp::push: OTLP export to ")
                && l.contains(&collector.endpoint)
                && l.contains("cannot reach the collector")
        ),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        !stderr.contains("telering:"),
        "the callback took every record: {stderr}"
    );
}

/// `failing.c` with `env` and no exporter failure to wait for; its stderr.
fn stderr_with(env: &[(&str, &str)]) -> String {
    let scratch = tempfile::tempdir().unwrap();
    let mut cmd = program(&exe(scratch.path()));
    cmd.env_remove("TELERING_LOG").env_remove("NIXL_LOG_LEVEL");
    for (k, v) in env {
        cmd.env(k, v);
    }
    text(&run_ok(cmd.arg("0")).stderr)
}

#[test]
fn configuration_warnings_reach_stderr_at_the_level_nixl_log_level_or_telering_log_sets() {
    let maybe = [("NIXL_TELEMETRY_ENABLE", "maybe")];
    let warned = stderr_with(&maybe);
    assert!(
        warned.starts_with("telering: warning: ") && warned.contains("NIXL_TELEMETRY_ENABLE=maybe"),
        "{warned}"
    );
    let quiet = stderr_with(&[maybe[0], ("NIXL_LOG_LEVEL", "ERROR")]);
    assert_eq!(quiet, "", "NIXL_LOG_LEVEL=ERROR hides warnings");
    let fatal = stderr_with(&[maybe[0], ("NIXL_LOG_LEVEL", "fatal")]);
    assert_eq!(fatal, "");
    let wins = stderr_with(&[
        maybe[0],
        ("NIXL_LOG_LEVEL", "error"),
        ("TELERING_LOG", "warn"),
    ]);
    assert!(
        wins.contains("NIXL_TELEMETRY_ENABLE=maybe"),
        "TELERING_LOG wins: {wins}"
    );

    let nomatch = stderr_with(&[
        ("NIXL_TELEMETRY_ENABLE", "y"),
        ("NIXL_TELEMETRY_EXPORTER", "nop"),
        ("NIXL_TELEMETRY_ENABLED_METRICS", "nomatch_*"),
    ]);
    assert!(
        nomatch.contains("telering: warning: ") && nomatch.contains("nomatch_*"),
        "{nomatch}"
    );

    let unknown = stderr_with(&[maybe[0], ("NIXL_LOG_LEVEL", "loud")]);
    assert!(
        unknown.contains("NIXL_LOG_LEVEL=loud is not a log level"),
        "{unknown}"
    );
}

#[test]
fn a_c_agent_whose_metrics_port_is_in_use_warns_and_shows_the_exporter_failing() {
    let scratch = tempfile::tempdir().unwrap();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let mut cmd = program(&exe(scratch.path()));
    cmd.env_remove("TELERING_LOG").env_remove("NIXL_LOG_LEVEL");
    let out = run_ok(
        cmd.env("NIXL_TELEMETRY_ENABLE", "y")
            .env("NIXL_TELEMETRY_EXPORTER", "prometheus")
            .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true")
            .env("NIXL_TELEMETRY_PROMETHEUS_PORT", &port)
            .arg("1"),
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("stats recorded 10 exported 0 undelivered 10 errors 1 failing 1"),
        "{stdout}"
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with("telering: warning: telemetry exporter `prometheus`")
            && stderr.contains("no metrics are served"),
        "{stderr}"
    );
    drop(taken);
}

#[test]
fn a_c_agent_with_a_list_sees_the_failing_exporter_in_its_own_statistics() {
    let scratch = tempfile::tempdir().unwrap();
    let collector = failing::down();
    let dir = scratch.path().join("out");
    let mut cmd = program(&exe(scratch.path()));
    cmd.arg("2")
        .env("NIXL_TELEMETRY_EXPORTER", "buffer,otlp")
        .env("NIXL_TELEMETRY_DIR", &dir);
    let out = against_list(&mut cmd, &collector);
    // The ring file got every event, but the telemetry's counters are the failing
    // exporter's: nothing exported, all 10 undelivered, its errors, failing.
    check_stats(&text(&out.stdout));
    let mut ring = telering_shm::DrainingReader::open(&dir.join("c-failing")).unwrap();
    let mut events = 0;
    while ring.pop().unwrap().is_some() {
        events += 1;
    }
    assert_eq!(events, 10);
}
