//! The writing end of a ring and its batches.

use super::format::SlotFormat;
use super::region::{ReadOnlyRegion, RingRegion};
use super::storage::sealed::Storage;
use super::storage::{ItemOf, RingOwner};
use super::{
    Full, OverflowPolicy, STAMP_BUSY, STAMP_SEQ_MASK, checked, next_write_seq, stamp_done, stamp_of,
};
use crate::sync::{Ordering, fence};
use core::fmt;
use core::ops::Deref;

/// The writing end of a ring. There is exactly one per ring; it is `Send` when its
/// owner is, so it can move to the thread (or interrupt context) that records.
pub struct Producer<R: RingOwner> {
    ring: R,
    /// Address of the storage this producer was made for (see `super::checked`).
    home: usize,
    policy: OverflowPolicy,
    /// Whether slots get stamps (observed rings, and every ring under
    /// `OverwriteOldest`, whose consumer follows them).
    stamped: bool,
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

impl<R: RingOwner> fmt::Debug for Producer<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.capacity())
            .field("policy", &self.policy)
            .field("stamped", &self.stamped)
            .field("published", &self.published)
            .field("dropped", &self.dropped)
            .finish()
    }
}

impl<R: RingOwner> Producer<R> {
    pub(super) fn new(ring: R, home: usize, policy: OverflowPolicy) -> Producer<R> {
        let (write, seq) = next_write_seq(&*ring);
        let cached_read = ring.read_pos().load_low(Ordering::Acquire) & ring.mask();
        let stamped = ring.observed() || policy == OverflowPolicy::OverwriteOldest;
        Producer {
            ring,
            home,
            policy,
            stamped,
            write,
            cached_read,
            seq,
            published: 0,
            dropped: 0,
        }
    }

    #[inline(always)]
    fn storage(&self) -> &R::Target {
        checked(&self.ring, self.home)
    }

    /// The owner of the ring this producer writes.
    pub fn owner(&self) -> &R {
        &self.ring
    }

    /// Slots in the ring (one is always left empty).
    pub fn capacity(&self) -> u32 {
        self.ring.mask() + 1
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
        let ring = self.storage();
        let mask = ring.mask();
        match self.policy {
            OverflowPolicy::OverwriteOldest => mask,
            OverflowPolicy::DropNewest => {
                let read = ring.read_pos().load_low(Ordering::Acquire) & mask;
                read.wrapping_sub(self.write).wrapping_sub(1) & mask
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
    pub fn push(&mut self, item: &ItemOf<R>) -> Result<(), Full> {
        self.write_one(item)?;
        self.publish();
        Ok(())
    }

    /// Starts a batch: events written through it become visible to the draining
    /// consumer together, with one release store, when the batch is published or
    /// dropped.
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
    pub fn batch(&mut self) -> Batch<'_, R> {
        Batch {
            producer: self,
            written: 0,
        }
    }

    /// Writes as many of `items` as fit, publishes them once, and counts the rest as
    /// dropped (under `DropNewest`). Returns how many were written. Stamps cost one
    /// fence per round of up to `capacity − 1` events (see the module docs).
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let events: Vec<Event> = (0..10).map(|v| Event::new(v, Category::Custom, event_name!("n"), v)).collect();
    /// assert_eq!(producer.push_slice(&events), 7);
    /// assert_eq!(producer.events_dropped(), 3);
    /// assert_eq!(consumer.read_batch(usize::MAX, |_| ()), 7);
    /// ```
    pub fn push_slice(&mut self, items: &[ItemOf<R>]) -> usize {
        let written = self.write_slice(items);
        if written > 0 {
            self.publish();
        }
        written
    }

    /// Writes as many of `items` as fit without publishing them; counts the rest as
    /// dropped (under `DropNewest`).
    fn write_slice(&mut self, items: &[ItemOf<R>]) -> usize {
        let mask = self.ring.mask();
        let mut written = 0;
        let mut rest = items;
        while !rest.is_empty() {
            let room = match self.policy {
                OverflowPolicy::OverwriteOldest => mask as usize,
                OverflowPolicy::DropNewest => {
                    let mut free = self.cached_read.wrapping_sub(self.write).wrapping_sub(1) & mask;
                    if (free as usize) < rest.len() {
                        self.cached_read =
                            self.storage().read_pos().load_low(Ordering::Acquire) & mask;
                        free = self.cached_read.wrapping_sub(self.write).wrapping_sub(1) & mask;
                    }
                    free as usize
                }
            };
            let round = rest.len().min(room);
            if round == 0 {
                break;
            }
            self.write_round(&rest[..round]);
            written += round;
            rest = &rest[round..];
            if self.policy == OverflowPolicy::DropNewest {
                break;
            }
        }
        self.dropped += rest.len() as u64;
        written
    }

    /// Writes `items` (at most `capacity − 1`, all with room) into consecutive slots,
    /// with one fence for the whole round when stamped. Does not publish.
    fn write_round(&mut self, items: &[ItemOf<R>]) {
        let ring = checked(&self.ring, self.home);
        let mask = ring.mask();
        let n = items.len() as u32;
        debug_assert!(n <= mask);
        if self.stamped {
            for i in 0..n {
                let busy = stamp_done(self.seq.wrapping_add(i)) | STAMP_BUSY;
                stamp_of(ring, self.write.wrapping_add(i)).store(busy, Ordering::Relaxed);
            }
            fence(Ordering::Release);
            for (i, item) in (0..n).zip(items) {
                <FormatOf<R> as SlotFormat>::store(ring.slot(self.write.wrapping_add(i)), item);
            }
            for i in 0..n {
                let done = stamp_done(self.seq.wrapping_add(i));
                stamp_of(ring, self.write.wrapping_add(i)).store(done, Ordering::Release);
            }
        } else {
            for (i, item) in (0..n).zip(items) {
                store_unstamped::<R>(ring, self.write.wrapping_add(i), item);
            }
        }
        self.write = self.write.wrapping_add(n) & mask;
        self.seq = self.seq.wrapping_add(n) & STAMP_SEQ_MASK;
        self.published += n as u64;
    }

    #[inline]
    fn write_one(&mut self, item: &ItemOf<R>) -> Result<(), Full> {
        let ring = checked(&self.ring, self.home);
        let mask = ring.mask();
        let next = self.write.wrapping_add(1) & mask;
        if self.policy == OverflowPolicy::DropNewest && next == self.cached_read {
            self.cached_read = ring.read_pos().load_low(Ordering::Acquire) & mask;
            if next == self.cached_read {
                self.dropped += 1;
                return Err(Full);
            }
        }
        if self.stamped {
            let slot = ring.slot(self.write);
            let stamp = <FormatOf<R> as SlotFormat>::stamp(slot);
            let done = stamp_done(self.seq);
            stamp.store(done | STAMP_BUSY, Ordering::Relaxed);
            fence(Ordering::Release);
            <FormatOf<R> as SlotFormat>::store(slot, item);
            stamp.store(done, Ordering::Release);
        } else {
            store_unstamped::<R>(ring, self.write, item);
        }
        self.write = next;
        self.seq = self.seq.wrapping_add(1) & STAMP_SEQ_MASK;
        self.published += 1;
        Ok(())
    }

    #[inline]
    fn publish(&self) {
        self.storage()
            .write_pos()
            .store_low(self.write, Ordering::Release);
    }
}

type FormatOf<R> = super::storage::FormatOf<R>;

/// Writes `item` into the slot at `pos` of an unstamped ring (unobserved, under
/// `DropNewest`): plain stores where the storage allows them, else relaxed words.
#[inline(always)]
fn store_unstamped<R: RingOwner>(ring: &R::Target, pos: u32, item: &ItemOf<R>) {
    let slot = ring.slot(pos);
    if <R::Target as Storage>::PLAIN_ACCESS {
        // SAFETY: nothing else accesses this slot now. The producer writes only a slot
        // outside `read_pos..write_pos`, after an acquire load of `read_pos` that saw
        // the consumer's release store made after its last read of the slot; the
        // consumer reads it again only after an acquire load of a `write_pos` this
        // producer stores (release) after this write. The ring is unobserved, so no
        // observer exists (`observe` refuses it), and `split` made this the one
        // producer of this storage, which `checked` confirmed is the one we hold.
        unsafe { <FormatOf<R> as SlotFormat>::store_unsynced(slot, item) }
    } else {
        <FormatOf<R> as SlotFormat>::store(slot, item);
    }
}

impl<R, M, F> Producer<R>
where
    R: Deref<Target = RingRegion<M, F>>,
    F: SlotFormat,
{
    /// The producer of a ring in caller-provided memory, continuing the sequence found
    /// in the slot stamps. A region is accessed only with atomic operations, so a
    /// second producer (in this or another process) can make events be lost or
    /// garbled, never a data race; there should be one. Fails on a region attached
    /// read-only.
    pub fn from_region(region: R, policy: OverflowPolicy) -> Result<Producer<R>, ReadOnlyRegion> {
        if !region.is_writable() {
            return Err(ReadOnlyRegion);
        }
        Ok(Producer::new(region, 0, policy))
    }
}

/// A batch of writes published together; see [`Producer::batch`]. Dropping it
/// publishes what was written.
pub struct Batch<'p, R: RingOwner> {
    producer: &'p mut Producer<R>,
    written: u32,
}

impl<R: RingOwner> fmt::Debug for Batch<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("written", &self.written)
            .finish()
    }
}

impl<R: RingOwner> Batch<'_, R> {
    /// Writes one event into the batch; under `DropNewest` a full ring refuses it and
    /// counts it as dropped. Each write into an observed ring has its own fence;
    /// [`Producer::push_slice`] shares one across the slice.
    #[inline]
    pub fn push(&mut self, item: &ItemOf<R>) -> Result<(), Full> {
        self.producer.write_one(item)?;
        self.written += 1;
        Ok(())
    }

    /// Writes as many of `items` as fit into the batch, with one fence for all of them
    /// (see [`Producer::push_slice`]), and counts the rest as dropped under
    /// `DropNewest`. Returns how many were written.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let e = Event::new(1, Category::Custom, event_name!("n"), 1);
    /// let mut batch = producer.batch();
    /// batch.push(&e).unwrap();
    /// assert_eq!(batch.push_slice(&[e; 10]), 6);
    /// assert_eq!(batch.len(), 7);
    /// drop(batch);
    /// assert_eq!((producer.events_dropped(), consumer.len()), (4, 7));
    /// ```
    pub fn push_slice(&mut self, items: &[ItemOf<R>]) -> usize {
        let n = self.producer.write_slice(items);
        self.written += n as u32;
        n
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

impl<R: RingOwner> Drop for Batch<'_, R> {
    fn drop(&mut self) {
        if self.written > 0 {
            self.producer.publish();
        }
    }
}
