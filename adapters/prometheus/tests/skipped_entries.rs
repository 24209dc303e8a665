//! Entries of the ring directory that are not regular files (a symbolic link to a
//! ring, a directory) are reported once each with the reason, not skipped without a
//! word, and the rings beside them are followed. One test per file: the logger is
//! process-wide.

use std::sync::Mutex;
use std::time::Duration;

use telering_core::{Category, Event, builtin};
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_shm::{ShmWriter, WriterOptions};

static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Recorder;

impl log::Log for Recorder {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            WARNINGS.lock().unwrap().push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

#[test]
fn a_symbolic_link_and_a_directory_are_reported_once_each_with_the_reason() {
    log::set_logger(&Recorder).unwrap();
    log::set_max_level(log::LevelFilter::Warn);
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
    let warnings = WARNINGS.lock().unwrap().clone();
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
