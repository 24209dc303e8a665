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

mod batch;

pub use batch::Batch;

/// The writing end of a ring. There is exactly one per ring; it is `Send` when its
/// owner is, so it can move to the thread (or interrupt context) that records.
pub struct Producer<R: RingOwner> {
    ring: R,
    /// Address of the storage this producer was made for (see `super::checked`).
    home: usize,
    head: Head,
}

/// The producer's own state, apart from the owner so that a call can hold the
/// storage it checked once while updating this. `Copy`, so that the out-of-line path
/// of [`Producer::push_all_with`] (a batch that wraps or is stamped) can take it by
/// value and return it: a caller's loop of such batches keeps it in registers.
#[derive(Clone, Copy)]
struct Head {
    policy: OverflowPolicy,
    /// Whether slots get stamps (observed rings, and every ring under
    /// `OverwriteOldest`, whose consumer follows them).
    stamped: bool,
    /// `capacity − 1`, read once from a storage whose mask is not a constant.
    mask: u32,
    /// Our own copy of `write_pos`: only the producer writes it.
    write: u32,
    /// The last `read_pos` we loaded. Re-loaded only when the ring looks full, which
    /// saves the cache-line transfer from the consumer's core on most pushes (the
    /// technique rtrb uses).
    cached_read: u32,
    /// Sequence of the next event, for the stamps (not kept when unstamped).
    seq: u32,
    published: u64,
    dropped: u64,
}

impl<R: RingOwner> fmt::Debug for Producer<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Producer")
            .field("capacity", &self.capacity())
            .field("policy", &self.head.policy)
            .field("stamped", &self.head.stamped)
            .field("published", &self.head.published)
            .field("dropped", &self.head.dropped)
            .finish()
    }
}

impl<R: RingOwner> Producer<R> {
    pub(super) fn new(ring: R, home: usize, policy: OverflowPolicy) -> Producer<R> {
        let (write, seq) = next_write_seq(&*ring);
        let mask = ring.mask();
        let cached_read = ring.read_pos().load_low(Ordering::Acquire) & mask;
        let stamped = ring.observed() || policy == OverflowPolicy::OverwriteOldest;
        Producer {
            ring,
            home,
            head: Head {
                policy,
                stamped,
                mask,
                write,
                cached_read,
                seq,
                published: 0,
                dropped: 0,
            },
        }
    }

    /// The storage, checked once per call (see `super::checked`): every access of
    /// the call, positions included, goes through this one reference.
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
        self.head.mask::<R::Target>() + 1
    }

    /// The overflow policy chosen at construction.
    pub fn policy(&self) -> OverflowPolicy {
        self.head.policy
    }

    /// Events this producer has written and published.
    pub fn events_published(&self) -> u64 {
        self.head.published
    }

    /// Events refused because the ring was full (`DropNewest` only).
    #[inline]
    pub fn events_dropped(&self) -> u64 {
        self.head.dropped
    }

    /// Adds events lost before they reached this producer (a staging buffer, a lane)
    /// to [`Producer::events_dropped`], so one counter tells every loss.
    ///
    /// ```
    /// use telering_core::{OverflowPolicy, Ring};
    /// let ring: Ring<8> = Ring::new();
    /// let (mut producer, _consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// producer.add_dropped(3);
    /// assert_eq!(producer.events_dropped(), 3);
    /// ```
    pub fn add_dropped(&mut self, events: u64) {
        self.head.dropped = self.head.dropped.saturating_add(events);
    }

    /// The former name of [`add_dropped`](Self::add_dropped): it adds, it does not
    /// count.
    #[deprecated(note = "renamed `add_dropped`; this name read like a getter")]
    pub fn count_dropped(&mut self, events: u64) {
        self.add_dropped(events);
    }

    /// How many events can be pushed now without dropping any: at least this many
    /// (the consumer may have freed more since). Under `DropNewest` it counts from the
    /// consumer position the producer last loaded, and loads it again only when that
    /// one leaves no room, so asking costs no cache-line transfer while the ring has
    /// room. Always `capacity − 1` under `OverwriteOldest`.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// assert_eq!(producer.free_slots(), 7);
    /// let e = Event::new(1, Category::Custom, event_name!("n"), 1);
    /// assert_eq!(producer.push_slice(&[e; 7]), 7);
    /// assert_eq!(producer.free_slots(), 0);
    /// consumer.pop().unwrap();
    /// assert_eq!(producer.free_slots(), 1); // full by its last look: it looks again
    /// ```
    #[inline]
    pub fn free_slots(&self) -> u32 {
        let head = &self.head;
        let mask = head.mask::<R::Target>();
        match head.policy {
            OverflowPolicy::OverwriteOldest => mask,
            OverflowPolicy::DropNewest => {
                let free = head.free_from(head.cached_read, mask);
                if free != 0 {
                    return free;
                }
                let read = self.storage().read_pos().load_low(Ordering::Acquire) & mask;
                head.free_from(read, mask)
            }
        }
    }

    /// Like [`free_slots`](Self::free_slots), but under `DropNewest` it always loads
    /// the consumer's position, so it counts every slot freed so far: for a caller
    /// deciding what to do with a batch that does not fit by the last look (one
    /// cache-line transfer; not for the per-event path).
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let e = Event::new(1, Category::Custom, event_name!("n"), 1);
    /// assert_eq!(producer.push_slice(&[e; 6]), 6);
    /// consumer.pop().unwrap();
    /// assert_eq!(producer.free_slots(), 1); // by its last look
    /// assert_eq!(producer.free_slots_now(), 2);
    /// ```
    pub fn free_slots_now(&self) -> u32 {
        let head = &self.head;
        let mask = head.mask::<R::Target>();
        match head.policy {
            OverflowPolicy::OverwriteOldest => mask,
            OverflowPolicy::DropNewest => {
                let read = self.storage().read_pos().load_low(Ordering::Acquire) & mask;
                head.free_from(read, mask)
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
    #[inline(always)]
    pub fn push(&mut self, item: &ItemOf<R>) -> Result<(), Full> {
        self.push_with(|| *item)
    }

    /// [`Producer::push`] of the event `item()` makes, made only once there is room
    /// and straight into its slot where the ring is unstamped (no copy in between):
    /// the form for an event built at the call. Under `DropNewest`, `item` is not
    /// called when the event is dropped.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new_unobserved();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// producer.push_with(|| Event::new(1, Category::Custom, event_name!("n"), 7)).unwrap();
    /// assert_eq!(consumer.pop().map(|e| e.value()), Some(7));
    /// ```
    #[inline(always)]
    pub fn push_with(&mut self, item: impl FnOnce() -> ItemOf<R>) -> Result<(), Full> {
        let ring = checked(&self.ring, self.home);
        self.head.write_one_with(ring, item)?;
        self.head.publish(ring);
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
    #[inline]
    pub fn push_slice(&mut self, items: &[ItemOf<R>]) -> usize {
        let ring = checked(&self.ring, self.home);
        let written = self.head.write_slice(ring, items);
        if written > 0 {
            self.head.publish(ring);
        }
        written
    }

    /// Writes all of `items` and publishes them together, or, under `DropNewest`
    /// when the ring lacks room for all of them, writes none and counts all as
    /// dropped. The room check uses the consumer position the producer last loaded
    /// and loads it again only when that one shows too little room.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, Full, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let e = Event::new(1, Category::Custom, event_name!("n"), 1);
    /// assert_eq!(producer.push_all(&[e; 4]), Ok(()));
    /// assert_eq!(producer.push_all(&[e; 4]), Err(Full)); // 3 slots left
    /// assert_eq!((producer.events_dropped(), consumer.len()), (4, 4));
    /// ```
    #[inline]
    pub fn push_all(&mut self, items: &[ItemOf<R>]) -> Result<(), Full> {
        let ring = checked(&self.ring, self.home);
        let head = &mut self.head;
        if head.policy != OverflowPolicy::DropNewest || head.stamped {
            return head.push_all_stamped(ring, items);
        }
        if !head.has_room_for(ring, items.len()) {
            return Err(Full);
        }
        if !items.is_empty() {
            // All fit, so in one round: fewer than `capacity`.
            head.write_round(ring, items);
            head.publish(ring);
        }
        Ok(())
    }
}

impl<R: RingOwner> Producer<R> {
    /// [`Producer::push_all`] for `n` events made by `item(0)`, …, `item(n − 1)` and
    /// written straight into their slots: no staging array to build and copy. All
    /// are published together; under `DropNewest`, if the ring lacks room for `n`,
    /// none is made and all are counted as dropped. Each event of a stamped ring gets
    /// its own fence ([`Producer::push_all`] shares one).
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new_unobserved();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let values = [10, 20, 30];
    /// producer
    ///     .push_all_with(3, |i| Event::new(1, Category::Custom, event_name!("n"), values[i]))
    ///     .unwrap();
    /// let mut got = Vec::new();
    /// consumer.read_batch(usize::MAX, |e| got.push(e.value()));
    /// assert_eq!(got, [10, 20, 30]);
    /// ```
    #[inline(always)]
    pub fn push_all_with(
        &mut self,
        n: usize,
        mut item: impl FnMut(usize) -> ItemOf<R>,
    ) -> Result<(), Full> {
        let ring = checked(&self.ring, self.home);
        let head = &mut self.head;
        if head.policy == OverflowPolicy::DropNewest && !head.has_room_for(ring, n) {
            return Err(Full);
        }
        if n == 0 {
            return Ok(());
        }
        let run = ring.slot_run_exact(head.write, n);
        let stamped = <<R::Target as Storage>::Format as SlotFormat>::STAMPED && head.stamped;
        if let Some(run) = run.filter(|_| !stamped) {
            // Unstamped and not wrapping (the common case): one bounds check.
            for (i, slot) in run.iter().enumerate() {
                store_unstamped_in::<R::Target>(slot, &item(i));
            }
            head.write = head.write.wrapping_add(n as u32) & head.mask::<R::Target>();
            head.published += n as u64;
        } else {
            // Stamped, or wrapping: the maker moves into the out-of-line path, so no
            // pointer to it (or to what it captured) escapes from the caller's frame.
            *head = head.write_each(ring, n, item);
        }
        head.publish(ring);
        Ok(())
    }
}

impl Head {
    /// [`Producer::push_all`] into a stamped ring, or under `OverwriteOldest`; out of
    /// line so that the unstamped one inlines.
    #[inline(never)]
    fn push_all_stamped<S: Storage + ?Sized>(
        &mut self,
        ring: &S,
        items: &[<S::Format as SlotFormat>::Item],
    ) -> Result<(), Full> {
        if self.policy == OverflowPolicy::DropNewest && !self.has_room_for(ring, items.len()) {
            return Err(Full);
        }
        if self.write_slice(ring, items) > 0 {
            self.publish(ring);
        }
        Ok(())
    }

    /// [`Producer::push_all_with`] event by event, for stamped rings and batches that
    /// wrap; room was checked for all `n` (or the policy overwrites), so no write is
    /// refused.
    #[inline(never)]
    fn write_each<S: Storage + ?Sized>(
        mut self,
        ring: &S,
        n: usize,
        mut item: impl FnMut(usize) -> <S::Format as SlotFormat>::Item,
    ) -> Head {
        for i in 0..n {
            let _ = self.write_one(ring, &item(i));
        }
        self
    }

    /// `DropNewest`: whether `n` events fit, loading `read_pos` again only when the
    /// cached one says they do not; if they still do not, counts all `n` as dropped.
    #[inline(always)]
    fn has_room_for<S: Storage + ?Sized>(&mut self, ring: &S, n: usize) -> bool {
        let mask = self.mask::<S>();
        if (self.free_from(self.cached_read, mask) as usize) < n && !self.refresh_room(ring, n) {
            self.dropped += n as u64;
            return false;
        }
        true
    }
}

impl Head {
    /// `capacity − 1`: the storage's constant where it has one (`Ring<N>`), so that
    /// masking compiles to an immediate operand.
    #[inline(always)]
    fn mask<S: Storage + ?Sized>(&self) -> u32 {
        match S::FIXED_MASK {
            Some(mask) => mask,
            None => self.mask,
        }
    }

    /// Free slots if the consumer is at `read`.
    #[inline(always)]
    fn free_from(&self, read: u32, mask: u32) -> u32 {
        read.wrapping_sub(self.write).wrapping_sub(1) & mask
    }

    /// Loads `read_pos` again; whether there is room for `n` now. The load is out of
    /// line and takes no pointer to the producer, so that a batch loop can keep the
    /// producer's state in registers.
    #[inline(always)]
    fn refresh_room<S: Storage + ?Sized>(&mut self, ring: &S, n: usize) -> bool {
        let mask = self.mask::<S>();
        self.cached_read = load_read_pos(ring, mask);
        self.free_from(self.cached_read, mask) as usize >= n
    }

    /// The slow half of a push's room check, reached only when the cached `read_pos`
    /// says full: `true` if the event must be dropped (and counts it).
    #[cold]
    #[inline(never)]
    fn full_after_refresh<S: Storage + ?Sized>(&mut self, ring: &S) -> bool {
        if self.policy == OverflowPolicy::OverwriteOldest || self.refresh_room(ring, 1) {
            return false;
        }
        self.dropped += 1;
        true
    }

    /// The cached `read_pos` says the slot `next` would fill the ring: `true` if the
    /// event must be dropped (and counts it). Where the push runs wholly inline
    /// ([`Storage::PUSH_INLINE`]) the reload is [`load_read_pos`], which takes no
    /// pointer to the producer; elsewhere it is [`Head::full_after_refresh`].
    #[inline(always)]
    fn full_on_push<S: Storage + ?Sized>(&mut self, ring: &S, next: u32) -> bool {
        if !S::PUSH_INLINE {
            return self.full_after_refresh(ring);
        }
        if self.policy == OverflowPolicy::OverwriteOldest {
            return false;
        }
        self.cached_read = load_read_pos(ring, self.mask::<S>());
        if next != self.cached_read {
            return false;
        }
        self.dropped += 1;
        true
    }

    /// Writes one event without publishing it. `ring` is the storage this producer
    /// was made for (checked by the caller).
    #[inline(always)]
    fn write_one<S: Storage + ?Sized>(
        &mut self,
        ring: &S,
        item: &<S::Format as SlotFormat>::Item,
    ) -> Result<(), Full> {
        self.write_one_with(ring, || *item)
    }

    /// [`Head::write_one`] of the event `item()` makes, made in the branch that
    /// writes it: unstamped, straight into its slot (no copy staged in memory for the
    /// stamped branch's out-of-line call).
    #[inline(always)]
    fn write_one_with<S: Storage + ?Sized>(
        &mut self,
        ring: &S,
        item: impl FnOnce() -> <S::Format as SlotFormat>::Item,
    ) -> Result<(), Full> {
        let mask = self.mask::<S>();
        let next = self.write.wrapping_add(1) & mask;
        if next == self.cached_read && self.full_on_push(ring, next) {
            return Err(Full);
        }
        // A format without stamps (lane records) never takes the stamped branch: the
        // constant folds it away, and with it the only reason to keep the stamped write
        // out of line (an unstamped push small enough to inline into a recording call).
        if <S::Format as SlotFormat>::STAMPED && self.stamped {
            self.write_stamped(ring, &item());
        } else {
            store_unstamped(ring, self.write, &item());
        }
        self.write = next;
        self.published += 1;
        Ok(())
    }

    /// The seqlock write of one event into the slot at `write` (module docs, "The
    /// slot stamp").
    #[inline(always)]
    fn write_stamped<S: Storage + ?Sized>(
        &mut self,
        ring: &S,
        item: &<S::Format as SlotFormat>::Item,
    ) {
        let slot = ring.slot(self.write);
        let stamp = <S::Format as SlotFormat>::stamp(slot);
        let done = stamp_done(self.seq);
        stamp.store(done | STAMP_BUSY, Ordering::Relaxed);
        fence(Ordering::Release);
        <S::Format as SlotFormat>::store(slot, item);
        stamp.store(done, Ordering::Release);
        self.seq = self.seq.wrapping_add(1) & STAMP_SEQ_MASK;
    }

    /// Writes as many of `items` as fit without publishing them; counts the rest as
    /// dropped (under `DropNewest`).
    #[inline(always)]
    fn write_slice<S: Storage + ?Sized>(
        &mut self,
        ring: &S,
        items: &[<S::Format as SlotFormat>::Item],
    ) -> usize {
        let mask = self.mask::<S>();
        let mut written = 0;
        let mut rest = items;
        while !rest.is_empty() {
            let room = match self.policy {
                OverflowPolicy::OverwriteOldest => mask as usize,
                OverflowPolicy::DropNewest => {
                    if (self.free_from(self.cached_read, mask) as usize) < rest.len() {
                        self.refresh_room(ring, rest.len());
                    }
                    self.free_from(self.cached_read, mask) as usize
                }
            };
            let round = rest.len().min(room);
            if round == 0 {
                break;
            }
            self.write_round(ring, &rest[..round]);
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
    #[inline(always)]
    fn write_round<S: Storage + ?Sized>(
        &mut self,
        ring: &S,
        items: &[<S::Format as SlotFormat>::Item],
    ) {
        let mask = self.mask::<S>();
        let n = items.len() as u32;
        debug_assert!(n <= mask);
        if self.stamped {
            self.write_round_stamped(ring, items);
        } else {
            let mut pos = self.write;
            let mut rest = items;
            // At most two runs (the batch may wrap), each bounds-checked once.
            while !rest.is_empty() {
                let run = ring.slot_run(pos, rest.len());
                if run.is_empty() {
                    for item in rest {
                        store_unstamped(ring, pos, item);
                        pos = pos.wrapping_add(1);
                    }
                    break;
                }
                for (slot, item) in run.iter().zip(rest) {
                    store_unstamped_in::<S>(slot, item);
                }
                pos = pos.wrapping_add(run.len() as u32);
                rest = &rest[run.len()..];
            }
        }
        self.write = self.write.wrapping_add(n) & mask;
        self.published += n as u64;
    }

    /// The stamped half of [`Head::write_round`]: busy marks, one fence, data, done
    /// marks (the module docs' "One fence per batch").
    fn write_round_stamped<S: Storage + ?Sized>(
        &mut self,
        ring: &S,
        items: &[<S::Format as SlotFormat>::Item],
    ) {
        let n = items.len() as u32;
        for i in 0..n {
            let busy = stamp_done(self.seq.wrapping_add(i)) | STAMP_BUSY;
            stamp_of(ring, self.write.wrapping_add(i)).store(busy, Ordering::Relaxed);
        }
        fence(Ordering::Release);
        for (i, item) in (0..n).zip(items) {
            <S::Format as SlotFormat>::store(ring.slot(self.write.wrapping_add(i)), item);
        }
        for i in 0..n {
            let done = stamp_done(self.seq.wrapping_add(i));
            stamp_of(ring, self.write.wrapping_add(i)).store(done, Ordering::Release);
        }
        self.seq = self.seq.wrapping_add(n) & STAMP_SEQ_MASK;
    }

    #[inline(always)]
    fn publish<S: Storage + ?Sized>(&self, ring: &S) {
        ring.write_pos().store_low(self.write, Ordering::Release);
    }
}

/// Loads `read_pos` (the consumer's release store of it ordered every read of the
/// slots it frees before this). Cold and out of line: reached only when the cached
/// copy shows too little room.
#[cold]
#[inline(never)]
fn load_read_pos<S: Storage + ?Sized>(ring: &S, mask: u32) -> u32 {
    ring.read_pos().load_low(Ordering::Acquire) & mask
}

/// Writes `item` into the slot at `pos` of an unstamped ring (unobserved, under
/// `DropNewest`): plain stores where the storage allows them, else relaxed words.
/// `ring` is the storage the producer was made for (the caller checked it), and the
/// slot lies outside `read_pos..write_pos` with room checked.
#[inline(always)]
fn store_unstamped<S: Storage + ?Sized>(
    ring: &S,
    pos: u32,
    item: &<S::Format as SlotFormat>::Item,
) {
    store_unstamped_in::<S>(ring.slot(pos), item)
}

/// [`store_unstamped`] into a slot of `S` the caller took from the storage it checked.
#[inline(always)]
fn store_unstamped_in<S: Storage + ?Sized>(
    slot: &<S::Format as SlotFormat>::Slot,
    item: &<S::Format as SlotFormat>::Item,
) {
    if S::PLAIN_ACCESS {
        // SAFETY: nothing else accesses this slot now. The producer writes only a slot
        // outside `read_pos..write_pos`, after an acquire load of `read_pos` that saw
        // the consumer's release store made after its last read of the slot; the
        // consumer reads it again only after an acquire load of a `write_pos` this
        // producer stores (release) after this write. The ring is unobserved, so no
        // observer exists (`observe` refuses it), and `split` made this the one
        // producer of this storage, which `checked` confirmed (once for the whole
        // call, whose every access, this slot's included, goes through the storage
        // reference it returned) is the one we hold.
        unsafe { <S::Format as SlotFormat>::store_unsynced(slot, item) }
    } else {
        <S::Format as SlotFormat>::store(slot, item);
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
