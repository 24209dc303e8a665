//! Feeds arbitrary bytes, in arbitrary pieces, to the link (version 1 and 2) decoder:
//! it must never panic, must give the same items however the input is split, and
//! every event it returns must be valid. Valid event records found in the input are
//! also encoded as a version-2 stream, which must decode back to them, alone and after
//! the arbitrary bytes, with nothing counted lost.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telering_core::Event;
use telering_embedded_io::link::{Hello, LinkDecoder, LinkEncoder, LinkItem};

fn decode(bytes: &[u8], piece: usize) -> Vec<LinkItem> {
    let mut decoder = LinkDecoder::new();
    let mut items = Vec::new();
    for p in bytes.chunks(piece.max(1)) {
        items.extend(decoder.feed(p));
    }
    items.extend(decoder.finish());
    items
}

/// What an event says: timestamp, category, name and value (a record read from the
/// input may carry bytes after its name's NUL, which no encoding keeps).
type Fields = (u64, i32, String, u64);

fn fields(e: &Event) -> Fields {
    let name = e.name().unwrap_or_default().to_owned();
    (e.timestamp_us(), e.raw_category(), name, e.value())
}

fn events(items: &[LinkItem]) -> Vec<Fields> {
    items
        .iter()
        .filter_map(|i| match i {
            LinkItem::Event { event, .. } => Some(fields(event)),
            _ => None,
        })
        .collect()
}

fuzz_target!(|input: (u8, &[u8])| {
    let (piece, bytes) = input;
    let whole = decode(bytes, bytes.len());
    assert_eq!(decode(bytes, usize::from(piece)), whole);
    for item in &whole {
        match item {
            LinkItem::Event { event, .. } => assert!(event.validate().is_ok()),
            LinkItem::Problem(e) => assert!(e.offset <= bytes.len() as u64),
            _ => {}
        }
    }

    let records: Vec<Event> = bytes
        .chunks_exact(56)
        .filter_map(|b| Event::from_wire_bytes(b).ok())
        .collect();
    if records.is_empty() {
        return;
    }
    let hello = Hello {
        agent: "fuzz",
        firmware_version: "0",
        ticks_per_second: 1_000_000,
        ring_capacity: 8,
    };
    let mut line = Vec::new();
    let mut encoder: LinkEncoder<_, 4> = LinkEncoder::new(&mut line, hello);
    for e in &records {
        encoder.push(e).unwrap();
    }
    encoder.flush().unwrap();
    let alone = decode(&line, usize::from(piece));
    let expected: Vec<Fields> = records.iter().map(fields).collect();
    assert_eq!(events(&alone), expected);
    assert!(!alone.iter().any(|i| matches!(i, LinkItem::Lost { .. })));

    let mut stream = bytes.to_vec();
    stream.push(0);
    stream.extend_from_slice(&line);
    let after = decode(&stream, usize::from(piece));
    assert!(events(&after).ends_with(&expected));
});
