//! The ring over a caller-provided memory region: NIXL's 40-byte header followed by
//! `capacity` slots of the region's [`SlotFormat`] (56-byte events in version 1,
//! 16-byte compact events in version 4).
//!
//! | offset | field | type |
//! |---|---|---|
//! | 0 | `write_pos`: masked slot index the writer fills next | `u64` |
//! | 8 | `read_pos`: masked slot index the draining reader reads next | `u64` |
//! | 16 | `version` (1, or 4 for compact slots) | `i32` |
//! | 20 | `expected_version` = `version` | `i32` |
//! | 24 | `capacity` (a power of two) | `u64` |
//! | 32 | `mask` = capacity − 1 | `u64` |
//! | 40 | `capacity` slots | |
//!
//! All fields are little-endian. The positions are stored as their low 32-bit half
//! only (see [`AtomicLeU64`]); everything else is written once by [`RingRegion::init`].
//! This is the layout of a shared-memory file (telering-shm adds a trailer after the
//! last slot) and of a DPU-to-host memory window.
//!
//! # Ownership
//!
//! A [`RingRegion<M, F>`] holds the owner `M` of the memory (a file mapping, a buffer)
//! next to the pointers into it, so the memory lives exactly as long as the region,
//! and handles hold the region through an owner of their own (`&RingRegion`,
//! `Arc<RingRegion>`). The constructors are the only `unsafe`: their contract is the
//! mapping's (valid, aligned, kept alive by `M`). Every later access is atomic, because
//! other programs may read and write the memory at any time.

mod header;

pub use header::{HEADER_SIZE, HeaderInfo, RING_VERSION, ReadOnlyRegion, RegionError, RingHeader};

#[cfg(not(loom))]
use super::MAX_CAPACITY;
use super::format::{EventFormat, SlotFormat};
use super::storage::sealed::Storage;
use super::{AtomicLeU64, StampError};
use crate::sync::{AtomicBool, Ordering};
use core::fmt;
use core::ptr::NonNull;

/// Where the header and the slots of a region lie: the smallest type holding the raw
/// pointers, so the only `Send`/`Sync` claim of a region is made here.
struct RegionMemory<F: SlotFormat> {
    header: NonNull<RingHeader>,
    slots: NonNull<F::Slot>,
    mask: u32,
}

// SAFETY: the pointers lead to a header and slots made only of atomics, which any
// thread may access through shared references; the memory stays valid as long as the
// region's owner `M` lives (the constructors' contract), and `RingRegion` is `Send` /
// `Sync` only when `M` is.
unsafe impl<F: SlotFormat> Send for RegionMemory<F> {}
// SAFETY: as above: every access through these pointers is an atomic access.
unsafe impl<F: SlotFormat> Sync for RegionMemory<F> {}

/// A ring laid out in memory the caller provides (a shared-memory mapping, a device
/// window), with the owner `M` that keeps the memory alive. The same [`Producer`],
/// [`Consumer`] and [`Observer`] as [`crate::Ring`], made with
/// [`Producer::from_region`], [`Consumer::from_region`], [`split`](super::split) and
/// [`observe`](super::observe).
///
/// [`Producer`]: super::Producer
/// [`Consumer`]: super::Consumer
/// [`Observer`]: super::Observer
/// [`Producer::from_region`]: super::Producer::from_region
/// [`Consumer::from_region`]: super::Consumer::from_region
///
/// ```
/// use telering_core::ring::{self, RingRegion, HeaderInfo};
/// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy};
///
/// // Stand-in for a shared mapping: an 8-byte aligned heap buffer for 16 slots. The
/// // region owns it; moving the `Vec` does not move its heap memory.
/// let mut memory = vec![0u64; HeaderInfo::ring_bytes(16) as usize / 8];
/// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
/// // SAFETY: `memory` is aligned, `len` bytes long, kept alive by the region, and
/// // touched only through it.
/// let region = unsafe { RingRegion::init(memory, ptr, len, 16) }.unwrap();
/// let (mut producer, mut consumer) = ring::split(&region, OverflowPolicy::DropNewest).unwrap();
/// let mut observer = ring::observe(&region, ObserverStart::Oldest).unwrap();
/// producer.push(&Event::new(1, Category::Memory, event_name!("agent_memory_registered"), 64)).unwrap();
/// assert_eq!(consumer.pop().map(|e| e.value()), Some(64));
/// assert_eq!(observer.poll().map(|e| e.value()), Some(64));
/// assert_eq!(region.header().write_pos.load_u64(), 1);
/// ```
pub struct RingRegion<M, F: SlotFormat = EventFormat> {
    memory: RegionMemory<F>,
    writable: bool,
    split: AtomicBool,
    owner: M,
}

impl<M, F: SlotFormat> fmt::Debug for RingRegion<M, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingRegion")
            .field("header", self.header())
            .field("writable", &self.writable)
            .finish()
    }
}

#[cfg(not(loom))]
impl<M> RingRegion<M, EventFormat> {
    /// Lays out a new, empty ring of `capacity` slots at `ptr`, zeroing the header and
    /// every slot, as a version-1 ring of 56-byte event slots.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `len` bytes for as long as `owner`
    /// lives, wherever `owner` moves (a file mapping or a `Vec` qualifies; a `Box`,
    /// whose every move asserts unique access, does not), and nothing else may access
    /// those bytes while `init` runs. Afterwards, every party (in this process or another that maps the
    /// same memory) must access them only through atomic operations, such as this
    /// crate's, or from outside this program.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RegionError, RingRegion};
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(16) as usize / 8];
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::init(memory, ptr, len, 16) }.unwrap();
    /// assert_eq!((region.capacity(), region.header().version.load()), (16, 1));
    /// let mut small = vec![0u64; 8];
    /// let (ptr, len) = (small.as_mut_ptr().cast::<u8>(), small.len() * 8);
    /// // SAFETY: as above.
    /// let refused = unsafe { RingRegion::init(small, ptr, len, 16) };
    /// assert_eq!(refused.err(), Some(RegionError::TooShort { len: 64, needed: 936 }));
    /// ```
    pub unsafe fn init(
        owner: M,
        ptr: *mut u8,
        len: usize,
        capacity: u32,
    ) -> Result<RingRegion<M, EventFormat>, RegionError> {
        // SAFETY: the caller's contract, passed on.
        unsafe { RingRegion::init_as(owner, ptr, len, capacity, RING_VERSION) }
    }

    /// Attaches to a ring that is already laid out at `ptr`, validating its header
    /// first (see [`HeaderInfo::validate`]; a version-1 ring of 56-byte event slots).
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `len` bytes for as long as `owner`
    /// lives, wherever `owner` moves, and every party must access those bytes only
    /// through atomic operations (or from outside this program) while the region is
    /// in use.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Producer};
    /// // A ring laid out by another program (here by hand: version, capacity, mask).
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(16) as usize / 8];
    /// memory[2] = (1u64 | 1 << 32).to_le(); // version 1 at offset 16, expected_version 1 at 20
    /// memory[3] = 16u64.to_le(); // capacity (memory is little-endian)
    /// memory[4] = 15u64.to_le(); // mask
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::attach(memory, ptr, len) }.unwrap();
    /// let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    /// producer.push(&Event::new(1, Category::Custom, event_name!("n"), 5)).unwrap();
    /// assert_eq!(region.header().write_pos.load_u64(), 1);
    /// ```
    pub unsafe fn attach(
        owner: M,
        ptr: *mut u8,
        len: usize,
    ) -> Result<RingRegion<M, EventFormat>, RegionError> {
        // SAFETY: the caller's contract, passed on.
        unsafe { RingRegion::attach_as(owner, ptr, len, RING_VERSION, true) }
    }

    /// Attaches to a ring in memory this program may only read (a read-only mapping):
    /// the region gives observers only.
    ///
    /// # Safety
    ///
    /// As for [`RingRegion::attach`], except that `ptr` need be valid for reads only.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// use telering_core::ring::ReadOnlyRegion;
    /// use telering_core::{Observer, ObserverStart, OverflowPolicy, Producer};
    /// // A ring laid out by another program (here by hand: version, capacity, mask).
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(16) as usize / 8];
    /// memory[2] = (1u64 | 1 << 32).to_le(); // version 1 at offset 16, expected_version 1 at 20
    /// memory[3] = 16u64.to_le(); // capacity (memory is little-endian)
    /// memory[4] = 15u64.to_le(); // mask
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region, read only through it.
    /// let region = unsafe { RingRegion::attach_read_only(memory, ptr.cast_const(), len) }.unwrap();
    /// assert!(!region.is_writable());
    /// assert_eq!(Producer::from_region(&region, OverflowPolicy::DropNewest).err(), Some(ReadOnlyRegion));
    /// let mut observer = Observer::from_region(&region, ObserverStart::Oldest);
    /// assert!(observer.poll().is_none());
    /// ```
    pub unsafe fn attach_read_only(
        owner: M,
        ptr: *const u8,
        len: usize,
    ) -> Result<RingRegion<M, EventFormat>, RegionError> {
        // SAFETY: the caller's contract; a read-only region is never written.
        unsafe { RingRegion::attach_as(owner, ptr.cast_mut(), len, RING_VERSION, false) }
    }
}

#[cfg(not(loom))]
impl<M, F: SlotFormat> RingRegion<M, F> {
    /// Lays out a new, empty ring of `capacity` slots of format `F` at `ptr` with header
    /// `version` (normally [`SlotFormat::HEADER_VERSION`]), zeroing the header and
    /// every slot: `RingRegion::<_, CompactFormat>::init_as(owner, ptr, len, 1024, 4)`.
    ///
    /// # Safety
    ///
    /// As for [`RingRegion::init`].
    ///
    /// ```
    /// use telering_core::ring::{self, CompactEvent, CompactFormat, HeaderInfo, RingRegion, SlotFormat};
    /// use telering_core::OverflowPolicy;
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes_for(64, CompactFormat::SLOT_SIZE) as usize / 8];
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::<_, CompactFormat>::init_as(memory, ptr, len, 64, 4) }.unwrap();
    /// let (mut producer, mut consumer) = ring::split(&region, OverflowPolicy::DropNewest).unwrap();
    /// producer.push(&CompactEvent::new(7, 4096)).unwrap();
    /// assert_eq!(consumer.pop(), Some(CompactEvent::new(7, 4096)));
    /// assert_eq!(region.header().version.load(), 4);
    /// ```
    pub unsafe fn init_as(
        owner: M,
        ptr: *mut u8,
        len: usize,
        capacity: u32,
        version: i32,
    ) -> Result<RingRegion<M, F>, RegionError> {
        let capacity64 = capacity as u64;
        if !capacity.is_power_of_two() || !(2..=MAX_CAPACITY).contains(&capacity) {
            return Err(RegionError::BadCapacity {
                capacity: capacity64,
            });
        }
        let needed = HeaderInfo::ring_bytes_for(capacity64, F::SLOT_SIZE);
        if (len as u64) < needed {
            return Err(RegionError::TooShort { len, needed });
        }
        if ptr.align_offset(8) != 0 {
            return Err(RegionError::Misaligned);
        }
        // SAFETY: the caller grants exclusive access to `len ≥ needed` bytes at `ptr`.
        unsafe { core::ptr::write_bytes(ptr, 0, needed as usize) };
        // SAFETY: `ptr` is 8-aligned and valid for `needed` bytes while `owner` lives
        // (the caller's contract, checked lengths); the bytes were just zeroed, which
        // is a valid (all-zero) value for every atomic in the header and slots.
        let region = unsafe { RingRegion::from_raw_parts(owner, ptr, capacity, true) };
        let h = region.header();
        h.version.store(version);
        h.expected_version.store(version);
        h.capacity.store_u64(capacity64);
        h.mask.store_u64(capacity64 - 1);
        Ok(region)
    }

    /// Attaches to a ring of slots of format `F` whose header carries `version`,
    /// validating the header first (see [`HeaderInfo::validate_for`]); `writable`
    /// says whether producers and consumers may be made (else observers only).
    ///
    /// # Safety
    ///
    /// As for [`RingRegion::attach`]; valid for reads only if not `writable`.
    ///
    /// ```
    /// use telering_core::ring::{CompactFormat, HeaderInfo, RingRegion, SlotFormat};
    /// // A version-4 ring of 16-byte slots, laid out by hand.
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes_for(8, CompactFormat::SLOT_SIZE) as usize / 8];
    /// memory[2] = (4u64 | 4 << 32).to_le(); // version and expected_version 4
    /// memory[3] = 8u64.to_le();
    /// memory[4] = 7u64.to_le();
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::<_, CompactFormat>::attach_as(memory, ptr, len, 4, true) }.unwrap();
    /// assert_eq!((region.capacity(), region.is_writable()), (8, true));
    /// ```
    pub unsafe fn attach_as(
        owner: M,
        ptr: *mut u8,
        len: usize,
        version: i32,
        writable: bool,
    ) -> Result<RingRegion<M, F>, RegionError> {
        if len < HEADER_SIZE {
            return Err(RegionError::TooShort {
                len,
                needed: HEADER_SIZE as u64,
            });
        }
        if ptr.align_offset(8) != 0 {
            return Err(RegionError::Misaligned);
        }
        // SAFETY: `ptr` is 8-aligned and valid for `len ≥ 40` bytes (caller), and the
        // header consists of atomics, for which any bit pattern is valid.
        let header = unsafe { &*ptr.cast::<RingHeader>() };
        let info = HeaderInfo {
            write_pos: header.write_pos.load_u64(),
            read_pos: header.read_pos.load_u64(),
            version: header.version.load(),
            expected_version: header.expected_version.load(),
            capacity: header.capacity.load_u64(),
            mask: header.mask.load_u64(),
        };
        info.validate_for(len, version, F::SLOT_SIZE)?;
        // SAFETY: validation proved `len ≥ 40 + capacity × SLOT_SIZE` and capacity ≤
        // 2²⁸; validity while `owner` lives is the caller's contract.
        Ok(unsafe { RingRegion::from_raw_parts(owner, ptr, info.capacity as u32, writable) })
    }

    /// # Safety
    ///
    /// `ptr` is 8-aligned and valid for `40 + capacity × SLOT_SIZE` bytes (for writes
    /// too if `writable`) while `owner` lives, accessed only atomically by every party.
    unsafe fn from_raw_parts(owner: M, ptr: *mut u8, capacity: u32, writable: bool) -> Self {
        // SAFETY: `ptr` is non-null (valid for reads); slots start at offset 40, which
        // keeps 8-byte alignment, inside the same allocation.
        let (header, slots) = unsafe {
            (
                NonNull::new_unchecked(ptr.cast::<RingHeader>()),
                NonNull::new_unchecked(ptr.add(HEADER_SIZE).cast::<F::Slot>()),
            )
        };
        RingRegion {
            memory: RegionMemory {
                header,
                slots,
                mask: capacity - 1,
            },
            writable,
            split: AtomicBool::new(false),
            owner,
        }
    }
}

impl<M, F: SlotFormat> RingRegion<M, F> {
    /// The header in memory.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(16) as usize / 8];
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::init(memory, ptr, len, 16) }.unwrap();
    /// let header = region.header();
    /// assert_eq!((header.capacity.load_u64(), header.mask.load_u64()), (16, 15));
    /// ```
    pub fn header(&self) -> &RingHeader {
        // SAFETY: the header pointer is valid while `owner` lives, which it does while
        // `self` does (constructors' contract); `RingHeader` is made of atomics.
        unsafe { self.memory.header.as_ref() }
    }

    /// Number of slots.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(32) as usize / 8];
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::init(memory, ptr, len, 32) }.unwrap();
    /// assert_eq!(region.capacity(), 32);
    /// ```
    pub fn capacity(&self) -> u32 {
        self.memory.mask + 1
    }

    /// The owner of the memory.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(16) as usize / 8];
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::init(memory, ptr, len, 16) }.unwrap();
    /// assert_eq!(region.owner().len() * 8, len);
    /// ```
    pub fn owner(&self) -> &M {
        &self.owner
    }

    /// Whether the region was attached writable (producers and consumers allowed).
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(16) as usize / 8];
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::init(memory, ptr, len, 16) }.unwrap();
    /// assert!(region.is_writable());
    /// ```
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// Checks that the slot stamps tell one consistent story (every written slot holds
    /// an event of its own position in the sequence, within a plausible window of the
    /// newest) before a stamp-following reader trusts memory another party wrote.
    /// Costs one load per slot.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// use telering_core::ring::StampError;
    /// // A ring laid out by another program (here by hand: version, capacity, mask).
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(16) as usize / 8];
    /// memory[2] = (1u64 | 1 << 32).to_le(); // version 1 at offset 16, expected_version 1 at 20
    /// memory[3] = 16u64.to_le(); // capacity (memory is little-endian)
    /// memory[4] = 15u64.to_le(); // mask
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // Slot 0 claims to hold event 5, which belongs in slot 5.
    /// // Bytes 80..88; the stamp (offset 40 + 44) is a little-endian `u32`.
    /// let mut word = [0u8; 8];
    /// word[4..].copy_from_slice(&(5u32 << 2 | 0b10).to_le_bytes());
    /// memory[10] = u64::from_ne_bytes(word);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::attach(memory, ptr, len) }.unwrap();
    /// assert_eq!(region.check_stamps(), Err(StampError { slot: 0, stamp: 22 }));
    /// ```
    pub fn check_stamps(&self) -> Result<(), StampError> {
        super::check_stamps(self)
    }

    /// Clears every slot's stamp (0: never written), for a writer taking over a ring
    /// another program wrote. Such a program leaves whatever it likes in the stamp's
    /// bytes, which stamp-following readers would otherwise take for events of the
    /// sequence; once cleared, they start at the first event stamped afterwards. Only
    /// the stamps change (bytes NIXL's readers never look at). Does nothing to a
    /// read-only region. Call it before making the region's producer.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// use telering_core::{event_name, Category, Event, Observer, ObserverStart, OverflowPolicy, Producer};
    /// // A ring another program wrote: 3 events published, stamp bytes left as 0xA7.
    /// let mut memory = vec![0xA7A7_A7A7_A7A7_A7A7u64; HeaderInfo::ring_bytes(8) as usize / 8];
    /// memory[0] = 3u64.to_le(); // write_pos
    /// memory[1] = 0; // read_pos
    /// memory[2] = (1u64 | 1 << 32).to_le(); // version and expected_version 1
    /// memory[3] = 8u64.to_le();
    /// memory[4] = 7u64.to_le();
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::attach(memory, ptr, len) }.unwrap();
    /// region.clear_stamps();
    /// let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    /// producer.push(&Event::new(1, Category::Custom, event_name!("mine"), 5)).unwrap();
    /// // Observers see only the event stamped after the takeover.
    /// let mut observer = Observer::from_region(&region, ObserverStart::Oldest);
    /// assert_eq!(observer.poll().map(|e| e.value()), Some(5));
    /// assert_eq!((observer.poll(), observer.events_missed()), (None, 0));
    /// ```
    pub fn clear_stamps(&self) {
        if !self.writable {
            return;
        }
        for pos in 0..self.capacity() {
            F::stamp(self.slot(pos)).store(0, crate::sync::Ordering::Release);
        }
    }
}

impl<M, F: SlotFormat> Storage for RingRegion<M, F> {
    type Format = F;
    // Foreign memory: other programs may write it at any time.
    const PLAIN_ACCESS: bool = false;

    #[inline(always)]
    fn write_pos(&self) -> &AtomicLeU64 {
        &self.header().write_pos
    }

    #[inline(always)]
    fn read_pos(&self) -> &AtomicLeU64 {
        &self.header().read_pos
    }

    #[inline(always)]
    fn mask(&self) -> u32 {
        self.memory.mask
    }

    #[inline(always)]
    fn slot(&self, pos: u32) -> &F::Slot {
        // SAFETY: `pos & mask < capacity`, and the constructors proved the memory holds
        // `capacity` slots after the header, valid while `owner` (and so `self`) lives;
        // a slot is made of atomics, so a shared reference to it is sound. Branch-free.
        unsafe {
            self.memory
                .slots
                .add((pos & self.memory.mask) as usize)
                .as_ref()
        }
    }

    #[inline(always)]
    fn observed(&self) -> bool {
        true
    }

    fn claim_split(&self) -> bool {
        self.writable && !self.split.swap(true, Ordering::AcqRel)
    }
}
