//! The region's header: NIXL's 40-byte layout, its checks and their errors.

use super::super::{AtomicLeI32, AtomicLeU64, MAX_CAPACITY};
use crate::event::EVENT_SIZE;
use core::fmt;

/// Size of the header in bytes.
pub const HEADER_SIZE: usize = 40;
/// The header version of NIXL's 56-byte event slots ([`EventFormat`](crate::ring::EventFormat)).
pub const RING_VERSION: i32 = 1;

/// NIXL's version-1 ring header, as it lies in memory.
#[repr(C)]
pub struct RingHeader {
    /// Masked slot index the writer fills next.
    pub write_pos: AtomicLeU64,
    /// Masked slot index the draining reader reads next.
    pub read_pos: AtomicLeU64,
    /// Layout version (1).
    pub version: AtomicLeI32,
    /// The version readers are expected to support (1).
    pub expected_version: AtomicLeI32,
    /// Number of slots, a power of two.
    pub capacity: AtomicLeU64,
    /// `capacity − 1`.
    pub mask: AtomicLeU64,
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
    assert!(size_of::<super::super::Slot>() == EVENT_SIZE);
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
#[non_exhaustive]
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
    /// The `version` field is not the one the slot format needs.
    UnsupportedVersion {
        /// The value found.
        found: i32,
        /// The version expected.
        expected: i32,
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
            RegionError::UnsupportedVersion { found, expected } => write!(
                f,
                "field `version` (offset 16) is {found}; only version {expected} is supported here"
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
    /// Bytes a version-1 ring of `capacity` 56-byte slots occupies: header plus slots.
    ///
    /// ```
    /// use telering_core::ring::HeaderInfo;
    /// assert_eq!(HeaderInfo::ring_bytes(1024), 40 + 1024 * 56);
    /// ```
    pub const fn ring_bytes(capacity: u64) -> u64 {
        HeaderInfo::ring_bytes_for(capacity, EVENT_SIZE)
    }

    /// Bytes a ring of `capacity` slots of `slot_size` bytes occupies (`slot_size` is
    /// [`SlotFormat::SLOT_SIZE`](crate::ring::SlotFormat::SLOT_SIZE)).
    ///
    /// ```
    /// use telering_core::ring::{CompactFormat, HeaderInfo, SlotFormat};
    /// assert_eq!(HeaderInfo::ring_bytes_for(64, CompactFormat::SLOT_SIZE), 40 + 64 * 16);
    /// ```
    pub const fn ring_bytes_for(capacity: u64, slot_size: usize) -> u64 {
        HEADER_SIZE as u64 + capacity * slot_size as u64
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
        let info = HeaderInfo::from_bytes(bytes)?;
        info.validate(region_len)?;
        Ok(info)
    }

    /// Reads the header's fields from bytes without validating them (to tell which
    /// layout version a region has before choosing its slot format; then
    /// [`HeaderInfo::validate_for`]). Fails only if there are fewer than 40 bytes.
    ///
    /// ```
    /// use telering_core::ring::HeaderInfo;
    /// let mut h = [0u8; 40];
    /// h[16..20].copy_from_slice(&4i32.to_le_bytes());
    /// assert_eq!(HeaderInfo::from_bytes(&h).unwrap().version, 4);
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<HeaderInfo, RegionError> {
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
        Ok(HeaderInfo {
            write_pos: u64_at(0),
            read_pos: u64_at(8),
            version: i32_at(16),
            expected_version: i32_at(20),
            capacity: u64_at(24),
            mask: u64_at(32),
        })
    }

    /// Checks every field against the rules of a version-1 ring and the region's
    /// length.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RegionError};
    /// let mut h = [0u8; 40];
    /// h[16..20].copy_from_slice(&1i32.to_le_bytes());
    /// h[24..32].copy_from_slice(&16u64.to_le_bytes());
    /// h[32..40].copy_from_slice(&15u64.to_le_bytes());
    /// let info = HeaderInfo::from_bytes(&h).unwrap();
    /// assert_eq!(info.validate(40 + 16 * 56), Ok(()));
    /// assert_eq!(info.validate(900), Err(RegionError::TooShort { len: 900, needed: 936 }));
    /// ```
    pub fn validate(&self, region_len: usize) -> Result<(), RegionError> {
        self.validate_for(region_len, RING_VERSION, EVENT_SIZE)
    }

    /// Checks every field against the rules of a ring of header `version` with slots
    /// of `slot_size` bytes, and the region's length.
    ///
    /// ```
    /// use telering_core::ring::{CompactFormat, HeaderInfo, RegionError, SlotFormat};
    /// let mut h = [0u8; 40];
    /// h[16..20].copy_from_slice(&4i32.to_le_bytes());
    /// h[24..32].copy_from_slice(&64u64.to_le_bytes());
    /// h[32..40].copy_from_slice(&63u64.to_le_bytes());
    /// let info = HeaderInfo::from_bytes(&h).unwrap();
    /// assert_eq!(info.validate_for(40 + 64 * 16, 4, CompactFormat::SLOT_SIZE), Ok(()));
    /// assert_eq!(
    ///     info.validate_for(1 << 20, 1, 56),
    ///     Err(RegionError::UnsupportedVersion { found: 4, expected: 1 })
    /// );
    /// ```
    pub fn validate_for(
        &self,
        region_len: usize,
        version: i32,
        slot_size: usize,
    ) -> Result<(), RegionError> {
        if self.version != version {
            return Err(RegionError::UnsupportedVersion {
                found: self.version,
                expected: version,
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
        let needed = HeaderInfo::ring_bytes_for(capacity, slot_size);
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

/// The region was attached read-only, so it can have observers only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOnlyRegion;

impl fmt::Display for ReadOnlyRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the ring memory was attached read-only; only observers can use it")
    }
}
