//! A writer restarted with another capacity (another `NIXL_TELEMETRY_BUFFER_SIZE`) or
//! another layout replaces the dead writer's ring by a new file: the old ring's
//! unread events are carried into the new ring, oldest dropped first when they do
//! not fit, and what is not carried is counted (trailer `dropped_staging`, an
//! in-band report, [`ShmWriter::events_lost_replaced`]); a draining reader still
//! reading the old file keeps them instead, each read exactly once.

mod common;

use common::{TempDir, is_drop_report};
use std::path::Path;
use telering_core::builtin;
use telering_core::{Category, Event, OverflowPolicy};
use telering_shm::{DrainingReader, Generation, RingLayout, ShmWriter, WriterOptions, stat};

fn options(dir: &Path, capacity: u32, layout: RingLayout) -> WriterOptions {
    let mut o = WriterOptions::new(dir, "agent");
    o.capacity = capacity;
    o.policy = OverflowPolicy::DropNewest;
    o.layout = layout;
    o
}

fn tx(value: u64) -> Event {
    Event::new(
        1_000 + value,
        Category::Transfer,
        builtin::AGENT_TX_BYTES.name,
        value,
    )
}

/// A dead writer's ring of `capacity` slots holding `unread` events 0.. unread.
fn leftover(dir: &Path, capacity: u32, layout: RingLayout, unread: u64) {
    let mut w = ShmWriter::create(options(dir, capacity, layout)).unwrap();
    assert_eq!(
        w.write_batch(&(0..unread).map(tx).collect::<Vec<_>>()),
        unread as usize
    );
    w.close().unwrap();
}

/// Every record in the ring: (is a drop report, value).
fn drain_all(path: &Path) -> Vec<(bool, u64)> {
    let mut reader = DrainingReader::open(path).unwrap();
    let mut got = Vec::new();
    reader
        .read_records(usize::MAX, |r| {
            got.push((r.name_lossy() == "agent_telemetry_events_dropped", r.value))
        })
        .unwrap();
    got
}

#[test]
fn a_larger_ring_carries_every_unread_event_of_the_ring_it_replaces() {
    let dir = TempDir::new("replaced-larger");
    leftover(dir.path(), 64, RingLayout::V1, 50);
    let mut w = ShmWriter::create(options(dir.path(), 128, RingLayout::V1)).unwrap();
    assert_eq!(w.events_lost_replaced(), 0);
    w.write_batch(&[tx(50)]);
    let path = w.path().to_path_buf();
    let expected: Vec<_> = (0..51).map(|v| (false, v)).collect();
    assert_eq!(drain_all(&path), expected);
    let info = stat(&path).unwrap();
    assert_eq!(info.capacity, 128);
    let t = info.trailer.unwrap();
    assert_eq!((t.published, t.events_dropped()), (51, 0));
    w.close().unwrap();
}

#[test]
fn a_smaller_ring_keeps_the_newest_unread_events_and_counts_the_oldest_as_replaced() {
    let dir = TempDir::new("replaced-smaller");
    leftover(dir.path(), 64, RingLayout::V1, 50);
    // 16 slots hold 15: the report of the 36 oldest, then events 36..50.
    let w = ShmWriter::create(options(dir.path(), 16, RingLayout::V1)).unwrap();
    assert_eq!(w.events_lost_replaced(), 36);
    assert_eq!(w.events_dropped(), 0, "not this writer's events");
    let path = w.path().to_path_buf();
    let t = stat(&path).unwrap().trailer.unwrap();
    assert_eq!((t.dropped_staging, t.dropped_ring_full), (36, 0));
    let mut expected = vec![(true, 36)];
    expected.extend((36..50).map(|v| (false, v)));
    let got = drain_all(&path);
    assert_eq!(got, expected);
    // Every unread event of the old ring is either read or counted.
    let read = got.iter().filter(|(report, _)| !report).count() as u64;
    assert_eq!(read + t.dropped_staging, 50);
    w.close().unwrap();
}

#[test]
fn a_layout_change_carries_what_the_new_layout_holds() {
    let dir = TempDir::new("replaced-layout");
    // Version 1 to version 4: carried (version 4 keeps no timestamps).
    leftover(dir.path(), 64, RingLayout::V1, 10);
    let mut w = ShmWriter::create(options(dir.path(), 64, RingLayout::V4)).unwrap();
    let path = w.path().to_path_buf();
    assert_eq!(stat(&path).unwrap().generation, Generation::V4);
    assert_eq!(w.events_lost_replaced(), 0);
    let expected: Vec<_> = (0..10).map(|v| (false, v)).collect();
    assert_eq!(drain_all(&path), expected);
    w.write_batch(&(10..15).map(tx).collect::<Vec<_>>());
    w.close().unwrap();

    // Version 4 to version 1: version 4 has no timestamps to carry, and a made-up
    // one would lie: counted instead, and reported.
    let w = ShmWriter::create(options(dir.path(), 64, RingLayout::V1)).unwrap();
    assert_eq!(w.events_lost_replaced(), 5);
    assert_eq!(drain_all(&path), vec![(true, 5)]);
    assert_eq!(stat(&path).unwrap().trailer.unwrap().dropped_staging, 5);
    w.close().unwrap();
}

#[test]
fn a_draining_reader_of_the_replaced_ring_reads_its_unread_events_once() {
    let dir = TempDir::new("replaced-reader");
    leftover(dir.path(), 64, RingLayout::V1, 20);
    let path = dir.path().join("agent");
    let mut reader = DrainingReader::open(&path).unwrap();
    assert_eq!(reader.pop().unwrap().unwrap().value(), 0);
    // The reader holds the old file: its 19 unread events stay there for it.
    let mut w = ShmWriter::create(options(dir.path(), 16, RingLayout::V1)).unwrap();
    assert_eq!(w.events_lost_replaced(), 0);
    w.write_batch(&[tx(100)]);
    let mut got = Vec::new();
    while let Some(e) = reader.pop().unwrap() {
        assert!(!is_drop_report(&e), "{e:?}");
        got.push(e.value());
    }
    let mut expected: Vec<_> = (1..20).collect();
    expected.push(100);
    assert_eq!(
        got, expected,
        "the old file's rest, then the new file's events"
    );
    assert_eq!(reader.info().capacity, 16);
    drop(reader);
    w.close().unwrap();
}

#[test]
fn unread_events_that_wrap_around_the_old_ring_are_carried_in_order() {
    let dir = TempDir::new("replaced-wrapped");
    let mut w = ShmWriter::create(options(dir.path(), 16384, RingLayout::V1)).unwrap();
    let path = w.path().to_path_buf();
    w.write_batch(&(0..6000).map(tx).collect::<Vec<_>>());
    assert_eq!(drain_all(&path).len(), 6000);
    // 10,000 unread, from slot 6000 across the end of the ring to slot 5616.
    assert_eq!(
        w.write_batch(&(6000..16000).map(tx).collect::<Vec<_>>()),
        10_000
    );
    w.close().unwrap();
    // 8192 slots hold 8191: the report of the 1810 oldest, then the newest 8190.
    let w = ShmWriter::create(options(dir.path(), 8192, RingLayout::V1)).unwrap();
    assert_eq!(w.events_lost_replaced(), 1810);
    let mut expected = vec![(true, 1810)];
    expected.extend((6000 + 1810..16000).map(|v| (false, v)));
    assert_eq!(drain_all(&path), expected);
    w.close().unwrap();
}

#[test]
fn slots_a_nixl_writer_left_that_do_not_decode_are_counted_not_copied() {
    let dir = TempDir::new("replaced-nixl");
    let path = dir.path().join("agent");
    // A NIXL version-1 ring of 64 slots, no trailer: 10 unread events, of which
    // those in slots 2, 5 and 7 have empty names (NIXL's writer stores such events).
    let mut b = Vec::new();
    for word in [10u64, 0] {
        b.extend_from_slice(&word.to_le_bytes());
    }
    b.extend_from_slice(&1i32.to_le_bytes());
    b.extend_from_slice(&1i32.to_le_bytes());
    b.extend_from_slice(&64u64.to_le_bytes());
    b.extend_from_slice(&63u64.to_le_bytes());
    for slot in 0..64u64 {
        let mut s = [0u8; 56];
        s[..8].copy_from_slice(&(1_000 + slot).to_le_bytes());
        s[8..12].copy_from_slice(&1i32.to_le_bytes());
        if ![2, 5, 7].contains(&slot) {
            s[12..26].copy_from_slice(b"agent_tx_bytes");
        }
        s[48..].copy_from_slice(&slot.to_le_bytes());
        b.extend_from_slice(&s);
    }
    std::fs::write(&path, &b).unwrap();
    let w = ShmWriter::create(options(dir.path(), 128, RingLayout::V1)).unwrap();
    assert_eq!(w.events_lost_replaced(), 3);
    let mut expected = vec![(true, 3)];
    expected.extend([0, 1, 3, 4, 6, 8, 9].map(|v| (false, v)));
    assert_eq!(drain_all(&path), expected);
    let t = stat(&path).unwrap().trailer.unwrap();
    assert_eq!((t.published, t.dropped_staging), (8, 3));
    w.close().unwrap();
}

#[test]
fn an_observer_that_read_the_replaced_ring_does_not_see_the_carried_events_again() {
    let dir = TempDir::new("replaced-observer");
    let mut w = ShmWriter::create(options(dir.path(), 64, RingLayout::V1)).unwrap();
    let path = w.path().to_path_buf();
    let mut observer =
        telering_shm::ObserverReader::open(&path, telering_core::ObserverStart::Oldest).unwrap();
    w.write_batch(&(0..10).map(tx).collect::<Vec<_>>());
    let mut seen = Vec::new();
    while let Some(e) = observer.poll().unwrap() {
        seen.push(e.value());
    }
    w.close().unwrap();
    // Restarted with another size: the 10 unread events are carried (for a draining
    // reader), then the new run writes 100, 101.
    let mut w = ShmWriter::create(options(dir.path(), 128, RingLayout::V1)).unwrap();
    w.write_batch(&[tx(100), tx(101)]);
    while let Some(e) = observer.poll().unwrap() {
        seen.push(e.value());
    }
    let mut expected: Vec<u64> = (0..10).collect();
    expected.extend([100, 101]);
    assert_eq!(seen, expected, "each event once");
    assert_eq!(observer.events_missed(), 0);
    // A draining reader of the new file gets them all.
    let got: Vec<u64> = drain_all(&path).into_iter().map(|(_, v)| v).collect();
    assert_eq!(got, expected);
    w.close().unwrap();
}
