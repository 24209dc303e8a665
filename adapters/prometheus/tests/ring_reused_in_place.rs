//! A writer that reuses its ring in place (same file, same size) from the same process
//! — an agent destroyed and made again, or a container's pid 1 restarted — writes a
//! fresh trailer whose counters start at zero: the collector counts the new run's
//! losses whole, on top of the previous run's, even when they outgrow them.

use std::time::Duration;

use telering_core::{Category, Event, OverflowPolicy, builtin};
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_shm::{ShmWriter, WriterOptions, stat};

fn writer(dir: &std::path::Path) -> ShmWriter {
    let mut o = WriterOptions::new(dir, "again");
    o.capacity = 64;
    o.policy = OverflowPolicy::DropNewest;
    ShmWriter::create(o).unwrap()
}

#[test]
fn a_ring_reused_in_place_by_the_same_process_counts_both_runs_losses() {
    let dir = tempfile::tempdir().unwrap();
    let request = Event::new(
        1,
        Category::Transfer,
        builtin::AGENT_TX_REQUESTS_NUM.name,
        1,
    );
    let mut o = CollectorOptions::new(dir.path());
    o.rescan_interval = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();

    let mut first = writer(dir.path());
    first.write_batch(&vec![request; 100]);
    c.poll();
    // 62 events and the report of the 38 refused fill the 63 slots of a ring of 64.
    assert_eq!(c.agents()[0].loss.losses.ring_full, 38);
    first.close().unwrap();
    c.poll();

    // The same process takes the ring over again: nothing drained it, so the new run
    // finds it full and is refused every event.
    let mut second = writer(dir.path());
    second.write_batch(&vec![request; 200]);
    let trailer = stat(second.path()).unwrap().trailer.unwrap();
    assert_eq!(trailer.dropped_ring_full, 200, "{trailer:?}");
    c.poll();
    assert_eq!(c.agents()[0].loss.losses.ring_full, 238);
    assert_eq!(
        c.model()
            .lock()
            .counter("again", "agent_telemetry_events_dropped"),
        Some(238)
    );
    second.close().unwrap();
}
