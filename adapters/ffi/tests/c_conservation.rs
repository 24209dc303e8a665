//! The conservation matrix's C source (`conservation.c`): a C agent's
//! `telering_stats` and its ring file hold to `recorded = delivered + counted as
//! lost`, with each loss charged to its cause (`docs/LOSS.md`), with a full ring and
//! no reader, and with its OTLP collector down.

mod common;

#[path = "../../otlp/tests/common/failing.rs"]
mod failing;

use common::{compile, program, run_ok};
use std::collections::BTreeMap;
use telering_conservation::Cause;
use telering_conservation::surfaces::from_stats;
use telering_std::TelemetryStats;

/// Runs `conservation.c` for `events` events, flushing every `every`, with `env`;
/// the `telering_stats` it printed.
fn c_agent(dir: &std::path::Path, events: u64, every: u64, env: &[(&str, &str)]) -> TelemetryStats {
    let exe = compile("conservation.c", dir);
    let out = run_ok(
        program(&exe)
            .env_remove("NIXL_CONFIG_FILE")
            .env("NIXL_TELEMETRY_ENABLE", "yes")
            .env("NIXL_TELEMETRY_DIR", dir)
            .envs(env.iter().copied())
            .arg(events.to_string())
            .arg(every.to_string()),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let v: BTreeMap<&str, u64> = text
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k, v.parse().unwrap())
        })
        .collect();
    TelemetryStats {
        events_recorded: v["events_recorded"],
        events_exported: v["events_exported"],
        events_dropped: v["events_dropped"],
        exporter_dropped: v["exporter_dropped"],
        events_not_in_layout: v["events_not_in_layout"],
        events_undelivered: v["events_undelivered"],
        exporter_failing: v["exporter_failing"] != 0,
        ..TelemetryStats::default()
    }
}

#[test]
fn conservation_a_c_agent_with_a_full_ring_charges_ring_full_in_its_stats_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let stats = c_agent(dir.path(), 400, 50, &[("NIXL_TELEMETRY_BUFFER_SIZE", "64")]);
    let l = from_stats(&stats);
    l.assert_conserves(400);
    // A ring of 64 holds 63 slots: 62 events and the report of what it refused.
    assert_eq!(l.delivered, 62, "{l}");
    l.assert_charged(Cause::ByExporter, 400 - 62);
    l.assert_not_ok_while_losing();
    let trailer = telering_shm::stat(&dir.path().join("c-conservation"))
        .unwrap()
        .trailer
        .unwrap();
    assert_eq!(trailer.dropped_ring_full, 400 - 62, "{trailer:?}");
}

#[test]
fn conservation_a_c_agent_with_its_collector_down_counts_every_event_undelivered() {
    let dir = tempfile::tempdir().unwrap();
    let down = failing::down();
    let stats = c_agent(
        dir.path(),
        200,
        0,
        &[
            ("NIXL_TELEMETRY_EXPORTER", "otlp"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", down.endpoint.as_str()),
            ("TELERING_OTLP_SHUTDOWN_TIMEOUT", "1"),
        ],
    );
    let l = from_stats(&stats);
    l.assert_conserves(200);
    // Pending until a push is answered, which a collector that is down never does.
    l.assert_charged(Cause::Undelivered, 200);
    l.assert_not_ok_while_losing();
}
