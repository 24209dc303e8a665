//! A ring file re-created in place under a running reader: NIXL's writer opens the
//! same path, truncates the file to its own size (which removes telering's trailer)
//! and lays the header out again. Readers check the file again, map it again and go
//! on with it as a new ring; while it is too short to be a ring they report the
//! truncation and recover once it is valid again. NIXL's version-1 writer re-creates
//! its ring at the same size (no truncation to see): the draining reader notices the
//! header laid out again and neither repeats nor invents events. The NIXL layouts are
//! written byte by byte here.

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

/// NIXL's version-1 writer (0.5.1 to 1.0.1), byte by byte: a 40-byte header and
/// 56-byte slots, no trailer, no stamps. It publishes an event by writing its slot,
/// then `write_pos`; when it starts, it re-creates the ring in place at the same
/// size (the same inode) with both positions 0.
struct NixlV1 {
    file: std::fs::File,
    capacity: u64,
}

impl NixlV1 {
    /// Starts a writer at `path`: the file is made (or re-created in place) with the
    /// header laid out again. `zeroed`: the slots are zeroed as well (the file was
    /// truncated first), rather than keeping the previous run's bytes.
    fn start(path: &Path, capacity: u64, zeroed: bool) -> NixlV1 {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap();
        if zeroed {
            file.set_len(0).unwrap();
        }
        file.set_len(40 + capacity * 56).unwrap();
        let mut header = Vec::new();
        for word in [0u64, 0] {
            header.extend_from_slice(&word.to_le_bytes());
        }
        header.extend_from_slice(&1i32.to_le_bytes());
        header.extend_from_slice(&1i32.to_le_bytes());
        header.extend_from_slice(&capacity.to_le_bytes());
        header.extend_from_slice(&(capacity - 1).to_le_bytes());
        file.write_all_at(&header, 0).unwrap();
        NixlV1 { file, capacity }
    }

    fn position(&self, at: u64) -> u64 {
        let mut b = [0u8; 8];
        self.file.read_exact_at(&mut b, at).unwrap();
        u64::from_le_bytes(b)
    }

    /// Publishes `agent_tx_bytes` events of these values; panics if the ring is full.
    fn write(&self, values: impl IntoIterator<Item = u64>) {
        for value in values {
            let w = self.position(0);
            let next = (w + 1) & (self.capacity - 1);
            assert_ne!(next, self.position(8), "full");
            let mut slot = [0u8; 56];
            slot[..8].copy_from_slice(&(1_700_000_000_000_000 + value).to_le_bytes());
            slot[8..12].copy_from_slice(&1i32.to_le_bytes());
            slot[12..26].copy_from_slice(b"agent_tx_bytes");
            slot[48..].copy_from_slice(&value.to_le_bytes());
            self.file.write_all_at(&slot, 40 + w * 56).unwrap();
            self.file.write_all_at(&next.to_le_bytes(), 0).unwrap();
        }
    }
}

#[test]
fn a_draining_reader_neither_repeats_nor_invents_events_when_a_nixl_v1_writer_restarts() {
    // (capacity, events of the first run, of them read before the restart, zeroed)
    for (capacity, first, read, zeroed) in [
        (64, 40, 40, false), // caught up: the next run's slots 0.. must not be skipped
        (64, 72, 72, false), // wrapped: slot 8 onwards holds the first run's last events
        (64, 40, 30, false), // 10 unread when the writer restarted (NIXL discards them)
        (4096, 3000, 3000, true), // zeroed slots past the new write_pos
    ] {
        let dir = TempDir::new("recreated-v1");
        let path = dir.path().join("agent");
        let nixl = NixlV1::start(&path, capacity, false);
        let mut reader = DrainingReader::open(&path).unwrap();
        let mut got = Vec::new();
        for chunk in (0..first).collect::<Vec<_>>().chunks(capacity as usize / 2) {
            nixl.write(chunk.iter().copied());
            let left = (read - got.len() as u64) as usize;
            reader.read_records(left, |r| got.push(r.value)).unwrap();
        }
        assert_eq!(got, (0..read).collect::<Vec<_>>());
        drop(nixl);
        let nixl = NixlV1::start(&path, capacity, zeroed);
        nixl.write(1000..1010);
        assert_eq!(
            drain(&mut reader).unwrap(),
            (1000..1010).collect::<Vec<_>>(),
            "capacity {capacity}, {first} written, {read} read before the restart"
        );
        nixl.write(1010..1012);
        assert_eq!(drain(&mut reader).unwrap(), [1010, 1011]);
    }
}
