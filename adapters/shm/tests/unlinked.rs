//! A reader that unlinks the ring file under a running writer (NIXL's current reader
//! unlinks every ring file of another version than its own): at its next heartbeat or
//! flush the writer makes the file again at the path, in the same layout, and counts
//! the events it wrote into the unlinked file as dropped.

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
        assert_eq!(
            writer.events_dropped(),
            7,
            "the 3 + 4 events written since the last check"
        );
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
        assert_eq!(
            got,
            vec![
                ("agent_telemetry_events_dropped".to_string(), 7),
                ("agent_tx_bytes".to_string(), 12)
            ],
            "{layout:?}"
        );
        let trailer = stat(&path).unwrap().trailer.unwrap();
        assert_eq!(
            (trailer.dropped_ring_full, trailer.dropped_staging),
            (0, 7),
            "lost before reaching this file"
        );
        writer.close().unwrap();
    }
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
