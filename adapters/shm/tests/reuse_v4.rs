//! A version-4 ring of a dead writer is reused in place as a version-1 ring is: the
//! inode stays, a reader left open receives both runs, and the trailer (72 bytes,
//! with `dropped_unrepresentable`) starts afresh. Another layout is another shape: the
//! file is replaced.

mod common;

use common::TempDir;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use telering_core::builtin;
use telering_core::{Category, Event, EventName, OverflowPolicy};
use telering_shm::{DrainingReader, Generation, RingLayout, ShmWriter, WriterOptions, stat};

fn options(dir: &Path, layout: RingLayout) -> WriterOptions {
    let mut o = WriterOptions::new(dir, "agent");
    o.capacity = 16;
    o.policy = OverflowPolicy::DropNewest;
    o.layout = layout;
    o
}

fn tx(value: u64) -> Event {
    Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, value)
}

#[test]
fn a_dead_writers_version_4_ring_is_reused_in_place_and_read_across_the_restart() {
    let dir = TempDir::new("reuse-v4");
    let mut w = ShmWriter::create(options(dir.path(), RingLayout::V4)).unwrap();
    let path = w.path().to_path_buf();
    let ino = std::fs::metadata(&path).unwrap().ino();
    let custom = Event::new(1, Category::Custom, EventName::new("q").unwrap(), 1);
    assert_eq!(w.write_batch(&[tx(0), tx(1), tx(2), custom]), 3);
    assert_eq!(
        stat(&path)
            .unwrap()
            .trailer
            .unwrap()
            .dropped_unrepresentable,
        1
    );
    let mut reader = DrainingReader::open(&path).unwrap();
    assert_eq!(reader.pop_record().unwrap().unwrap().value, 0);
    drop(w);

    let mut w = ShmWriter::create(options(dir.path(), RingLayout::V4)).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino, "same inode");
    let info = stat(&path).unwrap();
    assert_eq!(info.generation, Generation::V4);
    assert!(info.writer_alive);
    let trailer = info.trailer.unwrap();
    assert_eq!(trailer.writer_pid, std::process::id());
    assert_eq!(trailer.dropped_unrepresentable, 0, "the new run's counter");
    assert_eq!(w.write_batch(&[tx(3), tx(4)]), 2);
    let mut got = Vec::new();
    reader
        .read_records(usize::MAX, |r| {
            assert_eq!(r.type_number, Some(0));
            got.push(r.value);
        })
        .unwrap();
    assert_eq!(
        got,
        [1, 2, 3, 4],
        "the first run's unread events, then the second's"
    );
    drop((reader, w));

    // Version 1 is another shape: the version-4 file is replaced.
    let _w = ShmWriter::create(options(dir.path(), RingLayout::V1)).unwrap();
    assert_ne!(std::fs::metadata(&path).unwrap().ino(), ino);
    assert_eq!(stat(&path).unwrap().generation, Generation::V1);
}
