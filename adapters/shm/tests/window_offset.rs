//! A core ring window at an offset inside a larger file
//! (`ObserverReader::open_core_window_at`): followed live, lapped with every missed
//! event counted, replaced by a new file (followed at the same offset) and truncated
//! (an error, never a fault).

mod common;

use common::TempDir;
use memmap2::MmapRaw;
use std::path::Path;
use telering_core::ring::{HeaderInfo, RingRegion};
use telering_core::{Category, Event, ObserverStart, OverflowPolicy, Producer, event_name};
use telering_shm::{ObserverReader, ShmError};

/// One page and 24 bytes in: not page-aligned, 8-aligned.
const OFFSET: u64 = 4096 + 24;
const CAPACITY: u32 = 64;

fn event(seq: u64) -> Event {
    Event::new(seq, Category::Custom, event_name!("win_seq"), seq)
}

/// A file of other bytes with a ring laid out at [`OFFSET`] (and 100 bytes after it),
/// and the region the device side writes through.
fn window(path: &Path) -> RingRegion<MmapRaw> {
    let ring_bytes = HeaderInfo::ring_bytes(u64::from(CAPACITY));
    std::fs::write(path, vec![0x5Au8; (OFFSET + ring_bytes + 100) as usize]).unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let map = MmapRaw::map_raw(&file).unwrap();
    // SAFETY: `OFFSET + ring_bytes` lies inside the mapping.
    let ptr = unsafe { map.as_mut_ptr().add(OFFSET as usize) };
    // SAFETY: `ptr` is 8-aligned (page-aligned mapping, `OFFSET` a multiple of 8) and
    // valid for `ring_bytes` bytes of the mapping the region owns; nothing else uses
    // the file while `init` runs, and afterwards every access is atomic.
    unsafe { RingRegion::init(map, ptr, ring_bytes as usize, CAPACITY) }.unwrap()
}

fn drain(reader: &mut ObserverReader) -> Vec<u64> {
    let mut got = Vec::new();
    while let Some(e) = reader.poll().unwrap() {
        got.push(e.value());
    }
    got
}

#[test]
fn a_window_at_an_offset_is_followed_live_and_a_lap_is_counted_exactly() {
    let dir = TempDir::new("window-offset-1");
    let path = dir.path().join("ram.bin");
    let region = window(&path);
    let mut producer = Producer::from_region(&region, OverflowPolicy::OverwriteOldest).unwrap();
    let mut reader =
        ObserverReader::open_core_window_at(&path, OFFSET, ObserverStart::Oldest).unwrap();
    for seq in 0..10 {
        producer.push(&event(seq)).unwrap();
    }
    assert_eq!(drain(&mut reader), (0..10).collect::<Vec<_>>());
    // Three laps while the reader looks away: it gets the newest and counts the rest.
    let total = 10 + 3 * u64::from(CAPACITY);
    for seq in 10..total {
        producer.push(&event(seq)).unwrap();
    }
    let got = drain(&mut reader);
    assert_eq!(got.last(), Some(&(total - 1)));
    assert_eq!(10 + got.len() as u64 + reader.events_missed(), total);
}

#[test]
fn a_window_file_replaced_is_followed_at_the_same_offset() {
    let dir = TempDir::new("window-offset-2");
    let path = dir.path().join("ram.bin");
    let first = window(&path);
    let mut producer = Producer::from_region(&first, OverflowPolicy::DropNewest).unwrap();
    producer.push(&event(1)).unwrap();
    let mut reader =
        ObserverReader::open_core_window_at(&path, OFFSET, ObserverStart::Oldest).unwrap();
    assert_eq!(drain(&mut reader), [1]);
    // A new image of the device's memory takes the path's place.
    let next = dir.path().join("ram.new");
    let second = window(&next);
    let mut producer = Producer::from_region(&second, OverflowPolicy::DropNewest).unwrap();
    producer.push(&event(7)).unwrap();
    std::fs::rename(&next, &path).unwrap();
    assert_eq!(drain(&mut reader), [7]);
}

#[test]
fn a_window_file_truncated_under_the_reader_is_an_error_not_a_fault() {
    let dir = TempDir::new("window-offset-3");
    let path = dir.path().join("ram.bin");
    let region = window(&path);
    let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    producer.push(&event(1)).unwrap();
    let mut reader =
        ObserverReader::open_core_window_at(&path, OFFSET, ObserverStart::Oldest).unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(OFFSET + 100).unwrap();
    match reader.poll() {
        Err(ShmError::Truncated { needed, .. }) => {
            assert_eq!(needed, OFFSET + HeaderInfo::ring_bytes(u64::from(CAPACITY)))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn offsets_that_do_not_fit_are_window_errors_naming_the_offset() {
    let dir = TempDir::new("window-offset-4");
    let path = dir.path().join("ram.bin");
    let _region = window(&path);
    let size = std::fs::metadata(&path).unwrap().len();
    for (offset, needle) in [
        (OFFSET + 4, "8-byte aligned"),
        ((size - 8) & !7, "past it"),
        (8, "no ring"),
        (OFFSET + (1 << 20), "past it"),
    ] {
        let e =
            ObserverReader::open_core_window_at(&path, offset, ObserverStart::Oldest).unwrap_err();
        assert!(matches!(e, ShmError::Window { .. }), "{offset}: {e}");
        let text = e.to_string();
        assert!(
            text.contains(&format!("offset {offset}")) && text.contains(needle),
            "{text}"
        );
    }
}
