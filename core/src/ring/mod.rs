//! The single-producer, single-consumer event ring, with read-only observers.
//!
//! # What it is
//!
//! A power-of-two array of 56-byte [`Slot`]s and two positions, `write_pos` (the
//! slot the producer fills next) and `read_pos` (the slot the consumer reads next),
//! both *masked slot indices* exactly as in NIXL's version-1 shared-memory header.
//! The ring is empty when `read_pos == write_pos` and full when
//! `(write_pos + 1) & mask == read_pos`, so a ring of capacity `N` holds `N − 1`
//! events. One algorithm ([`Producer`], [`Consumer`], [`Observer`]) runs over two
//! kinds of storage:
//!
//! - [`Ring<N>`]: owned, `const`-constructible, usable in a `static`, with the two
//!   positions on separate cache lines;
//! - [`RingRegion`]: a caller-provided memory region laid out as NIXL's 40-byte header
//!   followed by the slots — a shared-memory file, a DPU-to-host memory window.
//!
//! # Overflow
//!
//! Chosen when the handles are made ([`OverflowPolicy`]):
//! - [`OverflowPolicy::DropNewest`]: a push into a full ring fails and
//!   [`Producer::events_dropped`] counts it. The consumer sees a gap-free stream.
//! - [`OverflowPolicy::OverwriteOldest`] (flight recorder): the producer never waits
//!   for the consumer and overwrites the oldest unread events. The consumer detects
//!   that it was lapped and counts exactly how many events it lost
//!   ([`Consumer::events_lost`]).
//!
//! Under both, every event is either delivered or counted.
//!
//! # The slot stamp
//!
//! The producer numbers events with a sequence `seq` (0, 1, 2, …) and writes into the
//! reserved `u32` at offset 44 of each slot a *stamp*: `(seq mod 2³⁰) << 2 | 0b10`,
//! with the low bit also set while the slot is being written. Bit 1 is set in every
//! stamp, so zero always means "never written".
//! Writing event `seq` into a slot is a seqlock write:
//!
//! 1. `stamp.store(busy(seq), Relaxed)`
//! 2. `fence(Release)` — orders the busy mark before any data store
//! 3. the 56 bytes, as relaxed atomic word stores
//! 4. `stamp.store(done(seq), Release)`
//! 5. `write_pos.store(next, Release)` — once per push, or once per batch
//!
//! A stamp-checked read (observers, and the consumer under `OverwriteOldest`) expecting
//! event `seq` in a slot does:
//!
//! 1. `s1 = stamp.load(Acquire)`; if `s1 ≠ done(seq)`: the slot holds an older event
//!    (nothing new yet), is being written, or holds a newer one (we were lapped)
//! 2. the 56 bytes, as relaxed atomic word loads
//! 3. `fence(Acquire)`, then `s2 = stamp.load(Relaxed)`; the copy is good only if
//!    `s2 == s1`
//!
//! If a data load in step 2 saw a store from a later write of the slot, the reader's
//! acquire fence synchronises with that write's release fence, so `s2` sees at least
//! the later busy stamp and the copy is discarded: **no torn read is ever returned**.
//! When lapped, a reader that finds event `S > seq` (or its busy mark) in the slot
//! knows that every event up to `S − N` was overwritten (the producer writes in order
//! and has started `S`), so it resumes at `S − N + 1` and counts the difference as
//! lost: the count is exact, never estimated. Stamps carry 30 bits of sequence, so a
//! reader must not fall more than 2²⁹ events behind between two reads for the lap
//! distance to be unambiguous (capacities are at most 2²⁸). One read skips at most 64
//! lapped slots before it reports "nothing readable now", so corrupted stamps in
//! foreign memory cannot keep a reader busy.
//!
//! The draining consumer under `DropNewest` does not need the stamps: the producer
//! never touches a slot between `read_pos` and `write_pos`, the acquire load of
//! `write_pos` makes the slot contents visible, and the release store of `read_pos`
//! hands the slot back. This is exactly NIXL's protocol, so NIXL's readers, which
//! ignore offset 44, keep working. Only telering readers can follow an
//! `OverwriteOldest` ring safely, because only they check stamps.
//!
//! # Observers
//!
//! Any number of [`Observer`]s follow the stream read-only, with stamp-checked reads,
//! never writing anything. They neither slow nor block the producer or the consumer;
//! when the producer laps them they skip ahead and [`Observer::events_missed`] says
//! exactly how many events they did not see.
//!
//! # Cost
//!
//! A push is a bounds check against a cached `read_pos`, seven relaxed word stores,
//! two stamp stores and one release store; a pop mirrors it. On x86-64 none of these
//! needs a fence instruction. Measured figures are in `BENCHMARKS.md`.

mod region;
mod slot;

pub use region::{HEADER_SIZE, HeaderInfo, RING_VERSION, RegionError, RingHeader, RingRegion};
pub use slot::{Slot, WireI32, WireU64};

use crate::event::Event;
use crate::sync::{AtomicBool, Ordering, fence};
use core::fmt;

/// Largest supported capacity: positions and stamps are 32-bit.
pub const MAX_CAPACITY: u32 = 1 << 28;

/// What the producer does when the ring is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum OverflowPolicy {
    /// Refuse the new event and count it as dropped (NIXL's behaviour; the default).
    #[default]
    DropNewest,
    /// Overwrite the oldest unread event; the consumer counts what it lost.
    OverwriteOldest,
}

/// A push into a full ring under [`OverflowPolicy::DropNewest`]; the event was dropped
/// and counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

impl fmt::Display for Full {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ring is full; the event was dropped and counted")
    }
}

/// [`Ring::split`] was called a second time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadySplit;

impl fmt::Display for AlreadySplit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the ring already has its producer and consumer")
    }
}

/// Where a new [`Observer`] starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ObserverStart {
    /// At the oldest event still in the ring (up to capacity − 1 events of history).
    #[default]
    Oldest,
    /// At the next event to be published.
    Newest,
}

/// Stamps carry 30 bits of sequence.
const STAMP_SEQ_MASK: u32 = (1 << 30) - 1;
/// Set in every stamp of a slot that was ever written, so that no sequence number
/// encodes to the "never written" stamp 0.
const STAMP_WRITTEN: u32 = 0b10;
/// Set while the slot is being written.
const STAMP_BUSY: u32 = 0b01;

/// The stamp of a slot that holds event `seq` completely.
#[inline]
const fn stamp_done(seq: u32) -> u32 {
    (seq & STAMP_SEQ_MASK) << 2 | STAMP_WRITTEN
}

/// Whether a stamp belongs to a slot that was ever written.
#[inline]
const fn stamp_written(stamp: u32) -> bool {
    stamp & STAMP_WRITTEN != 0
}

/// The sequence number a (written) stamp refers to.
#[inline]
const fn stamp_seq(stamp: u32) -> u32 {
    stamp >> 2
}

/// Signed distance `a − b` in the 30-bit sequence space.
#[inline]
const fn seq_distance(a: u32, b: u32) -> i32 {
    let d = a.wrapping_sub(b) & STAMP_SEQ_MASK;
    if d >= 1 << 29 {
        d as i32 - (1 << 30)
    } else {
        d as i32
    }
}

/// How many lapped slots one read may skip before it reports "nothing readable now".
/// A live writer rarely laps a reader twice within one read; the bound keeps a read
/// over corrupted or crafted stamps from skipping around for a long time.
const MAX_SKIPS_PER_READ: u32 = 64;

/// A slot whose stamp does not fit the sequence the ring's other stamps tell; see
/// [`RingRegion::check_stamps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StampError {
    /// The slot index.
    pub slot: u32,
    /// The stamp found there.
    pub stamp: u32,
}

impl fmt::Display for StampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "slot {} carries stamp {:#010x}, which does not fit the ring's sequence",
            self.slot, self.stamp
        )
    }
}

/// The storage one algorithm runs over: two positions and the slots.
#[derive(Clone, Copy)]
pub(crate) struct RingRef<'a> {
    write_pos: &'a WireU64,
    read_pos: &'a WireU64,
    slots: &'a [Slot],
    mask: u32,
}

impl fmt::Debug for RingRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingRef")
            .field("capacity", &self.slots.len())
            .field("write_pos", &self.write_pos.load_low(Ordering::Relaxed))
            .field("read_pos", &self.read_pos.load_low(Ordering::Relaxed))
            .finish()
    }
}

impl<'a> RingRef<'a> {
    #[inline(always)]
    fn slot(&self, pos: u32) -> &'a Slot {
        // `pos` is always masked, and `slots.len() == mask + 1`; `get` keeps the
        // recording path panic-free even so.
        let slots: &'a [Slot] = self.slots;
        match slots.get((pos & self.mask) as usize) {
            Some(s) => s,
            None => &slots[0],
        }
    }

    fn capacity(&self) -> u32 {
        self.mask + 1
    }

    /// The sequence number of the next event the producer writes, derived from the
    /// stamp of the slot before `write_pos` (events are numbered from the first write
    /// into a fresh ring).
    fn next_write_seq(&self) -> (u32, u32) {
        let w = self.write_pos.load_low(Ordering::Acquire) & self.mask;
        let stamp = self
            .slot(w.wrapping_sub(1) & self.mask)
            .stamp
            .load(Ordering::Acquire);
        if !stamp_written(stamp) {
            // Never wrapped around to the previous slot: a fresh ring, events 0..w.
            (w, w)
        } else {
            (w, stamp_seq(stamp).wrapping_add(1) & STAMP_SEQ_MASK)
        }
    }
}

impl RingRef<'_> {
    /// Checks that the slot stamps tell one consistent story: every written slot `i`
    /// holds an event whose sequence maps to slot `i`, no older than one ring's worth
    /// before the newest and not implausibly far ahead of it (a live writer may move
    /// on during the scan). One load per slot.
    fn check_stamps(&self) -> Result<(), StampError> {
        const AHEAD_LIMIT: u32 = 1 << 28;
        let capacity = self.capacity();
        let (w, next) = self.next_write_seq();
        // slot = (seq + offset) mod capacity
        let offset = w.wrapping_sub(next) & self.mask;
        for slot in 0..capacity {
            let stamp = self.slot(slot).stamp.load(Ordering::Acquire);
            if !stamp_written(stamp) {
                continue;
            }
            let seq = stamp_seq(stamp);
            let behind = next.wrapping_sub(1).wrapping_sub(seq) & STAMP_SEQ_MASK;
            let ahead = seq.wrapping_sub(next) & STAMP_SEQ_MASK;
            let in_window = behind < capacity || ahead < AHEAD_LIMIT;
            let in_its_slot = seq.wrapping_add(offset) & self.mask == slot;
            if !(in_window && in_its_slot) {
                return Err(StampError { slot, stamp });
            }
        }
        Ok(())
    }
}

/// A read position that checks stamps: shared by observers and by the consumer under
/// `OverwriteOldest`.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    pos: u32,
    seq: u32,
}

enum CursorRead {
    Event(Event),
    Empty,
}

impl Cursor {
    fn at_oldest(ring: &RingRef<'_>) -> Cursor {
        let (w, next_seq) = ring.next_write_seq();
        let history = next_seq.min(ring.mask);
        Cursor {
            pos: w.wrapping_sub(history) & ring.mask,
            seq: next_seq.wrapping_sub(history) & STAMP_SEQ_MASK,
        }
    }

    fn at_newest(ring: &RingRef<'_>) -> Cursor {
        let (w, next_seq) = ring.next_write_seq();
        Cursor {
            pos: w,
            seq: next_seq,
        }
    }

    fn advance(&mut self, by: u32, mask: u32) {
        self.pos = self.pos.wrapping_add(by) & mask;
        self.seq = self.seq.wrapping_add(by) & STAMP_SEQ_MASK;
    }

    /// Reads the next event, skipping (and adding to `lost`) every event that was
    /// overwritten before it could be read.
    #[inline]
    fn read(&mut self, ring: &RingRef<'_>, lost: &mut u64) -> CursorRead {
        for _ in 0..=MAX_SKIPS_PER_READ {
            let slot = ring.slot(self.pos);
            let expected = stamp_done(self.seq);
            let s1 = slot.stamp.load(Ordering::Acquire);
            if s1 == expected {
                let event = slot.load_event();
                fence(Ordering::Acquire);
                let s2 = slot.stamp.load(Ordering::Relaxed);
                if s2 == s1 {
                    self.advance(1, ring.mask);
                    return CursorRead::Event(event);
                }
                // Overwritten while we copied it.
                if !self.is_newer(s2) {
                    return CursorRead::Empty;
                }
                self.skip_lapped(s2, ring, lost);
            } else if !self.is_newer(s1) {
                // Never written, an older lap, or our event being written right now.
                return CursorRead::Empty;
            } else {
                self.skip_lapped(s1, ring, lost);
            }
        }
        CursorRead::Empty
    }

    /// Whether `stamp` is of an event later than the one this cursor expects.
    #[inline]
    fn is_newer(&self, stamp: u32) -> bool {
        stamp_written(stamp) && seq_distance(stamp_seq(stamp), self.seq) > 0
    }

    /// The slot holds (or is being written with) event `S > seq`: every event up to
    /// `S − capacity` is gone. Resume at `S − capacity + 1`.
    fn skip_lapped(&mut self, stamp: u32, ring: &RingRef<'_>, lost: &mut u64) {
        let newer = stamp_seq(stamp);
        let resume = newer.wrapping_sub(ring.mask) & STAMP_SEQ_MASK;
        let skipped = seq_distance(resume, self.seq).max(1) as u32;
        *lost += skipped as u64;
        self.advance(skipped, ring.mask);
    }
}

/// The writing end of a ring. There is exactly one per ring; it is `Send`, so it can
/// move to the thread (or interrupt context) that records.
pub struct Producer<'a> {
    ring: RingRef<'a>,
    policy: OverflowPolicy,
    /// Our own copy of `write_pos`: only the producer writes it.
    write: u32,
    /// The last `read_pos` we loaded. Re-loaded only when the ring looks full, which
    /// saves the cache-line transfer from the consumer's core on most pushes (the
    /// technique rtrb uses).
    cached_read: u32,
    seq: u32,
    published: u64,
    dropped: u64,
}

impl fmt::Debug for Producer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("ring", &self.ring)
            .field("policy", &self.policy)
            .field("published", &self.published)
            .field("dropped", &self.dropped)
            .finish()
    }
}

impl<'a> Producer<'a> {
    fn new(ring: RingRef<'a>, policy: OverflowPolicy) -> Producer<'a> {
        let (write, seq) = ring.next_write_seq();
        Producer {
            ring,
            policy,
            write,
            cached_read: ring.read_pos.load_low(Ordering::Acquire) & ring.mask,
            seq,
            published: 0,
            dropped: 0,
        }
    }

    /// Slots in the ring (one is always left empty).
    pub fn capacity(&self) -> u32 {
        self.ring.capacity()
    }

    /// The overflow policy chosen at construction.
    pub fn policy(&self) -> OverflowPolicy {
        self.policy
    }

    /// Events this producer has written and published.
    pub fn events_published(&self) -> u64 {
        self.published
    }

    /// Events refused because the ring was full (`DropNewest` only).
    #[inline]
    pub fn events_dropped(&self) -> u64 {
        self.dropped
    }

    /// Adds events lost before they reached this producer (a staging buffer, a lane)
    /// to [`Producer::events_dropped`], so one counter tells every loss.
    pub fn count_dropped(&mut self, events: u64) {
        self.dropped = self.dropped.saturating_add(events);
    }

    /// How many events can be pushed now without dropping any. Always
    /// `capacity − 1` under `OverwriteOldest`.
    ///
    /// ```
    /// use telering_core::{OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (producer, _consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// assert_eq!(producer.free_slots(), 7);
    /// ```
    #[inline]
    pub fn free_slots(&self) -> u32 {
        match self.policy {
            OverflowPolicy::OverwriteOldest => self.ring.mask,
            OverflowPolicy::DropNewest => {
                let read = self.ring.read_pos.load_low(Ordering::Acquire) & self.ring.mask;
                read.wrapping_sub(self.write).wrapping_sub(1) & self.ring.mask
            }
        }
    }

    /// Writes one event and publishes it.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, Full, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let e = Event::new(1, Category::Custom, event_name!("x"), 7);
    /// for _ in 0..3 {
    ///     producer.push(&e).unwrap();
    /// }
    /// assert_eq!(producer.push(&e), Err(Full)); // capacity 4 holds 3
    /// assert_eq!(producer.events_dropped(), 1);
    /// assert_eq!(consumer.pop(), Some(e));
    /// ```
    #[inline]
    pub fn push(&mut self, event: &Event) -> Result<(), Full> {
        self.write_one(event)?;
        self.publish();
        Ok(())
    }

    /// Starts a batch: events written through it become visible to the consumer
    /// together, with one release store, when the batch is published or dropped.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<16>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let mut batch = producer.batch();
    /// for v in 0..5 {
    ///     batch.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// assert_eq!(consumer.pop(), None); // not yet published
    /// batch.publish();
    /// assert_eq!(consumer.pop().map(|e| e.value()), Some(0));
    /// ```
    pub fn batch(&mut self) -> Batch<'_, 'a> {
        Batch {
            producer: self,
            written: 0,
        }
    }

    /// Writes as many of `events` as fit, publishes them once, and counts the rest as
    /// dropped (under `DropNewest`). Returns how many were written.
    pub fn push_slice(&mut self, events: &[Event]) -> usize {
        let mut batch = self.batch();
        let mut written = 0;
        for e in events {
            if batch.push(e).is_ok() {
                written += 1;
            }
        }
        written
    }

    #[inline]
    fn write_one(&mut self, event: &Event) -> Result<(), Full> {
        let next = self.write.wrapping_add(1) & self.ring.mask;
        if self.policy == OverflowPolicy::DropNewest && next == self.cached_read {
            self.cached_read = self.ring.read_pos.load_low(Ordering::Acquire) & self.ring.mask;
            if next == self.cached_read {
                self.dropped += 1;
                return Err(Full);
            }
        }
        let slot = self.ring.slot(self.write);
        let done = stamp_done(self.seq);
        slot.stamp.store(done | STAMP_BUSY, Ordering::Relaxed);
        fence(Ordering::Release);
        slot.store_event(event);
        slot.stamp.store(done, Ordering::Release);
        self.write = next;
        self.seq = self.seq.wrapping_add(1) & STAMP_SEQ_MASK;
        self.published += 1;
        Ok(())
    }

    #[inline]
    fn publish(&self) {
        self.ring.write_pos.store_low(self.write, Ordering::Release);
    }
}

/// A batch of writes published together; see [`Producer::batch`]. Dropping it
/// publishes what was written.
pub struct Batch<'p, 'a> {
    producer: &'p mut Producer<'a>,
    written: u32,
}

impl fmt::Debug for Batch<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("written", &self.written)
            .finish()
    }
}

impl Batch<'_, '_> {
    /// Writes one event into the batch; under `DropNewest` a full ring refuses it and
    /// counts it as dropped.
    #[inline]
    pub fn push(&mut self, event: &Event) -> Result<(), Full> {
        self.producer.write_one(event)?;
        self.written += 1;
        Ok(())
    }

    /// Events written into this batch so far.
    pub fn len(&self) -> u32 {
        self.written
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// Publishes the batch (the same as dropping it).
    pub fn publish(self) {}
}

impl Drop for Batch<'_, '_> {
    fn drop(&mut self) {
        if self.written > 0 {
            self.producer.publish();
        }
    }
}

/// The draining end of a ring: the one reader that advances `read_pos`.
pub struct Consumer<'a> {
    ring: RingRef<'a>,
    policy: OverflowPolicy,
    read: u32,
    /// The last `write_pos` we loaded (DropNewest): re-loaded only when the ring looks
    /// empty.
    cached_write: u32,
    /// Stamp-checked position (OverwriteOldest).
    cursor: Cursor,
    lost: u64,
}

impl fmt::Debug for Consumer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("ring", &self.ring)
            .field("policy", &self.policy)
            .field("lost", &self.lost)
            .finish()
    }
}

impl<'a> Consumer<'a> {
    fn new(ring: RingRef<'a>, policy: OverflowPolicy) -> Consumer<'a> {
        let read = ring.read_pos.load_low(Ordering::Acquire) & ring.mask;
        let (w, next_seq) = ring.next_write_seq();
        let unread = w.wrapping_sub(read) & ring.mask;
        Consumer {
            ring,
            policy,
            read,
            cached_write: w,
            cursor: Cursor {
                pos: read,
                seq: next_seq.wrapping_sub(unread) & STAMP_SEQ_MASK,
            },
            lost: 0,
        }
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> u32 {
        self.ring.capacity()
    }

    /// Events overwritten before this consumer could read them (`OverwriteOldest`).
    pub fn events_lost(&self) -> u64 {
        self.lost
    }

    /// Events waiting (an estimate under `OverwriteOldest`, where the producer may
    /// have lapped the consumer).
    pub fn len(&self) -> u32 {
        let w = self.ring.write_pos.load_low(Ordering::Acquire) & self.ring.mask;
        let read = match self.policy {
            OverflowPolicy::DropNewest => self.read,
            OverflowPolicy::OverwriteOldest => self.cursor.pos,
        };
        w.wrapping_sub(read) & self.ring.mask
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the oldest unread event.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// for v in 0..6 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// // The producer lapped the consumer: events 0 and 1 were overwritten, 2..=5 remain.
    /// assert_eq!(consumer.pop().map(|e| e.value()), Some(2));
    /// assert_eq!(consumer.events_lost(), 2);
    /// ```
    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        match self.policy {
            OverflowPolicy::DropNewest => {
                if !self.has_unread() {
                    return None;
                }
                let event = self.ring.slot(self.read).load_event();
                self.read = self.read.wrapping_add(1) & self.ring.mask;
                self.ring.read_pos.store_low(self.read, Ordering::Release);
                Some(event)
            }
            OverflowPolicy::OverwriteOldest => self.pop_checked(),
        }
    }

    /// OverwriteOldest: one stamp-checked read, kept out of line so that the
    /// DropNewest `pop` stays small enough to inline.
    #[inline(never)]
    fn pop_checked(&mut self) -> Option<Event> {
        let mut out = None;
        self.read_batch(1, |e| out = Some(*e));
        out
    }

    /// DropNewest: whether a published event waits at `read`, re-loading `write_pos`
    /// only when the cached copy says the ring is empty.
    #[inline]
    fn has_unread(&mut self) -> bool {
        if self.read == self.cached_write {
            self.cached_write = self.ring.write_pos.load_low(Ordering::Acquire) & self.ring.mask;
        }
        self.read != self.cached_write
    }

    /// Reads up to `max` events, calling `each` for every one, and releases their slots
    /// to the producer with one store. Returns how many were read.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<16>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// for v in 0..10 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// let mut sum = 0;
    /// assert_eq!(consumer.read_batch(usize::MAX, |e| sum += e.value()), 10);
    /// assert_eq!(sum, 45);
    /// ```
    #[inline]
    pub fn read_batch(&mut self, max: usize, mut each: impl FnMut(&Event)) -> usize {
        let mut n = 0;
        match self.policy {
            OverflowPolicy::DropNewest => {
                while n < max && self.has_unread() {
                    let event = self.ring.slot(self.read).load_event();
                    self.read = self.read.wrapping_add(1) & self.ring.mask;
                    each(&event);
                    n += 1;
                }
                if n > 0 {
                    self.ring.read_pos.store_low(self.read, Ordering::Release);
                }
            }
            OverflowPolicy::OverwriteOldest => {
                while n < max {
                    match self.cursor.read(&self.ring, &mut self.lost) {
                        CursorRead::Event(event) => {
                            each(&event);
                            n += 1;
                        }
                        CursorRead::Empty => break,
                    }
                }
                if n > 0 || self.cursor.pos != self.read {
                    self.read = self.cursor.pos;
                    self.ring.read_pos.store_low(self.read, Ordering::Release);
                }
            }
        }
        n
    }

    /// Fills `out` with as many events as are waiting and fit; returns how many.
    pub fn pop_into(&mut self, out: &mut [Event]) -> usize {
        let mut slots = out.iter_mut();
        self.read_batch(slots.len(), |e| {
            if let Some(dst) = slots.next() {
                *dst = *e;
            }
        })
    }
}

/// A read-only follower of the stream. It writes nothing — it can run over a
/// read-only mapping — and tells exactly how many events it missed when the producer
/// lapped it.
pub struct Observer<'a> {
    ring: RingRef<'a>,
    cursor: Cursor,
    missed: u64,
}

impl fmt::Debug for Observer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("ring", &self.ring)
            .field("missed", &self.missed)
            .finish()
    }
}

impl<'a> Observer<'a> {
    fn new(ring: RingRef<'a>, start: ObserverStart) -> Observer<'a> {
        let cursor = match start {
            ObserverStart::Oldest => Cursor::at_oldest(&ring),
            ObserverStart::Newest => Cursor::at_newest(&ring),
        };
        Observer {
            ring,
            cursor,
            missed: 0,
        }
    }

    /// The next event, or `None` if the observer has caught up.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, _consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// let mut observer = ring.observer(ObserverStart::Newest);
    /// for v in 0..3 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// assert_eq!(observer.poll().map(|e| e.value()), Some(0));
    /// for v in 3..9 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// // Events 1 to 4 were overwritten while the observer looked away; 5..=8 remain.
    /// assert_eq!(observer.poll().map(|e| e.value()), Some(5));
    /// assert_eq!(observer.events_missed(), 4);
    /// ```
    #[inline]
    pub fn poll(&mut self) -> Option<Event> {
        match self.cursor.read(&self.ring, &mut self.missed) {
            CursorRead::Event(e) => Some(e),
            CursorRead::Empty => None,
        }
    }

    /// Events the producer overwrote before this observer read them.
    pub fn events_missed(&self) -> u64 {
        self.missed
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> u32 {
        self.ring.capacity()
    }
}

/// Pads and aligns a value to its own cache line(s), so that the producer's and the
/// consumer's positions do not share one: otherwise every push would invalidate the
/// consumer's cached copy of `read_pos` and vice versa (false sharing). 128 bytes on
/// x86-64 and AArch64, because their prefetchers fetch cache lines in pairs (the value
/// crossbeam and rtrb use); 8 bytes on small cores, where RAM is what matters and
/// there is one core.
#[cfg_attr(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    repr(C, align(128))
)]
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    repr(C, align(8))
)]
struct CachePadded<T>(T);

/// A ring with owned storage of `N` slots (`N` a power of two, 2 ≤ `N` ≤ 2²⁸), usable
/// in a `static`.
///
/// ```
/// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
/// static RING: Ring<64> = Ring::new();
/// let (mut producer, mut consumer) = RING.split(OverflowPolicy::DropNewest).unwrap();
/// producer.push(&Event::new(10, Category::Transfer, event_name!("agent_tx_bytes"), 4096)).unwrap();
/// let e = consumer.pop().unwrap();
/// assert_eq!((e.name(), e.value()), (Ok("agent_tx_bytes"), 4096));
/// assert!(RING.split(OverflowPolicy::DropNewest).is_err()); // one producer, one consumer
/// ```
pub struct Ring<const N: usize> {
    write_pos: CachePadded<WireU64>,
    read_pos: CachePadded<WireU64>,
    split: AtomicBool,
    slots: [Slot; N],
}

impl<const N: usize> fmt::Debug for Ring<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.storage(), f)
    }
}

impl<const N: usize> Ring<N> {
    const VALID_CAPACITY: () = assert!(
        N.is_power_of_two() && N >= 2 && N <= MAX_CAPACITY as usize,
        "ring capacity must be a power of two between 2 and 2^28"
    );

    /// An empty ring.
    #[cfg(not(loom))]
    pub const fn new() -> Ring<N> {
        #[allow(clippy::let_unit_value)]
        let () = Self::VALID_CAPACITY;
        #[allow(clippy::declare_interior_mutable_const)]
        const EMPTY: Slot = Slot::new();
        Ring {
            write_pos: CachePadded(WireU64::new()),
            read_pos: CachePadded(WireU64::new()),
            split: AtomicBool::new(false),
            slots: [EMPTY; N],
        }
    }

    /// An empty ring.
    #[cfg(loom)]
    pub fn new() -> Ring<N> {
        #[allow(clippy::let_unit_value)]
        let () = Self::VALID_CAPACITY;
        Ring {
            write_pos: CachePadded(WireU64::new()),
            read_pos: CachePadded(WireU64::new()),
            split: AtomicBool::new(false),
            slots: core::array::from_fn(|_| Slot::new()),
        }
    }

    /// Slots in the ring; it holds `N − 1` events.
    pub const fn capacity(&self) -> u32 {
        N as u32
    }

    fn storage(&self) -> RingRef<'_> {
        RingRef {
            write_pos: &self.write_pos.0,
            read_pos: &self.read_pos.0,
            slots: &self.slots,
            mask: N as u32 - 1,
        }
    }

    /// Hands out the ring's one producer and one consumer, both with `policy`. A
    /// second call fails: the ring is single-producer, single-consumer.
    pub fn split(
        &self,
        policy: OverflowPolicy,
    ) -> Result<(Producer<'_>, Consumer<'_>), AlreadySplit> {
        if self.split.swap(true, Ordering::AcqRel) {
            return Err(AlreadySplit);
        }
        Ok((
            Producer::new(self.storage(), policy),
            Consumer::new(self.storage(), policy),
        ))
    }

    /// A read-only observer of the stream; any number may exist.
    pub fn observer(&self, start: ObserverStart) -> Observer<'_> {
        Observer::new(self.storage(), start)
    }
}

#[cfg(not(loom))]
impl<const N: usize> Default for Ring<N> {
    fn default() -> Self {
        Ring::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
