//! The C reader on ring files NIXL's writers produce, built byte by byte from the
//! published layouts (not by telering's writer): a version-4 ring, whose events have
//! no timestamp and take their names from NIXL's type table, and a version-1 ring
//! holding events telering's strict decoder refuses, delivered as found.

mod common;

use common::{compile, program, run_ok};
use std::path::Path;

const CAPACITY: u64 = 8;

fn put(b: &mut [u8], at: usize, bytes: &[u8]) {
    b[at..at + bytes.len()].copy_from_slice(bytes);
}

/// A ring file of `version` with `slot`-byte slots, NIXL's 40-byte header (no
/// trailer) and `slots` published, none read.
fn ring_file(path: &Path, version: i32, slot: usize, slots: &[Vec<u8>]) {
    let mut b = vec![0u8; 40 + CAPACITY as usize * slot];
    put(&mut b, 0, &(slots.len() as u64).to_le_bytes());
    put(&mut b, 16, &version.to_le_bytes());
    put(&mut b, 20, &version.to_le_bytes());
    put(&mut b, 24, &CAPACITY.to_le_bytes());
    put(&mut b, 32, &(CAPACITY - 1).to_le_bytes());
    for (i, s) in slots.iter().enumerate() {
        assert_eq!(s.len(), slot);
        put(&mut b, 40 + i * slot, s);
    }
    std::fs::write(path, b).unwrap();
}

fn hex(name: &[u8]) -> String {
    if name.is_empty() {
        return "-".into();
    }
    name.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs `generations.c` on `path`: one line per event, then the generation.
fn c_read(path: &Path) -> Vec<String> {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("generations.c", scratch.path());
    let out = run_ok(program(&exe).arg(path));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn c_reader_reads_a_nixl_version_4_ring_without_timestamps_named_from_the_type_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nixl-v4");
    // type u32 @0, 4 bytes never initialised @4, value u64 @8.
    let typed = |type_number: u32, value: u64| {
        let mut s = vec![0xA5u8; 16];
        put(&mut s, 0, &type_number.to_le_bytes());
        put(&mut s, 8, &value.to_le_bytes());
        s
    };
    ring_file(
        &path,
        4,
        16,
        &[
            typed(0, 4096),
            typed(6, 250),
            typed(4, 1 << 20),
            typed(20, 3),
            typed(77, 9),
        ],
    );
    let before = std::fs::read(&path).unwrap();
    let lines = c_read(&path);
    // flags: 0 (no timestamp); LENIENT|UNKNOWN_TYPE = 18 for the unknown type.
    // Categories implied by the names: TRANSFER 1, PERFORMANCE 5, MEMORY 0, ERROR 4;
    // an unknown type is CUSTOM 7.
    let expected = [
        format!("0 1 0 4096 {}", hex(b"agent_tx_bytes")),
        format!("0 5 0 250 {}", hex(b"agent_xfer_time")),
        format!("0 0 0 1048576 {}", hex(b"agent_memory_registered")),
        format!("0 4 0 3 {}", hex(b"agent_telemetry_events_dropped")),
        format!("18 7 0 9 {}", hex(b"unknown_type_77")),
        "generation 4".to_owned(),
    ];
    assert_eq!(lines, expected);
    // The draining reader moved `read_pos` (offset 8) to the end, and nothing else.
    let after = std::fs::read(&path).unwrap();
    assert_eq!(after[8..16], 5u64.to_le_bytes());
    assert_eq!((&after[..8], &after[16..]), (&before[..8], &before[16..]));
}

#[test]
fn c_reader_delivers_foreign_version_1_events_as_found_with_their_problems_flagged() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nixl-v1");
    // timestamp_us u64 @0, category i32 @8, name [u8; 32] @12, 4 bytes @44 (left
    // uninitialised by NIXL's writer), value u64 @48.
    let event = |ts: u64, category: i32, name: &[u8], value: u64| {
        let mut s = vec![0u8; 56];
        put(&mut s, 0, &ts.to_le_bytes());
        put(&mut s, 8, &category.to_le_bytes());
        put(&mut s, 12, name);
        put(&mut s, 44, &[0xA5; 4]);
        put(&mut s, 48, &value.to_le_bytes());
        s
    };
    // A 31-byte name cut inside "é" (0xC3 0xA9) by strncpy: 30 ASCII bytes + 0xC3.
    let mut cut = vec![b'n'; 30];
    cut.push(0xC3);
    ring_file(
        &path,
        1,
        56,
        &[
            event(1_700_000_000_000_001, 1, b"agent_tx_bytes", 4096),
            event(1_700_000_000_000_002, 1, b"", 7),
            event(1_700_000_000_000_003, 8, b"agent_rx_bytes", 11),
            event(1_700_000_000_000_004, 6, &cut, 13),
        ],
    );
    let lines = c_read(&path);
    // HAS_TIMESTAMP 1; LENIENT 2; UNKNOWN_CATEGORY 4; BAD_NAME 8.
    let expected = [
        format!("1 1 1700000000000001 4096 {}", hex(b"agent_tx_bytes")),
        "11 1 1700000000000002 7 -".to_owned(),
        format!("7 8 1700000000000003 11 {}", hex(b"agent_rx_bytes")),
        format!("11 6 1700000000000004 13 {}", hex(&cut)),
        "generation 1".to_owned(),
    ];
    assert_eq!(lines, expected);
}
