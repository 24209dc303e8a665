//! Cells of the conservation matrix whose source is a Rust `Telemetry` or `Recorder`
//! in this process, and whose surface is its own statistics.

use std::time::Duration;
use telering_conservation::Cause;
use telering_conservation::surfaces::{from_exporter_stats, from_stats};
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
    let t = agent(
        dir.path(),
        "lane",
        &[("NIXL_TELEMETRY_BUFFER_SIZE", "4096")],
    );
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
    // A v1 ring of 8 holds 7 slots: 6 events and the report of what it refused.
    assert_eq!(l.delivered, 6, "{l}");
    l.assert_charged(Cause::ByExporter, 94);
    l.assert_not_ok_while_losing();
}

#[test]
fn a_recorder_with_a_full_lane_is_charged_at_record() {
    let dir = tempfile::tempdir().unwrap();
    let t = agent(dir.path(), "rec", &[("NIXL_TELEMETRY_BUFFER_SIZE", "4096")]);
    let recorder = t.recorder();
    for _ in 0..40 {
        let _ = recorder.update_rx_bytes(3);
    }
    t.flush().unwrap();
    let l = from_stats(&t.stats());
    l.assert_conserves(40);
    l.assert_charged(Cause::AtRecord, 40 - 15);
    l.assert_not_ok_while_losing();
}

/// The events of the ring file at `path`, drop reports apart: (events, reported).
fn ring_events(path: &std::path::Path) -> (u64, u64) {
    let mut reader = telering_shm::DrainingReader::open(path).unwrap();
    let (mut events, mut reported) = (0, 0);
    reader
        .read_records(usize::MAX, |r| {
            if r.name_lossy() == telering_conservation::surfaces::DROP_REPORT {
                reported += r.value;
            } else {
                events += 1;
            }
        })
        .unwrap();
    (events, reported)
}

#[test]
fn a_ring_unlinked_by_another_program_charges_what_went_into_it_as_unlinked() {
    let dir = tempfile::tempdir().unwrap();
    let t = agent(dir.path(), "u", &[("NIXL_TELEMETRY_BUFFER_SIZE", "4096")]);
    let path = dir.path().join("u");
    for round in 0..3 {
        for _ in 0..10 {
            t.update_tx_bytes(1);
        }
        t.flush().unwrap();
        if round == 1 {
            std::fs::remove_file(&path).unwrap();
        }
    }
    let (stats, exporters) = t.close_with_exporter_stats();
    let l = from_stats(&stats);
    l.assert_conserves(30);
    let e = from_exporter_stats(&exporters[0]);
    e.assert_conserves(30);
    assert!(e.lost_to(Cause::Unlinked) > 0, "{e}");
    // Rounds 0 and 1 were delivered into the file before it was unlinked (its
    // reader took them); round 2 went into the unlinked file and is counted lost, in
    // the file made again too.
    let (events, reported) = ring_events(&path);
    assert_eq!(events, e.delivered - 20, "{e}");
    assert_eq!(reported, e.lost_to(Cause::Unlinked), "{e}");
}

#[test]
fn a_writer_restarted_with_the_same_size_keeps_the_unread_events() {
    let dir = tempfile::tempdir().unwrap();
    let vars = [("NIXL_TELEMETRY_BUFFER_SIZE", "64")];
    let first = agent(dir.path(), "same", &vars);
    for _ in 0..10 {
        first.update_tx_bytes(1);
    }
    from_stats(&first.close()).assert_conserves(10);
    let second = agent(dir.path(), "same", &vars);
    for _ in 0..5 {
        second.update_rx_bytes(1);
    }
    from_stats(&second.close()).assert_conserves(5);
    let (events, reported) = ring_events(&dir.path().join("same"));
    assert_eq!(
        (events, reported),
        (15, 0),
        "both writers' events, none lost"
    );
}

#[test]
fn a_writer_restarted_with_another_size_keeps_or_counts_every_unread_event() {
    let dir = tempfile::tempdir().unwrap();
    let first = agent(
        dir.path(),
        "resized",
        &[("NIXL_TELEMETRY_BUFFER_SIZE", "64")],
    );
    for _ in 0..50 {
        first.update_tx_bytes(1);
    }
    from_stats(&first.close()).assert_conserves(50);
    let second = agent(
        dir.path(),
        "resized",
        &[("NIXL_TELEMETRY_BUFFER_SIZE", "16")],
    );
    for _ in 0..5 {
        second.update_rx_bytes(1);
    }
    second.flush().unwrap();
    from_stats(&second.close()).assert_conserves(5);
    let path = dir.path().join("resized");
    let trailer = telering_shm::stat(&path).unwrap().trailer.unwrap();
    let (events, reported) = ring_events(&path);
    // Every one of the 55 is in the new file or counted there as lost.
    assert_eq!(
        events + trailer.events_dropped(),
        55,
        "{events} events, {trailer:?}"
    );
    // The 36 of the first run that did not fit are reported in band; the ring was
    // full from the start, so the second run's 5 are in the trailer only, until a
    // slot frees up (docs/FORMAT.md).
    assert_eq!(
        (reported, trailer.dropped_staging, trailer.dropped_ring_full),
        (36, 36, 5),
        "{trailer:?}"
    );
}
