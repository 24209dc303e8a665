//! Slot formats: how one item lies in one slot, and where the slot stamp sits.
//!
//! The ring algorithm is the same for every format; a [`SlotFormat`] tells it the
//! slot's memory type (atomics only, so that any party may race any other without a
//! data race), where the 32-bit stamp sits, and how an item is encoded into the slot's
//! little-endian words and decoded from them. Two formats exist, both NIXL's:
//!
//! | format | item | slot | stamp | header `version` |
//! |---|---|---|---|---|
//! | [`EventFormat`] | [`Event`] | 56 bytes: the event record | `u32` @ 44 (reserved in NIXL) | 1 |
//! | [`CompactFormat`] | [`CompactEvent`] | 16 bytes: `type u32 @0`, stamp `u32 @4`, `value u64 @8` | `u32` @ 4 (left uninitialised by NIXL) | 4 |
//!
//! A third, [`LaneRecordFormat`](super::LaneRecordFormat), is no file format: 16-byte
//! records of a private ring, with no room for a stamp (see its module).
//!
//! Each format offers two ways to copy an item: relaxed atomic word accesses, which
//! are always sound, and *unsynchronised* plain copies, which the ring uses only where
//! its protocol proves that nobody writes the slot at the same time (see the ring
//! module docs). A plain store writes the record's words; a plain load reads the slot
//! field by field, 8 bytes at a time and the event's 4-byte name tail alone, with
//! volatile loads that the compiler may not merge. A load is forwarded from an earlier
//! store only if that one store holds all its bytes: a 16-byte load spanning two
//! 8-byte stores (or an 8-byte one spanning the name tail and the stamp, which a
//! stamped writer stores apart) waits until they reach the cache, which made a push +
//! pop loop a third slower than its instruction count. (Writing the event as one
//! 16-bytes-at-a-time move instead measured slower for batches: a 56-byte slot is only
//! 8-aligned, so some of those stores straddle two cache lines.)

use super::slot::{Slot, SlotStamp, Word};
use crate::event::{EVENT_SIZE, Event};
use crate::sync::{AtomicU32, Ordering};
use core::fmt;

pub(super) mod sealed {
    pub trait Sealed {}
}

/// The layout of one slot and the encoding of the item it holds.
///
/// Implemented in this crate for NIXL's formats ([`EventFormat`], [`CompactFormat`]);
/// it is sealed because the ring maps foreign memory onto [`SlotFormat::Slot`] and
/// relies on that type consisting of atomics only.
pub trait SlotFormat: sealed::Sealed + Sized + 'static {
    /// What one slot holds.
    type Item: Copy + fmt::Debug;
    /// The slot as it lies in memory: little-endian words held in atomics, no
    /// padding, 8-byte aligned, [`SlotFormat::SLOT_SIZE`] bytes.
    type Slot: Send + Sync;
    /// Bytes per slot (a multiple of 8).
    const SLOT_SIZE: usize;
    /// 64-bit words per slot.
    const WORDS: usize = Self::SLOT_SIZE / 8;
    /// Byte offset of the `u32` slot stamp inside the slot.
    const STAMP_OFFSET: usize;
    /// The header `version` a region of this format carries.
    const HEADER_VERSION: i32;
    /// Whether a slot has a stamp of its own. A format without one
    /// ([`LaneRecordFormat`](super::LaneRecordFormat)) makes only unobserved rings,
    /// split with [`split_records`](super::split_records).
    #[doc(hidden)]
    const STAMPED: bool = true;
    /// Some item, to fill a buffer before items are read into it.
    #[doc(hidden)]
    const FILLER: Self::Item;
    /// An all-zero slot (never written, stamp 0), for `const` rings.
    #[cfg(not(loom))]
    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Self::Slot;

    /// An all-zero slot (never written, stamp 0).
    ///
    /// ```
    /// use telering_core::ring::{EventFormat, SlotFormat};
    /// let slot = EventFormat::empty();
    /// assert!(format!("{slot:?}").contains("stamp: 0"));
    /// ```
    fn empty() -> Self::Slot;

    /// The slot's stamp.
    #[doc(hidden)]
    fn stamp(slot: &Self::Slot) -> &SlotStamp;

    /// Stores `item` (everything but the stamp) with relaxed atomic stores.
    #[doc(hidden)]
    fn store(slot: &Self::Slot, item: &Self::Item);

    /// Loads the item with relaxed atomic loads. Whether the words belong together is
    /// for the caller to establish (acquire on a position, or the stamp protocol).
    #[doc(hidden)]
    fn load(slot: &Self::Slot) -> Self::Item;

    /// Stores `item` with plain stores, the stamp included (it becomes 0).
    ///
    /// # Safety
    ///
    /// No other access to the slot may be concurrent with this one (unordered by
    /// happens-before), atomic or not.
    #[doc(hidden)]
    unsafe fn store_unsynced(slot: &Self::Slot, item: &Self::Item);

    /// Loads the item with plain loads.
    ///
    /// # Safety
    ///
    /// No store to the slot may be concurrent with this load (unordered by
    /// happens-before); concurrent loads of any kind are fine.
    #[doc(hidden)]
    unsafe fn load_unsynced(slot: &Self::Slot) -> Self::Item;

    /// Borrows the item in place, where a slot written by
    /// [`store_unsynced`](SlotFormat::store_unsynced) holds exactly the item's bytes
    /// (little-endian targets, outside loom); `None` elsewhere, and the caller copies
    /// with [`load_unsynced`](SlotFormat::load_unsynced).
    ///
    /// # Safety
    ///
    /// As for [`load_unsynced`](SlotFormat::load_unsynced), for as long as the
    /// borrow lives; and the slot was last written by `store_unsynced` (unstamped), so
    /// that its bytes are a valid item.
    #[doc(hidden)]
    #[inline(always)]
    unsafe fn borrow_unsynced(slot: &Self::Slot) -> Option<&Self::Item> {
        let _ = slot;
        None
    }
}

/// NIXL's version-1 slot: a 56-byte [`Event`] record, with the stamp in the reserved
/// `u32` at offset 44.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct EventFormat;

impl sealed::Sealed for EventFormat {}

impl SlotFormat for EventFormat {
    type Item = Event;
    type Slot = Slot;
    const SLOT_SIZE: usize = EVENT_SIZE;
    const STAMP_OFFSET: usize = crate::event::offsets::STAMP;
    const HEADER_VERSION: i32 = 1;
    const FILLER: Event = Event::new(0, crate::Category::Custom, crate::event_name!("-"), 0);
    #[cfg(not(loom))]
    const EMPTY: Slot = Slot::new();

    fn empty() -> Slot {
        Slot::new()
    }

    #[inline(always)]
    fn stamp(slot: &Slot) -> &SlotStamp {
        &slot.stamp
    }

    #[inline(always)]
    fn store(slot: &Slot, item: &Event) {
        slot.store_event(item)
    }

    #[inline(always)]
    fn load(slot: &Slot) -> Event {
        slot.load_event()
    }

    #[inline(always)]
    unsafe fn store_unsynced(slot: &Slot, item: &Event) {
        // SAFETY: no concurrent access (the caller's contract).
        unsafe { slot.store_event_unsynced(item) }
    }

    #[inline(always)]
    unsafe fn load_unsynced(slot: &Slot) -> Event {
        // SAFETY: no concurrent store (the caller's contract).
        unsafe { slot.load_event_unsynced() }
    }

    #[cfg(all(not(loom), target_endian = "little"))]
    #[inline(always)]
    unsafe fn borrow_unsynced(slot: &Slot) -> Option<&Event> {
        // SAFETY: `Slot` and `Event` are both `repr(C, align(8))`, 56 bytes, with the
        // same field offsets (asserted in `slot.rs` and `event/mod.rs`). On a
        // little-endian target `store_unsynced` wrote the event's words unchanged, its
        // zero `reserved` included (an unstamped slot), so the bytes are that event.
        // The slot's atomics put every byte inside an `UnsafeCell`, so a shared borrow
        // of them as plain data is allowed; the caller guarantees that no store to the
        // slot is concurrent with the borrow's lifetime.
        Some(unsafe { &*(slot as *const Slot).cast::<Event>() })
    }
}

/// The item of a [`CompactFormat`] slot: a type (an event id the reader maps to a
/// name, category and unit) and a value.
///
/// ```
/// use telering_core::ring::CompactEvent;
/// let e = CompactEvent::new(7, 4096);
/// assert_eq!((e.type_id, e.value), (7, 4096));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct CompactEvent {
    /// The event type (`type`, offset 0).
    pub type_id: u32,
    /// The value (offset 8).
    pub value: u64,
}

impl CompactEvent {
    /// An event of type `type_id` with `value`.
    ///
    /// ```
    /// use telering_core::ring::CompactEvent;
    /// const DOORBELL: CompactEvent = CompactEvent::new(3, 1);
    /// assert_eq!((DOORBELL.type_id, DOORBELL.value), (3, 1));
    /// ```
    pub const fn new(type_id: u32, value: u64) -> CompactEvent {
        CompactEvent { type_id, value }
    }
}

/// NIXL's version-4 slot: 16 bytes, `type u32 @0`, a `u32 @4` NIXL leaves
/// uninitialised and telering uses for the stamp, `value u64 @8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct CompactFormat;

impl sealed::Sealed for CompactFormat {}

/// One 16-byte [`CompactFormat`] slot.
#[repr(C, align(8))]
pub struct CompactSlot {
    type_id: AtomicU32,
    stamp: SlotStamp,
    value: [Word; 8 / super::slot::WORD],
}

#[cfg(not(loom))]
const _: () = {
    assert!(core::mem::size_of::<CompactSlot>() == 16);
    assert!(core::mem::align_of::<CompactSlot>() == 8);
    assert!(core::mem::offset_of!(CompactSlot, type_id) == 0);
    assert!(core::mem::offset_of!(CompactSlot, stamp) == 4);
    assert!(core::mem::offset_of!(CompactSlot, value) == 8);
};

impl fmt::Debug for CompactSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactSlot")
            .field("stamp", &self.stamp.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl CompactSlot {
    /// The first word's two halves: `type` and the stamp in version 4 (each stored
    /// little-endian).
    #[inline(always)]
    pub(super) fn halves(&self) -> (&AtomicU32, &SlotStamp) {
        (&self.type_id, &self.stamp)
    }

    /// The value's word(s).
    #[inline(always)]
    pub(super) fn value_cells(&self) -> &[Word; 8 / super::slot::WORD] {
        &self.value
    }

    /// An all-zero slot: never written, stamp 0.
    ///
    /// ```
    /// use telering_core::ring::{self, CompactEvent, CompactFormat, CompactSlot, Observability, SliceRing};
    /// use telering_core::OverflowPolicy;
    /// let slots: Box<[CompactSlot]> = (0..16).map(|_| CompactSlot::new()).collect();
    /// let ring = SliceRing::<_, CompactFormat>::new_as(slots, Observability::Unobserved).unwrap();
    /// let (mut producer, mut consumer) = ring::split(&ring, OverflowPolicy::DropNewest).unwrap();
    /// producer.push(&CompactEvent::new(1, 2)).unwrap();
    /// assert_eq!(consumer.pop(), Some(CompactEvent::new(1, 2)));
    /// ```
    #[cfg(not(loom))]
    pub const fn new() -> CompactSlot {
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: Word = Word::new(0);
        CompactSlot {
            type_id: AtomicU32::new(0),
            stamp: SlotStamp::new(),
            value: [ZERO; 8 / super::slot::WORD],
        }
    }

    /// An all-zero slot: never written, stamp 0.
    #[cfg(loom)]
    pub fn new() -> CompactSlot {
        CompactSlot {
            type_id: AtomicU32::new(0),
            stamp: SlotStamp::new(),
            value: core::array::from_fn(|_| Word::new(0)),
        }
    }
}

#[cfg(not(loom))]
impl Default for CompactSlot {
    fn default() -> Self {
        CompactSlot::new()
    }
}

impl SlotFormat for CompactFormat {
    type Item = CompactEvent;
    type Slot = CompactSlot;
    const SLOT_SIZE: usize = 16;
    const STAMP_OFFSET: usize = 4;
    const HEADER_VERSION: i32 = 4;
    const FILLER: CompactEvent = CompactEvent::new(0, 0);
    #[cfg(not(loom))]
    const EMPTY: CompactSlot = CompactSlot::new();

    fn empty() -> CompactSlot {
        CompactSlot::new()
    }

    #[inline(always)]
    fn stamp(slot: &CompactSlot) -> &SlotStamp {
        &slot.stamp
    }

    #[inline(always)]
    fn store(slot: &CompactSlot, item: &CompactEvent) {
        slot.type_id.store(item.type_id.to_le(), Ordering::Relaxed);
        super::slot::store_u64(&slot.value, item.value);
    }

    #[inline(always)]
    fn load(slot: &CompactSlot) -> CompactEvent {
        CompactEvent {
            type_id: u32::from_le(slot.type_id.load(Ordering::Relaxed)),
            value: super::slot::load_u64(&slot.value),
        }
    }

    #[cfg(not(loom))]
    #[inline(always)]
    unsafe fn store_unsynced(slot: &CompactSlot, item: &CompactEvent) {
        let words = [(item.type_id as u64).to_le(), item.value.to_le()];
        // SAFETY: no concurrent access (the caller's contract).
        unsafe { super::slot::write_words(slot, words) }
    }

    #[cfg(not(loom))]
    #[inline(always)]
    unsafe fn load_unsynced(slot: &CompactSlot) -> CompactEvent {
        // SAFETY: no concurrent store (the caller's contract).
        let [w0, w1] = unsafe { super::slot::read_words::<CompactSlot, 2>(slot) };
        CompactEvent {
            type_id: u64::from_le(w0) as u32,
            value: u64::from_le(w1),
        }
    }

    // Under loom: relaxed stores, and `unsync_load`s that fail the model if a store
    // does not happen before them (see `Slot::load_event_unsynced`).
    #[cfg(loom)]
    unsafe fn store_unsynced(slot: &CompactSlot, item: &CompactEvent) {
        Self::store(slot, item)
    }

    #[cfg(loom)]
    unsafe fn load_unsynced(slot: &CompactSlot) -> CompactEvent {
        // SAFETY: the caller excludes concurrent stores; loom checks it.
        unsafe {
            CompactEvent {
                type_id: u32::from_le(slot.type_id.unsync_load()),
                value: u64::from_le(slot.value[0].unsync_load()),
            }
        }
    }
}
