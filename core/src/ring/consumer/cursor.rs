//! The stamp-checked cursor that observers and the consumer under `OverwriteOldest`
//! share: where it reads, what it has lost, and how it resynchronises when lapped.

use super::super::format::SlotFormat;
use super::super::storage::sealed::Storage;
use super::super::{
    STAMP_BUSY, STAMP_SEQ_MASK, next_write_seq, seq_distance, stamp_done, stamp_of, stamp_seq,
    stamp_written,
};
use crate::sync::{Ordering, fence};

/// How many slot inspections one read may make before it reports "nothing readable
/// now". Each lapped inspection resynchronises straight to the oldest readable event,
/// so a live writer rarely forces more than one; the bound keeps a read over corrupted
/// or crafted stamps from spinning. It bounds work, not progress.
pub(super) const MAX_SKIPS_PER_READ: u32 = 64;

/// What a stamp-checked reader has lost, as [`Observer::events_missed`] and
/// [`Consumer::events_lost`] report it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Losses {
    /// Events counted exactly as overwritten before they could be read.
    pub(super) counted: u64,
    /// Times the reader fell so far behind (2²⁹ events or more) that the number it
    /// missed could not be told; each time it resumed at the oldest readable event.
    pub(super) unknown: u64,
}

/// A read position that checks stamps: shared by observers and by the consumer under
/// `OverwriteOldest`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Cursor {
    pub(super) pos: u32,
    /// The sequence of the event expected at `pos`, in 64 bits. Only its low 30 bits
    /// are checked against stamps; the high bits are meaningful once a 64-bit
    /// published count anchored them (`published`).
    pub(super) seq: u64,
    /// The writer's 64-bit published count, last supplied by the ring's owner (a
    /// ring file's trailer), if it has one.
    pub(super) published: Option<u64>,
    /// The stamps' 30-bit sequence minus `published` at anchoring: the writer may
    /// count from 0 while continuing a sequence its predecessor started.
    pub(super) offset: u32,
    /// Whether `seq`'s high bits were set from `published`.
    pub(super) anchored: bool,
    /// The 30-bit sequence of the next event to be published, as of the last load of
    /// `write_pos`: events before it may be read.
    pub(super) limit: u32,
}

/// Why a reader resynchronises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Behind {
    /// The slot carried (or was being written with) this later event: lapped by
    /// less than 2²⁹.
    Lapped(u32),
    /// A slot carried an older event although `write_pos` had moved past it: the
    /// reader fell 2²⁹ events or more behind, so the 30-bit stamps cannot tell by how
    /// much.
    TooFar,
}

impl Cursor {
    pub(super) fn at(pos: u32, seq: u32, limit: u32) -> Cursor {
        Cursor {
            pos,
            seq: seq as u64,
            published: None,
            offset: 0,
            anchored: false,
            limit,
        }
    }

    pub(super) fn at_oldest<S: Storage + ?Sized>(ring: &S) -> Cursor {
        let (pos, seq, next) = oldest_readable(ring);
        Cursor::at(pos, seq, next)
    }

    pub(super) fn at_newest<S: Storage + ?Sized>(ring: &S) -> Cursor {
        let (w, next_seq) = next_write_seq(ring);
        Cursor::at(w, next_seq, next_seq)
    }

    #[inline]
    pub(super) fn seq30(&self) -> u32 {
        self.seq as u32 & STAMP_SEQ_MASK
    }

    pub(super) fn advance(&mut self, by: u32, mask: u32) {
        self.pos = self.pos.wrapping_add(by) & mask;
        self.seq = self.seq.wrapping_add(by as u64);
    }

    /// The 64-bit sequence nearest to `published` whose low 30 bits are `seq30`.
    pub(super) fn extend(published: u64, seq30: u32) -> u64 {
        let d = seq_distance(seq30, published as u32 & STAMP_SEQ_MASK);
        published.wrapping_add(d as i64 as u64)
    }

    /// Records the writer's 64-bit published count (events published so far, loaded
    /// after the positions it covers were stored). The first count (or one smaller
    /// than the last: a new writer) anchors the 64-bit sequence: the cursor is then
    /// within a ring's worth of the writer, so the nearest match is the right one,
    /// and a count off by less than 2²⁹ still extends every later stamp exactly.
    pub(super) fn set_published<S: Storage + ?Sized>(&mut self, ring: &S, published: u64) {
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
    pub(super) fn extend_published(&self, published: u64, seq30: u32) -> u64 {
        Cursor::extend(published.wrapping_add(self.offset as u64), seq30)
    }

    /// Reads the next item. Only published events are read (those before
    /// `write_pos`, as of the last load of it), so a batch becomes visible to this
    /// reader all at once. A lapped read jumps straight to the oldest event still
    /// readable, adding what it passed over to `lost`: exactly where a 64-bit
    /// published count or the stamps allow, else to `lost.unknown`.
    #[inline]
    pub(super) fn read<S: Storage + ?Sized>(
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
    pub(super) fn resync_too_far<S: Storage + ?Sized>(
        &mut self,
        ring: &S,
        lost: &mut Losses,
    ) -> bool {
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
    pub(super) fn published_says_far_behind(&self) -> bool {
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
    pub(super) fn is_newer(&self, stamp: u32) -> bool {
        stamp_written(stamp) && seq_distance(stamp_seq(stamp), self.seq30()) > 0
    }

    /// Jumps to the oldest event still readable (derived from `write_pos` and the
    /// stamp before it) and counts what was passed over.
    #[cold]
    pub(super) fn resync<S: Storage + ?Sized>(&mut self, ring: &S, why: Behind, lost: &mut Losses) {
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

    pub(super) fn advance_by(&mut self, n: u64, mask: u32) {
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
pub(super) fn oldest_readable<S: Storage + ?Sized>(ring: &S) -> (u32, u32, u32) {
    let (w, next_seq) = next_write_seq(ring);
    let at_w = stamp_of(ring, w).load(Ordering::Acquire);
    let history = if at_w == stamp_done(next_seq.wrapping_sub(ring.mask() + 1)) {
        ring.mask() + 1
    } else if stamp_written(at_w) {
        // The producer is already overwriting the slot at `w`: the `w` events before
        // it are readable either way.
        w
    } else {
        // Never more than the events this writer's stamps count: the run is read after
        // `w` and `next_seq`, so a producer that has since stamped the slots before
        // `w` anew (a fresh ring's first lap) must not lengthen the history past
        // event 0.
        stamped_run_before(ring, w).min(next_seq)
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
pub(super) fn holds_previous_lap<S: Storage + ?Sized>(ring: &S, w: u32, next: u32) -> bool {
    let stamp = stamp_of(ring, w).load(Ordering::Acquire);
    stamp == stamp_done(next.wrapping_sub(ring.mask() + 1))
}
