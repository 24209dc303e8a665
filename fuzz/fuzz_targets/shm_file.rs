//! Arbitrary bytes as a ring file: `stat`, the observer and the draining reader open,
//! validate and read it — returning events or typed errors, never panicking — and the
//! read-only paths never change a byte of it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;
use telering_core::ObserverStart;
use telering_shm::{DrainingReader, ObserverReader, stat};

/// Reads at most this many events per reader, so a valid ring with a huge capacity
/// cannot slow the fuzzer down.
const MAX_EVENTS: usize = 4096;

fn path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("telering-fuzz-shm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("ring")
    })
}

fuzz_target!(|data: &[u8]| {
    let path = path();
    std::fs::write(path, data).unwrap();

    if let Ok(info) = stat(path) {
        assert!(info.capacity.is_power_of_two() && info.fill < info.capacity);
    }
    if let Ok(mut observer) = ObserverReader::open(path, ObserverStart::Oldest) {
        let _ = observer.read_batch(MAX_EVENTS, |e| {
            if let Ok(e) = e {
                assert!(e.validate().is_ok());
            }
        });
        let _ = observer.poll();
        let _ = observer.info();
    }
    // Neither `stat` nor an observer writes the file.
    assert_eq!(std::fs::read(path).unwrap(), data);

    if let Ok(mut reader) = DrainingReader::open(path) {
        let mut n = 0;
        while n < MAX_EVENTS {
            match reader.pop() {
                Ok(Some(e)) => assert!(e.validate().is_ok()),
                Ok(None) => break,
                Err(_) => {}
            }
            n += 1;
        }
        let _ = reader.read_batch(MAX_EVENTS, |_| {});
        let _ = reader.info();
        // The draining reader writes nothing but `read_pos` (bytes 8..16).
        let after = std::fs::read(path).unwrap();
        assert_eq!(after.len(), data.len());
        assert_eq!(after[..8], data[..8]);
        assert_eq!(after[16..], data[16..]);
    }
});
