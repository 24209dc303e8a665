//! The host-side decoder of a link: version-1 frames and version-2 hello, name-table,
//! batch and clock frames, in any mix, with every loss counted by cause.
//!
//! Chunking is the version-1 decoder's: each `0x00` ends a chunk, which is decoded as
//! one frame. A chunk that is not an intact frame is held as *unresolved* until the
//! next intact frame says what it was: when that frame shows a sequence or event-index
//! gap, the chunk was a damaged frame and the events of the gap are lost with cause
//! [`LossCause::Damaged`]; when it shows none, the chunk was bytes that were not a
//! frame, counted as [`LinkItem::Noise`]. A gap with no damaged chunk before it is
//! [`LossCause::Missing`]: the frames never arrived (or the device failed to write
//! them). So every event is delivered or counted, once, with one cause.
//!
//! The sequence number due never moves back: a frame behind it is a copy (dropped),
//! late (its events delivered if not counted yet, else dropped: they were counted in
//! a gap already), or a restart whose hello was lost (`docs/LINK.md`, "Frames out of
//! order"); `SeqWindow` tells which.

use super::item::{LinkItem, LossCause};
use super::parse::{self as wire, Body};
use super::wire::LINK_VERSION;
use crate::chunker::{Chunked, Chunker, frame_tail};
use crate::decoder::{body_crc, v1_step};
use crate::frame::{
    ENCODED_FRAME_LEN, FORMAT_VERSION, FrameError, FrameErrorKind, open_frame, parse_v1,
};
use crate::seq_window::{SeqWindow, Step};
use std::collections::{HashMap, VecDeque};
use telering_core::{Category, Event, EventName};

/// Decodes a link's byte stream (see the module docs).
#[derive(Debug, Default)]
pub struct LinkDecoder {
    chunker: Chunker,
    /// Bytes of chunks that were not intact frames, since the last intact frame.
    unresolved: u64,
    /// The cause of the next event-index gap, set when frames went missing.
    gap_cause: Option<LossCause>,
    epoch_seen: bool,
    window: SeqWindow,
    /// Event-index ranges counted lost in this epoch's last gaps: a late batch
    /// inside one was counted already.
    gaps: VecDeque<(u64, u64)>,
    expected_event: Option<u64>,
    window_v1: SeqWindow,
    names: HashMap<u64, (Category, EventName)>,
    ready: VecDeque<LinkItem>,
}

impl LinkDecoder {
    /// Longest run of bytes without a delimiter kept; longer runs are noise.
    pub const MAX_CHUNK: usize = Chunker::MAX_CHUNK;
    /// Most name-table entries kept per epoch; events naming ids defined past it are
    /// counted lost as [`LossCause::UnknownName`].
    pub const MAX_NAMES: usize = 4096;

    /// A decoder at the start of a stream.
    pub fn new() -> LinkDecoder {
        LinkDecoder::default()
    }

    /// Feeds the next bytes and returns what they completed, in order. Bytes after
    /// the last delimiter are kept for the next call.
    pub fn feed(&mut self, bytes: &[u8]) -> impl Iterator<Item = LinkItem> + '_ {
        self.split(bytes);
        self.ready.drain(..)
    }

    /// Ends the stream (or a connection to it): an unfinished frame and unresolved
    /// chunks are counted as noise, since no later frame can say what they were.
    pub fn finish(&mut self) -> impl Iterator<Item = LinkItem> + '_ {
        let mut tail = 0;
        if let Some(left) = self.chunker.finish() {
            tail = left.len;
            let kind = FrameErrorKind::Truncated {
                len: left.len as usize,
            };
            self.problem(left.start, kind);
        }
        let bytes = self.unresolved + tail;
        if bytes > 0 {
            self.ready.push_back(LinkItem::Noise { bytes });
        }
        self.unresolved = 0;
        self.ready.drain(..)
    }

    /// Bytes fed so far.
    pub fn bytes_fed(&self) -> u64 {
        self.chunker.offset()
    }

    fn problem(&mut self, offset: u64, kind: FrameErrorKind) {
        self.ready
            .push_back(LinkItem::Problem(FrameError { offset, kind }));
    }

    fn decode_chunk(&mut self, chunk: &mut [u8], start: u64) {
        // A version-1 frame has a fixed length: noise without a zero before one is
        // found by trying the chunk's tail.
        let tail = frame_tail(chunk);
        let len = chunk.len();
        let error = match open_frame(chunk) {
            Ok(body) => match self.accept(body, start) {
                Ok(()) => return,
                Err(kind) => {
                    // Intact but unreadable: if it held events, they are lost with it.
                    self.gap_cause = Some(LossCause::Damaged);
                    kind
                }
            },
            Err(kind) => kind,
        };
        if let Some(mut tail) = tail {
            let garbage = len - ENCODED_FRAME_LEN;
            if let Ok(body) = open_frame(&mut tail) {
                if body[0] == FORMAT_VERSION && parse_v1(body).is_ok() {
                    self.problem(start, FrameErrorKind::Garbage { len: garbage });
                    self.unresolved += garbage as u64;
                    let _ = self.accept(body, start + garbage as u64);
                    return;
                }
            }
        }
        self.problem(start, error);
        // An intact frame that did not parse is not a damaged frame: it arrived, but
        // what it carried is unknown; count its bytes as not-a-frame unless a gap
        // shows it held events.
        self.unresolved += len as u64;
    }

    /// Handles an intact (CRC-checked) body.
    fn accept(&mut self, body: &[u8], offset: u64) -> Result<(), FrameErrorKind> {
        match body[0] {
            FORMAT_VERSION => {
                let frame = parse_v1(body)?;
                let crc = body_crc(body);
                let expected_seq = self.window_v1.expected().unwrap_or(0);
                let out_of_order = FrameErrorKind::OutOfOrder {
                    expected_seq,
                    found_seq: frame.seq,
                };
                let lost = match v1_step(&mut self.window_v1, frame.seq, crc) {
                    Step::First => 0,
                    Step::Ahead(ahead) => u64::from(ahead),
                    step @ (Step::Duplicate | Step::Late) => {
                        // Delivered or counted missing already: never counted twice,
                        // and the sequence number due stays.
                        if step == Step::Late {
                            self.window_v1.late(frame.seq, crc);
                        }
                        self.problem(offset, out_of_order);
                        return Ok(());
                    }
                    Step::Back => {
                        self.window_v1.restart();
                        self.problem(offset, out_of_order);
                        0
                    }
                };
                self.resolve(lost);
                self.window_v1.advance(frame.seq, crc);
                self.ready.push_back(LinkItem::Event {
                    event: frame.event,
                    version: FORMAT_VERSION,
                });
                Ok(())
            }
            LINK_VERSION => self.accept_v2(body, offset),
            found => Err(FrameErrorKind::UnsupportedVersion { found }),
        }
    }

    /// Reports the events of a gap (with the cause the unresolved chunks before it
    /// give), or those chunks as noise when there was no gap.
    fn resolve(&mut self, lost_events: u64) {
        if lost_events > 0 {
            let cause = if self.unresolved > 0 {
                LossCause::Damaged
            } else {
                LossCause::Missing
            };
            self.ready.push_back(LinkItem::Lost {
                events: lost_events,
                cause,
            });
        } else if self.unresolved > 0 {
            self.ready.push_back(LinkItem::Noise {
                bytes: self.unresolved,
            });
        }
        self.unresolved = 0;
    }

    /// At an intact version-2 frame `ahead` frames after the one due: the chunks
    /// before it were damaged frames if frames are missing, else noise. The cause is
    /// kept for the event-index gap the next batch will show.
    fn resolve_frames(&mut self, ahead: u32) {
        if ahead > 0 {
            let cause = if self.unresolved > 0 {
                LossCause::Damaged
            } else {
                LossCause::Missing
            };
            if self.gap_cause != Some(LossCause::Damaged) {
                self.gap_cause = Some(cause);
            }
        } else if self.unresolved > 0 {
            self.ready.push_back(LinkItem::Noise {
                bytes: self.unresolved,
            });
        }
        self.unresolved = 0;
    }

    fn accept_v2(&mut self, body: &[u8], offset: u64) -> Result<(), FrameErrorKind> {
        let parsed = wire::parse(body)?;
        let crc = body_crc(body);
        let seq = match parsed {
            Body::Hello { seq, .. }
            | Body::Names { seq, .. }
            | Body::Events { seq, .. }
            | Body::Clock { seq, .. } => seq,
        };
        let step = self.window.step(seq, crc);
        let out_of_order = FrameErrorKind::OutOfOrder {
            expected_seq: self.window.expected().unwrap_or(0),
            found_seq: seq,
        };
        // A hello with sequence number 0 always starts an epoch: a device's hello
        // is the same bytes at every start, so a copy of it cannot be told apart.
        let new_epoch = matches!(parsed, Body::Hello { seq: 0, .. });
        if step == Step::Duplicate && !new_epoch {
            // A copy of a frame taken already: what it carried was counted then.
            self.problem(offset, out_of_order);
            return Ok(());
        }
        let mut late = false;
        let mut ahead = 0;
        if new_epoch {
            let reset = self.epoch_seen;
            // Events sent after the last one seen and before the reset cannot be
            // known: the device's memory of them is gone.
            self.resolve_frames(0);
            self.start_epoch();
            // The epoch's event index starts at 0: a first batch that does not
            // arrive is a gap like any other.
            self.expected_event = Some(0);
            if let Body::Hello { hello, .. } = parsed {
                self.ready.push_back(LinkItem::Epoch {
                    device: hello.into(),
                    reset,
                });
            }
        } else {
            match step {
                Step::First | Step::Duplicate => {}
                Step::Ahead(n) => ahead = n,
                Step::Late if self.fits_late(&parsed)? => late = true,
                Step::Late | Step::Back => {
                    // Sequence numbers went back without a hello: the device
                    // restarted and its hello was lost.
                    self.resolve_frames(0);
                    self.start_epoch();
                    self.expected_event = Some(0);
                    self.gap_cause = Some(LossCause::Missing);
                    self.ready.push_back(LinkItem::ResetWithoutHello);
                }
            }
        }
        if late {
            // The sequence number due stays; the chunks before this frame are
            // resolved by the next frame in order.
            self.window.late(seq, crc);
            self.problem(offset, out_of_order);
            if let Body::Events { first_event, .. } = parsed {
                if self.expected_event.is_some_and(|e| first_event < e) {
                    // Its events were counted lost in a gap already: not again.
                    return Ok(());
                }
            }
        } else {
            self.resolve_frames(ahead);
            self.window.advance(seq, crc);
        }
        match parsed {
            Body::Hello { hello, .. } => {
                if !new_epoch && !self.epoch_seen {
                    // Joined a running link: its repeated hello starts our epoch.
                    self.epoch_seen = true;
                    self.ready.push_back(LinkItem::Epoch {
                        device: hello.into(),
                        reset: false,
                    });
                }
            }
            Body::Names { entries, .. } => {
                let mut at = 0;
                while at < entries.len() {
                    let entry = wire::next_name(entries, &mut at)?;
                    let name = wire_name(entry.name)?;
                    // Memory stays bounded whatever a stream defines: ids past the
                    // limit stay unknown, and their events are counted lost.
                    if self.names.len() < Self::MAX_NAMES || self.names.contains_key(&entry.id) {
                        self.names.insert(entry.id, (entry.category, name));
                    }
                }
            }
            Body::Clock { ticks, .. } => self.ready.push_back(LinkItem::Clock { ticks }),
            Body::Events {
                first_event,
                base_ticks,
                events,
                ..
            } => self.accept_batch(first_event, base_ticks, events, offset)?,
        }
        Ok(())
    }

    /// Whether a frame behind the one due, never received, is late rather than a
    /// restart's: any frame but a batch is; a batch is when its events are all in a
    /// gap already counted lost, or all at or after the next event index due (not
    /// counted yet: they are delivered).
    fn fits_late(&self, parsed: &Body<'_>) -> Result<bool, FrameErrorKind> {
        let Body::Events {
            first_event,
            events,
            ..
        } = *parsed
        else {
            return Ok(true);
        };
        let Some(expected) = self.expected_event else {
            return Ok(true);
        };
        if first_event >= expected {
            return Ok(true);
        }
        let mut count = 0u64;
        let mut at = 0;
        while at < events.len() {
            wire::next_event(events, &mut at)?;
            count += 1;
        }
        let end = first_event
            .checked_add(count)
            .ok_or(FrameErrorKind::Malformed {
                field: "first_event",
            })?;
        Ok(self
            .gaps
            .iter()
            .any(|&(from, to)| from <= first_event && end <= to))
    }

    fn start_epoch(&mut self) {
        self.window.restart();
        self.gaps.clear();
        self.epoch_seen = true;
        self.gap_cause = None;
        self.names.clear();
        self.expected_event = None;
    }

    fn accept_batch(
        &mut self,
        first_event: u64,
        base_ticks: u64,
        events: &[u8],
        offset: u64,
    ) -> Result<(), FrameErrorKind> {
        // Parse the whole batch first: a malformed one delivers nothing.
        let mut parsed = Vec::new();
        let mut at = 0;
        let mut ticks = base_ticks;
        while at < events.len() {
            let compact = wire::next_event(events, &mut at)?;
            // Deltas are taken modulo 2^64 by the encoder (a timestamp may go back
            // by any amount), so adding them so gives every timestamp back exactly.
            ticks = ticks.wrapping_add_signed(compact.delta_ticks);
            let name = match compact.name {
                Ok(id) => self.names.get(&id).copied(),
                Err((category, name)) => Some((category, wire_name(name)?)),
            };
            parsed.push(
                name.map(|(category, name)| Event::new(ticks, category, name, compact.value)),
            );
        }
        // The batch's last index must fit: a batch whose indices would pass 2^64 is
        // malformed, counted like any intact frame that does not parse.
        let end =
            first_event
                .checked_add(parsed.len() as u64)
                .ok_or(FrameErrorKind::Malformed {
                    field: "first_event",
                })?;
        let mut skip = 0;
        let lost = match self.expected_event {
            Some(expected) if first_event > expected => first_event - expected,
            Some(expected) if first_event < expected => {
                skip = (expected - first_event).min(parsed.len() as u64) as usize;
                self.problem(
                    offset,
                    FrameErrorKind::OutOfOrder {
                        expected_seq: expected.min(u64::from(u32::MAX)) as u32,
                        found_seq: first_event.min(u64::from(u32::MAX)) as u32,
                    },
                );
                0
            }
            _ => 0,
        };
        if lost > 0 {
            if self.gaps.len() == SeqWindow::WINDOW as usize {
                self.gaps.pop_front();
            }
            self.gaps.push_back((first_event - lost, first_event));
            let cause = self.gap_cause.unwrap_or(LossCause::Missing);
            self.ready.push_back(LinkItem::Lost {
                events: lost,
                cause,
            });
        }
        self.gap_cause = None;
        self.expected_event = Some(self.expected_event.map_or(end, |e| e.max(end)));
        let mut unknown = 0;
        for event in parsed.into_iter().skip(skip) {
            match event {
                Some(event) => self.ready.push_back(LinkItem::Event {
                    event,
                    version: LINK_VERSION,
                }),
                None => unknown += 1,
            }
        }
        if unknown > 0 {
            self.ready.push_back(LinkItem::Lost {
                events: unknown,
                cause: LossCause::UnknownName,
            });
        }
        Ok(())
    }
}

impl Chunked for LinkDecoder {
    fn chunker(&mut self) -> &mut Chunker {
        &mut self.chunker
    }

    fn chunk(&mut self, bytes: &mut [u8], start: u64) {
        self.decode_chunk(bytes, start);
    }

    fn oversized(&mut self, start: u64, len: u64) {
        self.problem(start, FrameErrorKind::Oversized { len });
        self.unresolved += len;
    }
}

/// A name as the device sent it. Like a name read from a ring file, it keeps control
/// characters (every output escapes them); only what cannot be a name on the wire is
/// refused: empty, a NUL, more than 31 bytes.
fn wire_name(name: &str) -> Result<EventName, FrameErrorKind> {
    let malformed = FrameErrorKind::Malformed { field: "name" };
    let mut field = [0u8; telering_core::event::NAME_FIELD_SIZE];
    let bytes = name.as_bytes();
    if bytes.len() >= field.len() || bytes.contains(&0) {
        return Err(malformed);
    }
    field[..bytes.len()].copy_from_slice(bytes);
    EventName::from_field(&field).map_err(|_| malformed)
}
