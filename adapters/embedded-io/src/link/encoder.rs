//! The version-2 encoder: events in, hello, name-table, batch and clock frames out
//! over any [`embedded_io::Write`]. `no_std`, no allocation, no panics.
//!
//! Its memory is fixed when it is built: one body buffer of [`MAX_BODY_V2`] bytes and
//! a name table of `NAMES` entries (a `heapless::Vec` of keys used as a map: an
//! entry's id is its index + 1, since entries are never removed and ids are given in
//! order of first use; 36 bytes an entry, found by comparing keys in order, which for
//! the few dozen names of a device is less code and no slower than hashing them).
//! A name is given the next id the first time it is seen and defined in a name-table
//! frame written just before the batch that first uses it; once the table is full,
//! new names travel inline in each event instead, so no event is refused for its name.
//!
//! The hello and name-table frames written before a batch are built in a second
//! body on the stack, only while the batch is written, so the open batch never
//! moves; the other frames are built in the batch's body, free then.

use super::out::{Body, Line};
use super::varint;
use super::wire::{Hello, KIND_CLOCK, KIND_EVENTS, KIND_NAMES, TAG_INLINE};
use core::fmt;
use embedded_io::Write;
use heapless::Vec;
use telering_core::event::NAME_FIELD_SIZE;
use telering_core::ring::EventOwner;
use telering_core::{Consumer, Event};

/// A name-table key: the event's category and its NUL-padded name field.
type NameKey = (i32, [u8; NAME_FIELD_SIZE]);

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
    line: Line<W>,
    hello: Hello<'a>,
    /// The name table: the key of id `i + 1` at index `i`.
    names: Vec<NameKey, NAMES>,
    /// Entries of `names` (in id order) already defined on the link.
    names_sent: usize,
    /// The open batch (empty: no batch open).
    body: Body,
    batch_events: u32,
    last_ticks: u64,
    /// Index of the next event in this epoch: every event taken, written or not.
    next_event: u64,
    events_failed: u64,
}

impl<W, const NAMES: usize> fmt::Debug for LinkEncoder<'_, W, NAMES> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkEncoder")
            .field("hello", &self.hello)
            .field("names", &self.names.len())
            .field("next_seq", &self.line.next_seq)
            .field("next_event", &self.next_event)
            .field("frames_written", &self.line.frames_written)
            .field("frames_failed", &self.line.frames_failed)
            .field("events_failed", &self.events_failed)
            .finish_non_exhaustive()
    }
}

impl<'a, W: Write, const NAMES: usize> LinkEncoder<'a, W, NAMES> {
    /// An encoder for a new epoch: its first frame is the hello, sequence number 0.
    // Out of line, it is built in the caller's slot; inlined at `opt-level = "z"`,
    // LLVM built it aside and copied it, linking a 156-byte `__aeabi_memcpy8` into the
    // firmware (BENCHMARKS.md, "Firmware footprint: the version-2 encoder made small").
    #[inline(never)]
    pub fn new(writer: W, hello: Hello<'a>) -> Self {
        LinkEncoder {
            line: Line::new(writer),
            hello,
            names: Vec::new(),
            names_sent: 0,
            body: Body::new(),
            batch_events: 0,
            last_ticks: 0,
            next_event: 0,
            events_failed: 0,
        }
    }

    /// Adds `event` to the open batch; a full batch is written first. Its timestamp is
    /// in device ticks ([`Hello::ticks_per_second`]). An error is the failed write of
    /// the previous batch, whose events are counted in
    /// [`LinkEncoder::events_failed`]; `event` itself is kept.
    pub fn push(&mut self, event: &Event) -> Result<(), W::Error> {
        let key = name_key(event);
        let id = self.name_id(&key);
        let ticks = event.timestamp_us();
        let mut result = Ok(());
        loop {
            if self.body.len() == 0 {
                self.open_batch(ticks);
            }
            // The compact event: tag (a name id, or 0 and the name), delta ticks, value.
            let start = self.body.len();
            match id {
                Some(id) => self.body.put_varint(id),
                None => {
                    self.body.put(TAG_INLINE as u8);
                    put_category_and_name(&mut self.body, &key);
                }
            }
            let delta = ticks.wrapping_sub(self.last_ticks) as i64;
            self.body.put_varint(varint::zigzag(delta));
            self.body.put_varint(event.value());
            if self.body.fits() {
                break;
            }
            // It belongs in the next batch (an event always fits in an empty one).
            self.body.truncate(start);
            result = self.flush_batch();
        }
        self.batch_events += 1;
        self.next_event += 1;
        self.last_ticks = ticks;
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
        self.line.writer.flush()
    }

    /// Writes a clock frame carrying `ticks`, the device clock read just before: the
    /// receiver aligns the device's time to its own from these. The open batch goes
    /// first.
    pub fn clock(&mut self, ticks: u64) -> Result<(), W::Error> {
        self.flush_batch()?;
        // No batch is open now: the hello, if due, and the clock frame are built in
        // the batch's body.
        let result = self.line.start(&self.hello, &mut self.body).and_then(|()| {
            self.body.header(KIND_CLOCK);
            self.body.put_varint(ticks);
            self.line.send(&mut self.body)
        });
        self.body.truncate(0);
        result
    }

    /// Sends the hello and every name definition again (sequence numbers continue, so
    /// this is not a new epoch), for a receiver that joined the link late.
    pub fn resend_definitions(&mut self) -> Result<(), W::Error> {
        self.flush_batch()?;
        self.names_sent = 0;
        if !self.line.started {
            return Ok(());
        }
        let result = self.line.write_hello(&self.hello, &mut self.body);
        self.body.truncate(0);
        result
    }

    /// Frames written completely.
    pub fn frames_written(&self) -> u64 {
        self.line.frames_written
    }

    /// Frames whose write failed.
    pub fn frames_failed(&self) -> u64 {
        self.line.frames_failed
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
        &self.line.writer
    }

    /// The writer, mutably (to take what a buffer writer holds, say).
    pub fn writer_mut(&mut self) -> &mut W {
        &mut self.line.writer
    }

    /// Gives the writer back (the open batch is not written).
    pub fn into_inner(self) -> W {
        self.line.writer
    }

    /// The id of `key` in the name table, where it is added if new; `None` when it is
    /// not there and the table is full.
    fn name_id(&mut self, key: &NameKey) -> Option<u64> {
        let at = match self.names.iter().position(|known| known == key) {
            Some(at) => at,
            None => {
                self.names.push(*key).ok()?;
                self.names.len() - 1
            }
        };
        // An id is a `u16`, as from the first encoder: the same bytes for any table.
        Some(u64::from((at + 1) as u16))
    }

    fn open_batch(&mut self, base_ticks: u64) {
        self.body.header(KIND_EVENTS);
        self.body.put_varint(self.next_event);
        self.body.put_varint(base_ticks);
        self.batch_events = 0;
        self.last_ticks = base_ticks;
    }

    /// Writes the open batch, if any, after the hello and the definitions of new
    /// names. A failure loses the batch's events: counted, the index moves on.
    fn flush_batch(&mut self) -> Result<(), W::Error> {
        if self.body.len() == 0 {
            return Ok(());
        }
        let mut scratch = Body::new();
        // The batch takes its sequence number when sent, after the frames before it.
        let result = self
            .line
            .start(&self.hello, &mut scratch)
            .and_then(|()| self.write_names(&mut scratch))
            .and_then(|()| self.line.send(&mut self.body));
        self.body.truncate(0);
        if result.is_err() {
            self.events_failed += u64::from(self.batch_events);
        }
        self.batch_events = 0;
        result
    }

    /// Name-table frames (built in `body`) for the entries not yet defined on the
    /// link.
    fn write_names(&mut self, body: &mut Body) -> Result<(), W::Error> {
        while self.names_sent < self.names.len() {
            body.header(KIND_NAMES);
            let mut next = self.names_sent;
            while let Some(key) = self.names.get(next) {
                let start = body.len();
                body.put_varint(u64::from((next + 1) as u16));
                put_category_and_name(body, key);
                if !body.fits() {
                    body.truncate(start);
                    break;
                }
                next += 1;
            }
            self.line.send(body)?;
            self.names_sent = next;
        }
        Ok(())
    }
}

/// The event's category and name up to its NUL, zero-padded: a record read from
/// foreign memory may carry bytes after the NUL that are no part of the name.
fn name_key(event: &Event) -> NameKey {
    let mut key = (event.raw_category(), *event.name_field());
    let mut ended = false;
    for byte in &mut key.1 {
        ended |= *byte == 0;
        if ended {
            *byte = 0;
        }
    }
    key
}

fn put_category_and_name(body: &mut Body, (category, name): &NameKey) {
    let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    body.put(*category as u8);
    body.put_text(name.get(..len).unwrap_or_default());
}
