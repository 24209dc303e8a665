//! The single-producer, single-consumer event ring, with read-only observers.
//!
//! # What it is
//!
//! A power-of-two array of slots and two positions, `write_pos` (the slot the
//! producer fills next) and `read_pos` (the slot the consumer reads next), both
//! *masked slot indices* exactly as in NIXL's shared-memory header. The ring is empty
//! when `read_pos == write_pos` and full when `(write_pos + 1) & mask == read_pos`, so
//! under `DropNewest` a ring of capacity `N` holds `N − 1` events. Under
//! `OverwriteOldest` it keeps the last `N`: the slot at `write_pos` still holds event
//! `next − N` until the producer overwrites it, and a lapped reader resumes there.
//!
//! One algorithm ([`Producer`], [`Consumer`], [`Observer`]) runs over every storage
//! and every slot format. A handle holds an *owner* of its storage ([`RingOwner`]:
//! anything that dereferences to a [`RingStorage`]), so it borrows or shares the
//! storage instead of pretending to own it:
//!
//! - [`Ring<N>`]: `const`-constructible, usable in a `static`, mask a compile-time
//!   constant; handles are `Producer<&Ring<N>>`;
//! - [`SliceRing<S>`]: slots in a container chosen at run time (a `Box<[Slot]>`),
//!   shared through an `Arc`: `Producer<Arc<SliceRing<Box<[Slot]>>>>`;
//! - [`RingRegion<M>`]: a caller-provided memory region laid out as NIXL's 40-byte
//!   header followed by the slots (a shared-memory file, a DPU-to-host memory window),
//!   whose owner `M` keeps the mapping alive: `Producer<Arc<RingRegion<Mapping>>>`.
//!
//! The slot format ([`SlotFormat`]) is a type parameter too: [`EventFormat`] (NIXL
//! version 1, 56-byte [`Event`](crate::Event) slots, the default) or [`CompactFormat`]
//! (NIXL version 4, 16-byte [`CompactEvent`] slots).
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
//! In an *observed* ring (the default; see [`Observability`]) the producer numbers
//! events with a sequence `seq` (0, 1, 2, …) and writes into the slot's stamp word
//! (the reserved `u32` at offset 44 of a version-1 slot, offset 4 of a version-4 slot)
//! a *stamp*: `(seq mod 2³⁰) << 2 | 0b10`, with the low bit also set while the slot is
//! being written. Bit 1 is set in every stamp, so zero always means "never written".
//! Writing event `seq` into a slot is a seqlock write:
//!
//! 1. `stamp.store(busy(seq), Relaxed)`
//! 2. `fence(Release)` — orders the busy mark before any data store
//! 3. the slot's data, as relaxed atomic word stores
//! 4. `stamp.store(done(seq), Release)`
//! 5. `write_pos.store(next, Release)` — once per push, or once per batch
//!
//! A stamp-checked read (observers, and the consumer under `OverwriteOldest`) expecting
//! event `seq` in a slot does:
//!
//! 1. `s1 = stamp.load(Acquire)`; if `s1 ≠ done(seq)`: the slot holds an older event
//!    (nothing new yet), is being written, or holds a newer one (we were lapped)
//! 2. the slot's data, as relaxed atomic word loads
//! 3. `fence(Acquire)`, then `s2 = stamp.load(Relaxed)`; the copy is good only if
//!    `s2 == s1`
//!
//! If a data load in step 2 saw a store from a later write of the slot, the reader's
//! acquire fence synchronises with that write's release fence, so `s2` sees at least
//! the later busy stamp and the copy is discarded: **no torn read is ever returned**.
//! A stamp-checked reader reads only published events: those before `write_pos` as
//! of its last acquire load of it (re-loaded when it catches up). When lapped — it
//! finds event `S > seq` (or its busy mark) in the slot — it jumps straight to the
//! oldest event still readable, the one in the slot at `write_pos` (or just after
//! `S − N`, if a batch is overwriting slots beyond `write_pos`), and counts the
//! difference as lost: one step, whatever the distance, so a reader stalled for many
//! laps makes progress on its very next call. The count is exact, never estimated,
//! while the reader is less than 2²⁹ events behind, because stamps carry 30 bits of
//! sequence (capacities are at most 2²⁸). Further behind, a published slot's stamp
//! looks *older* than expected (or the reader's sequence looks ahead of `write_pos`):
//! the reader resumes at the oldest readable event and raises the distinct
//! [`Observer::lag_unknown`] / [`Consumer::lag_unknown`] signal instead of a count.
//! Where the writer keeps a 64-bit published count (a ring file's trailer), the
//! reader's owner supplies it ([`Observer::set_published`]) and every lag is counted
//! exactly. (A lag of an exact multiple of 2³⁰ events cannot be seen from the stamps
//! at all; only the 64-bit count tells it.) One read makes at most 64 slot
//! inspections before it reports "nothing readable now", so corrupted stamps in
//! foreign memory cannot keep a reader busy: a bound on work, not on progress.
//!
//! # One fence per batch
//!
//! [`Producer::push_slice`] writes `k ≤ N − 1` events with one fence, not one per
//! event:
//!
//! 1. `busy(seq + i)` into each of the `k` stamps (relaxed);
//! 2. one `fence(Release)`;
//! 3. the data of the `k` slots (relaxed);
//! 4. `done(seq + i)` into each stamp (`Release` stores: a plain move on x86-64, no
//!    fence instruction anywhere);
//! 5. `write_pos.store(next, Release)`.
//!
//! The happens-before argument is the per-event one with the fence shared by the `k`
//! slots: a reader whose acquire load of a stamp sees `done(seq + i)` synchronises
//! with that release store, which follows every data store of the batch, so its copy
//! sees the event complete; a reader whose data load sees a store of step 3
//! synchronises (through its own acquire fence) with the fence of step 2, which
//! follows every busy mark of the batch, so its second stamp load sees the busy mark
//! (or later) and the copy is discarded. Because `k < N`, no slot is written twice in
//! one batch, so "the later write of this slot" is always one whose busy mark precedes
//! the fence. Longer slices are written in rounds of at most `N − 1`. The draining
//! consumer under `DropNewest` sees the whole batch at once through step 5, and so do
//! the stamp-following readers (observers, the `OverwriteOldest` consumer), which read
//! only events before `write_pos`. The one exception: a reader that the producer laps
//! *during* a batch resumes just past the overwritten slots and may then read the
//! batch's stamped slots before its `write_pos` store. [`Batch::push`], which does
//! not know how many events will follow, fences per event; its events become visible
//! together when the batch ends.
//!
//! # Unobserved rings and plain copies
//!
//! A ring made [`Observability::Unobserved`] writes no stamps and no seqlock fence: a
//! push is the data stores and the release store of `write_pos`. Nothing can follow it
//! but its one consumer, so [`observe`] refuses it with [`Unobserved`]. (Under
//! `OverwriteOldest` its consumer needs the stamps, so they are written anyway.)
//!
//! In a [`Ring<N>`] (the storage whose memory only this program's safe code can reach,
//! see [`RingStorage`]) the draining consumer under `DropNewest` copies slots with plain
//! loads (word by word, in the widths a writer's stores have, so that each load is
//! forwarded from its store, as the slot formats explain), and an unobserved ring's
//! producer writes them with plain stores. That is sound in the Rust memory model
//! because no access to such a slot is concurrent with a conflicting one:
//!
//! - the producer writes a slot only outside `read_pos..write_pos`, after an acquire
//!   load of `read_pos` that saw the consumer's release store made after its last read
//!   of that slot; the consumer reads a slot only inside `read_pos..write_pos`, after
//!   an acquire load of `write_pos` that saw the producer's release store made after
//!   its write. So every write and read of a slot are ordered by happens-before;
//! - observers only load (atomically), and concurrent loads never conflict, whatever
//!   their kind and size; an unobserved ring, whose producer stores plainly, has no
//!   observers;
//! - [`split`] hands out one producer and one consumer per ring, and each handle checks
//!   that its owner still dereferences to the ring it was made for.
//!
//! On an unobserved `Ring<N>` under `DropNewest`, [`Consumer::read_batch`] goes one step
//! further on little-endian targets: it hands the callback a reference *into* the slot
//! (whose bytes, written unstamped, are exactly the event's) instead of a copy. The
//! same ordering covers it: the borrow lives only during the callback, which returns
//! before the consumer's release store of `read_pos` hands the slot back, so no store
//! to the slot overlaps it. `pop` still returns a copy.
//!
//! The handles' out-of-line paths (a batch's reload of `read_pos`, a wrapping or
//! stamped batch, the `OverwriteOldest` read, which fills a buffer rather than call the
//! caller's callback) take the handle's state by value or not at all, so a caller's
//! loop keeps positions, counters and whatever its callback captures in registers. In
//! a `Ring<N>` a single push does too: it reloads `read_pos` by value and writes a
//! stamped slot inline. The other storages' single push reloads `read_pos` and writes a
//! stamped slot through out-of-line calls on the producer's state: passing values
//! there made telering-std's recording call too large to inline.
//!
//! Rings in foreign memory ([`RingRegion`]), possibly written by other programs, and
//! [`SliceRing`]s, whose container need not own its slots (two slice rings may share
//! one `&[Slot]`, each with its own producer), always use atomic word copies. NIXL's readers, which ignore the
//! stamp word and read from `read_pos`, work on every ring telering writes to memory
//! they can see.
//!
//! # Observers
//!
//! Any number of [`Observer`]s follow an observed ring read-only, with stamp-checked
//! reads, never writing anything. They neither slow nor block the producer or the
//! consumer; when the producer laps them they skip ahead and
//! [`Observer::events_missed`] says exactly how many events they did not see.
//!
//! # Cost
//!
//! A push is a bounds check against a cached `read_pos`, the data stores, two stamp
//! stores (observed rings) and one release store; a pop mirrors it. On x86-64 none of
//! these needs a fence instruction. Measured figures are in `BENCHMARKS.md`.

mod consumer;
mod format;
mod lane_record;
mod producer;
mod region;
mod slot;
mod storage;

pub use consumer::{Consumer, Observer};
pub use format::{CompactEvent, CompactFormat, CompactSlot, EventFormat, SlotFormat};
pub use lane_record::{LaneRecord, LaneRecordFormat};
pub use producer::{Batch, Producer};
pub use region::{
    HEADER_SIZE, HeaderInfo, RING_VERSION, ReadOnlyRegion, RegionError, RingHeader, RingRegion,
};
pub use slot::{AtomicLeI32, AtomicLeU64, Slot, SlotStamp};
pub use storage::{
    EventOwner, FormatOf, ItemOf, Observability, Ring, RingOwner, RingStorage, SliceRing,
};

use crate::sync::Ordering;
use core::fmt;
use storage::sealed::Storage;

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

/// [`split`] was called a second time on the same ring (or on a read-only region).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadySplit;

impl fmt::Display for AlreadySplit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the ring already has its producer and consumer")
    }
}

/// An observer was asked of a ring made [`Observability::Unobserved`], which writes no
/// stamps for it to follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unobserved;

impl fmt::Display for Unobserved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the ring was made unobserved: it writes no stamps an observer could follow")
    }
}

/// A slice container whose length is not a power of two from 2 to 2²⁸; see
/// [`SliceRing::new`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapacityError {
    /// The number of slots given.
    pub capacity: usize,
}

impl fmt::Display for CapacityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ring capacity {} is not a power of two from 2 to {MAX_CAPACITY}",
            self.capacity
        )
    }
}

/// Where a new [`Observer`] starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ObserverStart {
    /// At the oldest event still in the ring (up to capacity events of history once
    /// the ring has wrapped).
    #[default]
    Oldest,
    /// At the next event to be published.
    Newest,
}

/// Hands out the ring's one producer and one consumer, both holding a clone of
/// `owner` and using `policy`. A second call on the same ring fails.
///
/// ```
/// use std::sync::Arc;
/// use telering_core::ring::{self, Observability, SliceRing, Slot};
/// use telering_core::OverflowPolicy;
/// let slots: Box<[Slot]> = (0..8).map(|_| Slot::new()).collect();
/// let ring = Arc::new(SliceRing::new(slots, Observability::Observed).unwrap());
/// let (producer, consumer) = ring::split(Arc::clone(&ring), OverflowPolicy::DropNewest).unwrap();
/// assert!(ring::split(Arc::clone(&ring), OverflowPolicy::DropNewest).is_err());
/// assert_eq!((producer.capacity(), consumer.capacity()), (8, 8));
/// ```
#[allow(clippy::type_complexity)]
pub fn split<R: RingOwner + Clone>(
    owner: R,
    policy: OverflowPolicy,
) -> Result<(Producer<R>, Consumer<R>), AlreadySplit> {
    const {
        assert!(
            <FormatOf<R> as SlotFormat>::STAMPED,
            "a ring of lane records is split with `split_records`"
        )
    };
    split_as(owner, policy)
}

/// Splits a ring of [`LaneRecord`]s (which has no stamps: see [`LaneRecordFormat`])
/// into its producer and consumer, under [`OverflowPolicy::DropNewest`]: a full ring
/// refuses the newest record and counts it.
///
/// ```
/// use telering_core::ring::{self, CompactSlot, LaneRecord, LaneRecordFormat, Observability, SliceRing};
/// let slots: Box<[CompactSlot]> = (0..4).map(|_| CompactSlot::new()).collect();
/// let ring = SliceRing::<_, LaneRecordFormat>::new_as(slots, Observability::Unobserved).unwrap();
/// let (mut producer, mut consumer) = ring::split_records(&ring).unwrap();
/// producer.push(&LaneRecord::new(3, 1000, 4096)).unwrap();
/// assert_eq!(consumer.pop(), Some(LaneRecord::new(3, 1000, 4096)));
/// ```
pub fn split_records<R>(owner: R) -> Result<(Producer<R>, Consumer<R>), AlreadySplit>
where
    R: RingOwner<Target: RingStorage<Format = LaneRecordFormat>> + Clone,
{
    split_as(owner, OverflowPolicy::DropNewest)
}

fn split_as<R: RingOwner + Clone>(
    owner: R,
    policy: OverflowPolicy,
) -> Result<(Producer<R>, Consumer<R>), AlreadySplit> {
    let home = address_of(&*owner);
    if !owner.claim_split() {
        return Err(AlreadySplit);
    }
    Ok((
        Producer::new(owner.clone(), home, policy),
        Consumer::new(owner, home, policy),
    ))
}

/// A read-only observer of the ring behind `owner`; any number may exist. Fails on an
/// unobserved ring.
///
/// ```
/// use std::sync::Arc;
/// use telering_core::ring::{self, Observability, SliceRing, Slot, Unobserved};
/// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy};
/// let slots: Box<[Slot]> = (0..8).map(|_| Slot::new()).collect();
/// let ring = Arc::new(SliceRing::new(slots, Observability::Observed).unwrap());
/// let (mut producer, _consumer) = ring::split(Arc::clone(&ring), OverflowPolicy::DropNewest).unwrap();
/// let mut observer = ring::observe(Arc::clone(&ring), ObserverStart::Oldest).unwrap();
/// producer.push(&Event::new(1, Category::Custom, event_name!("n"), 3)).unwrap();
/// assert_eq!(observer.poll().map(|e| e.value()), Some(3));
/// let quiet: Box<[Slot]> = (0..8).map(|_| Slot::new()).collect();
/// let quiet = Arc::new(SliceRing::new(quiet, Observability::Unobserved).unwrap());
/// assert_eq!(ring::observe(quiet, ObserverStart::Oldest).err(), Some(Unobserved));
/// ```
pub fn observe<R: RingOwner>(owner: R, start: ObserverStart) -> Result<Observer<R>, Unobserved> {
    if !owner.observed() {
        return Err(Unobserved);
    }
    let home = address_of(&*owner);
    Ok(Observer::new(owner, home, start))
}

/// The address handles remember to check that their owner still dereferences to the
/// ring they were made for (compared, never dereferenced).
#[inline(always)]
fn address_of<T: ?Sized>(storage: &T) -> usize {
    storage as *const T as *const () as usize
}

/// The storage behind `owner`, checked (for storages with plain copies) to be the one
/// the handle was made for; see the module docs.
#[inline(always)]
fn checked<R: RingOwner>(owner: &R, home: usize) -> &R::Target {
    let storage = owner.deref();
    if <R::Target as Storage>::PLAIN_ACCESS {
        assert!(
            address_of(storage) == home,
            "a ring handle's owner dereferenced to another ring"
        );
    }
    storage
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

/// The stamp of the slot at `pos`.
#[inline(always)]
fn stamp_of<S: Storage + ?Sized>(ring: &S, pos: u32) -> &SlotStamp {
    <S::Format as SlotFormat>::stamp(ring.slot(pos))
}

/// The sequence number of the next event the producer writes, derived from the stamp
/// of the slot before `write_pos` (events are numbered from the first write into a
/// fresh ring). Returns `(write_pos, seq)`.
///
/// With a producer running, the stamp must belong to the same moment as the position:
/// by the time the stamp is loaded the producer may have published more and be
/// rewriting that slot a lap later. So the position is loaded again after the stamp:
/// a completed later write of the slot is a release store that the stamp's acquire
/// load synchronises with, and the producer published a newer position before it,
/// so the second load sees that position and the pair is taken again. A stamp still
/// being written (busy) is a later lap in progress whose release has not happened; the
/// pair is taken again too (once: each try multiplies what loom must explore), and if
/// the slot is still busy, its previous occupant (one ring's worth earlier) is the one
/// that matches the position loaded.
fn next_write_seq<S: Storage + ?Sized>(ring: &S) -> (u32, u32) {
    /// Loads of the pair before settling.
    const TRIES: u32 = 2;
    let mask = ring.mask();
    let mut w = ring.write_pos().load_low(Ordering::Acquire) & mask;
    let mut tries = 1;
    // `stamp` is always the stamp loaded for the slot before this `w`.
    let stamp = loop {
        let stamp = stamp_of(ring, w.wrapping_sub(1)).load(Ordering::Acquire);
        let again = ring.write_pos().load_low(Ordering::Acquire) & mask;
        if (again == w && stamp & STAMP_BUSY == 0) || tries == TRIES {
            break stamp;
        }
        tries += 1;
        w = again;
    };
    if !stamp_written(stamp) {
        // Never wrapped around to the previous slot: a fresh ring, events 0..w.
        (w, w)
    } else if stamp & STAMP_BUSY != 0 {
        let previous = stamp_seq(stamp).wrapping_sub(mask + 1);
        (w, previous.wrapping_add(1) & STAMP_SEQ_MASK)
    } else {
        (w, stamp_seq(stamp).wrapping_add(1) & STAMP_SEQ_MASK)
    }
}

/// Checks that the slot stamps tell one consistent story: every written slot `i` holds
/// an event whose sequence maps to slot `i`, no older than one ring's worth before the
/// newest and not implausibly far ahead of it (a live writer may move on during the
/// scan). One load per slot.
fn check_stamps<S: Storage + ?Sized>(ring: &S) -> Result<(), StampError> {
    const AHEAD_LIMIT: u32 = 1 << 28;
    let mask = ring.mask();
    let capacity = mask + 1;
    let (w, next) = next_write_seq(ring);
    // slot = (seq + offset) mod capacity
    let offset = w.wrapping_sub(next) & mask;
    for slot in 0..capacity {
        let stamp = stamp_of(ring, slot).load(Ordering::Acquire);
        if !stamp_written(stamp) {
            continue;
        }
        let seq = stamp_seq(stamp);
        let behind = next.wrapping_sub(1).wrapping_sub(seq) & STAMP_SEQ_MASK;
        let ahead = seq.wrapping_sub(next) & STAMP_SEQ_MASK;
        let in_window = behind < capacity || ahead < AHEAD_LIMIT;
        let in_its_slot = seq.wrapping_add(offset) & mask == slot;
        if !(in_window && in_its_slot) {
            return Err(StampError { slot, stamp });
        }
    }
    Ok(())
}

#[cfg(all(test, not(loom)))]
mod tests;
#[cfg(all(test, not(loom)))]
mod tests_formats;
#[cfg(all(test, not(loom)))]
mod tests_lag;
