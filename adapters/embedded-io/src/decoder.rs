//! The host-side streaming decoder.
//!
//! Bytes arrive in arbitrary pieces (a serial port read, a pipe); the decoder keeps
//! the bytes since the last `0x00` delimiter, and at each delimiter decodes them as one
//! frame. Resynchronisation needs no search: every `0x00` on the line is a frame
//! boundary, because COBS removes zeros from the frames themselves. When noise without
//! a zero precedes a frame, the two arrive as one chunk; a version-1 frame has a fixed
//! encoded length, so the decoder then tries the chunk's last [`ENCODED_FRAME_LEN`]
//! bytes, and keeps the frame if its CRC-32 holds (reporting the noise as
//! [`FrameErrorKind::Garbage`]). Memory stays bounded: a chunk longer than
//! [`FrameDecoder::MAX_CHUNK`] is discarded as [`FrameErrorKind::Oversized`].

use crate::chunker::{Chunked, Chunker, frame_tail};
use crate::frame::{
    ENCODED_FRAME_LEN, FORMAT_VERSION, Frame, FrameError, FrameErrorKind, open_frame, parse_v1,
};
use crate::seq_window::{SeqWindow, Step};
use std::collections::VecDeque;
use telering_core::Event;

/// Turns a frame byte stream back into events. See the module docs.
///
/// ```
/// use telering_core::{event_name, Category, Event};
/// use telering_embedded_io::{FrameDecoder, FrameErrorKind, FrameExporter};
///
/// let mut line = Vec::new();
/// let mut exporter = FrameExporter::new(&mut line);
/// for v in 0..3 {
///     exporter.export(&Event::new(v, Category::Custom, event_name!("depth"), v * 10)).unwrap();
/// }
/// line.insert(90, 0xAA); // damage the second frame
///
/// let mut decoder = FrameDecoder::new();
/// let mut values = Vec::new();
/// let mut errors = Vec::new();
/// // Any split of the input gives the same result.
/// for piece in line.chunks(5) {
///     for item in decoder.feed(piece) {
///         match item {
///             Ok(event) => values.push(event.value()),
///             Err(e) => errors.push(e.kind),
///         }
///     }
/// }
/// assert_eq!(decoder.finish(), None);
/// assert_eq!(values, [0, 20]);
/// assert!(matches!(errors[1], FrameErrorKind::FramesMissing { count: 1, .. }));
/// ```
#[derive(Debug, Default)]
pub struct FrameDecoder {
    chunker: Chunker,
    window: SeqWindow,
    ready: VecDeque<Result<Event, FrameError>>,
    events: u64,
    errors: u64,
    frames_missing: u64,
}

impl FrameDecoder {
    /// Longest run of bytes without a delimiter the decoder buffers; longer runs are
    /// discarded up to the next delimiter.
    pub const MAX_CHUNK: usize = Chunker::MAX_CHUNK;

    /// A decoder at the start of a stream.
    pub fn new() -> FrameDecoder {
        FrameDecoder::default()
    }

    /// Feeds the next bytes of the stream and returns what they completed, in stream
    /// order: one `Ok(event)` per intact frame and one `Err` per problem; a frame that
    /// comes late (its event already counted in [`FrameDecoder::frames_missing`]) or
    /// again is an [`FrameErrorKind::OutOfOrder`] `Err` only, so no event is counted
    /// twice (`docs/LINK.md`, "Loss accounting on the receiver"). Bytes after
    /// the last delimiter are kept for the next call. Items not taken from the
    /// iterator are returned by the next call.
    pub fn feed(&mut self, bytes: &[u8]) -> impl Iterator<Item = Result<Event, FrameError>> + '_ {
        self.split(bytes);
        self.ready.drain(..)
    }

    /// Ends the stream: reports an unfinished frame left at the end (its bytes are
    /// dropped), or `None` if the stream ended on a delimiter.
    pub fn finish(&mut self) -> Option<FrameError> {
        let left = self.chunker.finish()?;
        self.errors += 1;
        let kind = if left.oversized {
            FrameErrorKind::Oversized { len: left.len }
        } else {
            FrameErrorKind::Truncated {
                len: left.len as usize,
            }
        };
        Some(FrameError {
            offset: left.start,
            kind,
        })
    }

    /// Decodes a whole stream at once: every event and problem in order, including
    /// an unfinished frame at the end.
    ///
    /// ```
    /// use telering_embedded_io::{FrameDecoder, FrameErrorKind};
    /// let items = FrameDecoder::decode_all(b"\x00no frames here");
    /// assert_eq!(items.len(), 1);
    /// let error = items[0].unwrap_err();
    /// assert_eq!((error.offset, error.kind), (1, FrameErrorKind::Truncated { len: 14 }));
    /// ```
    pub fn decode_all(bytes: &[u8]) -> Vec<Result<Event, FrameError>> {
        let mut decoder = FrameDecoder::new();
        let mut items: Vec<_> = decoder.feed(bytes).collect();
        items.extend(decoder.finish().map(Err));
        items
    }

    /// Events decoded so far.
    pub fn events_decoded(&self) -> u64 {
        self.events
    }

    /// Problems reported so far (every `Err` item, including those from
    /// [`FrameDecoder::finish`]).
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// Frames known to be missing from sequence-number gaps: each one an event that
    /// did not arrive.
    pub fn frames_missing(&self) -> u64 {
        self.frames_missing
    }

    /// Bytes fed so far.
    pub fn bytes_fed(&self) -> u64 {
        self.chunker.offset()
    }

    fn push_error(&mut self, offset: u64, kind: FrameErrorKind) {
        self.errors += 1;
        self.ready.push_back(Err(FrameError { offset, kind }));
    }

    fn decode_chunk(&mut self, chunk: &mut [u8], start: u64) {
        let tail = frame_tail(chunk);
        let garbage = chunk.len().saturating_sub(ENCODED_FRAME_LEN);
        match decode_keyed(chunk) {
            Ok((frame, crc)) => self.accept(frame, crc, start),
            Err(kind) => match tail.map(|mut t| decode_keyed(&mut t)) {
                Some(Ok((frame, crc))) => {
                    self.push_error(start, FrameErrorKind::Garbage { len: garbage });
                    self.accept(frame, crc, start + garbage as u64);
                }
                _ => self.push_error(start, kind),
            },
        }
    }

    fn accept(&mut self, frame: Frame, crc: u32, offset: u64) {
        let expected_seq = self.window.expected().unwrap_or(0);
        let out_of_order = FrameErrorKind::OutOfOrder {
            expected_seq,
            found_seq: frame.seq,
        };
        match v1_step(&mut self.window, frame.seq, crc) {
            Step::First | Step::Ahead(0) => {}
            Step::Ahead(count) => {
                self.frames_missing += u64::from(count);
                let kind = FrameErrorKind::FramesMissing {
                    expected_seq,
                    found_seq: frame.seq,
                    count,
                };
                self.push_error(offset, kind);
            }
            Step::Duplicate => {
                // Already delivered: not again.
                self.push_error(offset, out_of_order);
                return;
            }
            Step::Late => {
                // Already counted missing: not delivered, so never counted twice.
                self.window.late(frame.seq, crc);
                self.push_error(offset, out_of_order);
                return;
            }
            Step::Back => {
                // Far back, or a number received with other content: the device
                // restarted and its frame with sequence number 0 was lost.
                self.window.restart();
                self.push_error(offset, out_of_order);
            }
        }
        self.window.advance(frame.seq, crc);
        self.events += 1;
        self.ready.push_back(Ok(frame.event));
    }
}

/// Opens and parses a version-1 frame, with the CRC that tells a copy of it.
fn decode_keyed(encoded: &mut [u8]) -> Result<(Frame, u32), FrameErrorKind> {
    let body = open_frame(encoded)?;
    if body[0] != FORMAT_VERSION {
        return Err(FrameErrorKind::UnsupportedVersion { found: body[0] });
    }
    Ok((parse_v1(body)?, body_crc(body)))
}

/// The CRC-32 that ends an intact body.
pub(crate) fn body_crc(body: &[u8]) -> u32 {
    let at = body.len() - 4;
    u32::from_le_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]])
}

/// Where a version-1 frame stands (see `docs/LINK.md`): sequence number 0 starts a
/// new stream (the device restarted) unless it is the one due or a copy of a frame
/// received; the window then starts again.
pub(crate) fn v1_step(window: &mut SeqWindow, seq: u32, crc: u32) -> Step {
    let step = window.step(seq, crc);
    if seq == 0 && !matches!(step, Step::Duplicate | Step::Ahead(0)) {
        window.restart();
        return Step::First;
    }
    step
}

impl Chunked for FrameDecoder {
    fn chunker(&mut self) -> &mut Chunker {
        &mut self.chunker
    }

    fn chunk(&mut self, bytes: &mut [u8], start: u64) {
        self.decode_chunk(bytes, start);
    }

    fn oversized(&mut self, start: u64, len: u64) {
        self.push_error(start, FrameErrorKind::Oversized { len });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FRAME_WIRE_LEN, FrameExporter, encode_frame};
    use telering_core::{Category, EventName};

    fn event(v: u64) -> Event {
        Event::new(
            1_000 + v,
            Category::Custom,
            EventName::new("fw_counter").unwrap(),
            v,
        )
    }

    fn stream(values: impl IntoIterator<Item = u64>) -> Vec<u8> {
        let mut line = Vec::new();
        let mut exporter = FrameExporter::new(&mut line);
        for v in values {
            exporter.export(&event(v)).unwrap();
        }
        line
    }

    fn split(items: Vec<Result<Event, FrameError>>) -> (Vec<u64>, Vec<FrameErrorKind>) {
        let mut values = Vec::new();
        let mut errors = Vec::new();
        for item in items {
            match item {
                Ok(e) => values.push(e.value()),
                Err(e) => errors.push(e.kind),
            }
        }
        (values, errors)
    }

    #[test]
    fn every_split_of_the_input_decodes_the_same_events() {
        let line = stream(0..20);
        let whole = FrameDecoder::decode_all(&line);
        for piece in [1, 2, 7, 67, 68, 69, 1000] {
            let mut decoder = FrameDecoder::new();
            let mut items = Vec::new();
            for p in line.chunks(piece) {
                items.extend(decoder.feed(p));
            }
            assert_eq!(decoder.finish(), None);
            assert_eq!(items, whole, "pieces of {piece} bytes");
        }
        assert_eq!(split(whole), ((0..20).collect(), vec![]));
    }

    #[test]
    fn noise_without_zeros_before_a_frame_is_skipped_and_the_frame_kept() {
        let mut line = stream(0..3);
        let second = 1 + FRAME_WIRE_LEN; // sync byte, first frame
        line.splice(second..second, [0x55u8; 13]);
        let items = FrameDecoder::decode_all(&line);
        assert_eq!(items[1].unwrap_err().offset, second as u64);
        assert_eq!(
            split(items),
            (vec![0, 1, 2], vec![FrameErrorKind::Garbage { len: 13 }])
        );
    }

    #[test]
    fn damaged_frame_is_reported_and_counted_missing_then_decoding_resumes() {
        let mut line = stream(0..4);
        line[1 + FRAME_WIRE_LEN + 30] ^= 0x10; // inside frame 1's event record
        let (values, errors) = split(FrameDecoder::decode_all(&line));
        assert_eq!(values, [0, 2, 3]);
        assert!(matches!(errors[0], FrameErrorKind::Checksum { .. }));
        assert_eq!(
            errors[1],
            FrameErrorKind::FramesMissing {
                expected_seq: 1,
                found_seq: 2,
                count: 1
            }
        );
        assert_eq!(errors.len(), 2);
    }

    #[test]
    fn a_zero_inserted_into_a_frame_splits_it_and_both_halves_are_errors() {
        let mut line = stream(0..3);
        line.insert(1 + FRAME_WIRE_LEN + 20, 0);
        let mut decoder = FrameDecoder::new();
        let (values, errors) = split(decoder.feed(&line).collect());
        assert_eq!(values, [0, 2]);
        assert_eq!(errors.len(), 3, "{errors:?}"); // two halves and the gap
        assert_eq!(decoder.frames_missing(), 1);
        assert_eq!(decoder.events_decoded(), 2);
    }

    #[test]
    fn random_garbage_between_frames_never_loses_a_frame_uncounted() {
        // xorshift: deterministic noise with zeros and non-zeros.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut noise = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect()
        };
        let mut line = Vec::new();
        let mut wire = [0u8; FRAME_WIRE_LEN];
        for seq in 0..200u32 {
            let n = (seq as usize * 7) % 40;
            line.extend(noise(n));
            line.push(0);
            let len = encode_frame(seq + 1, &event(seq as u64), &mut wire);
            line.extend_from_slice(&wire[..len]);
        }
        let mut decoder = FrameDecoder::new();
        let (values, _) = split(decoder.feed(&line).collect());
        assert_eq!(decoder.finish(), None);
        // Noise is framed off by its own zeros, so every frame survives.
        assert_eq!(values, (0..200).collect::<Vec<_>>());
        assert_eq!(decoder.frames_missing(), 0);
    }

    #[test]
    fn endless_input_without_delimiters_is_bounded_and_reported() {
        let mut decoder = FrameDecoder::new();
        let junk = vec![0x41u8; 5000];
        assert_eq!(decoder.feed(&junk).count(), 0);
        assert!(decoder.chunker.capacity() <= FrameDecoder::MAX_CHUNK);
        let items: Vec<_> = decoder.feed(&[0]).collect();
        assert_eq!(
            items,
            [Err(FrameError {
                offset: 0,
                kind: FrameErrorKind::Oversized { len: 5000 }
            })]
        );
    }

    #[test]
    fn restart_at_sequence_zero_is_not_a_gap_but_a_repeat_is_out_of_order() {
        let mut line = stream(0..3);
        line.extend(stream(10..12)); // the device restarted: seq 0, 1 again
        let mut wire = [0u8; FRAME_WIRE_LEN];
        let len = encode_frame(1, &event(99), &mut wire);
        line.extend_from_slice(&wire[..len]);
        let (values, errors) = split(FrameDecoder::decode_all(&line));
        assert_eq!(values, [0, 1, 2, 10, 11, 99]);
        assert_eq!(
            errors,
            [FrameErrorKind::OutOfOrder {
                expected_seq: 2,
                found_seq: 1
            }]
        );
    }

    fn frames(seqs: &[(u32, u64)]) -> Vec<u8> {
        let mut line = Vec::new();
        let mut wire = [0u8; FRAME_WIRE_LEN];
        for &(seq, v) in seqs {
            let len = encode_frame(seq, &event(v), &mut wire);
            line.extend_from_slice(&wire[..len]);
        }
        line
    }

    #[test]
    fn a_late_or_duplicated_frame_is_never_counted_twice_nor_moves_the_sequence_back() {
        let top = u32::MAX;
        let seqs = [top - 2, top - 1, top, 0, 1, 3, 2, 2, 7];
        let line = frames(&seqs.map(|s| (s, u64::from(s % 100))));
        let mut decoder = FrameDecoder::new();
        let (values, errors) = split(decoder.feed(&line).collect());
        // Sent: 3 before the wrap, 0 to 7 after it. Seq 2 was counted missing when 3
        // came; arriving late it is not delivered, and its copy neither.
        assert_eq!(values, [93, 94, 95, 0, 1, 3, 7]);
        assert_eq!(decoder.frames_missing(), 4);
        assert_eq!(decoder.events_decoded() + decoder.frames_missing(), 11);
        let late = FrameErrorKind::OutOfOrder {
            expected_seq: 4,
            found_seq: 2,
        };
        assert_eq!(
            errors,
            [
                FrameErrorKind::FramesMissing {
                    expected_seq: 2,
                    found_seq: 3,
                    count: 1
                },
                late,
                late,
                FrameErrorKind::FramesMissing {
                    expected_seq: 4,
                    found_seq: 7,
                    count: 3
                },
            ]
        );
    }

    #[test]
    fn a_repeated_frame_is_delivered_once() {
        let line = frames(&[(0, 0), (1, 1), (1, 1), (2, 2), (1, 1), (0, 0)]);
        let mut decoder = FrameDecoder::new();
        let (values, errors) = split(decoder.feed(&line).collect());
        assert_eq!(values, [0, 1, 2]);
        assert_eq!(decoder.frames_missing(), 0);
        assert_eq!(errors.len(), 3);
    }

    #[test]
    fn stream_cut_inside_a_frame_is_reported_as_truncated() {
        let line = stream(0..2);
        let cut = &line[..line.len() - 10];
        let (values, errors) = split(FrameDecoder::decode_all(cut));
        assert_eq!(values, [0]);
        assert_eq!(
            errors,
            [FrameErrorKind::Truncated {
                len: FRAME_WIRE_LEN - 10
            }]
        );
    }

    #[test]
    fn error_messages_name_the_offset_and_the_field() {
        let error = FrameError {
            offset: 136,
            kind: FrameErrorKind::Checksum {
                sent: 1,
                computed: 2,
            },
        };
        let text = error.to_string();
        assert!(text.contains("byte 136"), "{text}");
        assert!(text.contains("crc32"), "{text}");
    }
}
