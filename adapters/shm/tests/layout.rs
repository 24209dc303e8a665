//! Reads a file this crate wrote using nothing but the byte offsets documented in
//! `docs/FORMAT.md`, so that a layout change cannot pass silently.

mod common;

use common::{TempDir, seq_event};
use telering_core::OverflowPolicy;
use telering_shm::{ClockId, DrainingReader, ShmWriter, WriterOptions};

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn a_written_file_matches_the_documented_byte_layout() {
    let dir = TempDir::new("layout");
    let mut o = WriterOptions::new(dir.path(), "agent");
    o.capacity = 8;
    o.clock = ClockId::RealtimeCoarse;
    let mut w = ShmWriter::create(o).unwrap();
    let events: Vec<_> = (0..10).map(seq_event).collect();
    // 6 written, 4 dropped; the last slot takes the report of the 4.
    assert_eq!(w.write_batch(&events), 6);
    let path = w.path().to_path_buf();
    // Drain two events so read_pos moves.
    let mut r = DrainingReader::open(&path).unwrap();
    r.pop().unwrap().unwrap();
    r.pop().unwrap().unwrap();
    w.add_dropped(4);
    w.close().unwrap(); // writes the drop report (4 staging) into slot 7
    let b = std::fs::read(&path).unwrap();

    // Header, 40 bytes.
    let capacity = 8usize;
    assert_eq!(b.len(), 40 + capacity * 56 + 64);
    assert_eq!(u64_at(&b, 0), 0, "write_pos: 8 slots written → wraps to 0");
    assert_eq!(u64_at(&b, 8), 2, "read_pos");
    assert_eq!(i32_at(&b, 16), 1, "version");
    assert_eq!(i32_at(&b, 20), 1, "expected_version");
    assert_eq!(u64_at(&b, 24), 8, "capacity");
    assert_eq!(u64_at(&b, 32), 7, "mask");

    // Slots, 56 bytes each from offset 40.
    for seq in 0..6u64 {
        let s = 40 + seq as usize * 56;
        let e = seq_event(seq);
        assert_eq!(u64_at(&b, s), e.timestamp_us(), "slot {seq} timestamp_us");
        assert_eq!(i32_at(&b, s + 8), e.raw_category(), "slot {seq} category");
        assert_eq!(&b[s + 12..s + 44], e.name_field(), "slot {seq} name");
        assert_eq!(u64_at(&b, s + 48), seq, "slot {seq} value");
        // Slot stamp at offset 44: (seq << 2) | 0b10 — "written", busy bit clear.
        assert_eq!(
            u32_at(&b, s + 44),
            (seq as u32) << 2 | 0b10,
            "slot {seq} stamp"
        );
    }
    for (slot, lost, what) in [(6, 4, "4 ring-full"), (7, 4, "4 staging")] {
        let report = 40 + slot * 56;
        assert_eq!(i32_at(&b, report + 8), 4, "report category ERROR");
        assert_eq!(
            &b[report + 12..report + 43],
            b"agent_telemetry_events_dropped\0"
        );
        assert_eq!(u64_at(&b, report + 48), lost, "{what}");
        assert_eq!(u32_at(&b, report + 44), (slot as u32) << 2 | 0b10);
    }

    // Trailer, 64 bytes after the last slot.
    let t = 40 + capacity * 56;
    assert_eq!(&b[t..t + 8], b"TLRNGTRL", "magic");
    assert_eq!(u32_at(&b, t + 8), 1, "layout_version");
    assert_eq!(u32_at(&b, t + 12), 64, "trailer_size");
    assert_eq!(u32_at(&b, t + 16), std::process::id(), "writer_pid");
    assert_eq!(u32_at(&b, t + 20), ClockId::RealtimeCoarse as u32, "clock");
    assert_eq!(
        u32_at(&b, t + 24),
        1 | 4,
        "flags: clean close, DropNewest, unread_at_start recorded"
    );
    assert_eq!(u32_at(&b, t + 28), 0, "unread_at_start: a new file");
    assert_eq!(u64_at(&b, t + 32), 8, "published (6 events + 2 reports)");
    assert_eq!(u64_at(&b, t + 40), 4, "dropped_ring_full");
    assert_eq!(u64_at(&b, t + 48), 4, "dropped_staging");
    let heartbeat = u64_at(&b, t + 56);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    assert!(
        heartbeat <= now && now - heartbeat < 60_000_000,
        "heartbeat_us"
    );
}

#[test]
fn the_overwrite_oldest_flag_is_bit_1() {
    let dir = TempDir::new("layout-flag");
    let mut o = WriterOptions::new(dir.path(), "agent");
    o.capacity = 2;
    o.policy = OverflowPolicy::OverwriteOldest;
    let w = ShmWriter::create(o).unwrap();
    let path = w.path().to_path_buf();
    let b = std::fs::read(&path).unwrap();
    assert_eq!(u32_at(&b, 40 + 2 * 56 + 24), 2 | 4);
    w.close().unwrap();
    let b = std::fs::read(&path).unwrap();
    assert_eq!(u32_at(&b, 40 + 2 * 56 + 24), 1 | 2 | 4);
}
