//! `serve --drain` started while another draining reader still holds a ring (a
//! previous `serve --drain` on its way out, a `telering read`): the ring is taken up
//! as soon as that reader is gone, and counted as not followed until then, never
//! left aside for good.

use std::time::Duration;

use telering_core::{Category, Event, builtin};
use telering_prometheus::collector::{CollectorOptions, NodeCollector, ReadMode};
use telering_shm::{DrainingReader, ShmWriter, WriterOptions};

#[test]
fn a_ring_another_drainer_holds_is_followed_once_it_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = ShmWriter::create(WriterOptions::new(dir.path(), "busy")).unwrap();
    w.write_batch(&[Event::new(
        1,
        Category::Transfer,
        builtin::AGENT_TX_BYTES.name,
        64,
    )]);
    let other = DrainingReader::open(w.path()).unwrap();

    let mut o = CollectorOptions::new(dir.path());
    o.mode = ReadMode::Drain;
    o.rescan_interval = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    assert!(c.agents().is_empty());
    assert_eq!(c.rings_not_followed(), 1);
    assert_eq!(c.status().lock().rings_not_followed, 1);

    drop(other);
    c.poll();
    assert_eq!(c.agents().len(), 1);
    assert_eq!(c.rings_not_followed(), 0);
    assert_eq!(c.model().lock().counter("busy", "agent_tx_bytes"), Some(64));
    w.close().unwrap();
}
