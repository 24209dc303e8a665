//! Slots and the little-endian cells of the ring's header.
//!
//! Every byte that two parties may touch at the same time is accessed through an
//! atomic, so that a reader racing a writer is a defined (if possibly stale) read,
//! never a data race: slot contents through relaxed word loads and stores, the stamp
//! and the positions with acquire/release. On x86-64 and AArch64 relaxed atomic loads
//! and stores compile to plain 8-byte moves; what they cost over `memcpy` is that the
//! compiler may not merge them into vector moves: seven stores per slot instead of
//! two to four. In a single-thread push/pop loop, where the copy is all there is,
//! that roughly halves throughput against rtrb; across two cores the cache-line
//! transfers dominate and the difference disappears (`BENCHMARKS.md`).

use crate::event::Event;
use crate::sync::{AtomicU32, Ordering};

#[cfg(target_has_atomic = "64")]
pub(crate) use crate::sync::AtomicU64 as Word;
#[cfg(target_has_atomic = "64")]
type RawWord = u64;

#[cfg(not(target_has_atomic = "64"))]
pub(crate) use crate::sync::AtomicU32 as Word;
#[cfg(not(target_has_atomic = "64"))]
type RawWord = u32;

/// Bytes per atomic data word: 8 where the target has 64-bit atomics, else 4.
pub(crate) const WORD: usize = core::mem::size_of::<RawWord>();
/// Bytes 0..40 of the record: timestamp, category and the first 28 name bytes.
const HEAD_BYTES: usize = 40;

/// A slot's 32-bit stamp (see the ring module docs for the stamp protocol), stored
/// little-endian like every other field of the layout, so that a ring written on a
/// big-endian host reads on a little-endian one and back. On little-endian targets
/// the conversions are no-ops.
#[repr(transparent)]
pub struct SlotStamp(AtomicU32);

impl core::fmt::Debug for SlotStamp {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&self.load(Ordering::Relaxed), f)
    }
}

impl SlotStamp {
    /// A stamp of 0: never written.
    #[cfg(not(loom))]
    pub(crate) const fn new() -> SlotStamp {
        SlotStamp(AtomicU32::new(0))
    }

    /// A stamp of 0: never written.
    #[cfg(loom)]
    pub(crate) fn new() -> SlotStamp {
        SlotStamp(AtomicU32::new(0))
    }

    /// Loads the stamp with `order`.
    #[inline(always)]
    pub(crate) fn load(&self, order: Ordering) -> u32 {
        u32::from_le(self.0.load(order))
    }

    /// Stores `stamp` with `order`.
    #[inline(always)]
    pub(crate) fn store(&self, stamp: u32, order: Ordering) {
        self.0.store(stamp.to_le(), order)
    }
}

/// One 56-byte ring slot: an event record whose reserved `u32` at offset 44 holds the
/// slot stamp (see the ring module docs for the stamp protocol).
#[repr(C, align(8))]
pub struct Slot {
    head: [Word; HEAD_BYTES / WORD],
    name_tail: AtomicU32,
    pub(crate) stamp: SlotStamp,
    value: [Word; 8 / WORD],
}

#[cfg(not(loom))]
const _: () = {
    assert!(core::mem::size_of::<Slot>() == crate::event::EVENT_SIZE);
    assert!(core::mem::align_of::<Slot>() == 8);
    assert!(core::mem::offset_of!(Slot, stamp) == crate::event::offsets::STAMP);
    assert!(core::mem::offset_of!(Slot, value) == crate::event::offsets::VALUE);
};

impl core::fmt::Debug for Slot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Slot")
            .field("stamp", &self.stamp.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Slot {
    /// An all-zero slot: never written, stamp 0.
    #[cfg(not(loom))]
    pub const fn new() -> Slot {
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: Word = Word::new(0);
        Slot {
            head: [ZERO; HEAD_BYTES / WORD],
            name_tail: AtomicU32::new(0),
            stamp: SlotStamp::new(),
            value: [ZERO; 8 / WORD],
        }
    }

    /// An all-zero slot: never written, stamp 0.
    #[cfg(loom)]
    pub fn new() -> Slot {
        Slot {
            head: core::array::from_fn(|_| Word::new(0)),
            name_tail: AtomicU32::new(0),
            stamp: SlotStamp::new(),
            value: core::array::from_fn(|_| Word::new(0)),
        }
    }

    /// Stores the event's wire record (everything but the stamp) with relaxed stores.
    /// Memory always holds the little-endian wire bytes: each word is converted with
    /// `to_le`, a no-op on little-endian targets.
    #[inline]
    pub(crate) fn store_event(&self, event: &Event) {
        let w = event.wire_words();
        #[cfg(target_has_atomic = "64")]
        {
            for (cell, word) in self.head.iter().zip(&w[..5]) {
                cell.store(word.to_le(), Ordering::Relaxed);
            }
            self.value[0].store(w[6].to_le(), Ordering::Relaxed);
        }
        #[cfg(not(target_has_atomic = "64"))]
        {
            for (pair, word) in self.head.chunks_exact(2).zip(&w[..5]) {
                pair[0].store((*word as u32).to_le(), Ordering::Relaxed);
                pair[1].store(((*word >> 32) as u32).to_le(), Ordering::Relaxed);
            }
            self.value[0].store((w[6] as u32).to_le(), Ordering::Relaxed);
            self.value[1].store(((w[6] >> 32) as u32).to_le(), Ordering::Relaxed);
        }
        self.name_tail
            .store((w[5] as u32).to_le(), Ordering::Relaxed);
    }

    /// Loads the event's wire record with relaxed loads. Whether the words belong
    /// together is for the caller to establish (acquire on the position, or the stamp
    /// protocol).
    #[inline]
    pub(crate) fn load_event(&self) -> Event {
        self.load_event_via(
            |cell| cell.load(Ordering::Relaxed),
            |cell| cell.load(Ordering::Relaxed),
        )
    }

    /// Loads the record word by word with `load` (data words) and `load32` (the name
    /// tail), converting from little-endian memory order.
    #[inline(always)]
    fn load_event_via(
        &self,
        load: impl Fn(&Word) -> RawWord,
        load32: impl Fn(&AtomicU32) -> u32,
    ) -> Event {
        let mut w = [0u64; 7];
        #[cfg(target_has_atomic = "64")]
        {
            for (word, cell) in w.iter_mut().zip(&self.head) {
                *word = u64::from_le(load(cell));
            }
            w[6] = u64::from_le(load(&self.value[0]));
        }
        #[cfg(not(target_has_atomic = "64"))]
        {
            for (word, pair) in w.iter_mut().zip(self.head.chunks_exact(2)) {
                let lo = u32::from_le(load(&pair[0])) as u64;
                let hi = u32::from_le(load(&pair[1])) as u64;
                *word = hi << 32 | lo;
            }
            let lo = u32::from_le(load(&self.value[0])) as u64;
            let hi = u32::from_le(load(&self.value[1])) as u64;
            w[6] = hi << 32 | lo;
        }
        w[5] = u32::from_le(load32(&self.name_tail)) as u64;
        Event::from_wire_words(&w)
    }
}

impl Slot {
    /// Stores the event's wire record with plain stores (the stamp half of word 5
    /// becomes 0), one 8-byte word at a time, as [`Slot::load_event_unsynced`] loads
    /// them: a load that follows soon (the draining consumer of an in-process ring) is
    /// then forwarded from these stores, which a wider load spanning two of them would
    /// not be.
    ///
    /// # Safety
    ///
    /// No other access to this slot may be concurrent with the store.
    #[cfg(not(loom))]
    #[inline]
    pub(crate) unsafe fn store_event_unsynced(&self, event: &Event) {
        let mut w = event.wire_words();
        for word in &mut w {
            *word = word.to_le();
        }
        // SAFETY: no concurrent access (the caller's contract).
        unsafe { write_words(self, w) }
    }

    /// Loads the event's wire record with plain loads, one 8-byte word at a time (see
    /// [`Slot::store_event_unsynced`]); the stamp half is ignored.
    ///
    /// # Safety
    ///
    /// No store to this slot may be concurrent with the load.
    #[cfg(not(loom))]
    #[inline]
    pub(crate) unsafe fn load_event_unsynced(&self) -> Event {
        let mut w = [0u64; 7];
        let head = core::ptr::from_ref(&self.head).cast::<u64>();
        for (i, word) in w[..5].iter_mut().enumerate() {
            // SAFETY: `head` is 40 bytes at offset 0 of an 8-aligned slot, so word `i`
            // (`i < 5`) is in bounds and aligned; every byte lies in an atomic's
            // `UnsafeCell`, so reading through a pointer derived from `&Slot` is
            // allowed, and with no concurrent store (the caller's contract) it is no
            // data race. Volatile, so that no two words merge into a wider load.
            *word = u64::from_le(unsafe { head.add(i).read_volatile() });
        }
        // The name tail alone, not the 8 bytes with the stamp beside it: a stamped
        // writer stores the two halves separately, and one load spanning both would
        // not be forwarded from those stores.
        // SAFETY: as above, for the `u32` field.
        let tail = unsafe {
            core::ptr::from_ref(&self.name_tail)
                .cast::<u32>()
                .read_volatile()
        };
        w[5] = u32::from_le(tail) as u64;
        // SAFETY: as above, for the 8-byte, 8-aligned value field.
        let value = unsafe {
            core::ptr::from_ref(&self.value)
                .cast::<u64>()
                .read_volatile()
        };
        w[6] = u64::from_le(value);
        Event::from_unstamped_words(w)
    }
}

#[cfg(loom)]
impl Slot {
    /// Under loom: relaxed stores (loom cannot model a plain store into an atomic);
    /// the unsynchronised loads that follow still check that the stores happen
    /// before them.
    ///
    /// # Safety
    ///
    /// As for the non-loom version.
    pub(crate) unsafe fn store_event_unsynced(&self, event: &Event) {
        self.store_event(event)
    }

    /// Under loom: `unsync_load` of every word, which fails the model if any store to
    /// the word does not happen before the load.
    ///
    /// # Safety
    ///
    /// As for the non-loom version.
    pub(crate) unsafe fn load_event_unsynced(&self) -> Event {
        self.load_event_via(
            // SAFETY: the caller excludes concurrent stores; loom checks it.
            |cell| unsafe { cell.unsync_load() },
            // SAFETY: as above.
            |cell| unsafe { cell.unsync_load() },
        )
    }
}

/// Stores a little-endian `u64` into one 8-byte value held in one or two atomic words.
#[inline(always)]
pub(crate) fn store_u64(cells: &[Word; 8 / WORD], value: u64) {
    #[cfg(target_has_atomic = "64")]
    cells[0].store(value.to_le(), Ordering::Relaxed);
    #[cfg(not(target_has_atomic = "64"))]
    {
        cells[0].store((value as u32).to_le(), Ordering::Relaxed);
        cells[1].store(((value >> 32) as u32).to_le(), Ordering::Relaxed);
    }
}

/// Loads the value [`store_u64`] stores.
#[inline(always)]
pub(crate) fn load_u64(cells: &[Word; 8 / WORD]) -> u64 {
    #[cfg(target_has_atomic = "64")]
    {
        u64::from_le(cells[0].load(Ordering::Relaxed))
    }
    #[cfg(not(target_has_atomic = "64"))]
    {
        let lo = u32::from_le(cells[0].load(Ordering::Relaxed)) as u64;
        let hi = u32::from_le(cells[1].load(Ordering::Relaxed)) as u64;
        hi << 32 | lo
    }
}

/// Copies a slot's `K` words out with plain loads.
///
/// # Safety
///
/// `T` is a slot type: `8 × K` bytes of atomics without padding, 8-aligned. No store
/// to `slot` may be concurrent with the copy.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) unsafe fn read_words<T, const K: usize>(slot: &T) -> [u64; K] {
    const { assert!(core::mem::size_of::<T>() == 8 * K) };
    // SAFETY: `slot` is valid for `8K` bytes and 8-aligned (the caller's promise about
    // `T`); every byte lies in an atomic, i.e. inside an `UnsafeCell`, so a read through
    // a pointer derived from `&T` is allowed, and with no concurrent store it is no
    // data race (concurrent loads, atomic or not, are fine in the Rust model).
    let words = (slot as *const T).cast::<u64>();
    // Word by word, volatile: the compiler must not merge two words into one wider
    // load, which the stores a slot's writer made one word at a time would not
    // forward to (see `Slot::store_event_unsynced`).
    // SAFETY: as above; `i < K` keeps every word inside the slot.
    core::array::from_fn(|i| unsafe { words.add(i).read_volatile() })
}

/// Copies `K` words into a slot with plain stores.
///
/// # Safety
///
/// As for [`read_words`], and no access at all to `slot` may be concurrent.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) unsafe fn write_words<T, const K: usize>(slot: &T, words: [u64; K]) {
    const { assert!(core::mem::size_of::<T>() == 8 * K) };
    // SAFETY: as in `read_words`: all bytes are inside atomics' `UnsafeCell`s, so
    // writing through a pointer derived from `&T` is permitted, and the caller
    // excludes every concurrent access.
    let target = core::ptr::NonNull::from(slot).cast::<[u64; K]>();
    // SAFETY: see above.
    unsafe { target.write(words) }
}

#[cfg(not(loom))]
impl Default for Slot {
    fn default() -> Self {
        Slot::new()
    }
}

/// A little-endian `u64` header field accessed as two 32-bit atomic halves.
///
/// Ring positions are below the capacity, which is at most 2²⁸, so their high half
/// is always zero: it is written once when the header is initialised and never
/// again, and a position update is a single atomic store of the low half. That is
/// what lets a 32-bit core without 64-bit atomics drive a header that 64-bit readers
/// load as one `u64`: on a little-endian reader the low half is the first four bytes,
/// and the value it loads is exactly the one the 32-bit store wrote.
#[repr(C)]
pub struct AtomicLeU64 {
    low: AtomicU32,
    high: AtomicU32,
}

impl core::fmt::Debug for AtomicLeU64 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&self.load_u64(), f)
    }
}

impl AtomicLeU64 {
    /// A zero field.
    #[cfg(not(loom))]
    pub const fn new() -> AtomicLeU64 {
        AtomicLeU64 {
            low: AtomicU32::new(0),
            high: AtomicU32::new(0),
        }
    }

    /// A zero field.
    #[cfg(loom)]
    pub fn new() -> AtomicLeU64 {
        AtomicLeU64 {
            low: AtomicU32::new(0),
            high: AtomicU32::new(0),
        }
    }

    /// Loads the low half (a ring position).
    #[inline]
    pub(crate) fn load_low(&self, order: Ordering) -> u32 {
        u32::from_le(self.low.load(order))
    }

    /// Stores the low half (a ring position); the high half stays zero.
    #[inline]
    pub(crate) fn store_low(&self, value: u32, order: Ordering) {
        self.low.store(value.to_le(), order)
    }

    /// Loads the whole value (relaxed; for validation and inspection, not for
    /// synchronisation).
    pub fn load_u64(&self) -> u64 {
        let low = u32::from_le(self.low.load(Ordering::Relaxed)) as u64;
        let high = u32::from_le(self.high.load(Ordering::Relaxed)) as u64;
        high << 32 | low
    }

    /// Stores the whole value (relaxed; for initialisation only).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn store_u64(&self, value: u64) {
        self.high
            .store(((value >> 32) as u32).to_le(), Ordering::Relaxed);
        self.low.store((value as u32).to_le(), Ordering::Relaxed);
    }
}

#[cfg(not(loom))]
impl Default for AtomicLeU64 {
    fn default() -> Self {
        AtomicLeU64::new()
    }
}

/// A little-endian `i32` header field.
#[repr(C)]
pub struct AtomicLeI32(AtomicU32);

impl core::fmt::Debug for AtomicLeI32 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(&self.load(), f)
    }
}

impl AtomicLeI32 {
    /// Loads the value (relaxed).
    pub fn load(&self) -> i32 {
        u32::from_le(self.0.load(Ordering::Relaxed)) as i32
    }

    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn store(&self, value: i32) {
        self.0.store((value as u32).to_le(), Ordering::Relaxed)
    }
}
