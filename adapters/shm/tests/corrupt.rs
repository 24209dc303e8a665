//! Corrupted, truncated, wrong-version and foreign files: every reader refuses them
//! with a typed error that says what is wrong, and leaves the bytes untouched.

mod common;

use common::{TempDir, seq_event};
use rustix::fs::{FileType, Mode};
use std::path::Path;
use telering_core::ObserverStart;
use telering_core::ring::RegionError;
use telering_shm::{DrainingReader, ObserverReader, ShmError, ShmWriter, WriterOptions, stat};

const CAPACITY: usize = 16;
const RING_LEN: usize = 40 + CAPACITY * 56;

/// The bytes of a valid file: capacity 16, five events, closed.
fn good_file(dir: &TempDir) -> Vec<u8> {
    let mut o = WriterOptions::new(dir.path(), "good");
    o.capacity = CAPACITY as u32;
    let mut w = ShmWriter::create(o).unwrap();
    w.write_batch(&(0..5).map(seq_event).collect::<Vec<_>>());
    let path = w.path().to_path_buf();
    w.close().unwrap();
    std::fs::read(path).unwrap()
}

fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}
fn put_i32(b: &mut [u8], at: usize, v: i32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// What error a mutation must produce.
#[derive(Debug)]
enum Expect {
    Header(fn(&RegionError) -> bool),
    Trailer(&'static str),
    /// A `version` no generation has.
    Version(i32),
    /// A size that fits no layout of the header's version.
    Size,
    /// A file that ends inside the trailer, this many bytes after the last slot.
    TrailerCut(u64),
    /// Any typed refusal.
    Any,
}

/// Opens `path` with every reader and checks each error; the file must be unchanged.
fn assert_refused(path: &Path, what: &str, expect: &Expect) {
    let before = std::fs::read(path).unwrap();
    let errors = [
        stat(path).err(),
        DrainingReader::open(path).err(),
        ObserverReader::open(path, ObserverStart::Oldest).err(),
    ];
    for err in errors {
        let err = err.unwrap_or_else(|| panic!("{what}: accepted"));
        let ok = match (&err, expect) {
            (ShmError::BadHeader { source, .. }, Expect::Header(f)) => f(source),
            (ShmError::BadTrailer { field, .. }, Expect::Trailer(want)) => field == want,
            (ShmError::TrailerCut { present, .. }, Expect::TrailerCut(want)) => present == want,
            (ShmError::UnknownVersion { found, .. }, Expect::Version(want)) => found == want,
            (ShmError::InconsistentSize { .. }, Expect::Size) => true,
            (_, Expect::Any) => true,
            _ => false,
        };
        assert!(ok, "{what}: unexpected error {err:?}");
        let text = err.to_string();
        assert!(text.contains(&path.display().to_string()), "{what}: {text}");
    }
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "{what}: file bytes changed"
    );
}

#[test]
fn corrupted_files_are_refused_with_typed_errors_and_left_unchanged() {
    let dir = TempDir::new("corrupt");
    let good = good_file(&dir);
    let too_short: fn(&RegionError) -> bool = |e| matches!(e, RegionError::TooShort { .. });
    let bad_capacity: fn(&RegionError) -> bool = |e| matches!(e, RegionError::BadCapacity { .. });

    let mut cases: Vec<(String, Vec<u8>, Expect)> = Vec::new();
    for len in [0, 1, 16, 39, 40, 41, 100, RING_LEN - 56, RING_LEN - 1] {
        cases.push((
            format!("truncated at {len}"),
            good[..len].to_vec(),
            Expect::Header(too_short),
        ));
    }
    for len in [RING_LEN + 8, RING_LEN + 32, RING_LEN + 63] {
        cases.push((
            format!("truncated in the trailer at {len}"),
            good[..len].to_vec(),
            Expect::TrailerCut((len - RING_LEN) as u64),
        ));
    }
    for capacity in [0u64, 1, 3, 1000, 1 << 31, 1 << 40, u64::MAX] {
        let mut b = good.clone();
        put_u64(&mut b, 24, capacity);
        put_u64(&mut b, 32, capacity.wrapping_sub(1));
        cases.push((
            format!("capacity {capacity}"),
            b,
            Expect::Header(bad_capacity),
        ));
    }
    {
        // A power-of-two capacity the file is far too short for: refused before mapping.
        let mut b = good.clone();
        put_u64(&mut b, 24, 1 << 28);
        put_u64(&mut b, 32, (1 << 28) - 1);
        cases.push((
            "capacity 2^28 in a small file".into(),
            b,
            Expect::Header(too_short),
        ));
    }
    for mask in [0u64, 14, 16, u64::MAX] {
        let mut b = good.clone();
        put_u64(&mut b, 32, mask);
        cases.push((
            format!("mask {mask}"),
            b,
            Expect::Header(|e| matches!(e, RegionError::BadMask { .. })),
        ));
    }
    for (field, at) in [("write_pos", 0), ("read_pos", 8)] {
        for value in [CAPACITY as u64, 1000, u64::MAX] {
            let mut b = good.clone();
            put_u64(&mut b, at, value);
            cases.push((
                format!("{field} {value}"),
                b,
                Expect::Header(|e| matches!(e, RegionError::PositionOutOfRange { .. })),
            ));
        }
    }
    for version in [0, 5, 99, -1, i32::MIN] {
        let mut b = good.clone();
        put_i32(&mut b, 16, version);
        cases.push((format!("version {version}"), b, Expect::Version(version)));
    }
    // A version-1 file relabelled as version 2: its size fits neither version-2 form.
    {
        let mut b = good.clone();
        put_i32(&mut b, 16, 2);
        cases.push(("version 2 with 56-byte slots".into(), b, Expect::Size));
    }
    {
        let mut b = good.clone();
        b[RING_LEN + 8..RING_LEN + 12].copy_from_slice(&2u32.to_le_bytes());
        cases.push((
            "trailer layout_version 2".into(),
            b,
            Expect::Trailer("layout_version"),
        ));
        let mut b = good.clone();
        b[RING_LEN + 12..RING_LEN + 16].copy_from_slice(&32u32.to_le_bytes());
        cases.push(("trailer_size 32".into(), b, Expect::Trailer("trailer_size")));
    }
    {
        // Random bytes (a fixed xorshift sequence, so failures reproduce).
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let random: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        cases.push(("random bytes".into(), random, Expect::Any));
    }

    for (i, (what, bytes, expect)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("case-{i}"));
        std::fs::write(&path, bytes).unwrap();
        assert_refused(&path, what, expect);
    }
}

#[test]
fn a_version_mismatch_is_reported_and_the_file_is_kept() {
    let dir = TempDir::new("version");
    let mut b = good_file(&dir);
    put_i32(&mut b, 16, 2);
    let path = dir.path().join("v2");
    std::fs::write(&path, &b).unwrap();
    let err = DrainingReader::open(&path).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(
            "the file is 1000 bytes, but a version-2 ring of 16 slots is exactly 808 bytes"
        ),
        "{err}"
    );
    assert!(text.contains(&path.display().to_string()), "{err}");
    put_i32(&mut b, 16, 7);
    std::fs::write(&path, &b).unwrap();
    let err = DrainingReader::open(&path).unwrap_err();
    assert!(
        err.to_string().contains("field `version` (offset 16) is 7"),
        "{err}"
    );
    // NIXL's reader unlinks the file here; ours must not.
    assert_eq!(std::fs::read(&path).unwrap(), b);
}

#[test]
fn a_directory_is_not_a_ring_file() {
    let dir = TempDir::new("dir");
    let path = dir.path().join("a-directory");
    std::fs::create_dir(&path).unwrap();
    for err in [
        stat(&path).unwrap_err(),
        DrainingReader::open(&path).unwrap_err(),
        ObserverReader::open(&path, ObserverStart::Newest).unwrap_err(),
    ] {
        assert!(
            matches!(
                err,
                ShmError::NotRegularFile {
                    kind: "directory",
                    ..
                }
            ),
            "{err:?}"
        );
    }
    assert!(path.is_dir());
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = TempDir::new("fifo");
    let path = dir.path().join("a-fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &path,
        FileType::Fifo,
        Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    // Opening a FIFO without a writer would block forever without O_NONBLOCK.
    for err in [
        stat(&path).unwrap_err(),
        DrainingReader::open(&path).unwrap_err(),
        ObserverReader::open(&path, ObserverStart::Newest).unwrap_err(),
    ] {
        assert!(
            matches!(err, ShmError::NotRegularFile { kind: "FIFO", .. }),
            "{err:?}"
        );
    }
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let dir = TempDir::new("missing");
    let path = dir.path().join("nobody");
    let err = DrainingReader::open(&path).unwrap_err();
    assert!(matches!(err, ShmError::Io { .. }));
    assert!(err.to_string().contains("nobody"), "{err}");
}

#[test]
fn a_corrupt_slot_is_an_error_naming_the_slot_and_reading_continues() {
    let dir = TempDir::new("slot");
    let mut b = good_file(&dir);
    // Slot 2: category 99; slot 3: a name without NUL.
    put_i32(&mut b, 40 + 2 * 56 + 8, 99);
    b[40 + 3 * 56 + 12..40 + 3 * 56 + 44].fill(b'x');
    let path = dir.path().join("bad-slots");
    std::fs::write(&path, &b).unwrap();

    let mut r = DrainingReader::open(&path).unwrap();
    assert_eq!(r.pop().unwrap().unwrap().value(), 0);
    assert_eq!(r.pop().unwrap().unwrap().value(), 1);
    let err = r.pop().unwrap_err();
    assert!(
        matches!(err, ShmError::CorruptEvent { slot: Some(2), .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("slot 2"), "{err}");
    assert!(err.to_string().contains("category"), "{err}");
    let err = r.pop().unwrap_err();
    assert!(
        matches!(err, ShmError::CorruptEvent { slot: Some(3), .. }),
        "{err:?}"
    );
    assert_eq!(r.pop().unwrap().unwrap().value(), 4);
    assert_eq!(r.pop().unwrap(), None);

    let mut o = ObserverReader::open(&path, ObserverStart::Oldest).unwrap();
    let mut results = Vec::new();
    o.read_batch(usize::MAX, |e| results.push(e.map(|e| e.value()).is_ok()))
        .unwrap();
    assert_eq!(results, [true, true, false, false, true]);
}

#[test]
fn inconsistent_slot_stamps_are_refused_by_stamp_following_readers() {
    let dir = TempDir::new("stamps");
    let good = good_file(&dir); // events 0..5 in slots 0..5, stamps (seq << 2) | 0b10
    let stamp_at = |slot: usize| 40 + slot * 56 + 44;
    let cases: [(&str, usize, u32); 3] = [
        // Event 7 cannot sit in slot 2 of a 16-slot ring.
        ("stamp of another slot's event", 2, 7 << 2 | 0b10),
        // Far ahead of the newest event (5 events written).
        (
            "stamp a billion events ahead",
            3,
            (1_000_000_000 + 3) << 2 | 0b10,
        ),
        // Older than one ring's worth behind the newest (wrapping back past zero).
        ("stamp from long ago", 1, 0x3FFF_FFF0 << 2 | 0b10),
    ];
    for (i, (what, slot, stamp)) in cases.into_iter().enumerate() {
        let mut b = good.clone();
        b[stamp_at(slot)..stamp_at(slot) + 4].copy_from_slice(&stamp.to_le_bytes());
        let path = dir.path().join(format!("stamps-{i}"));
        std::fs::write(&path, &b).unwrap();
        let err = ObserverReader::open(&path, ObserverStart::Oldest).unwrap_err();
        match &err {
            ShmError::BadSlotStamp {
                slot: s, stamp: st, ..
            } => {
                assert_eq!((*s, *st), (slot as u64, stamp), "{what}")
            }
            other => panic!("{what}: unexpected {other:?}"),
        }
        assert!(err.to_string().contains(&format!("slot {slot}")), "{err}");
        assert!(err.to_string().contains("(offset 44)"), "{err}");
        // A DropNewest ring does not need stamps to be drained.
        let mut r = DrainingReader::open(&path).unwrap();
        let mut n = 0;
        while r.pop().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 5, "{what}");
    }
}
