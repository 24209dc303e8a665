//! `recorded = delivered + counted as lost`, exactly, with the cause: events lost at
//! record time (a full lane) are `events_dropped`, events an exporter lost after it
//! was handed them (a failed export, a full ring) are `exporter_dropped`, for one
//! exporter and for each exporter of a list.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use telering_core::Event;
use telering_std::export::{ExportError, Exporter, ExporterContext, ExporterRegistry};
use telering_std::{ExporterStats, Recorded, Telemetry, TelemetryStats};

/// Fails every other export (the first, the third, …), as a disk that fills and is
/// freed again would.
#[derive(Debug)]
struct FailsEveryOther {
    calls: Arc<AtomicU32>,
}

impl Exporter for FailsEveryOther {
    fn name(&self) -> &str {
        "flaky"
    }
    fn export(&mut self, _: &[Event]) -> Result<(), ExportError> {
        match self.calls.fetch_add(1, Ordering::AcqRel) % 2 {
            0 => Err(ExportError::failed("flaky", "no space left on device")),
            _ => Ok(()),
        }
    }
    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
    fn shutdown(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}

fn registry() -> ExporterRegistry {
    let mut registry = ExporterRegistry::with_builtins();
    let calls = Arc::new(AtomicU32::new(0));
    registry.register("flaky", move |_: &ExporterContext| {
        Ok(Box::new(FailsEveryOther {
            calls: Arc::clone(&calls),
        }) as Box<dyn Exporter>)
    });
    registry
}

fn balanced(s: &TelemetryStats) -> bool {
    s.events_recorded
        == s.events_exported
            + s.events_dropped
            + s.exporter_dropped
            + s.events_not_in_layout
            + s.events_undelivered
}

/// Records `n` events into a lane of 16 (15 fit) and flushes; the events the lane
/// refused.
fn round(telemetry: &Telemetry, n: u64) -> u64 {
    let refused = (0..n)
        .filter(|&v| telemetry.update_tx_bytes(v) == Recorded::Dropped)
        .count() as u64;
    let _ = telemetry.flush();
    refused
}

#[test]
fn a_full_lane_and_a_failing_exporter_account_for_every_event_with_its_cause() {
    let telemetry = Telemetry::builder("identity")
        .registry(registry())
        .enabled(true)
        .exporter("flaky")
        .lane_capacity(16)
        .early_flush(false)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    let mut at_record = 0;
    for r in 1..=4u64 {
        at_record += round(&telemetry, 20);
        let s = telemetry.stats();
        assert!(balanced(&s), "round {r}: {s:?}");
        assert_eq!(s.events_recorded, 20 * r, "{s:?}");
        assert_eq!(
            s.events_dropped, at_record,
            "only the lane's refusals: {s:?}"
        );
        assert_eq!(at_record, 5 * r);
        // Rounds 1 and 3 fail: their 15 drained events are the exporter's loss.
        assert_eq!(s.exporter_dropped, 15 * r.div_ceil(2), "{s:?}");
        assert_eq!(s.events_exported, 15 * (r / 2), "{s:?}");
        assert_eq!(s.exporter_failing, r % 2 == 1, "{s:?}");
    }
    let each = telemetry.exporter_stats();
    assert_eq!(
        (each[0].events_dropped, each[0].exporter_dropped),
        (30, 0),
        "the failed exports, apart from losses inside the exporter: {each:?}"
    );
    let last = telemetry.close();
    assert!(balanced(&last), "{last:?}");
    assert_eq!(
        (
            last.events_recorded,
            last.events_dropped,
            last.exporter_dropped,
            last.events_exported
        ),
        (80, 20, 30, 30),
        "{last:?}"
    );
}

/// Each exporter of a list accounts for every event that reached the fan-out.
fn member_balanced(m: &ExporterStats, handed: u64) -> bool {
    m.events_delivered
        + m.events_dropped
        + m.exporter_dropped
        + m.events_not_in_layout
        + m.events_undelivered
        == handed
}

#[test]
fn a_list_with_a_full_ring_and_a_failing_exporter_accounts_for_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let telemetry = Telemetry::builder("identity-list")
        .registry(registry())
        .enabled(true)
        .exporter("buffer,flaky")
        .dir(dir.path())
        .buffer_size(8) // 7 events fit; nobody reads it
        .lane_capacity(16)
        .early_flush(false)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    let mut at_record = 0;
    for _ in 0..4 {
        at_record += round(&telemetry, 20);
    }
    let (last, each) = telemetry.close_with_exporter_stats();
    assert!(balanced(&last), "{last:?}");
    assert_eq!(
        (last.events_recorded, last.events_dropped),
        (80, at_record),
        "{last:?}"
    );
    let handed = last.events_recorded - last.events_dropped;
    assert_eq!(handed, 60);
    let ring = each.iter().find(|e| e.name == "buffer").unwrap();
    let flaky = each.iter().find(|e| e.name == "flaky").unwrap();
    assert!(member_balanced(ring, handed), "{ring:?}");
    assert!(member_balanced(flaky, handed), "{flaky:?}");
    // The ring holds 7 (less its own loss report's slot); the rest it refused itself.
    assert!(
        ring.events_delivered <= 7 && ring.exporter_dropped >= 53,
        "{ring:?}"
    );
    assert_eq!(
        (flaky.events_delivered, flaky.events_dropped),
        (30, 30),
        "{flaky:?}"
    );
    // The telemetry's counts are the weakest exporter's: the ring.
    assert_eq!(last.events_exported, ring.events_delivered, "{last:?}");
}
