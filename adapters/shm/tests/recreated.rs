//! A ring file re-created in place under a running reader: NIXL's writer opens the
//! same path, truncates the file to its own size (which removes telering's trailer)
//! and lays the header out again. Readers check the file again, map it again and go
//! on with it as a new ring; while it is too short to be a ring they report the
//! truncation and recover once it is valid again. The NIXL layout is written byte by
//! byte here.

mod common;

use common::TempDir;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use telering_core::builtin;
use telering_core::{Category, Event, ObserverStart, OverflowPolicy};
use telering_shm::{
    DrainingReader, ObserverReader, RingLayout, ShmError, ShmWriter, WriterOptions,
};

const CAPACITY: u64 = 128;

/// What NIXL's version-4 writer does to an existing file: truncate it to
/// `40 + capacity × 16` bytes, reset the header, then publish `events` (type 0,
/// values 500 + i).
fn nixl_v4_recreate(path: &Path, events: u64) {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    file.set_len(40 + CAPACITY * 16).unwrap();
    let mut header = Vec::new();
    for word in [0u64, 0] {
        header.extend_from_slice(&word.to_le_bytes());
    }
    header.extend_from_slice(&4i32.to_le_bytes());
    header.extend_from_slice(&4i32.to_le_bytes());
    header.extend_from_slice(&CAPACITY.to_le_bytes());
    header.extend_from_slice(&(CAPACITY - 1).to_le_bytes());
    file.write_all_at(&header, 0).unwrap();
    for i in 0..events {
        let mut slot = [0xA7u8; 16];
        slot[..4].copy_from_slice(&0u32.to_le_bytes());
        slot[8..].copy_from_slice(&(500 + i).to_le_bytes());
        file.write_all_at(&slot, 40 + i * 16).unwrap();
    }
    file.write_all_at(&events.to_le_bytes(), 0).unwrap();
}

fn options(dir: &Path) -> WriterOptions {
    let mut o = WriterOptions::new(dir, "a");
    o.capacity = CAPACITY as u32;
    o.policy = OverflowPolicy::DropNewest;
    o.layout = RingLayout::V4;
    o
}

fn tx(value: u64) -> Event {
    Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, value)
}

fn drain(reader: &mut DrainingReader) -> Result<Vec<u64>, ShmError> {
    let mut got = Vec::new();
    reader.read_records(usize::MAX, |r| got.push(r.value))?;
    Ok(got)
}

#[test]
fn a_draining_reader_goes_on_with_a_ring_re_created_in_place() {
    let dir = TempDir::new("recreated");
    let mut writer = ShmWriter::create(options(dir.path())).unwrap();
    let path = writer.path().to_path_buf();
    writer.write_batch(&(0..10).map(tx).collect::<Vec<_>>());
    let mut reader = DrainingReader::open(&path).unwrap();
    assert_eq!(drain(&mut reader).unwrap(), (0..10).collect::<Vec<_>>());

    nixl_v4_recreate(&path, 30);
    assert_eq!(
        drain(&mut reader).unwrap(),
        (500..530).collect::<Vec<_>>(),
        "the 30 events of the re-created ring"
    );
    assert_eq!(reader.info().trailer, None);
    // The telering writer noticed it lost its file: it writes nothing more into it.
    assert_eq!(writer.write_batch(&[tx(99)]), 0);
    assert!(drain(&mut reader).unwrap().is_empty());
}

#[test]
fn a_reader_reports_a_file_too_short_to_be_a_ring_and_recovers_once_it_is_one_again() {
    let dir = TempDir::new("recreated-short");
    let mut writer = ShmWriter::create(options(dir.path())).unwrap();
    let path = writer.path().to_path_buf();
    writer.write_batch(&[tx(1)]);
    let mut reader = DrainingReader::open(&path).unwrap();
    assert_eq!(drain(&mut reader).unwrap(), vec![1]);

    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(0)
        .unwrap();
    for _ in 0..2 {
        let err = drain(&mut reader).unwrap_err();
        assert!(matches!(err, ShmError::Truncated { len: 0, .. }), "{err}");
    }
    nixl_v4_recreate(&path, 3);
    assert_eq!(drain(&mut reader).unwrap(), vec![500, 501, 502]);
}

#[test]
fn an_observer_checks_a_re_created_ring_again_and_names_why_it_cannot_follow_it() {
    let dir = TempDir::new("recreated-observer");
    let mut writer = ShmWriter::create(options(dir.path())).unwrap();
    let path = writer.path().to_path_buf();
    writer.write_batch(&[tx(1)]);
    let mut observer = ObserverReader::open(&path, ObserverStart::Oldest).unwrap();
    assert_eq!(observer.poll_record().unwrap().unwrap().value, 1);
    nixl_v4_recreate(&path, 3);
    // NIXL's writer stamps no slots: only a draining reader can read the new ring.
    let err = observer.poll_record().unwrap_err();
    assert!(matches!(err, ShmError::NoSlotStamps { .. }), "{err}");
}
