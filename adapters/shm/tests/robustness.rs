//! Files truncated or replaced under a reader, and rings without a telering trailer
//! (written by NIXL, or laid out by `telering-core` alone in a memory window).

mod common;

use common::{TempDir, check_event, seq_event};
use memmap2::MmapOptions;
use std::fs::File;
use telering_core::ring::{HeaderInfo, RingRegion};
use telering_core::{ObserverStart, OverflowPolicy, Producer};
use telering_shm::{DrainingReader, ObserverReader, ShmError, ShmWriter, WriterOptions, stat};

fn writer(dir: &TempDir, capacity: u32) -> ShmWriter {
    let mut o = WriterOptions::new(dir.path(), "agent");
    o.capacity = capacity;
    ShmWriter::create(o).unwrap()
}

#[test]
fn a_file_truncated_under_the_readers_is_an_error_not_a_crash() {
    let dir = TempDir::new("truncate");
    let mut w = writer(&dir, 1024);
    w.write_batch(&(0..10).map(seq_event).collect::<Vec<_>>());
    let path = w.path().to_path_buf();
    let mut drain = DrainingReader::open(&path).unwrap();
    let mut observer = ObserverReader::open(&path, ObserverStart::Oldest).unwrap();
    assert_eq!(drain.pop().unwrap().unwrap().value(), 0);
    assert_eq!(observer.poll().unwrap().unwrap().value(), 0);
    // The writer is done; then someone truncates the file to 100 bytes.
    w.close().unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(100).unwrap();

    for _ in 0..3 {
        let err = drain.pop().unwrap_err();
        assert!(
            matches!(err, ShmError::Truncated { len: 100, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("truncated to 100 bytes"), "{err}");
        let err = drain.read_batch(16, |_| panic!("no event")).unwrap_err();
        assert!(matches!(err, ShmError::Truncated { .. }), "{err:?}");
        let err = observer.poll().unwrap_err();
        assert!(matches!(err, ShmError::Truncated { .. }), "{err:?}");
    }
    // Nothing was written to the file by the readers.
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 100);
}

#[test]
fn readers_finish_the_old_file_then_follow_its_replacement() {
    let dir = TempDir::new("replace");
    let mut w = writer(&dir, 64);
    w.write_batch(&(0..5).map(seq_event).collect::<Vec<_>>());
    let path = w.path().to_path_buf();
    let mut drain = DrainingReader::open(&path).unwrap();
    let mut observer = ObserverReader::open(&path, ObserverStart::Oldest).unwrap();
    assert_eq!(drain.pop().unwrap().unwrap().value(), 0);
    drop(w); // writer gone, 4 events still unread

    // A new writer replaces the file and writes 100, 101.
    let mut w2 = writer(&dir, 32);
    w2.write_batch(&[seq_event(100), seq_event(101)]);

    let mut drained = Vec::new();
    while let Some(e) = drain.pop().unwrap() {
        drained.push(check_event(&e).unwrap());
    }
    assert_eq!(drained, [1, 2, 3, 4, 100, 101]);
    assert_eq!(drain.info().capacity, 32);

    let mut observed = Vec::new();
    while let Some(e) = observer.poll().unwrap() {
        observed.push(check_event(&e).unwrap());
    }
    assert_eq!(observed, [0, 1, 2, 3, 4, 100, 101]);
    assert_eq!(observer.events_missed(), 0);
}

#[test]
fn a_truncated_file_that_was_replaced_is_left_for_the_new_one() {
    let dir = TempDir::new("truncate-replace");
    let w = writer(&dir, 64);
    let path = w.path().to_path_buf();
    let mut drain = DrainingReader::open(&path).unwrap();
    drop(w);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(100) // the header survives, but the size is no ring's
        .unwrap();
    // Not provably a dead writer's ring any more: left untouched until removed.
    let err = ShmWriter::create(WriterOptions::new(dir.path(), "agent")).unwrap_err();
    assert!(matches!(err, ShmError::NotALeftoverRing { .. }), "{err}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 100);
    std::fs::remove_file(&path).unwrap();
    let mut w2 = writer(&dir, 64);
    w2.write_batch(&[seq_event(9)]);
    assert_eq!(drain.pop().unwrap().map(|e| e.value()), Some(9));
}

#[test]
fn the_writer_leaving_with_unlink_does_not_disturb_readers() {
    let dir = TempDir::new("unlinked");
    let mut o = WriterOptions::new(dir.path(), "agent");
    o.unlink_on_close = true;
    let mut w = ShmWriter::create(o).unwrap();
    w.write_batch(&[seq_event(1), seq_event(2)]);
    let mut drain = DrainingReader::open(w.path()).unwrap();
    w.close().unwrap();
    assert_eq!(drain.pop().unwrap().map(|e| e.value()), Some(1));
    assert_eq!(drain.pop().unwrap().map(|e| e.value()), Some(2));
    assert_eq!(drain.pop().unwrap(), None);
}

/// A ring laid out by `telering-core` alone: header and slots, no trailer.
fn core_only_bytes(capacity: u32, events: u64) -> Vec<u8> {
    let len = HeaderInfo::ring_bytes(capacity as u64) as usize;
    let mut memory = vec![0u64; len / 8];
    let ptr = memory.as_mut_ptr().cast::<u8>();
    // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region (its heap buffer
    // does not move with the `Vec`) and only touched through it until copied out.
    let region = unsafe { RingRegion::init(memory, ptr, len, capacity) }.unwrap();
    let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    for seq in 0..events {
        producer.push(&seq_event(seq)).unwrap();
    }
    region
        .owner()
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect()
}

#[test]
fn a_ring_without_trailer_is_read_by_both_readers() {
    let dir = TempDir::new("no-trailer");
    let path = dir.path().join("window");
    std::fs::write(&path, core_only_bytes(16, 6)).unwrap();
    let info = stat(&path).unwrap();
    assert_eq!(
        (info.capacity, info.fill, info.trailer, info.writer_alive),
        (16, 6, None, false)
    );

    // The file cannot say that a core-only window is stamped; its reader knows.
    let err = ObserverReader::open(&path, ObserverStart::Oldest).unwrap_err();
    assert!(matches!(err, ShmError::NoSlotStamps { .. }), "{err:?}");
    let mut observer = ObserverReader::open_core_window(&path, ObserverStart::Oldest).unwrap();
    let mut seen = Vec::new();
    observer
        .read_batch(usize::MAX, |e| seen.push(e.unwrap().value()))
        .unwrap();
    assert_eq!(seen, [0, 1, 2, 3, 4, 5]);

    let mut drain = DrainingReader::open(&path).unwrap();
    let mut drained = Vec::new();
    drain
        .read_batch(usize::MAX, |e| drained.push(e.unwrap().value()))
        .unwrap();
    assert_eq!(drained, seen);
    assert_eq!(stat(&path).unwrap().fill, 0);
}

#[test]
fn a_nixl_written_file_without_stamps_is_drained() {
    // What NIXL's own writer leaves: header, slots with zero at offset 44, exact size.
    let capacity = 4u64;
    let mut b = vec![0u8; HeaderInfo::ring_bytes(capacity) as usize];
    b[0..8].copy_from_slice(&3u64.to_le_bytes()); // write_pos
    b[16..20].copy_from_slice(&1i32.to_le_bytes());
    b[20..24].copy_from_slice(&1i32.to_le_bytes());
    b[24..32].copy_from_slice(&capacity.to_le_bytes());
    b[32..40].copy_from_slice(&(capacity - 1).to_le_bytes());
    for seq in 0..3u64 {
        let at = 40 + seq as usize * 56;
        b[at..at + 56].copy_from_slice(&seq_event(seq).to_wire_bytes());
    }
    let dir = TempDir::new("nixl");
    let path = dir.path().join("nixl-agent");
    std::fs::write(&path, &b).unwrap();
    // An observer cannot follow a ring without stamps, and says so.
    let err = ObserverReader::open(&path, ObserverStart::Oldest).unwrap_err();
    assert!(matches!(err, ShmError::NoSlotStamps { .. }), "{err:?}");
    assert!(err.to_string().contains("draining reader"), "{err}");
    let mut drain = DrainingReader::open(&path).unwrap();
    let mut got = Vec::new();
    while let Some(e) = drain.pop().unwrap() {
        got.push(check_event(&e).unwrap());
    }
    assert_eq!(got, [0, 1, 2]);
    // Only read_pos changed.
    let after = std::fs::read(&path).unwrap();
    assert_eq!(&after[8..16], &3u64.to_le_bytes());
    assert_eq!(after[16..], b[16..]);
}

#[test]
fn a_memfd_window_written_by_the_core_is_read_while_it_is_written() {
    const COUNT: u64 = 100_000;
    let capacity = 256u32;
    let len = HeaderInfo::ring_bytes(capacity as u64);
    let fd = rustix::fs::memfd_create("telering-window", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&fd, len).unwrap();
    let file = File::from(fd);
    let map = MmapOptions::new().len(len as usize).map_raw(&file).unwrap();
    let ptr = map.as_mut_ptr();
    // SAFETY: a fresh, page-aligned shared mapping of `len` bytes, owned by the region
    // (a mapping stays at its address when `MmapRaw` moves); nobody reads it until
    // `init` returns.
    let region = unsafe { RingRegion::init(map, ptr, len as usize, capacity) }.unwrap();

    let mut drain =
        DrainingReader::from_file(file.try_clone().unwrap(), "memfd:telering-window").unwrap();
    let mut observer = ObserverReader::from_core_window(
        file.try_clone().unwrap(),
        "memfd:telering-window",
        ObserverStart::Oldest,
    )
    .unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            // The window's only producer.
            let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
            let mut seq = 0;
            while seq < COUNT {
                if producer.push(&seq_event(seq)).is_ok() {
                    seq += 1;
                } else {
                    std::thread::yield_now();
                }
            }
        });
        let mut next = 0;
        let mut observed = 0u64;
        while next < COUNT {
            let n = drain
                .read_batch(64, |e| {
                    assert_eq!(check_event(&e.unwrap()).unwrap(), next);
                    next += 1;
                })
                .unwrap();
            observer
                .read_batch(usize::MAX, |e| {
                    check_event(&e.unwrap()).unwrap();
                    observed += 1;
                })
                .unwrap();
            if n == 0 {
                std::thread::yield_now();
            }
        }
        while observer.read_batch(usize::MAX, |_| observed += 1).unwrap() > 0 {}
        assert_eq!(observed + observer.events_missed(), COUNT);
    });
    drop(region);
    // The producer pushed while the file was also written nowhere else: no trailer.
    assert_eq!(drain.info().trailer, None);
}

#[test]
fn a_file_truncated_under_the_writer_stops_it_writing_and_counts_the_losses() {
    let dir = TempDir::new("truncate-writer");
    let mut w = writer(&dir, 64);
    assert_eq!(w.write_batch(&[seq_event(0)]), 1);
    std::fs::OpenOptions::new()
        .write(true)
        .open(w.path())
        .unwrap()
        .set_len(10)
        .unwrap();
    // Without the check the next store would raise SIGBUS and kill the process.
    assert_eq!(w.write_batch(&[seq_event(1), seq_event(2)]), 0);
    assert_eq!(w.events_dropped(), 2);
    w.add_dropped(1);
    w.heartbeat();
    assert_eq!(w.events_dropped(), 3);
    let err = w.flush().unwrap_err();
    assert!(
        matches!(err, ShmError::Truncated { len: 10, .. }),
        "{err:?}"
    );
    let err = w.close().unwrap_err();
    assert!(matches!(err, ShmError::Truncated { .. }), "{err:?}");
}

#[test]
fn many_observers_follow_at_once_and_never_change_the_file() {
    let dir = TempDir::new("observers");
    let mut w = writer(&dir, 64);
    let path = w.path().to_path_buf();
    let mut observers: Vec<_> = (0..4)
        .map(|_| ObserverReader::open(&path, ObserverStart::Oldest).unwrap())
        .collect();
    let mut late = None;
    let mut seen = vec![Vec::new(); 4];
    for round in 0..10u64 {
        let events: Vec<_> = (round * 20..round * 20 + 20).map(seq_event).collect();
        assert_eq!(w.write_batch(&events), 20);
        // Drain so the writer never drops; observers run behind or alongside.
        let mut drain = DrainingReader::open(&path).unwrap();
        drain.read_batch(usize::MAX, |_| {}).unwrap();
        if round == 5 {
            late = Some(ObserverReader::open(&path, ObserverStart::Newest).unwrap());
        }
        for (o, seen) in observers.iter_mut().zip(&mut seen) {
            o.read_batch(usize::MAX, |e| seen.push(check_event(&e.unwrap()).unwrap()))
                .unwrap();
        }
    }
    for (o, seen) in observers.iter().zip(&seen) {
        assert_eq!(*seen, (0..200).collect::<Vec<_>>());
        assert_eq!(o.events_missed(), 0);
    }
    let mut late = late.unwrap();
    let mut late_seen = Vec::new();
    late.read_batch(usize::MAX, |e| late_seen.push(e.unwrap().value()))
        .unwrap();
    // It started at event 120 (Newest) but, left unread while 80 events went through
    // a 64-slot ring, was lapped: it sees 136..200 and counts the 16 it missed.
    assert_eq!(late_seen, (136..200).collect::<Vec<_>>());
    assert_eq!(late.events_missed(), 16);

    // Observers only read: with the writer closed, observing changes no byte.
    w.close().unwrap();
    let before = std::fs::read(&path).unwrap();
    let mut o = ObserverReader::open(&path, ObserverStart::Oldest).unwrap();
    while o.poll().unwrap().is_some() {}
    let _ = o.info();
    assert_eq!(std::fs::read(&path).unwrap(), before);
}
