//! The version-2 encoder: events in, hello, name-table, batch and clock frames out
//! over any [`embedded_io::Write`]. `no_std`, no allocation.
//!
//! Its memory is fixed when it is built: one body buffer of [`MAX_BODY_V2`] bytes and
//! a name table of `NAMES` entries (a `heapless::LinearMap`: 40 bytes an entry, found
//! by comparing keys in order, which for the few dozen names of a device is less code
//! and no slower than hashing them; entries are never removed, so their order is the
//! order ids were given in).
//! A name is given the next id the first time it is seen and defined in a name-table
//! frame written just before the batch that first uses it; once the table is full,
//! new names travel inline in each event instead, so no event is refused for its name.

use super::varint::{self, MAX_VARINT_LEN};
use super::wire::{
    CRC_LEN, HEADER_LEN, Hello, KIND_CLOCK, KIND_EVENTS, KIND_HELLO, KIND_NAMES, LINK_VERSION,
    MAX_AGENT_LEN, MAX_BODY_V2, MAX_VERSION_LEN, TAG_INLINE,
};
use crate::frame::crc32;
use core::fmt;
use embedded_io::Write;
use heapless::LinearMap;
use telering_core::event::NAME_FIELD_SIZE;
use telering_core::ring::EventOwner;
use telering_core::{Consumer, Event};

/// A name-table key: the event's category and its NUL-padded name field.
type NameKey = (i32, [u8; NAME_FIELD_SIZE]);

/// Room a batch keeps for its header: version, kind, sequence number, first event
/// index and base timestamp.
const BATCH_HEADER_MAX: usize = HEADER_LEN + 2 * MAX_VARINT_LEN;

/// Writes events as version-2 frames (see `docs/LINK.md`): a hello, then batches of
/// compact events, name-table frames as new names appear, and clock frames when
/// asked.
///
/// ```
/// use telering_core::{event_name, Category, Event};
/// use telering_embedded_io::link::{Hello, LinkDecoder, LinkEncoder, LinkItem};
///
/// let hello = Hello { agent: "dpu0", firmware_version: "1.0", ticks_per_second: 1_000_000, ring_capacity: 64 };
/// let mut line = Vec::new();
/// let mut encoder: LinkEncoder<_, 16> = LinkEncoder::new(&mut line, hello);
/// for v in 0..10 {
///     encoder.push(&Event::new(100 + v, Category::Transfer, event_name!("agent_tx_bytes"), 4096)).unwrap();
/// }
/// encoder.flush().unwrap();
/// // Hello, one name, one batch: far fewer than ten 68-byte version-1 frames.
/// assert!(line.len() < 120, "{}", line.len());
///
/// let mut decoder = LinkDecoder::new();
/// let events: Vec<Event> = decoder.feed(&line).filter_map(|item| match item {
///     LinkItem::Event { event, .. } => Some(event),
///     _ => None,
/// }).collect();
/// assert_eq!(events.len(), 10);
/// assert_eq!(events[9].timestamp_us(), 109); // device ticks, here microseconds
/// ```
pub struct LinkEncoder<'a, W, const NAMES: usize = 16> {
    writer: W,
    hello: Hello<'a>,
    names: LinearMap<NameKey, u16, NAMES>,
    /// Entries of `names` (in id order) already defined on the link.
    names_sent: usize,
    body: [u8; MAX_BODY_V2],
    /// Bytes of `body` used by the open batch (0: no batch open).
    body_len: usize,
    batch_events: u32,
    last_ticks: u64,
    next_seq: u32,
    /// Index of the next event in this epoch: every event taken, written or not.
    next_event: u64,
    started: bool,
    /// A write failed, perhaps mid-frame: the next frame starts with a zero so the
    /// torn one does not run into it.
    torn: bool,
    frames_written: u64,
    frames_failed: u64,
    events_failed: u64,
}

impl<W, const NAMES: usize> fmt::Debug for LinkEncoder<'_, W, NAMES> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkEncoder")
            .field("hello", &self.hello)
            .field("names", &self.names.len())
            .field("next_seq", &self.next_seq)
            .field("next_event", &self.next_event)
            .field("frames_written", &self.frames_written)
            .field("frames_failed", &self.frames_failed)
            .field("events_failed", &self.events_failed)
            .finish_non_exhaustive()
    }
}

impl<'a, W: Write, const NAMES: usize> LinkEncoder<'a, W, NAMES> {
    /// An encoder for a new epoch: its first frame is the hello, sequence number 0.
    pub fn new(writer: W, hello: Hello<'a>) -> Self {
        LinkEncoder {
            writer,
            hello,
            names: LinearMap::new(),
            names_sent: 0,
            body: [0; MAX_BODY_V2],
            body_len: 0,
            batch_events: 0,
            last_ticks: 0,
            next_seq: 0,
            next_event: 0,
            started: false,
            torn: false,
            frames_written: 0,
            frames_failed: 0,
            events_failed: 0,
        }
    }

    /// Adds `event` to the open batch; a full batch is written first. Its timestamp is
    /// in device ticks ([`Hello::ticks_per_second`]). An error is the failed write of
    /// the previous batch, whose events are counted in
    /// [`LinkEncoder::events_failed`]; `event` itself is kept.
    pub fn push(&mut self, event: &Event) -> Result<(), W::Error> {
        let mut scratch = [0u8; 3 + NAME_FIELD_SIZE + 2 * MAX_VARINT_LEN];
        let mut result = Ok(());
        let len = loop {
            if self.body_len == 0 {
                self.open_batch(event.timestamp_us());
            }
            let len = self.compact(event, &mut scratch);
            if self.body_len + len + CRC_LEN <= MAX_BODY_V2 {
                break len;
            }
            result = self.flush_batch();
        };
        self.body[self.body_len..self.body_len + len].copy_from_slice(&scratch[..len]);
        self.body_len += len;
        self.batch_events += 1;
        self.next_event += 1;
        self.last_ticks = event.timestamp_us();
        result
    }

    /// Takes up to `max` events from `consumer`, adds each to a batch, and writes the
    /// open batch. Returns how many were taken; an error means some of them were lost
    /// (counted in [`LinkEncoder::events_failed`]; the receiver sees the gap).
    pub fn drain<R: EventOwner>(
        &mut self,
        consumer: &mut Consumer<R>,
        max: usize,
    ) -> Result<usize, W::Error> {
        let mut taken = 0;
        let mut result = Ok(());
        while taken < max {
            let Some(event) = consumer.pop() else { break };
            if let Err(e) = self.push(&event) {
                result = Err(e);
            }
            taken += 1;
        }
        let flushed = self.flush_batch();
        result.and(flushed).map(|()| taken)
    }

    /// Writes the open batch (after the definitions of names it uses) and flushes
    /// the writer.
    pub fn flush(&mut self) -> Result<(), W::Error> {
        self.flush_batch()?;
        self.writer.flush()
    }

    /// Writes a clock frame carrying `ticks`, the device clock read just before: the
    /// receiver aligns the device's time to its own from these. The open batch goes
    /// first.
    pub fn clock(&mut self, ticks: u64) -> Result<(), W::Error> {
        self.flush_batch()?;
        self.start()?;
        let mut len = self.header(KIND_CLOCK);
        len += varint::put(ticks, &mut self.body[len..]).unwrap_or(0);
        self.write_body(len)
    }

    /// Sends the hello and every name definition again (sequence numbers continue, so
    /// this is not a new epoch), for a receiver that joined the link late.
    pub fn resend_definitions(&mut self) -> Result<(), W::Error> {
        self.flush_batch()?;
        self.names_sent = 0;
        if self.started {
            self.write_hello()?;
        }
        Ok(())
    }

    /// Frames written completely.
    pub fn frames_written(&self) -> u64 {
        self.frames_written
    }

    /// Frames whose write failed.
    pub fn frames_failed(&self) -> u64 {
        self.frames_failed
    }

    /// Events lost because the write of their batch failed.
    pub fn events_failed(&self) -> u64 {
        self.events_failed
    }

    /// Events taken so far in this epoch (written, failed, or in the open batch).
    pub fn events_taken(&self) -> u64 {
        self.next_event
    }

    /// Names in the table (at most `NAMES`; later names travel inline).
    pub fn names(&self) -> usize {
        self.names.len()
    }

    /// The writer.
    pub fn writer(&self) -> &W {
        &self.writer
    }

    /// The writer, mutably (to take what a buffer writer holds, say).
    pub fn writer_mut(&mut self) -> &mut W {
        &mut self.writer
    }

    /// Gives the writer back (the open batch is not written).
    pub fn into_inner(self) -> W {
        self.writer
    }

    /// The compact form of `event` (tag, delta ticks, value) into `out`; a new name
    /// is added to the table here.
    fn compact(&mut self, event: &Event, out: &mut [u8]) -> usize {
        // The name up to its NUL, zero-padded: a record read from foreign memory may
        // carry bytes after the NUL that are no part of the name.
        let field = event.name_field();
        let name_len = field.iter().position(|&b| b == 0).unwrap_or(field.len());
        let mut name = [0u8; NAME_FIELD_SIZE];
        name[..name_len].copy_from_slice(&field[..name_len]);
        let key = (event.raw_category(), name);
        let id = match self.names.get(&key) {
            Some(&id) => Some(id),
            None => {
                let id = (self.names.len() + 1) as u16;
                self.names.insert(key, id).ok().map(|_| id)
            }
        };
        let mut len = match id {
            Some(id) => varint::put(u64::from(id), out).unwrap_or(0),
            None => {
                out[0] = TAG_INLINE as u8;
                1 + put_category_and_name(&key, &mut out[1..])
            }
        };
        let delta = event.timestamp_us().wrapping_sub(self.last_ticks) as i64;
        len += varint::put(varint::zigzag(delta), &mut out[len..]).unwrap_or(0);
        len += varint::put(event.value(), &mut out[len..]).unwrap_or(0);
        len
    }

    fn header(&mut self, kind: u8) -> usize {
        let seq = self.next_seq.to_le_bytes();
        self.body[..HEADER_LEN].copy_from_slice(&[
            LINK_VERSION,
            kind,
            seq[0],
            seq[1],
            seq[2],
            seq[3],
        ]);
        HEADER_LEN
    }

    fn open_batch(&mut self, base_ticks: u64) {
        let mut len = self.header(KIND_EVENTS);
        len += varint::put(self.next_event, &mut self.body[len..]).unwrap_or(0);
        len += varint::put(base_ticks, &mut self.body[len..]).unwrap_or(0);
        debug_assert!(len <= BATCH_HEADER_MAX);
        self.body_len = len;
        self.batch_events = 0;
        self.last_ticks = base_ticks;
    }

    /// Writes the open batch, if any, after the hello and the definitions of new
    /// names. A failure loses the batch's events: counted, the index moves on.
    fn flush_batch(&mut self) -> Result<(), W::Error> {
        if self.body_len == 0 {
            return Ok(());
        }
        let mut batch = [0u8; MAX_BODY_V2];
        let len = self.body_len;
        batch[..len].copy_from_slice(&self.body[..len]);
        let events = self.batch_events;
        self.body_len = 0;
        self.batch_events = 0;
        let result = self
            .start()
            .and_then(|()| self.write_names())
            .and_then(|()| {
                // The batch takes its sequence number now, after the frames before it.
                batch[2..HEADER_LEN].copy_from_slice(&self.next_seq.to_le_bytes());
                self.body[..len].copy_from_slice(&batch[..len]);
                self.write_body(len)
            });
        if result.is_err() {
            self.events_failed += u64::from(events);
        }
        result
    }

    fn start(&mut self) -> Result<(), W::Error> {
        if self.started {
            return Ok(());
        }
        // One zero ends whatever noise the line carried before the first frame.
        self.writer.write_all(&[0])?;
        self.started = true;
        self.write_hello()
    }

    fn write_hello(&mut self) -> Result<(), W::Error> {
        let hello = self.hello;
        let mut len = self.header(KIND_HELLO);
        len += varint::put(u64::from(hello.ticks_per_second), &mut self.body[len..]).unwrap_or(0);
        len += varint::put(u64::from(hello.ring_capacity), &mut self.body[len..]).unwrap_or(0);
        len += put_text(fit(hello.agent, MAX_AGENT_LEN), &mut self.body[len..]);
        len += put_text(
            fit(hello.firmware_version, MAX_VERSION_LEN),
            &mut self.body[len..],
        );
        self.write_body(len)
    }

    /// Name-table frames for the entries not yet defined on the link.
    fn write_names(&mut self) -> Result<(), W::Error> {
        while self.names_sent < self.names.len() {
            let mut len = self.header(KIND_NAMES);
            let mut next = self.names_sent;
            while let Some((key, &id)) = self.names.iter().nth(next) {
                let mut entry = [0u8; 3 + 2 + NAME_FIELD_SIZE];
                let mut n = varint::put(u64::from(id), &mut entry).unwrap_or(0);
                n += put_category_and_name(key, &mut entry[n..]);
                if len + n + CRC_LEN > MAX_BODY_V2 {
                    break;
                }
                self.body[len..len + n].copy_from_slice(&entry[..n]);
                len += n;
                next += 1;
            }
            self.write_body(len)?;
            self.names_sent = next;
        }
        Ok(())
    }

    /// Appends the CRC to `body[..len]`, writes the frame COBS-encoded with its
    /// delimiter, and uses up one sequence number whatever happens.
    fn write_body(&mut self, len: usize) -> Result<(), W::Error> {
        let crc = crc32(&self.body[..len]).to_le_bytes();
        self.body[len..len + CRC_LEN].copy_from_slice(&crc);
        self.next_seq = self.next_seq.wrapping_add(1);
        let mut result = Ok(());
        if self.torn {
            result = self.writer.write_all(&[0]);
        }
        let result =
            result.and_then(|()| write_cobs(&mut self.writer, &self.body[..len + CRC_LEN]));
        match result {
            Ok(()) => {
                self.frames_written += 1;
                self.torn = false;
            }
            Err(_) => {
                self.frames_failed += 1;
                self.torn = true;
            }
        }
        result
    }
}

/// `text` cut to at most `max` bytes at a character boundary.
fn fit(text: &str, max: usize) -> &[u8] {
    let mut len = text.len().min(max);
    while !text.is_char_boundary(len) {
        len -= 1;
    }
    &text.as_bytes()[..len]
}

/// A length byte and the bytes, truncated to 255; returns the bytes used.
fn put_text(text: &[u8], out: &mut [u8]) -> usize {
    let len = text.len().min(255).min(out.len().saturating_sub(1));
    out[0] = len as u8;
    out[1..=len].copy_from_slice(&text[..len]);
    1 + len
}

fn put_category_and_name(key: &NameKey, out: &mut [u8]) -> usize {
    let name = &key.1;
    let name_len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    out[0] = key.0 as u8;
    1 + put_text(&name[..name_len], &mut out[1..])
}

/// Writes `body` (at most 253 bytes) COBS-encoded, then the `0x00` delimiter,
/// straight to the writer: no second buffer. With fewer than 254 bytes every run of
/// non-zero bytes is shorter than 254, so each run is one length code plus the run.
pub(crate) fn write_cobs<W: Write>(writer: &mut W, body: &[u8]) -> Result<(), W::Error> {
    let mut rest = body;
    loop {
        let run = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        writer.write_all(&[run as u8 + 1])?;
        writer.write_all(&rest[..run])?;
        if run == rest.len() {
            break;
        }
        rest = &rest[run + 1..];
    }
    writer.write_all(&[0])
}
