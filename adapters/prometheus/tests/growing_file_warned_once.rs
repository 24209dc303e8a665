//! A file in the ring directory that is no ring and keeps growing (a log someone
//! writes there) is looked at again as it grows, in case it is becoming a ring, but
//! warned about once. One test per file: the logger is process-wide.

#[path = "common/warnings.rs"]
mod warnings;

use std::io::Write;
use std::time::Duration;

use telering_prometheus::collector::{CollectorOptions, NodeCollector};

#[test]
fn a_growing_file_that_is_no_ring_is_warned_about_once() {
    warnings::record();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.log");
    let mut file = std::fs::File::create(&path).unwrap();
    let mut o = CollectorOptions::new(dir.path());
    o.rescan_interval = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();
    for line in 0..5 {
        writeln!(file, "line {line} of a log that is no ring").unwrap();
        c.poll();
    }
    let warnings = warnings::logged();
    let about: Vec<_> = warnings
        .iter()
        .filter(|w| w.contains("notes.log"))
        .collect();
    assert_eq!(about.len(), 1, "{warnings:#?}");
    assert!(c.agents().is_empty());
}
