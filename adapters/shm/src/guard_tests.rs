//! The `SIGBUS` guard with more mappings than one chunk of its table holds.

use super::*;
use std::sync::atomic::AtomicU64;

#[test]
fn two_thousand_mappings_are_all_protected_from_a_truncated_file() {
    const MAPPINGS: usize = 2 * CHUNK;
    let dir = std::env::temp_dir().join(format!("telering-guard-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Guard first: dropped (deregistered) before its mapping is unmapped.
    let mut mapped = Vec::new();
    for i in 0..MAPPINGS {
        let path = dir.join(i.to_string());
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(4096).unwrap();
        let map = memmap2::MmapOptions::new()
            .len(4096)
            .map_raw(&file)
            .unwrap();
        let guard = Guard::register(map.as_mut_ptr(), 4096, true);
        assert!(guard.flag().is_some(), "mapping {i} is not protected");
        mapped.push((guard, map, path));
    }
    for i in [0, CHUNK - 1, CHUNK, CHUNK + 1, MAPPINGS - 1] {
        let (guard, map, path) = &mapped[i];
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(0)
            .unwrap();
        // SAFETY: the mapping is 4096 bytes, page-aligned and alive while `map` is;
        // the file no longer covers it, so this load faults, and the guard's handler
        // maps zero pages over it, which the load then reads.
        let word = unsafe { &*map.as_ptr().cast::<AtomicU64>() }.load(Ordering::Relaxed);
        assert_eq!(word, 0, "mapping {i}");
        assert!(guard.faulted(), "mapping {i}: the fault was caught");
    }
    assert!(!mapped[1].0.faulted(), "an untouched mapping is not marked");
    drop(mapped);
    std::fs::remove_dir_all(&dir).unwrap();
}
