//! Statistics that tell the truth: every recorded event ends in exactly one count,
//! events a version-4 ring cannot hold are "not in layout" under their own names, and
//! a ring's refusals are charged to the events it refused, as the file shows.

use std::collections::BTreeMap;
use std::time::Duration;
use telering_core::Category;
use telering_shm::DrainingReader;
use telering_std::{EnvSource, Telemetry, TelemetryBuilder, TelemetryStats};

fn v4_agent(dir: &std::path::Path, name: &str, buffer_size: &str) -> Telemetry {
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "yes"),
        ("NIXL_TELEMETRY_DIR", dir.to_str().unwrap()),
        ("NIXL_TELEMETRY_BUFFER_SIZE", buffer_size),
        ("TELERING_RING_LAYOUT", "v4"),
    ]);
    TelemetryBuilder::from_env(name, &env)
        .unwrap()
        .lane_capacity(1024)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap()
}

/// Events per name in the ring file.
fn file_counts(path: &std::path::Path) -> BTreeMap<String, u64> {
    let mut reader = DrainingReader::open(path).unwrap();
    let mut counts = BTreeMap::new();
    reader
        .read_records(usize::MAX, |r| {
            let name = r.name_lossy().into_owned();
            // The ring's in-band loss report is not a recorded event.
            if name != "agent_telemetry_events_dropped" {
                *counts.entry(name).or_default() += 1;
            }
        })
        .unwrap();
    counts
}

fn balanced(s: &TelemetryStats) -> bool {
    s.events_recorded
        == s.events_exported
            + s.events_dropped
            + s.exporter_dropped
            + s.events_not_in_layout
            + s.events_undelivered
}

#[test]
fn events_a_version_4_ring_cannot_hold_are_not_in_layout_under_their_own_names() {
    let dir = tempfile::tempdir().unwrap();
    let telemetry = v4_agent(dir.path(), "agent", "1024");
    for i in 0..30 {
        telemetry.update_tx_bytes(64);
        if i % 3 == 0 {
            telemetry
                .record(Category::Custom, "queue_depth", 1)
                .unwrap();
        }
        telemetry.update_rx_bytes(32);
    }
    telemetry.flush().unwrap();
    let stats = telemetry.stats();
    assert_eq!(stats.events_not_in_layout, 10, "{stats:?}");
    assert_eq!(
        stats.events_exported, 60,
        "only what the file holds: {stats:?}"
    );
    assert_eq!((stats.events_dropped, stats.exporter_dropped), (0, 0));
    assert!(balanced(&stats), "{stats:?}");
    assert_eq!(
        telemetry.not_in_layout_by_name(),
        BTreeMap::from([("queue_depth".to_string(), 10)])
    );
    assert!(telemetry.dropped_by_name().is_empty(), "nothing was lost");
    let path = dir.path().join("agent");
    assert_eq!(
        file_counts(&path),
        BTreeMap::from([
            ("agent_rx_bytes".to_string(), 30),
            ("agent_tx_bytes".to_string(), 30)
        ])
    );
    let trailer = telering_shm::stat(&path).unwrap().trailer.unwrap();
    assert_eq!(trailer.dropped_unrepresentable, 10);
    assert_eq!(trailer.events_dropped(), 0);
}

#[test]
fn a_full_version_4_ring_charges_its_refusals_to_the_events_it_refused() {
    let dir = tempfile::tempdir().unwrap();
    // 8 slots: three flushes of 6 built-in events and 2 custom ones; nothing reads
    // the ring, so it fills during the second.
    let telemetry = v4_agent(dir.path(), "agent", "8");
    for _ in 0..3 {
        for _ in 0..2 {
            telemetry.update_tx_bytes(1);
            telemetry
                .record(Category::Custom, "queue_depth", 1)
                .unwrap();
            telemetry.update_rx_bytes(1);
            telemetry.update_memory_registered(1);
        }
        telemetry.flush().unwrap();
    }
    let stats = telemetry.stats();
    assert_eq!(stats.events_dropped, 0, "no lane was full: {stats:?}");
    assert_eq!(stats.events_not_in_layout, 6, "{stats:?}");
    assert!(stats.exporter_dropped >= 6, "{stats:?}");
    assert_eq!(
        stats.events_exported + stats.exporter_dropped,
        18,
        "{stats:?}"
    );
    assert!(balanced(&stats), "{stats:?}");

    let in_file = file_counts(&dir.path().join("agent"));
    assert_eq!(
        in_file.values().sum::<u64>(),
        stats.events_exported,
        "{in_file:?}"
    );
    let dropped = telemetry.dropped_by_name();
    assert!(!dropped.contains_key("queue_depth"), "{dropped:?}");
    assert_eq!(
        dropped.values().sum::<u64>(),
        stats.exporter_dropped,
        "{dropped:?}"
    );
    // Per name: recorded = in the file + refused by the ring.
    for name in [
        "agent_tx_bytes",
        "agent_rx_bytes",
        "agent_memory_registered",
    ] {
        let got = in_file.get(name).copied().unwrap_or(0) + dropped.get(name).copied().unwrap_or(0);
        assert_eq!(got, 6, "{name}: file {in_file:?}, dropped {dropped:?}");
    }
    assert_eq!(telemetry.not_in_layout_by_name()["queue_depth"], 6);
}

#[test]
fn a_version_1_ring_leaves_nothing_out() {
    let dir = tempfile::tempdir().unwrap();
    let telemetry = TelemetryBuilder::new("agent")
        .enabled(true)
        .dir(dir.path())
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    telemetry.update_tx_bytes(1);
    telemetry
        .record(Category::Custom, "queue_depth", 1)
        .unwrap();
    let stats = telemetry.close();
    assert_eq!((stats.events_exported, stats.events_not_in_layout), (2, 0));
    assert!(!stats.exporter_failing && stats.events_undelivered == 0);
}

#[test]
fn events_written_into_a_ring_file_another_program_unlinked_are_lost_not_exported() {
    let dir = tempfile::tempdir().unwrap();
    let t = v4_agent(dir.path(), "unlinked", "4096");
    let path = dir.path().join("unlinked");
    for v in 0..10 {
        t.update_tx_bytes(v);
    }
    t.flush().unwrap();
    assert_eq!(t.stats().events_exported, 10);
    // As NIXL's reader does with a ring file of another version.
    std::fs::remove_file(&path).unwrap();
    for v in 10..15 {
        t.update_tx_bytes(v);
    }
    // The writer checks its file at every flush and at shutdown: nobody read the 10
    // before the file was unlinked, and the 5 went into the unlinked file; all 15 are
    // lost with it (counted delivered until the writer noticed). It makes the file
    // again.
    let s = t.close();
    assert!(balanced(&s), "{s:?}");
    assert_eq!((s.events_exported, s.exporter_dropped), (0, 15), "{s:?}");
    assert_eq!(file_counts(&path).values().sum::<u64>(), 0);
}
