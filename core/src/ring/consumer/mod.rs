//! The reading ends of a ring: the draining consumer (here), the read-only observers
//! ([`observer`]) and the stamp-checked cursor they share ([`cursor`]).

mod cursor;
mod observer;

use cursor::{Cursor, Losses, holds_previous_lap};
pub use observer::Observer;

use super::format::SlotFormat;
use super::region::{ReadOnlyRegion, RingRegion};
use super::storage::sealed::Storage;
use super::storage::{FormatOf, ItemOf, RingOwner};
use super::{OverflowPolicy, STAMP_SEQ_MASK, checked, next_write_seq};
use crate::sync::Ordering;
use core::fmt;
use core::ops::Deref;

/// The draining end of a ring: the one reader that advances `read_pos`.
pub struct Consumer<R: RingOwner> {
    ring: R,
    /// Address of the storage this consumer was made for (see `super::checked`).
    home: usize,
    policy: OverflowPolicy,
    read: u32,
    /// The last `write_pos` we loaded (DropNewest): re-loaded only when the ring looks
    /// empty.
    cached_write: u32,
    /// Whether `read_batch` may hand out published slots in place (DropNewest on an
    /// unobserved storage with plain access: see [`with_published`]).
    in_place: bool,
    /// Stamp-checked position (OverwriteOldest).
    cursor: Cursor,
    lost: Losses,
}

impl<R: RingOwner> fmt::Debug for Consumer<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Consumer")
            .field("capacity", &self.capacity())
            .field("policy", &self.policy)
            .field("read", &self.read)
            .field("lost", &self.lost)
            .finish()
    }
}

impl<R: RingOwner> Consumer<R> {
    pub(super) fn new(ring: R, home: usize, policy: OverflowPolicy) -> Consumer<R> {
        let mask = ring.mask();
        let read = ring.read_pos().load_low(Ordering::Acquire) & mask;
        let (w, next_seq) = next_write_seq(&*ring);
        let mut unread = w.wrapping_sub(read) & mask;
        let in_place = <R::Target as Storage>::PLAIN_ACCESS
            && policy == OverflowPolicy::DropNewest
            && !ring.observed();
        if policy == OverflowPolicy::OverwriteOldest
            && unread == 0
            && holds_previous_lap(&*ring, w, next_seq)
        {
            // `read_pos == write_pos` in a ring that has wrapped: either the previous
            // consumer took everything, or the producer lapped it by whole rings (or
            // no consumer ever ran). The positions cannot tell; the stamps say the
            // ring holds `N` readable events, so read them all: at least once, never
            // lost uncounted.
            unread = mask + 1;
        }
        Consumer {
            ring,
            home,
            policy,
            read,
            cached_write: w,
            in_place,
            cursor: Cursor::at(
                read,
                next_seq.wrapping_sub(unread) & STAMP_SEQ_MASK,
                next_seq,
            ),
            lost: Losses::default(),
        }
    }

    #[inline(always)]
    fn storage(&self) -> &R::Target {
        checked(&self.ring, self.home)
    }

    /// The owner of the ring this consumer drains.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (_producer, consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// assert!(core::ptr::eq(*consumer.owner(), &ring));
    /// ```
    pub fn owner(&self) -> &R {
        &self.ring
    }

    /// Slots in the ring.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (_producer, consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// assert_eq!(consumer.capacity(), 8);
    /// ```
    pub fn capacity(&self) -> u32 {
        self.ring.mask() + 1
    }

    /// Events overwritten before this consumer could read them (`OverwriteOldest`),
    /// counted exactly. See [`Consumer::lag_unknown`] for losses that could not be
    /// counted.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// for v in 0..10 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// let mut read = 0;
    /// while consumer.pop().is_some() {
    ///     read += 1;
    /// }
    /// // A ring of 4 keeps the last 4 of 10 events: delivered + lost = published.
    /// assert_eq!((read, consumer.events_lost()), (4, 6));
    /// ```
    pub fn events_lost(&self) -> u64 {
        self.lost.counted
    }

    /// How many times this consumer (under `OverwriteOldest`) found it had fallen
    /// 2²⁹ events or more behind, further than the slot stamps can count, with no
    /// 64-bit published count ([`Consumer::set_published`]) to count by. Each time
    /// it missed an unknown number of events, not included in
    /// [`Consumer::events_lost`], and resumed at the oldest readable event.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// for v in 0..100 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// // Lapped by far less than 2^29 events: counted exactly, nothing unknown.
    /// assert_eq!(consumer.pop().map(|e| e.value()), Some(96));
    /// assert_eq!((consumer.events_lost(), consumer.lag_unknown()), (96, 0));
    /// ```
    pub fn lag_unknown(&self) -> u64 {
        self.lost.unknown
    }

    /// Supplies the writer's 64-bit count of events published so far (a ring file's
    /// trailer keeps one), loaded after the positions it covers were stored. With it,
    /// a consumer lapped by any distance counts exactly what it lost. Call it before
    /// reads; a stale count is fine as long as it is within 2²⁹ of the truth.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// consumer.set_published(producer.events_published());
    /// for v in 0..9 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// consumer.set_published(producer.events_published());
    /// assert_eq!(consumer.pop().map(|e| e.value()), Some(5));
    /// assert_eq!(consumer.events_lost(), 5);
    /// ```
    pub fn set_published(&mut self, published: u64) {
        let ring = checked(&self.ring, self.home);
        self.cursor.set_published(ring, published);
    }

    /// Events waiting (an estimate under `OverwriteOldest`, where the producer may
    /// have lapped the consumer).
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// for v in 0..3 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// assert_eq!(consumer.len(), 3);
    /// consumer.pop();
    /// assert_eq!(consumer.len(), 2);
    /// ```
    pub fn len(&self) -> u32 {
        let ring = self.storage();
        let w = ring.write_pos().load_low(Ordering::Acquire) & ring.mask();
        let read = match self.policy {
            OverflowPolicy::DropNewest => self.read,
            OverflowPolicy::OverwriteOldest => self.cursor.pos,
        };
        w.wrapping_sub(read) & ring.mask()
    }

    /// Whether no event is waiting.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// assert!(consumer.is_empty());
    /// producer.push(&Event::new(1, Category::Custom, event_name!("n"), 1)).unwrap();
    /// assert!(!consumer.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the oldest unread event.
    ///
    /// A consumer made under `OverwriteOldest` for a ring that has wrapped and whose
    /// `read_pos` equals `write_pos` starts with the whole ring unread (`N` events):
    /// the positions cannot tell a ring read to the end from one lapped by whole
    /// rings, and reading a recorder's contents twice is better than losing them
    /// uncounted.
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
    #[inline(always)]
    pub fn pop(&mut self) -> Option<ItemOf<R>> {
        match self.policy {
            OverflowPolicy::DropNewest => {
                if !self.has_unread() {
                    return None;
                }
                let ring = checked(&self.ring, self.home);
                let item = load_published::<R>(ring.slot(self.read));
                self.read = self.read.wrapping_add(1) & ring.mask();
                ring.read_pos().store_low(self.read, Ordering::Release);
                Some(item)
            }
            OverflowPolicy::OverwriteOldest => {
                let mut out = [<FormatOf<R> as SlotFormat>::FILLER];
                (self.read_checked(&mut out) == 1).then_some(out[0])
            }
        }
    }

    /// OverwriteOldest: stamp-checked reads into `out`, as many as are readable and
    /// fit; returns how many. The reads run out of line on a copy of the cursor, which
    /// comes back by value: a pointer to the consumer would keep its hot fields
    /// (position, cached `write_pos`) in memory in every caller's loop, the DropNewest
    /// one included. They fill a buffer rather than call the caller's callback, for
    /// the same reason: a callback handed to an out-of-line call takes what it
    /// captures (a running sum) out of registers.
    #[inline(always)]
    fn read_checked(&mut self, out: &mut [ItemOf<R>]) -> usize {
        let ring = checked(&self.ring, self.home);
        let (cursor, lost, read, n) =
            read_stamp_checked(ring, self.cursor, self.lost, self.read, out);
        self.cursor = cursor;
        self.lost = lost;
        self.read = read;
        n
    }

    /// DropNewest: whether a published event waits at `read`, re-loading `write_pos`
    /// only when the cached copy says the ring is empty.
    #[inline(always)]
    fn has_unread(&mut self) -> bool {
        if self.read == self.cached_write {
            let ring = checked(&self.ring, self.home);
            self.cached_write = ring.write_pos().load_low(Ordering::Acquire) & ring.mask();
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
    pub fn read_batch(&mut self, max: usize, mut each: impl FnMut(&ItemOf<R>)) -> usize {
        let mut n = 0;
        match self.policy {
            OverflowPolicy::DropNewest => {
                let in_place = self.in_place;
                while n < max && self.has_unread() {
                    let ring = checked(&self.ring, self.home);
                    let mask = ring.mask();
                    let waiting = (self.cached_write.wrapping_sub(self.read) & mask) as usize;
                    // The waiting events up to the end of the array, in one run: one
                    // bounds check, then consecutive slots.
                    let run = ring.slot_run(self.read, waiting.min(max - n));
                    if run.is_empty() {
                        with_published::<R>(ring.slot(self.read), in_place, &mut each);
                        self.read = self.read.wrapping_add(1) & mask;
                        n += 1;
                    } else {
                        for slot in run {
                            with_published::<R>(slot, in_place, &mut each);
                        }
                        self.read = self.read.wrapping_add(run.len() as u32) & mask;
                        n += run.len();
                    }
                }
                if n > 0 {
                    self.storage()
                        .read_pos()
                        .store_low(self.read, Ordering::Release);
                }
            }
            OverflowPolicy::OverwriteOldest => {
                let mut chunk = [<FormatOf<R> as SlotFormat>::FILLER; CHECKED_CHUNK];
                while n < max {
                    let want = (max - n).min(CHECKED_CHUNK);
                    let got = self.read_checked(&mut chunk[..want]);
                    chunk[..got].iter().for_each(&mut each);
                    n += got;
                    if got < want {
                        break;
                    }
                }
            }
        }
        n
    }

    /// Fills `out` with as many events as are waiting and fit; returns how many.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<16>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// for v in 0..6 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// let mut out = [Event::new(0, Category::Custom, event_name!("-"), 0); 4];
    /// assert_eq!(consumer.pop_into(&mut out), 4);
    /// assert_eq!(out.map(|e| e.value()), [0, 1, 2, 3]);
    /// assert_eq!(consumer.pop_into(&mut out), 2);
    /// assert_eq!((out[0].value(), out[1].value()), (4, 5));
    /// ```
    pub fn pop_into(&mut self, out: &mut [ItemOf<R>]) -> usize {
        let mut slots = out.iter_mut();
        self.read_batch(slots.len(), |e| {
            if let Some(dst) = slots.next() {
                *dst = *e;
            }
        })
    }
}

/// Events [`Consumer::read_batch`] takes per out-of-line call under
/// `OverwriteOldest`: a buffer of this many items lives on its stack.
const CHECKED_CHUNK: usize = 16;

/// OverwriteOldest: reads through `cursor` into `out` until it is full or nothing
/// more is readable, then stores `read_pos` if the cursor moved. Takes and returns the
/// reader's state by value (see [`Consumer::read_checked`]).
#[inline(never)]
fn read_stamp_checked<S: Storage + ?Sized>(
    ring: &S,
    mut cursor: Cursor,
    mut lost: Losses,
    mut read: u32,
    out: &mut [<S::Format as SlotFormat>::Item],
) -> (Cursor, Losses, u32, usize) {
    let mut n = 0;
    for slot in out.iter_mut() {
        match cursor.read(ring, &mut lost) {
            Some(item) => {
                *slot = item;
                n += 1;
            }
            None => break,
        }
    }
    if n > 0 || cursor.pos != read {
        read = cursor.pos;
        ring.read_pos().store_low(read, Ordering::Release);
    }
    (cursor, lost, read, n)
}

/// DropNewest: passes the published item in `slot` (one in `read_pos..write_pos` of
/// the storage the consumer checked) to `each`: borrowed in place when `in_place` (the
/// consumer's [`Consumer::in_place`]: plain access, unstamped slots) and the format
/// allows it, else as a copy made by [`load_published`].
#[inline(always)]
fn with_published<R: RingOwner>(
    slot: &<FormatOf<R> as SlotFormat>::Slot,
    in_place: bool,
    each: &mut impl FnMut(&ItemOf<R>),
) {
    if <R::Target as Storage>::PLAIN_ACCESS && in_place {
        // SAFETY: as in `load_published`, no store to this slot is concurrent with
        // the borrow, which ends when `each` returns, before this consumer releases
        // the slot with its store of `read_pos`. `in_place` says the ring is
        // unobserved and under DropNewest, so the producer wrote the slot unstamped,
        // with `store_unsynced`.
        if let Some(item) = unsafe { <FormatOf<R> as SlotFormat>::borrow_unsynced(slot) } {
            each(item);
            return;
        }
    }
    each(&load_published::<R>(slot));
}

/// DropNewest: copies the published item in `slot` (one in `read_pos..write_pos` of
/// the storage the consumer checked) out, with plain loads where the storage allows
/// them.
#[inline(always)]
fn load_published<R: RingOwner>(slot: &<FormatOf<R> as SlotFormat>::Slot) -> ItemOf<R> {
    if <R::Target as Storage>::PLAIN_ACCESS {
        // SAFETY: no store to this slot is concurrent with the copy. The slot lies in
        // `read_pos..write_pos`: the consumer's acquire load of `write_pos` saw the
        // producer's release store made after it wrote the slot, and the producer
        // writes the slot again only after an acquire load of a `read_pos` this
        // consumer stores (release) after this copy. Observers only load. `split` made
        // this the one consumer and the one producer of this storage, which `checked`
        // confirmed is the one we hold.
        unsafe { <FormatOf<R> as SlotFormat>::load_unsynced(slot) }
    } else {
        <FormatOf<R> as SlotFormat>::load(slot)
    }
}

impl<R, M, F> Consumer<R>
where
    R: Deref<Target = RingRegion<M, F>>,
    F: SlotFormat,
{
    /// The draining consumer of a ring in caller-provided memory, starting at
    /// `read_pos`. A region is accessed only with atomic operations, so a second
    /// consumer (in this or another process) can make events be read twice or
    /// skipped, never a data race; there should be one. Fails on a region attached
    /// read-only.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// use telering_core::{event_name, Category, Consumer, Event, OverflowPolicy, Producer};
    /// // A ring another program keeps in memory: here a heap buffer laid out by `init`.
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(8) as usize / 8];
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::init(memory, ptr, len, 8) }.unwrap();
    /// let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    /// producer.push(&Event::new(1, Category::Custom, event_name!("n"), 7)).unwrap();
    /// let mut consumer = Consumer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    /// assert_eq!(consumer.pop().map(|e| e.value()), Some(7));
    /// assert_eq!(region.header().read_pos.load_u64(), 1);
    /// ```
    pub fn from_region(region: R, policy: OverflowPolicy) -> Result<Consumer<R>, ReadOnlyRegion> {
        if !region.is_writable() {
            return Err(ReadOnlyRegion);
        }
        Ok(Consumer::new(region, 0, policy))
    }
}
