//! The reading ends of a ring: the draining consumer and the read-only observers,
//! and the stamp-checked cursor they share.

use super::format::SlotFormat;
use super::region::{ReadOnlyRegion, RingRegion};
use super::storage::sealed::Storage;
use super::storage::{FormatOf, ItemOf, RingOwner};
use super::{
    ObserverStart, OverflowPolicy, STAMP_SEQ_MASK, checked, next_write_seq, seq_distance,
    stamp_done, stamp_seq, stamp_written,
};
use crate::sync::{Ordering, fence};
use core::fmt;
use core::ops::Deref;

/// How many lapped slots one read may skip before it reports "nothing readable now".
/// A live writer rarely laps a reader twice within one read; the bound keeps a read
/// over corrupted or crafted stamps from skipping around for a long time.
const MAX_SKIPS_PER_READ: u32 = 64;

/// A read position that checks stamps: shared by observers and by the consumer under
/// `OverwriteOldest`.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    pos: u32,
    seq: u32,
}

impl Cursor {
    fn at_oldest<S: Storage + ?Sized>(ring: &S) -> Cursor {
        let (w, next_seq) = next_write_seq(ring);
        let history = next_seq.min(ring.mask());
        Cursor {
            pos: w.wrapping_sub(history) & ring.mask(),
            seq: next_seq.wrapping_sub(history) & STAMP_SEQ_MASK,
        }
    }

    fn at_newest<S: Storage + ?Sized>(ring: &S) -> Cursor {
        let (w, next_seq) = next_write_seq(ring);
        Cursor {
            pos: w,
            seq: next_seq,
        }
    }

    fn advance(&mut self, by: u32, mask: u32) {
        self.pos = self.pos.wrapping_add(by) & mask;
        self.seq = self.seq.wrapping_add(by) & STAMP_SEQ_MASK;
    }

    /// Reads the next item, skipping (and adding to `lost`) every event that was
    /// overwritten before it could be read.
    #[inline]
    fn read<S: Storage + ?Sized>(
        &mut self,
        ring: &S,
        lost: &mut u64,
    ) -> Option<<S::Format as SlotFormat>::Item> {
        for _ in 0..=MAX_SKIPS_PER_READ {
            let slot = ring.slot(self.pos);
            let stamp = <S::Format as SlotFormat>::stamp(slot);
            let expected = stamp_done(self.seq);
            let s1 = stamp.load(Ordering::Acquire);
            if s1 == expected {
                let item = <S::Format as SlotFormat>::load(slot);
                fence(Ordering::Acquire);
                let s2 = stamp.load(Ordering::Relaxed);
                if s2 == s1 {
                    self.advance(1, ring.mask());
                    return Some(item);
                }
                // Overwritten while we copied it.
                if !self.is_newer(s2) {
                    return None;
                }
                self.skip_lapped(s2, ring.mask(), lost);
            } else if !self.is_newer(s1) {
                // Never written, an older lap, or our event being written right now.
                return None;
            } else {
                self.skip_lapped(s1, ring.mask(), lost);
            }
        }
        None
    }

    /// Whether `stamp` is of an event later than the one this cursor expects.
    #[inline]
    fn is_newer(&self, stamp: u32) -> bool {
        stamp_written(stamp) && seq_distance(stamp_seq(stamp), self.seq) > 0
    }

    /// The slot holds (or is being written with) event `S > seq`: every event up to
    /// `S − capacity` is gone. Resume at `S − capacity + 1`.
    fn skip_lapped(&mut self, stamp: u32, mask: u32, lost: &mut u64) {
        let newer = stamp_seq(stamp);
        let resume = newer.wrapping_sub(mask) & STAMP_SEQ_MASK;
        let skipped = seq_distance(resume, self.seq).max(1) as u32;
        *lost += skipped as u64;
        self.advance(skipped, mask);
    }
}

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
    /// Stamp-checked position (OverwriteOldest).
    cursor: Cursor,
    lost: u64,
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
        let unread = w.wrapping_sub(read) & mask;
        Consumer {
            ring,
            home,
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

    #[inline(always)]
    fn storage(&self) -> &R::Target {
        checked(&self.ring, self.home)
    }

    /// The owner of the ring this consumer drains.
    pub fn owner(&self) -> &R {
        &self.ring
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> u32 {
        self.ring.mask() + 1
    }

    /// Events overwritten before this consumer could read them (`OverwriteOldest`).
    pub fn events_lost(&self) -> u64 {
        self.lost
    }

    /// Events waiting (an estimate under `OverwriteOldest`, where the producer may
    /// have lapped the consumer).
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
    pub fn pop(&mut self) -> Option<ItemOf<R>> {
        match self.policy {
            OverflowPolicy::DropNewest => {
                if !self.has_unread() {
                    return None;
                }
                let ring = checked(&self.ring, self.home);
                let item = load_published::<R>(ring, self.read);
                self.read = self.read.wrapping_add(1) & ring.mask();
                ring.read_pos().store_low(self.read, Ordering::Release);
                Some(item)
            }
            OverflowPolicy::OverwriteOldest => self.pop_checked(),
        }
    }

    /// OverwriteOldest: one stamp-checked read, kept out of line so that the
    /// DropNewest `pop` stays small enough to inline.
    #[inline(never)]
    fn pop_checked(&mut self) -> Option<ItemOf<R>> {
        let mut out = None;
        self.read_batch(1, |e| out = Some(*e));
        out
    }

    /// DropNewest: whether a published event waits at `read`, re-loading `write_pos`
    /// only when the cached copy says the ring is empty.
    #[inline]
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
                while n < max && self.has_unread() {
                    let ring = checked(&self.ring, self.home);
                    let item = load_published::<R>(ring, self.read);
                    self.read = self.read.wrapping_add(1) & ring.mask();
                    each(&item);
                    n += 1;
                }
                if n > 0 {
                    self.storage()
                        .read_pos()
                        .store_low(self.read, Ordering::Release);
                }
            }
            OverflowPolicy::OverwriteOldest => {
                let ring = checked(&self.ring, self.home);
                while n < max {
                    match self.cursor.read(ring, &mut self.lost) {
                        Some(item) => {
                            each(&item);
                            n += 1;
                        }
                        None => break,
                    }
                }
                if n > 0 || self.cursor.pos != self.read {
                    self.read = self.cursor.pos;
                    ring.read_pos().store_low(self.read, Ordering::Release);
                }
            }
        }
        n
    }

    /// Fills `out` with as many events as are waiting and fit; returns how many.
    pub fn pop_into(&mut self, out: &mut [ItemOf<R>]) -> usize {
        let mut slots = out.iter_mut();
        self.read_batch(slots.len(), |e| {
            if let Some(dst) = slots.next() {
                *dst = *e;
            }
        })
    }
}

/// DropNewest: copies the published item at `pos` out, with plain loads where the
/// storage allows them.
#[inline(always)]
fn load_published<R: RingOwner>(ring: &R::Target, pos: u32) -> ItemOf<R> {
    let slot = ring.slot(pos);
    if <R::Target as Storage>::PLAIN_ACCESS {
        // SAFETY: no store to this slot is concurrent with the copy. `pos` lies in
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
    pub fn from_region(region: R, policy: OverflowPolicy) -> Result<Consumer<R>, ReadOnlyRegion> {
        if !region.is_writable() {
            return Err(ReadOnlyRegion);
        }
        Ok(Consumer::new(region, 0, policy))
    }
}

/// A read-only follower of the stream. It writes nothing — it can run over a
/// read-only mapping — and tells exactly how many events it missed when the producer
/// lapped it. Made by [`observe`](super::observe) (or [`Ring::observer`](super::Ring::observer)).
pub struct Observer<R: RingOwner> {
    ring: R,
    home: usize,
    cursor: Cursor,
    missed: u64,
}

impl<R: RingOwner> fmt::Debug for Observer<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("capacity", &self.capacity())
            .field("cursor", &self.cursor)
            .field("missed", &self.missed)
            .finish()
    }
}

impl<R, M, F> Observer<R>
where
    R: Deref<Target = RingRegion<M, F>>,
    F: SlotFormat,
{
    /// An observer of a ring in caller-provided memory (regions always carry stamps);
    /// it only loads, so the region may be read-only.
    pub fn from_region(region: R, start: ObserverStart) -> Observer<R> {
        Observer::new(region, 0, start)
    }
}

impl<R: RingOwner> Observer<R> {
    pub(super) fn new(ring: R, home: usize, start: ObserverStart) -> Observer<R> {
        let cursor = match start {
            ObserverStart::Oldest => Cursor::at_oldest(&*ring),
            ObserverStart::Newest => Cursor::at_newest(&*ring),
        };
        Observer {
            ring,
            home,
            cursor,
            missed: 0,
        }
    }

    /// The owner of the ring this observer follows.
    pub fn owner(&self) -> &R {
        &self.ring
    }

    /// The next event, or `None` if the observer has caught up.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, _consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// let mut observer = ring.observer(ObserverStart::Newest).unwrap();
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
    pub fn poll(&mut self) -> Option<ItemOf<R>> {
        let ring = checked(&self.ring, self.home);
        self.cursor.read(ring, &mut self.missed)
    }

    /// Events the producer overwrote before this observer read them.
    pub fn events_missed(&self) -> u64 {
        self.missed
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> u32 {
        self.ring.mask() + 1
    }
}
