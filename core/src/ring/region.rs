//! The ring over a caller-provided memory region: NIXL's 40-byte version-1 header
//! followed by `capacity` 56-byte slots.
//!
//! | offset | field | type |
//! |---|---|---|
//! | 0 | `write_pos`: masked slot index the writer fills next | `u64` |
//! | 8 | `read_pos`: masked slot index the draining reader reads next | `u64` |
//! | 16 | `version` = 1 | `i32` |
//! | 20 | `expected_version` = 1 | `i32` |
//! | 24 | `capacity` (a power of two) | `u64` |
//! | 32 | `mask` = capacity − 1 | `u64` |
//! | 40 | `capacity` slots of 56 bytes | |
//!
//! All fields are little-endian. The positions are stored as their low 32-bit half
//! only (see [`WireU64`]); everything else is written once by [`RingRegion::init`].
//! This is the layout of a shared-memory file (telering-shm adds a trailer after the
//! last slot) and of a DPU-to-host memory window.

use super::{
    Consumer, MAX_CAPACITY, Observer, ObserverStart, OverflowPolicy, Producer, RingRef, Slot,
    StampError, WireI32, WireU64,
};
use crate::event::EVENT_SIZE;
use core::fmt;

/// Size of the header in bytes.
pub const HEADER_SIZE: usize = 40;
/// The header version this crate writes and reads.
pub const RING_VERSION: i32 = 1;

/// NIXL's version-1 ring header, as it lies in memory.
#[repr(C)]
pub struct RingHeader {
    /// Masked slot index the writer fills next.
    pub write_pos: WireU64,
    /// Masked slot index the draining reader reads next.
    pub read_pos: WireU64,
    /// Layout version (1).
    pub version: WireI32,
    /// The version readers are expected to support (1).
    pub expected_version: WireI32,
    /// Number of slots, a power of two.
    pub capacity: WireU64,
    /// `capacity − 1`.
    pub mask: WireU64,
}

#[cfg(not(loom))]
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(size_of::<RingHeader>() == HEADER_SIZE);
    assert!(align_of::<RingHeader>() <= 8);
    assert!(offset_of!(RingHeader, write_pos) == 0);
    assert!(offset_of!(RingHeader, read_pos) == 8);
    assert!(offset_of!(RingHeader, version) == 16);
    assert!(offset_of!(RingHeader, expected_version) == 20);
    assert!(offset_of!(RingHeader, capacity) == 24);
    assert!(offset_of!(RingHeader, mask) == 32);
    assert!(size_of::<Slot>() == EVENT_SIZE);
};

impl fmt::Debug for RingHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingHeader")
            .field("write_pos", &self.write_pos)
            .field("read_pos", &self.read_pos)
            .field("version", &self.version)
            .field("expected_version", &self.expected_version)
            .field("capacity", &self.capacity)
            .field("mask", &self.mask)
            .finish()
    }
}

/// Why a memory region does not hold (or cannot hold) a valid ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionError {
    /// The region is shorter than the header, or than the header plus the slots its
    /// capacity announces.
    TooShort {
        /// Bytes available.
        len: usize,
        /// Bytes needed.
        needed: u64,
    },
    /// The region does not start on an 8-byte boundary.
    Misaligned,
    /// The `version` field is not 1.
    UnsupportedVersion {
        /// The value found.
        found: i32,
    },
    /// `capacity` is not a power of two between 2 and 2²⁸.
    BadCapacity {
        /// The value found (or requested).
        capacity: u64,
    },
    /// `mask` is not `capacity − 1`.
    BadMask {
        /// The value found.
        mask: u64,
        /// The capacity it should match.
        capacity: u64,
    },
    /// A position is not below `capacity`.
    PositionOutOfRange {
        /// `"write_pos"` or `"read_pos"`.
        field: &'static str,
        /// The value found.
        value: u64,
        /// The capacity.
        capacity: u64,
    },
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegionError::TooShort { len, needed } => {
                write!(
                    f,
                    "ring is truncated: {len} bytes, the header requires {needed}"
                )
            }
            RegionError::Misaligned => f.write_str("ring memory is not 8-byte aligned"),
            RegionError::UnsupportedVersion { found } => write!(
                f,
                "field `version` (offset 16) is {found}; only version {RING_VERSION} is supported"
            ),
            RegionError::BadCapacity { capacity } => write!(
                f,
                "field `capacity` (offset 24) is {capacity}; it must be a power of two from 2 to {MAX_CAPACITY}"
            ),
            RegionError::BadMask { mask, capacity } => write!(
                f,
                "field `mask` (offset 32) is {mask}; with capacity {capacity} it must be {}",
                capacity.wrapping_sub(1)
            ),
            RegionError::PositionOutOfRange {
                field,
                value,
                capacity,
            } => write!(
                f,
                "field `{field}` is {value}, not below the capacity {capacity}"
            ),
        }
    }
}

/// The header's values, read and validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderInfo {
    /// `write_pos`.
    pub write_pos: u64,
    /// `read_pos`.
    pub read_pos: u64,
    /// `version`.
    pub version: i32,
    /// `expected_version`.
    pub expected_version: i32,
    /// `capacity`.
    pub capacity: u64,
    /// `mask`.
    pub mask: u64,
}

impl HeaderInfo {
    /// Bytes a ring of `capacity` slots occupies: header plus slots.
    pub const fn ring_len(capacity: u64) -> u64 {
        HEADER_SIZE as u64 + capacity * EVENT_SIZE as u64
    }

    /// Parses and validates a header from bytes (for example the first 40 bytes of a
    /// file, read before anything is mapped). `region_len` is the size of the whole
    /// region, checked against the capacity.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RegionError};
    /// let mut h = [0u8; 40];
    /// h[16..20].copy_from_slice(&1i32.to_le_bytes());
    /// h[24..32].copy_from_slice(&3u64.to_le_bytes());
    /// assert_eq!(HeaderInfo::parse(&h, 1 << 20), Err(RegionError::BadCapacity { capacity: 3 }));
    /// ```
    pub fn parse(bytes: &[u8], region_len: usize) -> Result<HeaderInfo, RegionError> {
        let header: &[u8; HEADER_SIZE] = bytes
            .get(..HEADER_SIZE)
            .and_then(|h| h.try_into().ok())
            .ok_or(RegionError::TooShort {
            len: bytes.len(),
            needed: HEADER_SIZE as u64,
        })?;
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&header[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let i32_at = |at: usize| {
            i32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
        };
        let info = HeaderInfo {
            write_pos: u64_at(0),
            read_pos: u64_at(8),
            version: i32_at(16),
            expected_version: i32_at(20),
            capacity: u64_at(24),
            mask: u64_at(32),
        };
        info.validate(region_len)?;
        Ok(info)
    }

    /// Checks every field against the rules and the region's length.
    pub fn validate(&self, region_len: usize) -> Result<(), RegionError> {
        if self.version != RING_VERSION {
            return Err(RegionError::UnsupportedVersion {
                found: self.version,
            });
        }
        let capacity = self.capacity;
        if !capacity.is_power_of_two() || capacity < 2 || capacity > MAX_CAPACITY as u64 {
            return Err(RegionError::BadCapacity { capacity });
        }
        if self.mask != capacity - 1 {
            return Err(RegionError::BadMask {
                mask: self.mask,
                capacity,
            });
        }
        let needed = HeaderInfo::ring_len(capacity);
        if (region_len as u64) < needed {
            return Err(RegionError::TooShort {
                len: region_len,
                needed,
            });
        }
        for (field, value) in [("write_pos", self.write_pos), ("read_pos", self.read_pos)] {
            if value >= capacity {
                return Err(RegionError::PositionOutOfRange {
                    field,
                    value,
                    capacity,
                });
            }
        }
        Ok(())
    }
}

/// A ring laid out in memory the caller provides (a shared-memory mapping, a device
/// window). The same [`Producer`], [`Consumer`] and [`Observer`] as [`crate::Ring`].
///
/// ```
/// use telering_core::ring::{RingRegion, HeaderInfo};
/// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy};
///
/// // Stand-in for a shared mapping: 8-byte aligned, large enough for 16 slots.
/// let mut memory = vec![0u64; HeaderInfo::ring_len(16) as usize / 8];
/// let len = memory.len() * 8;
/// // SAFETY: `memory` is aligned, `len` bytes long, outlives the region, and is
/// // touched only through it.
/// let region = unsafe { RingRegion::init(memory.as_mut_ptr().cast(), len, 16) }.unwrap();
/// // SAFETY: this is the region's only producer and only consumer; it is writable.
/// let mut producer = unsafe { region.producer(OverflowPolicy::DropNewest) };
/// let mut consumer = unsafe { region.consumer(OverflowPolicy::DropNewest) };
/// let mut observer = region.observer(ObserverStart::Oldest);
/// producer.push(&Event::new(1, Category::Memory, event_name!("agent_memory_registered"), 64)).unwrap();
/// assert_eq!(consumer.pop().map(|e| e.value()), Some(64));
/// assert_eq!(observer.poll().map(|e| e.value()), Some(64));
/// assert_eq!(region.header().write_pos.load_u64(), 1);
/// ```
#[derive(Clone, Copy)]
pub struct RingRegion<'a> {
    header: &'a RingHeader,
    slots: &'a [Slot],
}

impl fmt::Debug for RingRegion<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingRegion")
            .field("header", self.header)
            .finish()
    }
}

#[cfg(not(loom))]
impl<'a> RingRegion<'a> {
    /// Lays out a new, empty ring of `capacity` slots at `ptr`, zeroing the header and
    /// every slot.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes of `len` bytes for `'a`, and nothing
    /// else may access those bytes while `init` runs. Afterwards, every party (in
    /// this process or another that maps the same memory) must access them only
    /// through atomic operations, such as this crate's.
    pub unsafe fn init(
        ptr: *mut u8,
        len: usize,
        capacity: u32,
    ) -> Result<RingRegion<'a>, RegionError> {
        let capacity64 = capacity as u64;
        if !capacity.is_power_of_two() || !(2..=MAX_CAPACITY).contains(&capacity) {
            return Err(RegionError::BadCapacity {
                capacity: capacity64,
            });
        }
        let needed = HeaderInfo::ring_len(capacity64);
        if (len as u64) < needed {
            return Err(RegionError::TooShort { len, needed });
        }
        if ptr.align_offset(8) != 0 {
            return Err(RegionError::Misaligned);
        }
        // SAFETY: the caller grants exclusive access to `len ≥ needed` bytes at `ptr`.
        unsafe { core::ptr::write_bytes(ptr, 0, needed as usize) };
        // SAFETY: as for `attach_unchecked`; the bytes were just zeroed, which is a valid
        // (all-zero) value for every atomic in the header and slots.
        let region = unsafe { RingRegion::from_raw_parts(ptr, capacity) };
        let h = region.header;
        h.version.store(RING_VERSION);
        h.expected_version.store(RING_VERSION);
        h.capacity.store_u64(capacity64);
        h.mask.store_u64(capacity64 - 1);
        Ok(region)
    }

    /// Attaches to a ring that is already laid out at `ptr`, validating its header
    /// first (see [`HeaderInfo::validate`]).
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for reads of `len` bytes for `'a` — and for writes too if a
    /// [`Producer`] or [`Consumer`] is made from the region — and every party must
    /// access those bytes only through atomic operations while the region is in use.
    pub unsafe fn attach(ptr: *mut u8, len: usize) -> Result<RingRegion<'a>, RegionError> {
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
        info.validate(len)?;
        // SAFETY: validation proved `len ≥ 40 + capacity × 56` and capacity ≤ 2²⁸.
        Ok(unsafe { RingRegion::from_raw_parts(ptr, info.capacity as u32) })
    }

    /// # Safety
    ///
    /// `ptr` is 8-aligned and valid for `40 + capacity × 56` bytes for `'a`, accessed
    /// only atomically by every party.
    unsafe fn from_raw_parts(ptr: *mut u8, capacity: u32) -> RingRegion<'a> {
        // SAFETY: `RingHeader` and `Slot` consist only of atomics (any bit pattern is
        // valid, shared access through `&` is sound); alignment and length are the
        // caller's promise; slots start at offset 40, which keeps 8-byte alignment.
        unsafe {
            RingRegion {
                header: &*ptr.cast::<RingHeader>(),
                slots: core::slice::from_raw_parts(
                    ptr.add(HEADER_SIZE).cast::<Slot>(),
                    capacity as usize,
                ),
            }
        }
    }
}

impl<'a> RingRegion<'a> {
    fn storage(&self) -> RingRef<'a> {
        RingRef {
            write_pos: &self.header.write_pos,
            read_pos: &self.header.read_pos,
            slots: self.slots,
            mask: self.slots.len() as u32 - 1,
        }
    }

    /// The header in memory.
    pub fn header(&self) -> &'a RingHeader {
        self.header
    }

    /// Number of slots.
    pub fn capacity(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The ring's producer, continuing the sequence found in the slot stamps.
    ///
    /// # Safety
    ///
    /// There must be no other producer of this region, in this or any other process,
    /// while this one lives, and the region must be writable.
    pub unsafe fn producer(&self, policy: OverflowPolicy) -> Producer<'a> {
        Producer::new(self.storage(), policy)
    }

    /// The ring's draining consumer, starting at `read_pos`.
    ///
    /// # Safety
    ///
    /// There must be no other consumer of this region, in this or any other process,
    /// while this one lives, and the region must be writable.
    pub unsafe fn consumer(&self, policy: OverflowPolicy) -> Consumer<'a> {
        Consumer::new(self.storage(), policy)
    }

    /// Checks that the slot stamps tell one consistent story (every written slot holds
    /// an event of its own position in the sequence, within a plausible window of the
    /// newest) before a stamp-following reader trusts memory another party wrote.
    /// Costs one load per slot.
    pub fn check_stamps(&self) -> Result<(), StampError> {
        self.storage().check_stamps()
    }

    /// A read-only observer; it only ever loads, so the region may be mapped
    /// read-only.
    pub fn observer(&self, start: ObserverStart) -> Observer<'a> {
        Observer::new(self.storage(), start)
    }
}
