//! One frame: its body layout, encoding and decoding (see the crate docs for the
//! format). Everything here is `no_std` and allocation-free.

use core::fmt;
use crc::{CRC_32_ISO_HDLC, Crc, NoTable};
use telering_core::{DecodeError, EVENT_SIZE, Event};

/// The frame format version this crate writes and reads.
pub const FORMAT_VERSION: u8 = 1;
/// Frame kind: one event.
pub const KIND_EVENT: u8 = 1;
/// Length of a version-1 frame body before COBS encoding.
pub const BODY_LEN: usize = 2 + 4 + EVENT_SIZE + 4;
/// Length of a COBS-encoded version-1 frame, without its delimiter. COBS adds one byte
/// to a body shorter than 254 bytes, whatever the body holds.
pub const ENCODED_FRAME_LEN: usize = BODY_LEN + 1;
/// Bytes one frame takes on the wire: the encoded frame and its `0x00` delimiter.
pub const FRAME_WIRE_LEN: usize = ENCODED_FRAME_LEN + 1;

const SEQ_AT: usize = 2;
const EVENT_AT: usize = 6;
const CRC_AT: usize = EVENT_AT + EVENT_SIZE;

const _: () = {
    assert!(BODY_LEN == 66);
    assert!(CRC_AT == BODY_LEN - 4);
    assert!(ENCODED_FRAME_LEN == cobs::max_encoding_length(BODY_LEN));
};

/// The bitwise (table-less) CRC-32 the decoders check frames with: 1 KiB less flash
/// than the table-driven one. It costs eight shift-and-xor steps per byte, about 500
/// for a frame's 62 bytes, while a 68-byte frame occupies a 115 200 baud UART for
/// 5.9 ms. The encoders compute the same value with [`crc32`].
const CRC32: Crc<u32, NoTable> = Crc::<u32, NoTable>::new(&CRC_32_ISO_HDLC);

/// A decoded frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The exporter's sequence number for this frame.
    pub seq: u32,
    /// The event it carries, validated.
    pub event: Event,
}

/// Encodes `event` as frame `seq` into `out`: the COBS-encoded body followed by its
/// `0x00` delimiter. Returns the bytes used, always [`FRAME_WIRE_LEN`].
///
/// ```
/// use telering_core::{event_name, Category, Event};
/// use telering_embedded_io::{decode_frame, encode_frame, FRAME_WIRE_LEN};
///
/// let event = Event::new(9, Category::Custom, event_name!("queue_depth"), 17);
/// let mut wire = [0u8; FRAME_WIRE_LEN];
/// assert_eq!(encode_frame(3, &event, &mut wire), FRAME_WIRE_LEN);
/// // The decoder takes the bytes before the delimiter and decodes them in place.
/// let frame = decode_frame(&mut wire[..FRAME_WIRE_LEN - 1]).unwrap();
/// assert_eq!((frame.seq, frame.event), (3, event));
/// ```
pub fn encode_frame(seq: u32, event: &Event, out: &mut [u8; FRAME_WIRE_LEN]) -> usize {
    // The body is encoded piece by piece, never assembled: on a small core that keeps
    // one 66-byte buffer off the stack.
    let s = seq.to_le_bytes();
    let head = [FORMAT_VERSION, KIND_EVENT, s[0], s[1], s[2], s[3]];
    let record = event.to_wire_bytes();
    let crc = (!crc32_update(crc32_update(!0, &head), &record)).to_le_bytes();
    let mut encoder = cobs::CobsEncoder::new(&mut out[..ENCODED_FRAME_LEN]);
    // `out` has room for the worst case (asserted above), so no push can fail;
    // matching instead of unwrapping keeps the export path free of panics.
    let pushed = encoder
        .push(&head)
        .and_then(|()| encoder.push(&record))
        .and_then(|()| encoder.push(&crc));
    let len = match pushed {
        Ok(()) => encoder.finalize(),
        Err(_) => 0,
    };
    // `len ≤ ENCODED_FRAME_LEN < FRAME_WIRE_LEN`, so this always finds the byte;
    // `get_mut` keeps a bounds-check panic out of the firmware image.
    if let Some(delimiter) = out.get_mut(len) {
        *delimiter = 0;
    }
    len + 1
}

/// Decodes one frame from its COBS-encoded bytes (without the `0x00` delimiter), in
/// place: `encoded` is overwritten with the body.
pub fn decode_frame(encoded: &mut [u8]) -> Result<Frame, FrameErrorKind> {
    let body = open_frame(encoded)?;
    if body[0] != FORMAT_VERSION {
        return Err(FrameErrorKind::UnsupportedVersion { found: body[0] });
    }
    parse_v1(body)
}

/// Undoes the COBS encoding in place and checks what every version keeps: room for
/// a version byte and a CRC-32, and the CRC-32. Returns the body, CRC included.
pub(crate) fn open_frame(encoded: &mut [u8]) -> Result<&[u8], FrameErrorKind> {
    let encoded_len = encoded.len();
    let report = cobs::decode_in_place_report(encoded).map_err(|_| FrameErrorKind::Cobs)?;
    if report.parsed_size() != encoded_len {
        return Err(FrameErrorKind::Cobs);
    }
    let body = &encoded[..report.frame_size()];
    if body.len() < 2 + 4 {
        return Err(FrameErrorKind::TooShort { len: body.len() });
    }
    let (covered, trailer) = body.split_at(body.len() - 4);
    let sent = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let computed = CRC32.checksum(covered);
    if sent != computed {
        return Err(FrameErrorKind::Checksum { sent, computed });
    }
    Ok(body)
}

/// The CRC-32 every frame version ends with, over `bytes`: the same value as
/// [`CRC32`]'s, from a loop of a few instructions for the encoders of the smallest
/// firmware (the `crc` crate's generic bitwise code is about 170 bytes of Cortex-M3
/// code; this one 30). The decoders keep [`CRC32`].
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    !crc32_update(!0, bytes)
}

/// The reflected CRC-32 register (polynomial 0x04C11DB7, bit-reversed 0xEDB88320)
/// after `bytes`, one bit a step: no table.
fn crc32_update(mut crc: u32, bytes: &[u8]) -> u32 {
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    crc
}

/// Parses an intact version-1 body.
pub(crate) fn parse_v1(body: &[u8]) -> Result<Frame, FrameErrorKind> {
    if body.len() != BODY_LEN {
        return Err(FrameErrorKind::WrongLength { len: body.len() });
    }
    if body[1] != KIND_EVENT {
        return Err(FrameErrorKind::UnknownKind { kind: body[1] });
    }
    let seq = u32::from_le_bytes([
        body[SEQ_AT],
        body[SEQ_AT + 1],
        body[SEQ_AT + 2],
        body[SEQ_AT + 3],
    ]);
    let event =
        Event::from_wire_bytes(&body[EVENT_AT..CRC_AT]).map_err(FrameErrorKind::InvalidEvent)?;
    Ok(Frame { seq, event })
}

/// What is wrong with a frame or with the stream at some point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameErrorKind {
    /// The bytes between two delimiters are not valid COBS: the frame was damaged
    /// (a byte lost, changed, or a spurious zero inserted).
    Cobs,
    /// The decoded body is too short to hold a version byte and a CRC.
    TooShort {
        /// Body length in bytes.
        len: usize,
    },
    /// No delimiter arrived within the decoder's limit: the input is not a telering
    /// frame stream (wrong port, wrong baud rate, or not framed at all).
    Oversized {
        /// Bytes discarded up to the next delimiter.
        len: u64,
    },
    /// Bytes that are not part of any frame came before a valid frame (line noise, or
    /// the end of a frame whose start was missed); the frame itself was kept.
    Garbage {
        /// Bytes skipped.
        len: usize,
    },
    /// The CRC-32 in the frame does not match its bytes: the frame was damaged in
    /// transit.
    Checksum {
        /// The CRC the frame carries.
        sent: u32,
        /// The CRC of the bytes received.
        computed: u32,
    },
    /// The frame is intact but in a format version this decoder does not know.
    UnsupportedVersion {
        /// The version byte.
        found: u8,
    },
    /// An intact frame whose body length its version does not allow (version 1:
    /// [`BODY_LEN`] bytes; version 2: at most 253).
    WrongLength {
        /// Body length in bytes.
        len: usize,
    },
    /// An intact frame of a kind this decoder does not know.
    UnknownKind {
        /// The kind byte.
        kind: u8,
    },
    /// An intact frame whose event record is invalid (bad category or name).
    InvalidEvent(DecodeError),
    /// An intact version-2 frame whose payload does not parse: the field named is
    /// cut short, out of range or not UTF-8.
    Malformed {
        /// The field at fault.
        field: &'static str,
    },
    /// Frames with these sequence numbers never arrived intact: lost on the line,
    /// damaged (reported separately), or cut short by a failed write on the device.
    FramesMissing {
        /// The sequence number that was due.
        expected_seq: u32,
        /// The sequence number that arrived.
        found_seq: u32,
        /// Frames missing: `found_seq − expected_seq`.
        count: u32,
    },
    /// A frame arrived with a sequence number already seen: the line repeated data,
    /// or two devices write to one stream.
    OutOfOrder {
        /// The sequence number that was due.
        expected_seq: u32,
        /// The sequence number that arrived.
        found_seq: u32,
    },
    /// The stream ended in the middle of a frame.
    Truncated {
        /// Bytes of the unfinished frame.
        len: usize,
    },
}

impl fmt::Display for FrameErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameErrorKind::Cobs => f.write_str(
                "the frame's COBS byte stuffing is invalid; it was damaged in transit and is skipped",
            ),
            FrameErrorKind::TooShort { len } => write!(
                f,
                "the frame body is {len} bytes, too short for a version byte and a CRC-32; it is skipped"
            ),
            FrameErrorKind::Oversized { len } => write!(
                f,
                "{len} bytes without a frame delimiter were discarded; check that the input is a telering frame stream (port, baud rate)"
            ),
            FrameErrorKind::Garbage { len } => write!(
                f,
                "{len} bytes of noise before the frame were skipped"
            ),
            FrameErrorKind::Checksum { sent, computed } => write!(
                f,
                "field `crc32` is {sent:#010x} but the frame's bytes give {computed:#010x}; it was damaged in transit and is skipped"
            ),
            FrameErrorKind::UnsupportedVersion { found } => write!(
                f,
                "field `version` is {found}; this decoder does not read it (version-2 link streams: `telering bridge`, `link::LinkDecoder`; newer versions: a newer telering)"
            ),
            FrameErrorKind::WrongLength { len } => write!(
                f,
                "frame body is {len} bytes, not a length its version allows (version 1: {BODY_LEN})"
            ),
            FrameErrorKind::UnknownKind { kind } => write!(
                f,
                "field `kind` is {kind}, a frame kind this decoder does not know; the frame is skipped"
            ),
            FrameErrorKind::InvalidEvent(e) => write!(f, "the event record is invalid: {e}"),
            FrameErrorKind::Malformed { field } => write!(
                f,
                "field `{field}` of an intact version-2 frame is cut short, out of range or not UTF-8; the frame is skipped"
            ),
            FrameErrorKind::FramesMissing {
                expected_seq,
                found_seq,
                count,
            } => write!(
                f,
                "{count} frame(s) missing: field `seq` jumped from {expected_seq} to {found_seq}"
            ),
            FrameErrorKind::OutOfOrder {
                expected_seq,
                found_seq,
            } => write!(
                f,
                "field `seq` is {found_seq} but {expected_seq} was due: the stream repeats frames or mixes two devices"
            ),
            FrameErrorKind::Truncated { len } => write!(
                f,
                "the input ended inside a frame ({len} bytes without a delimiter)"
            ),
        }
    }
}

/// A problem at a byte offset of a frame stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameError {
    /// Offset in the stream of the first byte the error concerns.
    pub offset: u64,
    /// What is wrong.
    pub kind: FrameErrorKind,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "frame stream at byte {}: {}", self.offset, self.kind)
    }
}

#[cfg(feature = "std")]
impl std::error::Error for FrameError {}

#[cfg(test)]
mod tests {
    use super::*;
    use telering_core::{Category, event_name};

    fn sample() -> Event {
        Event::new(
            0x0102_0304_0506_0708,
            Category::Transfer,
            event_name!("agent_tx_bytes"),
            0,
        )
    }

    #[test]
    fn body_holds_version_kind_seq_event_and_crc_at_documented_offsets() {
        let mut wire = [0u8; FRAME_WIRE_LEN];
        encode_frame(0xA1B2_C3D4, &sample(), &mut wire);
        assert_eq!(wire[FRAME_WIRE_LEN - 1], 0);
        assert!(wire[..ENCODED_FRAME_LEN].iter().all(|&b| b != 0));
        let mut body = [0u8; BODY_LEN];
        let report = cobs::decode(&wire[..ENCODED_FRAME_LEN], &mut body).unwrap();
        assert_eq!(report.frame_size(), BODY_LEN);
        assert_eq!(body[0], FORMAT_VERSION);
        assert_eq!(body[1], KIND_EVENT);
        assert_eq!(body[2..6], [0xD4, 0xC3, 0xB2, 0xA1]);
        assert_eq!(body[6..62], sample().to_wire_bytes());
        let crc = CRC32.checksum(&body[..62]);
        assert_eq!(body[62..66], crc.to_le_bytes());
        // The zlib CRC-32 of "123456789" is the standard check value.
        assert_eq!(CRC32.checksum(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn the_encoders_crc_loop_gives_the_crc_crates_value_for_every_length_and_byte() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        let mut bytes = [0u8; 300];
        let mut x = 0x9E37_79B9u32;
        for b in &mut bytes {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = x as u8;
        }
        for len in 0..bytes.len() {
            assert_eq!(crc32(&bytes[..len]), CRC32.checksum(&bytes[..len]), "{len}");
        }
        for byte in 0..=255u8 {
            assert_eq!(crc32(&[byte]), CRC32.checksum(&[byte]), "{byte}");
            assert_eq!(crc32(&[byte; 7]), CRC32.checksum(&[byte; 7]), "{byte}");
        }
    }

    #[test]
    fn every_single_bit_flip_is_detected() {
        let mut wire = [0u8; FRAME_WIRE_LEN];
        encode_frame(7, &sample(), &mut wire);
        for byte in 0..ENCODED_FRAME_LEN {
            for bit in 0..8 {
                let mut damaged = wire;
                damaged[byte] ^= 1 << bit;
                let encoded = &mut damaged[..ENCODED_FRAME_LEN];
                assert!(
                    decode_frame(encoded).is_err(),
                    "flip of bit {bit} in byte {byte} went unnoticed"
                );
            }
        }
    }

    #[test]
    fn intact_frames_of_another_version_are_rejected_by_version() {
        let mut body = [0u8; 10];
        body[0] = 2;
        let crc = CRC32.checksum(&body[..6]);
        body[6..].copy_from_slice(&crc.to_le_bytes());
        let mut encoded = [0u8; 16];
        let len = cobs::encode(&body, &mut encoded);
        assert_eq!(
            decode_frame(&mut encoded[..len]),
            Err(FrameErrorKind::UnsupportedVersion { found: 2 })
        );
    }

    #[test]
    fn intact_frame_with_invalid_event_is_reported_as_invalid_event() {
        let mut body = [0u8; BODY_LEN];
        body[0] = FORMAT_VERSION;
        body[1] = KIND_EVENT;
        let mut record = sample().to_wire_bytes();
        record[8] = 42; // category 42
        body[6..62].copy_from_slice(&record);
        let crc = CRC32.checksum(&body[..62]);
        body[62..].copy_from_slice(&crc.to_le_bytes());
        let mut encoded = [0u8; ENCODED_FRAME_LEN];
        let len = cobs::encode(&body, &mut encoded);
        assert_eq!(
            decode_frame(&mut encoded[..len]),
            Err(FrameErrorKind::InvalidEvent(DecodeError::UnknownCategory(
                42
            )))
        );
    }
}
