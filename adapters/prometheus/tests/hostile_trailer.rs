//! A hostile (or broken) writer whose trailer's loss counters jump to `u64::MAX` or go
//! backwards: the collector's counts saturate, never wrap or panic, and the agent
//! says `dropping`, never `ok`, while its counters grow.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use telering_core::{Category, Event, OverflowPolicy, builtin};
use telering_prometheus::collector::{CollectorOptions, ExportState, NodeCollector};
use telering_shm::{ShmWriter, WriterOptions, stat};

const CAPACITY: u64 = 64;
/// The trailer of a version-1 ring of `CAPACITY` slots (docs/FORMAT.md).
const TRAILER: u64 = 40 + CAPACITY * 56;
const RING_FULL: u64 = TRAILER + 40;
const STAGING: u64 = TRAILER + 48;

fn poke(path: &std::path::Path, offset: u64, value: u64) {
    let f = OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&value.to_le_bytes(), offset).unwrap();
}

#[test]
fn trailer_counters_that_jump_to_u64_max_or_go_backwards_saturate() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = WriterOptions::new(dir.path(), "hostile");
    options.capacity = CAPACITY as u32;
    options.policy = OverflowPolicy::DropNewest;
    let mut w = ShmWriter::create(options).unwrap();
    let request = Event::new(
        1,
        Category::Transfer,
        builtin::AGENT_TX_REQUESTS_NUM.name,
        1,
    );
    w.write_batch(&vec![request; 100]);
    let path = w.path().to_path_buf();
    // 62 events and the report of the 38 refused fill the 63 slots a ring of 64 holds.
    assert_eq!(stat(&path).unwrap().trailer.unwrap().dropped_ring_full, 38);

    let mut o = CollectorOptions::new(dir.path());
    o.rescan_interval = Duration::ZERO;
    o.dropping_for = Duration::from_secs(3600);
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    assert_eq!(c.agents()[0].loss.losses.ring_full, 38);

    poke(&path, RING_FULL, u64::MAX);
    c.poll();
    poke(&path, STAGING, u64::MAX);
    c.poll();
    // Backwards, then up again: never a wrap.
    poke(&path, RING_FULL, 5);
    poke(&path, STAGING, 1);
    c.poll();
    poke(&path, RING_FULL, u64::MAX);
    c.poll();
    let agent = &c.agents()[0];
    assert_eq!(agent.loss.losses.ring_full, u64::MAX, "{agent:?}");
    assert_eq!(agent.loss.losses.staging, u64::MAX, "{agent:?}");
    assert_eq!(agent.loss.losses.total(), u64::MAX, "{agent:?}");
    assert_eq!(agent.loss.state, ExportState::Dropping, "{agent:?}");
    assert_eq!(
        c.model()
            .lock()
            .counter("hostile", "agent_telemetry_events_dropped"),
        Some(u64::MAX)
    );
    let page = c
        .model()
        .render(telering_prometheus::Format::PrometheusText);
    assert!(
        page.contains("agent_telemetry_events_dropped_total{agent_name=\"hostile\""),
        "{page}"
    );
    drop(w);
}
