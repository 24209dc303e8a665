//! The reading ends of a ring: the draining consumer and the read-only observers,
//! and the stamp-checked cursor they share.

use super::format::SlotFormat;
use super::region::{ReadOnlyRegion, RingRegion};
use super::storage::sealed::Storage;
use super::storage::{FormatOf, ItemOf, RingOwner};
use super::{
    ObserverStart, OverflowPolicy, STAMP_BUSY, STAMP_SEQ_MASK, checked, next_write_seq,
    seq_distance, stamp_done, stamp_of, stamp_seq, stamp_written,
};
use crate::sync::{Ordering, fence};
use core::fmt;
use core::ops::Deref;

/// How many slot inspections one read may make before it reports "nothing readable
/// now". Each lapped inspection resynchronises straight to the oldest readable event,
/// so a live writer rarely forces more than one; the bound keeps a read over corrupted
/// or crafted stamps from spinning. It bounds work, not progress.
const MAX_SKIPS_PER_READ: u32 = 64;

/// What a stamp-checked reader has lost, as [`Observer::events_missed`] and
/// [`Consumer::events_lost`] report it.
#[derive(Clone, Copy, Debug, Default)]
struct Losses {
    /// Events counted exactly as overwritten before they could be read.
    counted: u64,
    /// Times the reader fell so far behind (2²⁹ events or more) that the number it
    /// missed could not be told; each time it resumed at the oldest readable event.
    unknown: u64,
}

/// A read position that checks stamps: shared by observers and by the consumer under
/// `OverwriteOldest`.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    pos: u32,
    /// The sequence of the event expected at `pos`, in 64 bits. Only its low 30 bits
    /// are checked against stamps; the high bits are meaningful once a 64-bit
    /// published count anchored them (`published`).
    seq: u64,
    /// The writer's 64-bit published count, last supplied by the ring's owner (a
    /// ring file's trailer), if it has one.
    published: Option<u64>,
    /// The stamps' 30-bit sequence minus `published` at anchoring: the writer may
    /// count from 0 while continuing a sequence its predecessor started.
    offset: u32,
    /// Whether `seq`'s high bits were set from `published`.
    anchored: bool,
    /// The 30-bit sequence of the next event to be published, as of the last load of
    /// `write_pos`: events before it may be read.
    limit: u32,
}

/// Why a reader resynchronises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Behind {
    /// The slot carried (or was being written with) this later event: lapped by
    /// less than 2²⁹.
    Lapped(u32),
    /// A slot carried an older event although `write_pos` had moved past it: the
    /// reader fell 2²⁹ events or more behind, so the 30-bit stamps cannot tell by how
    /// much.
    TooFar,
}

impl Cursor {
    fn at(pos: u32, seq: u32, limit: u32) -> Cursor {
        Cursor {
            pos,
            seq: seq as u64,
            published: None,
            offset: 0,
            anchored: false,
            limit,
        }
    }

    fn at_oldest<S: Storage + ?Sized>(ring: &S) -> Cursor {
        let (pos, seq, next) = oldest_readable(ring);
        Cursor::at(pos, seq, next)
    }

    fn at_newest<S: Storage + ?Sized>(ring: &S) -> Cursor {
        let (w, next_seq) = next_write_seq(ring);
        Cursor::at(w, next_seq, next_seq)
    }

    #[inline]
    fn seq30(&self) -> u32 {
        self.seq as u32 & STAMP_SEQ_MASK
    }

    fn advance(&mut self, by: u32, mask: u32) {
        self.pos = self.pos.wrapping_add(by) & mask;
        self.seq = self.seq.wrapping_add(by as u64);
    }

    /// The 64-bit sequence nearest to `published` whose low 30 bits are `seq30`.
    fn extend(published: u64, seq30: u32) -> u64 {
        let d = seq_distance(seq30, published as u32 & STAMP_SEQ_MASK);
        published.wrapping_add(d as i64 as u64)
    }

    /// Records the writer's 64-bit published count (events published so far, loaded
    /// after the positions it covers were stored). The first count (or one smaller
    /// than the last: a new writer) anchors the 64-bit sequence: the cursor is then
    /// within a ring's worth of the writer, so the nearest match is the right one,
    /// and a count off by less than 2²⁹ still extends every later stamp exactly.
    fn set_published<S: Storage + ?Sized>(&mut self, ring: &S, published: u64) {
        let restarted = self.published.is_some_and(|last| published < last);
        if !self.anchored || restarted {
            let next = next_write_seq(ring).1;
            self.offset = next.wrapping_sub(published as u32) & STAMP_SEQ_MASK;
            self.seq = Cursor::extend(published.wrapping_add(self.offset as u64), self.seq30());
            self.anchored = true;
        }
        self.published = Some(published);
    }

    /// The 64-bit sequence of the stamp sequence `seq30`, from the published count.
    fn extend_published(&self, published: u64, seq30: u32) -> u64 {
        Cursor::extend(published.wrapping_add(self.offset as u64), seq30)
    }

    /// Reads the next item. Only published events are read (those before
    /// `write_pos`, as of the last load of it), so a batch becomes visible to this
    /// reader all at once. A lapped read jumps straight to the oldest event still
    /// readable, adding what it passed over to `lost`: exactly where a 64-bit
    /// published count or the stamps allow, else to `lost.unknown`.
    #[inline]
    fn read<S: Storage + ?Sized>(
        &mut self,
        ring: &S,
        lost: &mut Losses,
    ) -> Option<<S::Format as SlotFormat>::Item> {
        for _ in 0..=MAX_SKIPS_PER_READ {
            if self.published_says_far_behind() {
                // 2²⁹ or more behind: the stamps may even look current (a lag of 2³⁰
                // plus a few events reads like a lag of a few), only the 64-bit count
                // tells.
                if !self.resync_too_far(ring, lost) {
                    return None;
                }
                continue;
            }
            if self.seq30() == self.limit {
                self.limit = next_write_seq(ring).1;
                if self.seq30() == self.limit {
                    return None;
                }
            }
            if seq_distance(self.limit, self.seq30()) < 0 {
                // "Ahead" of the writer: our 30-bit sequence is 2²⁹ or more behind.
                if !self.resync_too_far(ring, lost) {
                    return None;
                }
                continue;
            }
            let slot = ring.slot(self.pos);
            let stamp = <S::Format as SlotFormat>::stamp(slot);
            let expected = stamp_done(self.seq30());
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
                self.resync(ring, Behind::Lapped(stamp_seq(s2)), lost);
            } else if self.is_newer(s1) {
                self.resync(ring, Behind::Lapped(stamp_seq(s1)), lost);
            } else if s1 == expected | STAMP_BUSY {
                // Being written: `limit` came from a stamp of a write in progress.
                return None;
            } else if !self.resync_too_far(ring, lost) {
                // A published slot with an older stamp: our sequence is a multiple of
                // 2³⁰ off, or the stamps are corrupt.
                return None;
            }
        }
        None
    }

    /// Resynchronises after finding the 30-bit sequence unusable; false if that did
    /// not move the cursor (stamps that contradict `write_pos`).
    #[cold]
    fn resync_too_far<S: Storage + ?Sized>(&mut self, ring: &S, lost: &mut Losses) -> bool {
        // The 64-bit sequence, not only its stamp bits: with a published count, the
        // jump may be a whole number of 2³⁰ rounds.
        let before = (self.pos, self.seq);
        self.resync(ring, Behind::TooFar, lost);
        (self.pos, self.seq) != before
    }

    /// Whether the writer's 64-bit published count puts this cursor 2²⁹ events or more
    /// behind: further than the 30-bit stamps can tell (a stale count only
    /// understates the distance, so this never fires on a reader that caught up).
    #[inline]
    fn published_says_far_behind(&self) -> bool {
        match (self.published, self.anchored) {
            (Some(published), true) => {
                let next = published.wrapping_add(self.offset as u64);
                next.wrapping_sub(self.seq) as i64 >= 1 << 29
            }
            _ => false,
        }
    }

    /// Whether `stamp` is of an event later than the one this cursor expects.
    #[inline]
    fn is_newer(&self, stamp: u32) -> bool {
        stamp_written(stamp) && seq_distance(stamp_seq(stamp), self.seq30()) > 0
    }

    /// Jumps to the oldest event still readable (derived from `write_pos` and the
    /// stamp before it) and counts what was passed over.
    #[cold]
    fn resync<S: Storage + ?Sized>(&mut self, ring: &S, why: Behind, lost: &mut Losses) {
        let mask = ring.mask();
        let (oldest_pos, mut oldest30, next) = oldest_readable(ring);
        self.limit = next;
        if let Behind::Lapped(newer) = why {
            // A batch overwrites slots before it publishes `write_pos`, so the newer
            // event we saw may lie beyond it; either way every event up to
            // `newer − capacity` is gone.
            let gone_until = newer.wrapping_sub(mask) & STAMP_SEQ_MASK;
            if seq_distance(oldest30, gone_until) < 0 {
                oldest30 = gone_until;
            }
        }
        let skipped = match (self.published, self.anchored, why) {
            (Some(published), true, _) => {
                // Wrapping: events from before the count started (a ring whose
                // writer restarted at 0) lie "below" 0 in this sequence.
                let oldest = self.extend_published(published, oldest30);
                Some((oldest.wrapping_sub(self.seq) as i64).max(1) as u64)
            }
            (_, _, Behind::Lapped(_)) => Some(seq_distance(oldest30, self.seq30()).max(1) as u64),
            (_, _, Behind::TooFar) => None,
        };
        match skipped {
            Some(n) => {
                lost.counted += n;
                self.advance_by(n, mask);
            }
            None => {
                lost.unknown += 1;
                self.pos = oldest_pos;
                self.seq = self
                    .seq
                    .wrapping_add((oldest30.wrapping_sub(self.seq30()) & STAMP_SEQ_MASK) as u64);
            }
        }
    }

    fn advance_by(&mut self, n: u64, mask: u32) {
        self.pos = self.pos.wrapping_add(n as u32) & mask;
        self.seq = self.seq.wrapping_add(n);
    }
}

/// The slot and 30-bit sequence of the oldest event a reader can still read, and the
/// sequence of the next one to be published. Once the ring has wrapped, the oldest is
/// the event in the slot at `write_pos`, the next one the producer overwrites (a read
/// that loses that race finds out by the stamps): under `OverwriteOldest` a ring of
/// capacity `N` keeps its last `N` events.
///
/// A slot at `w` that was never stamped means the producer has not come round to it:
/// the readable history is the run of stamped slots just before `w`. That is `w`
/// slots for a ring filled from slot 0, fewer or more for a ring whose writer took
/// over positions another program left (it clears their stamps, so they read as
/// never written and are not shown as events).
fn oldest_readable<S: Storage + ?Sized>(ring: &S) -> (u32, u32, u32) {
    let (w, next_seq) = next_write_seq(ring);
    let at_w = stamp_of(ring, w).load(Ordering::Acquire);
    let history = if at_w == stamp_done(next_seq.wrapping_sub(ring.mask() + 1)) {
        ring.mask() + 1
    } else if stamp_written(at_w) {
        // The producer is already overwriting the slot at `w`: the `w` events before
        // it are readable either way.
        w
    } else {
        stamped_run_before(ring, w)
    };
    (
        w.wrapping_sub(history) & ring.mask(),
        next_seq.wrapping_sub(history) & STAMP_SEQ_MASK,
        next_seq,
    )
}

/// How many slots just before `w` (at most `capacity − 1`) carry a stamp. Stamped
/// slots before the producer's position form one run (the producer stamps them in
/// order, and never-written slots keep stamp 0), so a binary search finds where it
/// starts.
fn stamped_run_before<S: Storage + ?Sized>(ring: &S, w: u32) -> u32 {
    let mask = ring.mask();
    // The run is at least `lo` and at most `hi` slots long.
    let (mut lo, mut hi) = (0u32, mask);
    while lo < hi {
        let mid = hi - (hi - lo) / 2;
        let stamp = stamp_of(ring, w.wrapping_sub(mid) & mask).load(Ordering::Acquire);
        if stamp_written(stamp) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// Whether the slot at `w` still holds event `next − capacity`, the one the producer
/// overwrites next (so the ring has wrapped and that slot is readable).
fn holds_previous_lap<S: Storage + ?Sized>(ring: &S, w: u32, next: u32) -> bool {
    let stamp = stamp_of(ring, w).load(Ordering::Acquire);
    stamp == stamp_done(next.wrapping_sub(ring.mask() + 1))
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

/// A read-only follower of the stream. It writes nothing — it can run over a
/// read-only mapping — and tells exactly how many events it missed when the producer
/// lapped it. Made by [`observe`](super::observe) (or [`Ring::observer`](super::Ring::observer)).
pub struct Observer<R: RingOwner> {
    ring: R,
    home: usize,
    cursor: Cursor,
    missed: Losses,
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
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// use telering_core::{event_name, Category, Event, Observer, ObserverStart, OverflowPolicy, Producer};
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(8) as usize / 8];
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::init(memory, ptr, len, 8) }.unwrap();
    /// let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    /// producer.push(&Event::new(1, Category::Custom, event_name!("n"), 7)).unwrap();
    /// let mut observer = Observer::from_region(&region, ObserverStart::Oldest);
    /// assert_eq!(observer.poll().map(|e| e.value()), Some(7));
    /// // Observing moves nothing: the event is still there for the draining consumer.
    /// assert_eq!(region.header().read_pos.load_u64(), 0);
    /// ```
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
            missed: Losses::default(),
        }
    }

    /// The owner of the ring this observer follows.
    ///
    /// ```
    /// use telering_core::{ObserverStart, Ring};
    /// let ring = Ring::<8>::new();
    /// let observer = ring.observer(ObserverStart::Oldest).unwrap();
    /// assert!(core::ptr::eq(*observer.owner(), &ring));
    /// ```
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

    /// Events the producer overwrote before this observer read them, counted
    /// exactly. See [`Observer::lag_unknown`] for losses that could not be counted.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, _consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// let mut observer = ring.observer(ObserverStart::Oldest).unwrap();
    /// for v in 0..10 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// let mut seen = 0;
    /// while observer.poll().is_some() {
    ///     seen += 1;
    /// }
    /// assert_eq!((seen, observer.events_missed()), (4, 6));
    /// ```
    pub fn events_missed(&self) -> u64 {
        self.missed.counted
    }

    /// How many times this observer found it had fallen 2²⁹ events or more behind,
    /// further than the slot stamps can count, with no 64-bit published count
    /// ([`Observer::set_published`]) to count by. Each time it missed an unknown
    /// number of events, not included in [`Observer::events_missed`], and resumed at
    /// the oldest readable event.
    ///
    /// ```
    /// use telering_core::{ObserverStart, Ring};
    /// let ring = Ring::<8>::new();
    /// let observer = ring.observer(ObserverStart::Oldest).unwrap();
    /// assert_eq!(observer.lag_unknown(), 0);
    /// ```
    pub fn lag_unknown(&self) -> u64 {
        self.missed.unknown
    }

    /// Supplies the writer's 64-bit count of events published so far (a ring file's
    /// trailer keeps one), loaded after the positions it covers were stored. With it,
    /// an observer lapped by any distance counts exactly what it missed, and
    /// [`Observer::lag_unknown`] stays 0. Call it before polls; a stale count is fine
    /// as long as it is within 2²⁹ of the truth.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, _consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// let mut observer = ring.observer(ObserverStart::Newest).unwrap();
    /// observer.set_published(producer.events_published());
    /// for v in 0..9 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// observer.set_published(producer.events_published());
    /// assert_eq!(observer.poll().map(|e| e.value()), Some(5));
    /// assert_eq!((observer.events_missed(), observer.lag_unknown()), (5, 0));
    /// ```
    pub fn set_published(&mut self, published: u64) {
        let ring = checked(&self.ring, self.home);
        self.cursor.set_published(ring, published);
    }

    /// Slots in the ring.
    ///
    /// ```
    /// use telering_core::{ObserverStart, Ring};
    /// let ring = Ring::<32>::new();
    /// assert_eq!(ring.observer(ObserverStart::Newest).unwrap().capacity(), 32);
    /// ```
    pub fn capacity(&self) -> u32 {
        self.ring.mask() + 1
    }
}
