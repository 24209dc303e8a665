//! The version-4 writer (`WriterOptions::layout = RingLayout::V4`): the bytes it lays
//! down, read back by every reader — the draining reader, observers, `stat`, and the
//! standard-library Python reader written from NIXL's layout — and followed by an
//! observer under `OverwriteOldest`.

mod common;

use common::TempDir;
use std::path::Path;
use std::process::Command;
use telering_core::builtin::{self, ErrorStatus};
use telering_core::{Category, Event, EventName, ObserverStart, OverflowPolicy};
use telering_shm::{
    DrainingReader, Generation, ObserverReader, RingLayout, RingRecord, ShmWriter, WriterOptions,
    stat,
};

fn writer(dir: &Path, name: &str, capacity: u32, policy: OverflowPolicy) -> ShmWriter {
    let mut o = WriterOptions::new(dir, name);
    o.capacity = capacity;
    o.policy = policy;
    o.layout = RingLayout::V4;
    ShmWriter::create(o).unwrap()
}

fn builtin_event(e: builtin::BuiltinEvent, value: u64) -> Event {
    Event::new(1_700_000_000_000_000 + value, e.category, e.name, value)
}

fn custom(value: u64) -> Event {
    Event::new(
        7,
        Category::Custom,
        EventName::new("queue_depth").unwrap(),
        value,
    )
}

/// What the writer is given, and what a version-4 ring holds of it: `(type, value)`.
fn workload() -> (Vec<Event>, Vec<(u32, u64)>) {
    let events = vec![
        builtin_event(builtin::AGENT_TX_BYTES, 4096),
        custom(1),
        builtin_event(builtin::AGENT_XFER_TIME, 52),
        builtin_event(ErrorStatus::RemoteDisconnect.event(), 1),
        builtin_event(builtin::AGENT_MEMORY_DEREGISTERED, 1 << 20),
        custom(2),
        // A built-in name under a category NIXL does not imply for it.
        Event::new(1, Category::Backend, builtin::AGENT_RX_BYTES.name, 9),
        builtin_event(builtin::AGENT_RX_REQUESTS_NUM, 3),
    ];
    let stored = vec![(0, 4096), (6, 52), (17, 1), (5, 1 << 20), (3, 3)];
    (events, stored)
}

#[test]
fn the_file_is_laid_out_as_nixl_version_4_with_stamps_at_offset_4() {
    let dir = TempDir::new("v4-bytes");
    let mut w = writer(dir.path(), "agent", 8, OverflowPolicy::DropNewest);
    let (events, stored) = workload();
    assert_eq!(w.write_batch(&events), stored.len());
    assert_eq!(w.events_unrepresentable(), 3);
    assert_eq!(w.events_dropped(), 0);
    let bytes = std::fs::read(w.path()).unwrap();
    // 40-byte header, 8 slots of 16 bytes, 72-byte trailer.
    assert_eq!(bytes.len(), 40 + 8 * 16 + 72);
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    assert_eq!(u64_at(0), stored.len() as u64, "write_pos");
    assert_eq!(u64_at(8), 0, "read_pos");
    assert_eq!(
        (u32_at(16), u32_at(20)),
        (4, 4),
        "version, expected_version"
    );
    assert_eq!((u64_at(24), u64_at(32)), (8, 7), "capacity, mask");
    for (i, (type_number, value)) in stored.iter().enumerate() {
        let slot = 40 + i * 16;
        assert_eq!(u32_at(slot), *type_number, "slot {i} type");
        assert_eq!(u64_at(slot + 8), *value, "slot {i} value");
        // telering's stamp (never 0 once written) sits where NIXL leaves 4 bytes.
        assert_ne!(u32_at(slot + 4), 0, "slot {i} stamp");
    }
    let t = 40 + 8 * 16;
    assert_eq!(&bytes[t..t + 8], b"TLRNGTRL");
    assert_eq!(u32_at(t + 12), 72, "trailer_size");
    assert_eq!(u64_at(t + 64), 3, "dropped_unrepresentable");
    w.close().unwrap();
}

#[test]
fn every_reader_reads_what_the_v4_writer_wrote() {
    let dir = TempDir::new("v4-readers");
    let mut w = writer(dir.path(), "agent", 16, OverflowPolicy::DropNewest);
    let (events, stored) = workload();
    w.write_batch(&events);
    let expect_records = |records: &[RingRecord]| {
        let got: Vec<(u32, u64)> = records
            .iter()
            .map(|r| (r.type_number.unwrap(), r.value))
            .collect();
        assert_eq!(got, stored);
        for r in records {
            assert_eq!(r.timestamp_us, None);
            assert!(r.problems().is_empty(), "{r:?}");
        }
        assert_eq!(records[2].name_lossy(), "agent_err_remote_disconnect");
        assert_eq!(records[2].category_text(), "ERROR");
        assert_eq!(records[1].category_text(), "PERFORMANCE");
    };

    let info = stat(w.path()).unwrap();
    assert_eq!(
        (info.generation, info.version, info.fill),
        (Generation::V4, 4, 5)
    );
    let trailer = info.trailer.unwrap();
    assert_eq!(trailer.dropped_unrepresentable, 3);
    assert_eq!(trailer.published, 5);
    assert_eq!(trailer.writer_pid, std::process::id());

    let mut observer = ObserverReader::open(w.path(), ObserverStart::Oldest).unwrap();
    let mut observed = Vec::new();
    observer
        .read_records(usize::MAX, |r| observed.push(r))
        .unwrap();
    expect_records(&observed);
    assert_eq!(observer.generation(), Generation::V4);

    // The standard-library Python reader, which knows only NIXL's layout.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/python");
    let program = r#"
import sys
from nixl_telemetry_reader import SharedRingBuffer
buf = SharedRingBuffer(sys.argv[1], version=4)
assert buf.generation == "v4", buf.generation
out = []
while (e := buf.pop()) is not None:
    assert e.timestamp_us is None
    out.append("%s %d %d" % (e.name, e.category, e.value))
print("\n".join(out))
"#;
    // Python drains a copy, so the draining reader below still finds every event.
    let copy = dir.path().join("copy");
    std::fs::copy(w.path(), &copy).unwrap();
    let out = Command::new("python3")
        .args(["-c", program, copy.to_str().unwrap()])
        .env("PYTHONPATH", &script)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "agent_tx_bytes 1 4096\nagent_xfer_time 5 52\nagent_err_remote_disconnect 4 1\nagent_memory_deregistered 0 1048576\nagent_rx_requests_num 1 3\n"
    );

    let mut drain = DrainingReader::open(w.path()).unwrap();
    let mut drained = Vec::new();
    drain.read_records(usize::MAX, |r| drained.push(r)).unwrap();
    expect_records(&drained);
    assert_eq!(
        drained.iter().map(|r| r.slot.unwrap()).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    // The strict API gives telering events (no timestamp: 0).
    w.write_batch(&[builtin_event(builtin::AGENT_TX_BYTES, 1)]);
    let e = drain.pop().unwrap().unwrap();
    assert_eq!(
        (e.name(), e.category(), e.value()),
        (Ok("agent_tx_bytes"), Ok(Category::Transfer), 1)
    );
    assert_eq!(stat(w.path()).unwrap().fill, 0);
    drop((drain, observer));
    w.close().unwrap();
}

#[test]
fn losses_are_reported_in_band_as_type_20() {
    let dir = TempDir::new("v4-drops");
    let mut w = writer(dir.path(), "agent", 4, OverflowPolicy::DropNewest);
    let e = builtin_event(builtin::AGENT_TX_BYTES, 1);
    // Capacity 4 holds 3: 2 events and the report of the 3 refused.
    assert_eq!(w.write_batch(&[e; 5]), 2);
    assert_eq!(w.events_dropped(), 3);
    assert_eq!(w.write_batch(&[e]), 0);
    let mut drain = DrainingReader::open(w.path()).unwrap();
    let mut records = Vec::new();
    drain
        .read_records(usize::MAX, |r| records.push((r.type_number, r.value)))
        .unwrap();
    assert_eq!(records, [(Some(0), 1), (Some(0), 1), (Some(20), 3)]);
    w.write_batch(&[e]);
    let report = drain.pop_record().unwrap().unwrap();
    assert_eq!((report.type_number, report.value), (Some(20), 1));
    assert_eq!(report.name_lossy(), "agent_telemetry_events_dropped");
    assert_eq!(
        stat(w.path()).unwrap().trailer.unwrap().dropped_ring_full,
        4
    );
    drop(drain);
    w.close().unwrap();
}

#[test]
fn an_observer_follows_a_v4_flight_recorder_and_counts_every_overwritten_event() {
    const EVENTS: u64 = 20_000;
    let dir = TempDir::new("v4-overwrite");
    let mut w = writer(dir.path(), "recorder", 64, OverflowPolicy::OverwriteOldest);
    let mut observer = ObserverReader::open(w.path(), ObserverStart::Oldest).unwrap();
    let (mut seen, mut last) = (0u64, None::<u64>);
    let mut value = 0u64;
    while value < EVENTS {
        // Bursts larger than the ring, so the observer is lapped again and again.
        let burst: Vec<Event> = (value..(value + 150).min(EVENTS))
            .map(|v| builtin_event(builtin::AGENT_RX_BYTES, v))
            .collect();
        value += burst.len() as u64;
        w.write_batch(&burst);
        observer
            .read_records(usize::MAX, |r| {
                assert_eq!(r.type_number, Some(1));
                if let Some(prev) = last {
                    assert!(r.value > prev, "out of order: {} after {prev}", r.value);
                }
                last = Some(r.value);
                seen += 1;
            })
            .unwrap();
    }
    assert_eq!(w.events_published(), EVENTS);
    assert!(
        observer.events_missed() > 0,
        "the writer should lap the observer"
    );
    assert_eq!(seen + observer.events_missed(), EVENTS);
    assert_eq!(last, Some(EVENTS - 1));
    drop(observer);
    w.close().unwrap();
}

#[test]
fn a_draining_reader_of_a_v4_flight_recorder_reads_as_it_reads_a_v1_one() {
    // The same algorithm runs both layouts: what a draining reader takes from an
    // overwritten ring, and what it counts as lost, does not depend on the layout.
    let dir = TempDir::new("v4-overwrite-drain");
    let events: Vec<Event> = (0..30)
        .map(|v| builtin_event(builtin::AGENT_TX_BYTES, v))
        .collect();
    let mut results = Vec::new();
    for layout in [RingLayout::V1, RingLayout::V4] {
        let mut o = WriterOptions::new(dir.path(), format!("recorder-{layout}"));
        o.capacity = 8;
        o.policy = OverflowPolicy::OverwriteOldest;
        o.layout = layout;
        let mut w = ShmWriter::create(o).unwrap();
        let mut drain = DrainingReader::open(w.path()).unwrap();
        w.write_batch(&events);
        let mut got = Vec::new();
        drain
            .read_records(usize::MAX, |r| got.push(r.value))
            .unwrap();
        // A contiguous tail of the stream, ending with the last event.
        let first = *got.first().unwrap();
        assert_eq!(got, (first..30).collect::<Vec<_>>(), "{layout}");
        results.push((got, drain.events_lost()));
        drop(drain);
        w.close().unwrap();
    }
    assert_eq!(results[0], results[1]);
}

#[test]
fn the_layout_is_chosen_by_name_with_a_typed_error() {
    assert_eq!(" V4 ".parse::<RingLayout>(), Ok(RingLayout::V4));
    let e = "v2".parse::<RingLayout>().unwrap_err();
    assert!(e.to_string().contains("TELERING_RING_LAYOUT=v2"), "{e}");
    assert!(
        e.to_string().contains("v1") && e.to_string().contains("v4"),
        "{e}"
    );
}
