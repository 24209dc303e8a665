//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use telering_core::{Category, Event, EventName};

/// A directory under the system temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!(
            "telering-shm-{tag}-{}-{n}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub const NAMES: [&str; 4] = [
    "agent_tx_bytes",
    "agent_rx_bytes",
    "seq_probe",
    "a_name_of_31_bytes_exactly_0000",
];

/// The event carrying sequence number `seq`: every field is derived from `seq`, so a
/// torn read (fields from two different events) is detected by [`check_event`].
pub fn seq_event(seq: u64) -> Event {
    let name = EventName::new(NAMES[(seq % 4) as usize]).unwrap();
    let category = Category::ALL[(seq % 8) as usize];
    Event::new(
        seq.wrapping_mul(0x9E37_79B9).wrapping_add(7),
        category,
        name,
        seq,
    )
}

/// Checks that `e` is exactly `seq_event(e.value())`.
pub fn check_event(e: &Event) -> Result<u64, String> {
    let seq = e.value();
    if *e == seq_event(seq) {
        Ok(seq)
    } else {
        Err(format!("torn or foreign event {e:?} (value {seq})"))
    }
}

pub fn is_drop_report(e: &Event) -> bool {
    e.name() == Ok("agent_telemetry_events_dropped")
}
