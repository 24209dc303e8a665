//! A file whose name is not UTF-8 in the ring directory is reported once, not at
//! every scan. One test per file: the logger is process-wide.

#[path = "common/warnings.rs"]
mod warnings;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use telering_core::{Category, Event, builtin};
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_shm::{ShmWriter, WriterOptions};

#[test]
fn a_non_utf8_file_name_is_logged_once_and_the_rings_beside_it_are_followed() {
    warnings::record();
    let dir = std::env::temp_dir().join(format!("telering-prom-non-utf8-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(OsStr::from_bytes(b"agent-\xff")), b"x").unwrap();
    let mut w = ShmWriter::create(WriterOptions::new(&dir, "agent-ok")).unwrap();
    w.write_batch(&[Event::new(
        1,
        Category::Transfer,
        builtin::AGENT_TX_BYTES.name,
        64,
    )]);

    let mut o = CollectorOptions::new(&dir);
    o.rescan_interval = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();
    for _ in 0..5 {
        c.poll();
    }
    assert_eq!(
        c.model().lock().counter("agent-ok", "agent_tx_bytes"),
        Some(64)
    );
    let warnings = warnings::logged();
    let about: Vec<_> = warnings
        .iter()
        .filter(|w| w.contains("not UTF-8"))
        .collect();
    assert_eq!(about.len(), 1, "{warnings:?}");
    assert!(about[0].contains("agent-"), "{}", about[0]);
    drop(w);
    std::fs::remove_dir_all(&dir).unwrap();
}
