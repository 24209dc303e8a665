//! What the exporter hands to defmt, checked on the host: defmt's `unstable-test`
//! feature collects the encoded bytes of every log statement in a buffer instead of
//! sending them to a global logger. Format-string indices are assigned at run time in
//! this mode, so the tests check the arguments, which are what a firmware sends.

use telering_core::{Category, Event, EventName, OverflowPolicy, Ring, event_name};
use telering_defmt::DefmtExporter;

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| at + from)
}

/// The encoded `{=str}` argument: its length as a little-endian `u32`, then the bytes.
fn encoded_str(s: &str) -> Vec<u8> {
    let mut out = (s.len() as u32).to_le_bytes().to_vec();
    out.extend_from_slice(s.as_bytes());
    out
}

#[test]
fn exported_event_carries_timestamp_name_and_value_in_order() {
    let _ = defmt::export::fetch_bytes();
    let event = Event::new(
        0x1122_3344_5566_7788,
        Category::Transfer,
        event_name!("agent_tx_bytes"),
        0x0102_0304_0506_0708,
    );
    let mut exporter = DefmtExporter::new();
    exporter.export(&event);
    let bytes = defmt::export::fetch_bytes();

    let ts = find(&bytes, &event.timestamp_us().to_le_bytes(), 0).expect("timestamp");
    let name = find(&bytes, &encoded_str("agent_tx_bytes"), ts + 8).expect("name");
    let value = find(&bytes, &event.value().to_le_bytes(), name).expect("value");
    assert!(ts < name && name < value);
    assert_eq!(exporter.events_logged(), 1);
    // Compact: format-string indices and sequence markers (2 bytes each, 7 of them)
    // plus the arguments: 48 bytes, where the text line takes 44 and a frame 68.
    assert_eq!(bytes.len(), 8 + (4 + 14) + 8 + 7 * 2);
}

#[test]
fn drain_logs_every_event_once_in_ring_order() {
    let ring = Ring::<8>::new();
    let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    let name = EventName::new("fw_queue_depth").unwrap();
    for v in 0..5u64 {
        producer
            .push(&Event::new(1_000 + v, Category::Custom, name, 0xAB00 + v))
            .unwrap();
    }
    let _ = defmt::export::fetch_bytes();
    let mut exporter = DefmtExporter::new();
    assert_eq!(exporter.drain(&mut consumer, 3), 3);
    assert_eq!(exporter.drain(&mut consumer, usize::MAX), 2);
    assert_eq!(exporter.drain(&mut consumer, usize::MAX), 0);
    assert_eq!(exporter.events_logged(), 5);

    let bytes = defmt::export::fetch_bytes();
    let mut at = 0;
    for v in 0..5u64 {
        at = find(&bytes, &(1_000 + v).to_le_bytes(), at).expect("timestamp in order");
        at = find(&bytes, &(0xAB00 + v).to_le_bytes(), at).expect("value in order");
    }
}

#[test]
fn event_with_invalid_category_is_still_logged_with_raw_fields() {
    use telering_core::ring::{HEADER_SIZE, HeaderInfo, RingRegion};
    // A ring in "foreign" memory whose slot is then damaged, as a reader of a
    // shared window may find it: category 42 does not exist.
    let mut memory = vec![0u64; HeaderInfo::ring_bytes(2) as usize / 8];
    let len = memory.len() * 8;
    let base: *mut u8 = memory.as_mut_ptr().cast();
    // SAFETY: `memory` is 8-aligned, `len` bytes long, owned by the region (its heap
    // buffer does not move with the `Vec`) and only touched through it and the single
    // write below, made while no handle reads or writes.
    let region = unsafe { RingRegion::init(memory, base, len, 2) }.unwrap();
    let (mut producer, mut consumer) =
        telering_core::ring::split(&region, OverflowPolicy::DropNewest).unwrap();
    producer
        .push(&Event::new(7, Category::Custom, event_name!("x"), 9))
        .unwrap();
    // SAFETY: slot 0 starts at HEADER_SIZE; the category is at offset 8 of the slot;
    // nothing accesses the region concurrently.
    unsafe {
        base.add(HEADER_SIZE + 8)
            .cast::<[u8; 4]>()
            .write(42i32.to_le_bytes())
    };
    let event = consumer.pop().unwrap();
    assert!(event.category().is_err());

    let _ = defmt::export::fetch_bytes();
    DefmtExporter::new().export(&event);
    let bytes = defmt::export::fetch_bytes();
    let ts = find(&bytes, &7u64.to_le_bytes(), 0).expect("timestamp");
    let raw = find(&bytes, &42i32.to_le_bytes(), ts + 8).expect("raw category");
    let field = find(&bytes, b"x\0\0\0", raw).expect("raw name field");
    assert!(find(&bytes, &9u64.to_le_bytes(), field).is_some());
}
