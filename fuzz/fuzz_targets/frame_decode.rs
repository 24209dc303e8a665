//! Feeds arbitrary bytes, in arbitrary pieces, to the frame decoder: it must never
//! panic, must give the same result however the input is split, and every event it
//! returns must be valid. Valid event records in the input are also framed and must
//! decode back to themselves alone, and after the arbitrary bytes unless those make
//! them late or a copy (reported as out of order).
#![no_main]

use libfuzzer_sys::fuzz_target;
use telering_core::Event;
use telering_embedded_io::{FRAME_WIRE_LEN, FrameDecoder, FrameErrorKind, encode_frame};

fuzz_target!(|input: (u8, u32, &[u8])| {
    let (piece, seq, bytes) = input;
    let whole = FrameDecoder::decode_all(bytes);

    let mut decoder = FrameDecoder::new();
    let mut pieces = Vec::new();
    for p in bytes.chunks(usize::from(piece).max(1)) {
        pieces.extend(decoder.feed(p));
    }
    pieces.extend(decoder.finish().map(Err));
    assert_eq!(pieces, whole);

    for item in &whole {
        match item {
            Ok(event) => assert!(event.validate().is_ok()),
            Err(error) => assert!(error.offset <= bytes.len() as u64),
        }
    }

    // Round trip: a valid record, framed, decodes to itself — also when it follows
    // the arbitrary bytes and a delimiter, which must end whatever they left open.
    if let Some(event) = bytes.get(..56).and_then(|b| Event::from_wire_bytes(b).ok()) {
        let mut wire = [0u8; FRAME_WIRE_LEN];
        let len = encode_frame(seq, &event, &mut wire);
        let alone = FrameDecoder::decode_all(&wire[..len]);
        assert_eq!(alone, [Ok(event)]);

        let mut stream = bytes.to_vec();
        stream.push(0);
        stream.extend_from_slice(&wire[..len]);
        let after = FrameDecoder::decode_all(&stream);
        // Unless the arbitrary bytes held intact frames that make this one late or a
        // copy (docs/LINK.md, "Frames out of order"): then it is reported as such.
        let delivered = after.iter().any(|item| item.as_ref() == Ok(&event));
        let out_of_order = after.iter().any(|item| {
            matches!(item, Err(e) if e.offset > bytes.len() as u64
                && matches!(e.kind, FrameErrorKind::OutOfOrder { .. }))
        });
        assert!(delivered || out_of_order, "{after:?}");
    }
});
