//! Cells of the conservation matrix whose source is a Rust `Telemetry` or `Recorder`
//! in this process, and whose surface is its own statistics.

use std::time::Duration;
use telering_conservation::surfaces::{from_exporter_stats, from_stats};
use telering_conservation::Cause;
use telering_std::{EnvSource, Telemetry, TelemetryBuilder};

fn agent(dir: &std::path::Path, name: &str, vars: &[(&str, &str)]) -> Telemetry {
    let mut pairs = vec![
        ("NIXL_TELEMETRY_ENABLE", "yes"),
        ("NIXL_TELEMETRY_DIR", dir.to_str().unwrap()),
    ];
    pairs.extend_from_slice(vars);
    TelemetryBuilder::from_env(name, &EnvSource::from_pairs(pairs))
        .unwrap()
        .lane_capacity(16)
        .early_flush(false)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap()
}

#[test]
fn a_full_lane_is_recorded_and_charged_at_record() {
    let dir = tempfile::tempdir().unwrap();
    let t = agent(dir.path(), "lane", &[("NIXL_TELEMETRY_BUFFER_SIZE", "4096")]);
    for _ in 0..100 {
        t.update_tx_bytes(1);
    }
    t.flush().unwrap();
    let l = from_stats(&t.stats());
    l.assert_conserves(100);
    // A lane of 16 holds 15 (one slot tells full from empty).
    l.assert_charged(Cause::AtRecord, 100 - 15);
    l.assert_not_ok_while_losing();
    // The exporter accounts for what reached it: the lane's losses came before.
    for e in t.exporter_stats() {
        from_exporter_stats(&e).assert_conserves(15);
    }
}

#[test]
fn a_full_ring_without_reader_is_charged_ring_full() {
    let dir = tempfile::tempdir().unwrap();
    let t = agent(dir.path(), "ring", &[("NIXL_TELEMETRY_BUFFER_SIZE", "8")]);
    for _ in 0..10 {
        for _ in 0..10 {
            t.update_rx_bytes(1);
        }
        t.flush().unwrap();
    }
    let l = from_stats(&t.stats());
    l.assert_conserves(100);
    assert_eq!(l.delivered, 7, "a v1 ring of 8 holds 7: {l}");
    l.assert_charged(Cause::RingFull, 93);
    l.assert_not_ok_while_losing();
}
