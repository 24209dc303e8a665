//! Golden files of every NIXL ring generation, built byte by byte from the published
//! layouts (not by telering's writer), read by telering-shm's readers.
//!
//! | version | slot | layout |
//! |---|---|---|
//! | 1 | 56 B | timestamp_us u64 @0, category i32 @8, name [u8; 32] @12, 4 bytes @44, value u64 @48 |
//! | 2 (first form) | 48 B | category i32 @0, name [u8; 32] @4, 4 bytes @36, value u64 @40 |
//! | 2 | 16 B | category i32 @0, type u32 @4, value u64 @8 |
//! | 3 | 16 B | type u32 @0, 4 bytes never initialised @4, value u64 @8 |
//! | 4 | 16 B | same as 3; adds type 20 |

mod common;

use common::TempDir;
use std::path::{Path, PathBuf};
use telering_core::ObserverStart;
use telering_shm::{DrainingReader, Generation, ObserverReader, RingRecord, ShmError, stat};

/// One event as a test writes it into a golden file.
#[derive(Clone, Copy)]
struct Golden {
    timestamp_us: u64,
    category: i32,
    name: &'static str,
    type_number: u32,
    value: u64,
}

const EVENTS: [Golden; 4] = [
    Golden {
        timestamp_us: 1_700_000_000_000_001,
        category: 1,
        name: "agent_tx_bytes",
        type_number: 0,
        value: 4096,
    },
    Golden {
        timestamp_us: 1_700_000_000_000_002,
        category: 5,
        name: "agent_xfer_time",
        type_number: 6,
        value: 250,
    },
    Golden {
        timestamp_us: 1_700_000_000_000_003,
        category: 4,
        name: "agent_err_backend",
        type_number: 10,
        value: 1,
    },
    Golden {
        timestamp_us: 1_700_000_000_000_004,
        category: 0,
        name: "agent_memory_registered",
        type_number: 4,
        value: 1 << 20,
    },
];

const CAPACITY: u64 = 8;

fn put(b: &mut [u8], at: usize, bytes: &[u8]) {
    b[at..at + bytes.len()].copy_from_slice(bytes);
}

/// NIXL's 40-byte header with `events` published and none read.
fn header(b: &mut [u8], version: i32, write_pos: u64) {
    put(b, 0, &write_pos.to_le_bytes());
    put(b, 8, &0u64.to_le_bytes());
    put(b, 16, &version.to_le_bytes());
    put(b, 20, &version.to_le_bytes());
    put(b, 24, &CAPACITY.to_le_bytes());
    put(b, 32, &(CAPACITY - 1).to_le_bytes());
}

/// A file of `version` with `slot`-byte slots holding `events`, each written by
/// `write_slot`. The padding bytes are filled with 0xA5, as an uninitialised slot may
/// hold anything.
fn golden(
    version: i32,
    slot: usize,
    events: &[Golden],
    write_slot: fn(&mut [u8], &Golden),
) -> Vec<u8> {
    let mut b = vec![0xA5u8; 40 + CAPACITY as usize * slot];
    header(&mut b, version, events.len() as u64);
    for (i, e) in events.iter().enumerate() {
        write_slot(&mut b[40 + i * slot..40 + (i + 1) * slot], e);
    }
    b
}

fn name_field(name: &str) -> [u8; 32] {
    let mut f = [0u8; 32];
    f[..name.len()].copy_from_slice(name.as_bytes());
    f
}

fn v1_slot(s: &mut [u8], e: &Golden) {
    put(s, 0, &e.timestamp_us.to_le_bytes());
    put(s, 8, &e.category.to_le_bytes());
    put(s, 12, &name_field(e.name));
    // 44..48 left as the fill: NIXL never initialises them.
    put(s, 48, &e.value.to_le_bytes());
}

fn v2_named_slot(s: &mut [u8], e: &Golden) {
    put(s, 0, &e.category.to_le_bytes());
    put(s, 4, &name_field(e.name));
    put(s, 40, &e.value.to_le_bytes());
}

fn v2_slot(s: &mut [u8], e: &Golden) {
    put(s, 0, &e.category.to_le_bytes());
    put(s, 4, &e.type_number.to_le_bytes());
    put(s, 8, &e.value.to_le_bytes());
}

fn v3_slot(s: &mut [u8], e: &Golden) {
    put(s, 0, &e.type_number.to_le_bytes());
    put(s, 8, &e.value.to_le_bytes());
}

struct Case {
    generation: Generation,
    bytes: Vec<u8>,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            generation: Generation::V1,
            bytes: golden(1, 56, &EVENTS, v1_slot),
        },
        Case {
            generation: Generation::V2Named,
            bytes: golden(2, 48, &EVENTS, v2_named_slot),
        },
        Case {
            generation: Generation::V2,
            bytes: golden(2, 16, &EVENTS, v2_slot),
        },
        Case {
            generation: Generation::V3,
            bytes: golden(3, 16, &EVENTS, v3_slot),
        },
        Case {
            generation: Generation::V4,
            bytes: golden(4, 16, &EVENTS, v3_slot),
        },
    ]
}

fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn drain_records(path: &Path) -> Vec<RingRecord> {
    let mut reader = DrainingReader::open(path).unwrap();
    let mut out = Vec::new();
    reader.read_records(usize::MAX, |r| out.push(r)).unwrap();
    out
}

#[test]
fn every_generation_is_detected_and_drained_from_a_golden_file() {
    let dir = TempDir::new("golden");
    for case in cases() {
        let g = case.generation;
        let path = write(&dir, &format!("{g:?}"), &case.bytes);
        let info = stat(&path).unwrap();
        assert_eq!(info.generation, g);
        assert_eq!(
            (info.version, info.capacity, info.fill),
            (g.version(), CAPACITY, 4)
        );
        assert_eq!(info.trailer, None);

        let records = drain_records(&path);
        assert_eq!(records.len(), EVENTS.len(), "{g:?}");
        for (i, (r, e)) in records.iter().zip(&EVENTS).enumerate() {
            assert_eq!(r.slot, Some(i as u64), "{g:?}");
            assert_eq!(r.value, e.value, "{g:?}");
            assert_eq!(r.name_lossy(), e.name, "{g:?}");
            assert_eq!(r.category, e.category, "{g:?} {}", e.name);
            assert_eq!(
                r.timestamp_us,
                g.has_timestamps().then_some(e.timestamp_us),
                "{g:?}"
            );
            let typed = !g.has_names();
            assert_eq!(r.type_number, typed.then_some(e.type_number), "{g:?}");
            assert!(r.problems().is_empty(), "{g:?}: {:?}", r.problems());
            let event = r.to_event().unwrap();
            assert_eq!((event.name(), event.value()), (Ok(e.name), e.value));
        }
        // The draining reader wrote read_pos and nothing else.
        let after = std::fs::read(&path).unwrap();
        assert_eq!(after[8..16], 4u64.to_le_bytes(), "{g:?}");
        assert_eq!(after[..8], case.bytes[..8]);
        assert_eq!(after[16..], case.bytes[16..]);
        assert_eq!(stat(&path).unwrap().fill, 0);
    }
}

#[test]
fn rings_without_a_trailer_are_refused_by_observers_at_once() {
    let dir = TempDir::new("golden-observe");
    for case in cases() {
        let g = case.generation;
        // Empty (write_pos == read_pos == 0) as well as holding events: the answer is
        // the same, because the file says it (no trailer), not the slots.
        let mut empty = case.bytes.clone();
        empty[0..8].fill(0);
        for (what, bytes) in [("full", &case.bytes), ("empty", &empty)] {
            let path = write(&dir, &format!("{g:?}-{what}"), bytes);
            let err = ObserverReader::open(&path, ObserverStart::Oldest).unwrap_err();
            assert!(
                matches!(err, ShmError::NoSlotStamps { generation, .. } if generation == g),
                "{g:?} {what}: {err:?}"
            );
            assert!(err.to_string().contains("draining reader"), "{err}");
            assert_eq!(&std::fs::read(&path).unwrap(), bytes, "{g:?}: file changed");
        }
    }
}

#[test]
fn v1_padding_at_offset_44_is_not_taken_for_corruption() {
    // `golden` fills offset 44 of every slot with 0xA5A5A5A5, which as a stamp would
    // claim a sequence far from the ring's: a ring without a trailer is not judged by it.
    let dir = TempDir::new("golden-padding");
    let path = write(&dir, "nixl-v1", &golden(1, 56, &EVENTS, v1_slot));
    let mut reader = DrainingReader::open(&path).unwrap();
    let mut n = 0;
    while let Some(e) = reader.pop().unwrap() {
        assert_eq!(e.value(), EVENTS[n].value);
        n += 1;
    }
    assert_eq!(n, 4);
}

#[test]
fn unknown_type_numbers_are_named_and_the_read_goes_on() {
    let dir = TempDir::new("golden-unknown");
    let mut events = EVENTS;
    events[1].type_number = 77;
    events[2].type_number = 20; // the dropped-events counter: version 4 only
    for (version, generation) in [(3, Generation::V3), (4, Generation::V4)] {
        let path = write(
            &dir,
            &format!("v{version}"),
            &golden(version, 16, &events, v3_slot),
        );
        let records = drain_records(&path);
        assert_eq!(records.len(), 4);
        assert_eq!(records[1].name_lossy(), "unknown_type_77");
        assert_eq!(records[1].value, 250);
        let dropped = if generation == Generation::V4 {
            "agent_telemetry_events_dropped"
        } else {
            "unknown_type_20"
        };
        assert_eq!(records[2].name_lossy(), dropped);
        assert_eq!(records[3].name_lossy(), "agent_memory_registered");
        // The strict API returns them too: `unknown_type_N` is a valid name.
        let path = write(
            &dir,
            &format!("v{version}-strict"),
            &golden(version, 16, &events, v3_slot),
        );
        let mut reader = DrainingReader::open(&path).unwrap();
        let mut names = Vec::new();
        while let Some(e) = reader.pop().unwrap() {
            names.push(e.name().unwrap().to_owned());
        }
        assert_eq!(names[1], "unknown_type_77");
    }
}

#[test]
fn bytes_after_the_ring_are_refused_in_every_generation_unless_they_are_the_trailer() {
    let dir = TempDir::new("golden-trailing");
    for case in cases() {
        let mut bytes = case.bytes.clone();
        bytes.extend_from_slice(b"garbage!");
        let g = case.generation;
        let path = write(&dir, &format!("{g:?}-tail"), &bytes);
        let err = stat(&path).unwrap_err();
        assert!(
            matches!(err, ShmError::InconsistentSize { .. }),
            "{g:?}: {err}"
        );
        assert!(DrainingReader::open(&path).is_err(), "{g:?}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "left untouched");
    }
}

#[test]
fn an_unknown_type_in_version_2_reads_as_custom_as_in_every_generation() {
    let dir = TempDir::new("golden-v2-unknown");
    let mut events = EVENTS;
    events[1].type_number = 77; // stored category 5 (PERFORMANCE) is kept only for known types
    let path = write(&dir, "v2", &golden(2, 16, &events, v2_slot));
    let records = drain_records(&path);
    assert_eq!(records[1].name_lossy(), "unknown_type_77");
    assert_eq!(records[1].category, 7, "CUSTOM");
    assert_eq!(
        records[0].category, 1,
        "a known type keeps its stored TRANSFER"
    );
}

#[test]
fn the_two_version_2_forms_are_told_apart_by_size_and_other_sizes_refused() {
    let dir = TempDir::new("golden-v2-size");
    let named = golden(2, 48, &EVENTS, v2_named_slot);
    let typed = golden(2, 16, &EVENTS, v2_slot);
    assert_eq!(
        stat(&write(&dir, "named", &named)).unwrap().generation,
        Generation::V2Named
    );
    assert_eq!(
        stat(&write(&dir, "typed", &typed)).unwrap().generation,
        Generation::V2
    );
    for (what, mut bytes) in [("named+8", named.clone()), ("typed-8", typed.clone())] {
        if what.ends_with("+8") {
            bytes.extend_from_slice(&[0; 8]);
        } else {
            bytes.truncate(bytes.len() - 8);
        }
        let path = write(&dir, what, &bytes);
        for err in [
            stat(&path).unwrap_err(),
            DrainingReader::open(&path).unwrap_err(),
            ObserverReader::open(&path, ObserverStart::Oldest).unwrap_err(),
        ] {
            assert!(
                matches!(err, ShmError::InconsistentSize { size, .. } if size == bytes.len() as u64),
                "{what}: {err:?}"
            );
            let text = err.to_string();
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert!(text.contains(&format!("{} bytes", bytes.len())), "{text}");
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{what}: file changed");
    }
}

#[test]
fn short_files_of_16_byte_generations_are_refused_unchanged() {
    let dir = TempDir::new("golden-short");
    for version in [3, 4] {
        let mut bytes = golden(version, 16, &EVENTS, v3_slot);
        bytes.truncate(bytes.len() - 1);
        let path = write(&dir, &format!("v{version}"), &bytes);
        let err = DrainingReader::open(&path).unwrap_err();
        assert!(matches!(err, ShmError::InconsistentSize { .. }), "{err:?}");
        assert!(err.to_string().contains("at least 168 bytes"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), bytes);
    }
}

#[test]
fn a_draining_reader_follows_a_nixl_writer_across_the_wrap() {
    // NIXL's writer protocol, by hand: write the slot, then publish write_pos. The
    // ring of 8 holds 7; 20 events go through it in rounds.
    let dir = TempDir::new("golden-wrap");
    let mut bytes = golden(4, 16, &[], v3_slot);
    let path = write(&dir, "v4", &bytes);
    let mut reader = DrainingReader::open(&path).unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    use std::os::unix::fs::FileExt;
    let mut next = 0u64;
    let mut got = Vec::new();
    while next < 20 {
        let read_pos = {
            file.read_exact_at(&mut bytes[..16], 0).unwrap();
            u64::from_le_bytes(bytes[8..16].try_into().unwrap())
        };
        // Fill every free slot.
        let mut w = next % CAPACITY;
        while (w + 1) % CAPACITY != read_pos && next < 20 {
            let mut slot = [0u8; 16];
            slot[0..4].copy_from_slice(&1u32.to_le_bytes()); // agent_rx_bytes
            slot[8..16].copy_from_slice(&next.to_le_bytes());
            file.write_all_at(&slot, 40 + w * 16).unwrap();
            next += 1;
            w = next % CAPACITY;
            file.write_all_at(&w.to_le_bytes(), 0).unwrap();
        }
        reader.read_records(3, |r| got.push(r.value)).unwrap();
    }
    while reader
        .read_records(usize::MAX, |r| got.push(r.value))
        .unwrap()
        > 0
    {}
    assert_eq!(got, (0..20).collect::<Vec<_>>());
}
