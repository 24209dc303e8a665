//! Entries of the ring directory that are not regular files (a symbolic link to a
//! ring, a directory) are reported once each with the reason, not skipped without a
//! word, and the rings beside them are followed. One test per file: the logger is
//! process-wide.

#[path = "common/warnings.rs"]
mod warnings;

use std::time::Duration;

use telering_core::{Category, Event, builtin};
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_shm::{ShmWriter, WriterOptions};

#[test]
fn a_symbolic_link_and_a_directory_are_reported_once_each_with_the_reason() {
    warnings::record();
    let dir = tempfile::tempdir().unwrap();
    let rings = dir.path().join("rings");
    let mut w = ShmWriter::create(WriterOptions::new(&rings, "agent-ok")).unwrap();
    w.write_batch(&[Event::new(
        1,
        Category::Transfer,
        builtin::AGENT_TX_BYTES.name,
        64,
    )]);
    std::os::unix::fs::symlink(w.path(), rings.join("linked")).unwrap();
    std::fs::create_dir(rings.join("sub")).unwrap();

    let mut o = CollectorOptions::new(&rings);
    o.rescan_interval = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();
    for _ in 0..5 {
        c.poll();
    }
    assert_eq!(
        c.model().lock().counter("agent-ok", "agent_tx_bytes"),
        Some(64)
    );
    assert_eq!(c.model().lock().counter("linked", "agent_tx_bytes"), None);
    let warnings = warnings::logged();
    let about = |name: &str, why: &str| {
        warnings
            .iter()
            .filter(|w| w.contains(name) && w.contains("skipped") && w.contains(why))
            .count()
    };
    assert_eq!(about("rings/linked", "symbolic link"), 1, "{warnings:?}");
    assert_eq!(about("rings/sub", "a directory"), 1, "{warnings:?}");
    drop(w);
}
