//! A ring whose header contradicts its own trailer — `read_pos` moved past
//! `write_pos`, or positions naming slots the writer never published — is refused by
//! the draining reader with [`ShmError::InconsistentPositions`] naming the file and
//! the field, and the file is left byte-identical. Rings whose positions agree with
//! the trailer (new, reused in place with unread events, NIXL-made) still open.

mod common;

use common::TempDir;
use std::os::unix::fs::FileExt;
use std::path::Path;
use telering_core::{Category, Event, OverflowPolicy, builtin};
use telering_shm::{DrainingReader, RingLayout, ShmError, ShmWriter, WriterOptions, stat};

const CAPACITY: u64 = 64;

fn tx(value: u64) -> Event {
    Event::new(
        1_000 + value,
        Category::Transfer,
        builtin::AGENT_TX_BYTES.name,
        value,
    )
}

/// A closed telering ring of `layout` holding events 0..5, unread.
fn ring(dir: &Path, layout: RingLayout) -> std::path::PathBuf {
    let mut o = WriterOptions::new(dir, "agent");
    o.capacity = CAPACITY as u32;
    o.policy = OverflowPolicy::DropNewest;
    o.layout = layout;
    let mut w = ShmWriter::create(o).unwrap();
    let events: Vec<_> = (0..5).map(|v| tx(v * 4)).collect();
    assert_eq!(w.write_batch(&events), 5);
    let path = w.path().to_path_buf();
    w.close().unwrap();
    path
}

fn set_positions(path: &Path, write_pos: u64, read_pos: u64) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(&write_pos.to_le_bytes(), 0).unwrap();
    f.write_all_at(&read_pos.to_le_bytes(), 8).unwrap();
}

#[test]
fn positions_the_trailer_contradicts_are_refused_naming_the_field_and_the_file_is_untouched() {
    // (write_pos, read_pos, field at fault)
    let cases = [
        (5, 10, "read_pos"),   // read_pos past write_pos: 59 "unread" slots never written
        (40, 0, "read_pos"),   // 40 unread, 5 published
        (40, 35, "write_pos"), // 5 unread, as many as published, in slots never written
        (5, 1, "write_pos"),   // 4 unread, but the oldest of them was never written
    ];
    for layout in [RingLayout::V1, RingLayout::V4] {
        for (w, r, field) in cases {
            let dir = TempDir::new("positions");
            let path = ring(dir.path(), layout);
            if (w, r) == (5, 1) {
                let stamp_at = match layout {
                    RingLayout::V1 => 40 + 56 + 44,
                    _ => 40 + 16 + 4,
                };
                let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                f.write_all_at(&[0; 4], stamp_at).unwrap();
            }
            set_positions(&path, w, r);
            let before = std::fs::read(&path).unwrap();
            let err = DrainingReader::open(&path).unwrap_err();
            match &err {
                ShmError::InconsistentPositions {
                    path: p, field: f, ..
                } => {
                    assert_eq!(
                        (p.as_path(), *f),
                        (path.as_path(), field),
                        "{layout:?} {w},{r}: {err}"
                    )
                }
                other => panic!("{layout:?} {w},{r}: {other:?}"),
            }
            let text = err.to_string();
            assert!(
                text.contains(&path.display().to_string()) && text.contains(field),
                "{text}"
            );
            assert!(text.contains("left untouched"), "{text}");
            assert_eq!(
                std::fs::read(&path).unwrap(),
                before,
                "{layout:?} {w},{r}: the file changed"
            );
            // stat only looks: it still describes the file.
            assert!(stat(&path).is_ok());
        }
    }
}

#[test]
fn consistent_positions_still_open() {
    for layout in [RingLayout::V1, RingLayout::V4] {
        let dir = TempDir::new("positions-ok");
        let path = ring(dir.path(), layout);
        // Two events taken: read_pos 2, write_pos 5.
        set_positions(&path, 5, 2);
        let mut reader = DrainingReader::open(&path).unwrap();
        let mut got = Vec::new();
        reader
            .read_records(usize::MAX, |r| got.push(r.value))
            .unwrap();
        assert_eq!(got, [8, 12, 16], "{layout:?}");
    }
}

#[test]
fn a_ring_reused_with_unread_events_of_the_previous_run_opens() {
    let dir = TempDir::new("positions-reused");
    let path = ring(dir.path(), RingLayout::V1);
    // The next run publishes 1 event; 5 of the previous run are still unread.
    let mut o = WriterOptions::new(dir.path(), "agent");
    o.capacity = CAPACITY as u32;
    let mut w = ShmWriter::create(o).unwrap();
    w.write_batch(&[tx(100)]);
    let t = stat(&path).unwrap().trailer.unwrap();
    assert_eq!((t.published, t.unread_at_start), (1, Some(5)));
    let mut reader = DrainingReader::open(&path).unwrap();
    let mut got = Vec::new();
    reader
        .read_records(usize::MAX, |r| got.push(r.value))
        .unwrap();
    assert_eq!(got, [0, 4, 8, 12, 16, 100]);
    w.close().unwrap();
}
