//! A ring NIXL's own writer made, reused in place by telering's writer: the stamp
//! bytes NIXL left (zeros, uninitialised padding, or an earlier telering run's stamps
//! under a NIXL run's events) never reach an observer. Observers show exactly the
//! events telering wrote, with no gap; the draining reader still takes NIXL's unread
//! events first. The NIXL files are laid out byte by byte from NIXL's layouts.

mod common;

use common::TempDir;
use std::path::Path;
use telering_core::builtin;
use telering_core::{Category, Event, ObserverStart, OverflowPolicy};
use telering_shm::{DrainingReader, ObserverReader, RingLayout, ShmWriter, WriterOptions, stat};

const CAPACITY: u64 = 128;

/// How NIXL left the 4 stamp bytes of each slot.
#[derive(Clone, Copy, Debug)]
enum Padding {
    Zero,
    /// Uninitialised memory, as a debug allocator fills it.
    Garbage,
    /// Stamps of an earlier telering run, far from where the NIXL run left `write_pos`.
    StaleStamps,
}

fn padding(p: Padding, slot: u64) -> [u8; 4] {
    match p {
        Padding::Zero => [0; 4],
        Padding::Garbage => [0xA7; 4],
        Padding::StaleStamps => ((((slot + 5 * CAPACITY) as u32) << 2) | 0b10).to_le_bytes(),
    }
}

/// A ring file as NIXL's writer leaves it: `written` events published (event `i` in
/// slot `i`), of which `read` were taken; no trailer.
fn nixl_ring(path: &Path, version: i32, written: u64, read: u64, pad: Padding) {
    let slot_size = if version == 1 { 56 } else { 16 };
    let mut b = Vec::new();
    b.extend_from_slice(&(written % CAPACITY).to_le_bytes());
    b.extend_from_slice(&(read % CAPACITY).to_le_bytes());
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&version.to_le_bytes());
    b.extend_from_slice(&CAPACITY.to_le_bytes());
    b.extend_from_slice(&(CAPACITY - 1).to_le_bytes());
    for slot in 0..CAPACITY {
        let mut s = vec![0u8; slot_size];
        let value = 1_000_000 + slot;
        if version == 1 {
            s[..8].copy_from_slice(&(1_700_000_000_000_000 + slot).to_le_bytes());
            s[8..12].copy_from_slice(&1i32.to_le_bytes());
            s[12..12 + 14].copy_from_slice(b"agent_tx_bytes");
            s[44..48].copy_from_slice(&padding(pad, slot));
            s[48..56].copy_from_slice(&value.to_le_bytes());
        } else {
            s[..4].copy_from_slice(&0u32.to_le_bytes()); // agent_tx_bytes
            s[4..8].copy_from_slice(&padding(pad, slot));
            s[8..16].copy_from_slice(&value.to_le_bytes());
        }
        b.extend_from_slice(&s);
    }
    std::fs::write(path, b).unwrap();
}

fn options(dir: &Path, layout: RingLayout) -> WriterOptions {
    let mut o = WriterOptions::new(dir, "a");
    o.capacity = CAPACITY as u32;
    o.policy = OverflowPolicy::DropNewest;
    o.layout = layout;
    o
}

fn tx(value: u64) -> Event {
    Event::new(
        1_800_000_000_000_000 + value,
        Category::Transfer,
        builtin::AGENT_TX_BYTES.name,
        value,
    )
}

/// Everything an observer starting at the oldest event reads, and what it missed.
fn observe(path: &Path) -> (Vec<u64>, u64) {
    let mut observer = ObserverReader::open(path, ObserverStart::Oldest).unwrap();
    let mut got = Vec::new();
    observer
        .read_records(usize::MAX, |r| got.push(r.value))
        .unwrap();
    (got, observer.events_missed())
}

#[test]
fn observers_of_a_reused_nixl_ring_see_exactly_the_events_telering_wrote() {
    let layouts = [(1, RingLayout::V1), (4, RingLayout::V4)];
    let pads = [Padding::Zero, Padding::Garbage, Padding::StaleStamps];
    // (NIXL events written, of them read, events telering writes after it)
    let runs = [(100, 100, 20), (100, 90, 20), (100, 40, 20), (100, 100, 60)];
    for (version, layout) in layouts {
        for pad in pads {
            for (written, read, ours) in runs {
                let case = format!("v{version} {pad:?} nixl {written}/{read}, telering {ours}");
                let dir = TempDir::new("foreign-reuse");
                let path = dir.path().join("a");
                nixl_ring(&path, version, written, read, pad);
                let mut writer = ShmWriter::create(options(dir.path(), layout)).unwrap();
                let values: Vec<Event> = (0..ours).map(tx).collect();
                assert_eq!(writer.write_batch(&values), ours as usize, "{case}");

                let (got, missed) = observe(&path);
                assert_eq!(got, (0..ours).collect::<Vec<_>>(), "{case}");
                assert_eq!(missed, 0, "{case}: no gap");
                let mut newest = ObserverReader::open(&path, ObserverStart::Newest).unwrap();
                assert_eq!(newest.poll_record().unwrap(), None, "{case}");
                writer.write_batch(&[tx(ours)]);
                assert_eq!(newest.poll_record().unwrap().unwrap().value, ours, "{case}");

                // The draining reader takes NIXL's unread events, then telering's.
                let mut reader = DrainingReader::open(&path).unwrap();
                let mut drained = Vec::new();
                reader
                    .read_records(usize::MAX, |r| drained.push(r.value))
                    .unwrap();
                let nixl: Vec<u64> = (read..written).map(|s| 1_000_000 + s).collect();
                let expected: Vec<u64> = nixl.into_iter().chain(0..=ours).collect();
                assert_eq!(drained, expected, "{case}");
                writer.close().unwrap();
                assert!(stat(&path).unwrap().trailer.unwrap().clean_close);
            }
        }
    }
}

#[test]
fn a_reused_telering_ring_keeps_the_previous_runs_events_for_observers() {
    let dir = TempDir::new("foreign-reuse-own");
    let mut first = ShmWriter::create(options(dir.path(), RingLayout::V1)).unwrap();
    let path = first.path().to_path_buf();
    first.write_batch(&(0..5).map(tx).collect::<Vec<_>>());
    drop(first);
    let mut second = ShmWriter::create(options(dir.path(), RingLayout::V1)).unwrap();
    second.write_batch(&(5..8).map(tx).collect::<Vec<_>>());
    let (got, missed) = observe(&path);
    assert_eq!(got, (0..8).collect::<Vec<_>>());
    assert_eq!(missed, 0);
}
