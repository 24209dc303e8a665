//! A reader that unlinks the ring file under a running writer (NIXL's current reader
//! unlinks every ring file of another version than its own): at its next heartbeat or
//! flush, or its next batch once a second has passed since its last check, the writer
//! makes the file again at the path, in the same layout, and counts the events of the
//! unlinked file no reader took as dropped.

mod common;

use common::TempDir;
use std::path::Path;
use telering_core::builtin;
use telering_core::{Category, Event, OverflowPolicy};
use telering_shm::{DrainingReader, Generation, RingLayout, ShmWriter, WriterOptions, stat};

fn options(dir: &Path, layout: RingLayout) -> WriterOptions {
    let mut o = WriterOptions::new(dir, "u");
    o.capacity = 64;
    o.policy = OverflowPolicy::DropNewest;
    o.layout = layout;
    o
}

fn tx(value: u64) -> Event {
    Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, value)
}

#[test]
fn a_writer_makes_its_unlinked_file_again_and_counts_what_went_into_it_as_dropped() {
    for (layout, generation) in [
        (RingLayout::V1, Generation::V1),
        (RingLayout::V4, Generation::V4),
    ] {
        let dir = TempDir::new("unlinked");
        let mut writer = ShmWriter::create(options(dir.path(), layout)).unwrap();
        let path = writer.path().to_path_buf();
        writer.write_batch(&(0..5).map(tx).collect::<Vec<_>>());
        writer.heartbeat(); // the file is in place: nothing lost so far
        assert_eq!(writer.events_dropped(), 0);
        writer.write_batch(&(5..8).map(tx).collect::<Vec<_>>());
        std::fs::remove_file(&path).unwrap();
        writer.write_batch(&(8..12).map(tx).collect::<Vec<_>>());
        writer.flush().unwrap();

        let info = stat(&path).expect("made again at the same path");
        assert_eq!(info.generation, generation);
        assert_eq!(info.capacity, 64);
        assert!(info.writer_alive);
        // Nobody read the file before it was unlinked (NIXL's reader unlinks a file
        // of another version unread): all 12 events went with it, however long
        // before the unlink they were written.
        let lost = writer.events_dropped();
        assert_eq!(lost, 12, "{layout:?}");
        assert_eq!(
            writer.events_published(),
            12 + 1,
            "12 events and the drop report"
        );
        writer.write_batch(&[tx(12)]);
        let mut reader = DrainingReader::open(&path).unwrap();
        let mut got = Vec::new();
        reader
            .read_records(usize::MAX, |r| {
                got.push((r.name_lossy().into_owned(), r.value))
            })
            .unwrap();
        let expected = vec![
            ("agent_telemetry_events_dropped".to_string(), 12),
            ("agent_tx_bytes".to_string(), 12),
        ];
        assert_eq!(got, expected, "{layout:?}");
        let trailer = stat(&path).unwrap().trailer.unwrap();
        assert_eq!(
            (trailer.dropped_ring_full, trailer.dropped_staging),
            (0, lost),
            "lost before reaching this file"
        );
        writer.close().unwrap();
    }
}

#[test]
fn events_a_reader_took_before_it_unlinked_the_file_are_delivered_and_the_rest_lost() {
    let dir = TempDir::new("unlinked-read");
    let mut writer = ShmWriter::create(options(dir.path(), RingLayout::V1)).unwrap();
    let path = writer.path().to_path_buf();
    writer.write_batch(&(0..10).map(tx).collect::<Vec<_>>());
    writer.heartbeat();
    // A reader takes 6 of the 10, then unlinks the file.
    let mut reader = DrainingReader::open(&path).unwrap();
    let mut taken = 0;
    reader.read_records(6, |_| taken += 1).unwrap();
    assert_eq!(taken, 6);
    drop(reader);
    std::fs::remove_file(&path).unwrap();
    writer.flush().unwrap();
    assert_eq!(writer.events_lost_unlinked(), 4, "the 4 it did not take");
    let trailer = stat(&path).unwrap().trailer.unwrap();
    assert_eq!(trailer.dropped_staging, 4);
    writer.close().unwrap();
}

#[test]
fn a_writer_whose_path_names_another_file_leaves_that_file_alone() {
    let dir = TempDir::new("unlinked-other");
    let mut writer = ShmWriter::create(options(dir.path(), RingLayout::V1)).unwrap();
    let path = writer.path().to_path_buf();
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, b"someone else's data").unwrap();
    writer.write_batch(&[tx(1)]);
    writer.heartbeat();
    assert_eq!(std::fs::read(&path).unwrap(), b"someone else's data");
    assert_eq!(writer.write_batch(&[tx(2)]), 0);
    assert_eq!(
        writer.events_dropped(),
        2,
        "the event in the unlinked file and the next"
    );
}

#[test]
fn a_writer_that_only_writes_batches_notices_its_unlinked_file_within_seconds() {
    let dir = TempDir::new("unlinked-batches");
    let mut o = options(dir.path(), RingLayout::V4);
    o.capacity = 1 << 16; // never full here: every event is published somewhere
    let mut writer = ShmWriter::create(o).unwrap();
    let path = writer.path().to_path_buf();
    writer.write_batch(&[tx(0)]);
    std::fs::remove_file(&path).unwrap();
    // No heartbeat, no flush: only batches, as a busy agent's exporter writes them.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut next = 1;
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the file was not made again"
        );
        writer.write_batch(&[tx(next)]);
        next += 1;
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let lost = writer.events_dropped();
    assert!(
        lost >= 1,
        "at least the first event went into the unlinked file"
    );
    let trailer = stat(&path).unwrap().trailer.unwrap();
    assert_eq!(trailer.dropped_staging, lost);
    // Everything written is either lost with the unlinked file or in the new one.
    let mut reader = DrainingReader::open(&path).unwrap();
    let mut in_file = 0;
    reader
        .read_records(usize::MAX, |r| {
            if r.name_lossy() == "agent_tx_bytes" {
                in_file += 1;
            }
        })
        .unwrap();
    assert_eq!(lost + in_file, next);
}
