//! The lane record: a 16-byte item for rings that only their own consumer ever reads.
//!
//! A [`LaneRecord`] is what a recording thread writes into its private ring (std's
//! per-thread lanes) in place of a 56-byte [`Event`](crate::Event): a 16-bit *id*
//! that the reader maps to a name and category, the low 48 bits of a *stamp* (a
//! clock reading the reader converts), and the 64-bit value. It lies in a slot as two
//! little-endian words:
//!
//! | word | bits | field |
//! |---|---|---|
//! | 0 | 0–15 | id |
//! | 0 | 16–63 | stamp, low 48 bits |
//! | 1 | 0–63 | value |
//!
//! Both words are the record's own, so a slot has no room for the observer stamp of
//! the other formats: a ring of [`LaneRecordFormat`] is always unobserved (asking it
//! for an observer fails with [`Unobserved`](super::Unobserved), whatever
//! [`Observability`](super::Observability) it was made with), and it is split with
//! [`split_records`](super::split_records), under
//! [`DropNewest`](crate::OverflowPolicy::DropNewest), whose consumer needs no stamps.
//! It is never a file format: its header version is no NIXL generation's.
//!
//! How the reader restores the stamp's high 16 bits is the writer's protocol, not
//! the ring's; std's lanes write a marker record whenever they change (see its lane
//! module).

use super::format::{CompactSlot, SlotFormat, sealed};
use super::slot::SlotStamp;
use crate::sync::Ordering;

/// One record of a [`LaneRecordFormat`] ring: an id, the low 48 bits of a stamp and
/// a value.
///
/// ```
/// use telering_core::ring::LaneRecord;
/// let r = LaneRecord::new(7, 0x1234_5678_9abc_def0, 4096);
/// assert_eq!((r.id(), r.stamp(), r.value()), (7, 0x5678_9abc_def0, 4096));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
// 8-aligned on every target (a `u64` is 4-aligned on i686), like the slot it is read
// from in place.
#[repr(C, align(8))]
pub struct LaneRecord {
    /// Stamp (low 48 bits) above the id (16 bits).
    key: u64,
    value: u64,
}

impl LaneRecord {
    /// Bits of the stamp a record keeps.
    pub const STAMP_BITS: u32 = 48;
    /// The stamp bits a record keeps.
    pub const STAMP_MASK: u64 = (1 << Self::STAMP_BITS) - 1;

    /// A record of `id` with the low 48 bits of `stamp` and `value`.
    ///
    /// ```
    /// use telering_core::ring::LaneRecord;
    /// const MARK: LaneRecord = LaneRecord::new(u16::MAX, 0, 1);
    /// assert_eq!(MARK.id(), u16::MAX);
    /// ```
    #[inline(always)]
    pub const fn new(id: u16, stamp: u64, value: u64) -> LaneRecord {
        LaneRecord {
            key: (stamp << 16) | id as u64,
            value,
        }
    }

    /// The id.
    #[inline(always)]
    pub const fn id(&self) -> u16 {
        self.key as u16
    }

    /// The stamp's low 48 bits.
    #[inline(always)]
    pub const fn stamp(&self) -> u64 {
        self.key >> 16
    }

    /// The value.
    #[inline(always)]
    pub const fn value(&self) -> u64 {
        self.value
    }
}

/// The format of a private ring of [`LaneRecord`]s: 16-byte slots, no observer
/// stamps (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LaneRecordFormat;

impl sealed::Sealed for LaneRecordFormat {}

impl SlotFormat for LaneRecordFormat {
    type Item = LaneRecord;
    // The same 16 bytes of atomics as a version-4 slot; here the word at offset 0 is
    // all the record's key, the "stamp" half included.
    type Slot = CompactSlot;
    const SLOT_SIZE: usize = 16;
    const STAMP_OFFSET: usize = 4;
    const STAMPED: bool = false;
    /// No NIXL generation: a lane record ring is never a file.
    const HEADER_VERSION: i32 = -1;
    const FILLER: LaneRecord = LaneRecord::new(0, 0, 0);
    #[cfg(not(loom))]
    const EMPTY: CompactSlot = CompactSlot::new();

    fn empty() -> CompactSlot {
        CompactSlot::new()
    }

    #[inline(always)]
    fn stamp(slot: &CompactSlot) -> &SlotStamp {
        // Never written as a stamp: a record ring is unobserved and split under
        // `DropNewest` only (`STAMPED` is false).
        slot.halves().1
    }

    #[inline(always)]
    fn store(slot: &CompactSlot, item: &LaneRecord) {
        let (low, high) = slot.halves();
        low.store((item.key as u32).to_le(), Ordering::Relaxed);
        high.store((item.key >> 32) as u32, Ordering::Relaxed);
        super::slot::store_u64(slot.value_cells(), item.value);
    }

    #[inline(always)]
    fn load(slot: &CompactSlot) -> LaneRecord {
        let (low, high) = slot.halves();
        let low = u32::from_le(low.load(Ordering::Relaxed)) as u64;
        let high = high.load(Ordering::Relaxed) as u64;
        LaneRecord {
            key: high << 32 | low,
            value: super::slot::load_u64(slot.value_cells()),
        }
    }

    #[cfg(not(loom))]
    #[inline(always)]
    unsafe fn store_unsynced(slot: &CompactSlot, item: &LaneRecord) {
        // SAFETY: no concurrent access (the caller's contract).
        unsafe { super::slot::write_words(slot, [item.key.to_le(), item.value.to_le()]) }
    }

    #[cfg(not(loom))]
    #[inline(always)]
    unsafe fn load_unsynced(slot: &CompactSlot) -> LaneRecord {
        // SAFETY: no concurrent store (the caller's contract).
        let [key, value] = unsafe { super::slot::read_words::<CompactSlot, 2>(slot) };
        LaneRecord {
            key: u64::from_le(key),
            value: u64::from_le(value),
        }
    }

    #[cfg(loom)]
    unsafe fn store_unsynced(slot: &CompactSlot, item: &LaneRecord) {
        Self::store(slot, item)
    }

    #[cfg(loom)]
    unsafe fn load_unsynced(slot: &CompactSlot) -> LaneRecord {
        Self::load(slot)
    }

    #[cfg(all(not(loom), target_endian = "little"))]
    #[inline(always)]
    unsafe fn borrow_unsynced(slot: &CompactSlot) -> Option<&LaneRecord> {
        // SAFETY: `CompactSlot` and `LaneRecord` are both 16 bytes, 8-aligned
        // (`LaneRecord` is two `u64`s; asserted below); on a little-endian target
        // `store_unsynced` wrote the record's two words unchanged, so the bytes are that
        // record. They lie in atomics, i.e. inside `UnsafeCell`s, so a shared borrow of
        // them as plain data is allowed; the caller guarantees no concurrent store for
        // the borrow's lifetime.
        Some(unsafe { &*(slot as *const CompactSlot).cast::<LaneRecord>() })
    }
}

#[cfg(not(loom))]
const _: () = {
    assert!(core::mem::size_of::<LaneRecord>() == 16);
    assert!(core::mem::align_of::<LaneRecord>() == 8);
    assert!(core::mem::size_of::<CompactSlot>() == 16);
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ring::{self, Observability, ObserverStart, SliceRing, Unobserved};
    use std::vec::Vec;

    #[test]
    fn a_record_keeps_its_id_the_low_48_bits_of_its_stamp_and_its_value() {
        let r = LaneRecord::new(0xbeef, u64::MAX, u64::MAX - 1);
        assert_eq!(r.id(), 0xbeef);
        assert_eq!(r.stamp(), LaneRecord::STAMP_MASK);
        assert_eq!(r.value(), u64::MAX - 1);
        assert_eq!(LaneRecord::new(1, 1 << 48, 0).stamp(), 0);
    }

    #[test]
    fn records_lie_in_the_slot_as_two_little_endian_words() {
        let slot = CompactSlot::new();
        let r = LaneRecord::new(0x0102, 0x0304_0506_0708, 0x1112_1314_1516_1718);
        LaneRecordFormat::store(&slot, &r);
        // SAFETY: no other access to `slot` exists.
        let [key, value] = unsafe { super::super::slot::read_words::<CompactSlot, 2>(&slot) };
        // The words as they lie in memory.
        assert_eq!(
            key.to_ne_bytes(),
            [0x02, 0x01, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03]
        );
        assert_eq!(value.to_ne_bytes(), 0x1112_1314_1516_1718_u64.to_le_bytes());
        assert_eq!(LaneRecordFormat::load(&slot), r);
        // SAFETY: no other access to `slot` exists.
        unsafe { LaneRecordFormat::store_unsynced(&slot, &r) };
        // SAFETY: no other access to `slot` exists.
        assert_eq!(unsafe { LaneRecordFormat::load_unsynced(&slot) }, r);
        assert_eq!(LaneRecordFormat::load(&slot), r);
    }

    #[test]
    fn a_record_ring_delivers_in_order_counts_refusals_and_has_no_observer() {
        let slots: Vec<CompactSlot> = (0..8).map(|_| CompactSlot::new()).collect();
        // Asked for observers: it still has none, as its slots have no stamp.
        let ring =
            SliceRing::<_, LaneRecordFormat>::new_as(slots, Observability::Observed).unwrap();
        assert_eq!(
            ring::observe(&ring, ObserverStart::Oldest).err(),
            Some(Unobserved)
        );
        let (mut p, mut c) = ring::split_records(&ring).unwrap();
        for v in 0..10u64 {
            let _ = p.push(&LaneRecord::new(v as u16, (v << 40) | v, v * 3));
        }
        assert_eq!(p.events_dropped(), 3);
        let mut got = Vec::new();
        c.read_batch(usize::MAX, |r| got.push(*r));
        assert_eq!(got.len(), 7);
        for (v, r) in got.iter().enumerate() {
            let v = v as u64;
            assert_eq!(
                (r.id(), r.stamp(), r.value()),
                (v as u16, (v << 40) | v, v * 3)
            );
        }
        assert!(ring::split_records(&ring).is_err());
    }
}
