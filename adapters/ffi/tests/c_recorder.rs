//! `telering_recorder_t` from real C and C++ programs: per-thread recorders beside
//! the telemetry's own calls, every event counted in the ring; and, in debug builds,
//! a recorder used from another thread refused.

mod common;

use common::{compile, program, run_ok, telering_read};

/// Per thread: 1000 + 100 × 4 + 1 + 4 (a transfer) events through the recorder, 1000
/// through the telemetry, 11 custom events: 2416; four threads.
const RECORDED: u64 = 4 * (1000 + 1000 + 400 + 1 + 4 + 11);

fn check(stdout: &str, ring: &std::path::Path, extra_tx: u64) {
    assert!(
        stdout.contains(&format!("stats {} 0", RECORDED + extra_tx)),
        "{stdout}"
    );
    let tally = telering_read(ring);
    let count = |name: &str| tally.get(name).map(|t| (t.1, t.2));
    assert_eq!(
        count("agent_rx_bytes"),
        Some((4 * 1000 + 4, 4 * 2000 + 4 * 8192))
    );
    assert_eq!(
        count("agent_tx_bytes"),
        Some((4 * 1100 + extra_tx, 4 * (1000 + 100 * 4096) + extra_tx))
    );
    assert_eq!(count("rec_events"), Some((44, 132)));
    assert_eq!(count("NIXL_ERR_BACKEND"), Some((4, 4)));
    assert_eq!(count("agent_xfer_time").map(|c| c.0), Some(404));
}

#[test]
fn c_recorders_share_each_threads_lane_and_another_thread_is_refused_in_debug_builds() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("recorder.c", scratch.path());
    let dir = scratch.path().join("rings");
    // The test and the library it links are built with the same profile.
    let checked = cfg!(debug_assertions);
    let output = run_ok(
        program(&exe)
            .arg(if checked { "checked" } else { "unchecked" })
            .env("NIXL_TELEMETRY_ENABLE", "y")
            .env("NIXL_TELEMETRY_DIR", &dir)
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "16384")
            .env("NIXL_TELEMETRY_RUN_INTERVAL", "60000"),
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    check(&stdout, &dir.join("c-recorder"), u64::from(checked));
}

#[test]
fn cpp_recorders_are_raii_and_record_into_their_threads_lanes() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("recorder.cpp", scratch.path());
    let dir = scratch.path().join("rings");
    let output = run_ok(program(&exe).arg(&dir));
    let stdout = String::from_utf8(output.stdout).unwrap();
    check(&stdout, &dir.join("cpp-recorder"), 0);
}

#[test]
fn a_c_recorder_of_a_destroyed_telemetry_answers_closed_for_every_event() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("recorder_closed.c", scratch.path());
    let output = run_ok(&mut program(&exe));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "before 5 5", "{stdout}");
    assert_eq!(lines.len(), 10, "{stdout}");
    for line in &lines[1..] {
        assert_eq!(*line, "after TELERING_CLOSED", "{stdout}");
    }
}
