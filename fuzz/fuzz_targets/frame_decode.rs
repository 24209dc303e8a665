//! Feeds arbitrary bytes, in arbitrary pieces, to the frame decoder: it must never
//! panic, must give the same result however the input is split, must keep its buffer
//! bounded, and every event it returns must be valid.
#![no_main]

use libfuzzer_sys::fuzz_target;
use telering_embedded_io::FrameDecoder;

fuzz_target!(|input: (u8, &[u8])| {
    let (piece, bytes) = input;
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
});
