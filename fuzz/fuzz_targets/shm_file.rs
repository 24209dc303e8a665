//! Arbitrary bytes as a ring file of any NIXL generation: `stat`, the observer and the
//! draining reader open, validate and read it — returning events or typed errors,
//! never panicking — and the read-only paths never change a byte of it.
//!
//! Detection is checked against the rule (the header's version and the file's size
//! only), and every record the draining reader returns against the slot's bytes in
//! the input decoded by the generation's table. The seeds in `fuzz/seeds/shm_file`
//! holds a seed of every generation.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;
use telering_core::ObserverStart;
use telering_shm::{DrainingReader, Generation, ObserverReader, RecordProblem, stat};

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

    let info = stat(path).ok();
    if let Some(info) = &info {
        assert!(info.capacity.is_power_of_two() && info.fill < info.capacity);
        let g = info.generation;
        assert_eq!(g.version(), info.version);
        assert_eq!(
            i32::from_le_bytes(data[16..20].try_into().unwrap()),
            g.version()
        );
        let ring_bytes = g.ring_bytes(info.capacity) as usize;
        match g {
            // The two version-2 forms: the exact size decides.
            Generation::V2Named | Generation::V2 => assert_eq!(data.len(), ring_bytes),
            _ => assert!(data.len() >= ring_bytes),
        }
        if info.trailer.is_some() {
            assert!(matches!(g, Generation::V1 | Generation::V4));
        }
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
        let g = reader.generation();
        assert_eq!(Some(g), info.as_ref().map(|i| i.generation));
        let slot_size = g.slot_size();
        let mut n = 0;
        while n < MAX_EVENTS {
            // Alternate the strict and the record API over the same stream.
            if n % 2 == 0 {
                match reader.pop() {
                    Ok(Some(e)) => assert!(e.validate().is_ok()),
                    Ok(None) => break,
                    Err(_) => {}
                }
            } else {
                match reader.pop_record() {
                    Ok(Some(r)) => {
                        // The record is the slot's bytes decoded by the generation's
                        // table (the slots themselves are never written by a reader).
                        let slot = r.slot.expect("a draining reader knows the slot") as usize;
                        let at = 40 + slot * slot_size;
                        let mut expected = g.decode(&data[at..at + slot_size]);
                        expected.slot = r.slot;
                        assert_eq!(r, expected);
                        // An unknown type number is named `unknown_type_N`, a valid
                        // name; every other problem fails strict decoding.
                        let invalid = r
                            .problems()
                            .iter()
                            .any(|p| *p != RecordProblem::UnknownType);
                        assert_eq!(invalid, r.to_event().is_err());
                    }
                    Ok(None) => break,
                    Err(_) => {}
                }
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
