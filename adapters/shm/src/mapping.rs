//! The owner of a ring file's memory: the mapping, and where in it the trailer lies.
//!
//! A [`FileMapping`] is what a ring file's [`RingRegion`] holds as its owner, so the
//! mapping lives exactly as long as the region and every handle made from it (they
//! hold the region through an `Arc`): nothing points into the mapping with a
//! lifetime longer than the value that keeps it mapped.
//!
//! The mapping is registered with the `SIGBUS` handler (the `guard` module) for
//! exactly as long as it is mapped: the [`Guard`] is a field declared before the
//! mapping, so it is dropped, and the mapping deregistered, before it is unmapped.

use crate::guard::Guard;
use crate::layout::{TRAILER_SIZE, TRAILER_SIZE_V4, TrailerCells, trailer_offsets};
use memmap2::MmapRaw;
use std::sync::atomic::AtomicU64;
use telering_core::ring::{CompactFormat, RingRegion};

/// A mapped ring file: the mapping and the offset of its trailer, if it has one.
#[derive(Debug)]
pub(crate) struct FileMapping {
    /// Protects `map` from `SIGBUS`; declared before it so it is dropped first.
    guard: Guard,
    map: MmapRaw,
    /// Validated at construction: 8-aligned, and the trailer lies inside the mapping.
    trailer_at: Option<usize>,
}

/// A ring file's region: the ring over the mapping its owner keeps alive.
pub(crate) type FileRegion = RingRegion<FileMapping>;
/// A version-4 ring file's region (16-byte slots).
pub(crate) type CompactRegion = RingRegion<FileMapping, CompactFormat>;

impl FileMapping {
    /// Wraps `map`, with a trailer at `trailer_at` if given, and registers it with
    /// the `SIGBUS` handler (`writable`: whether the mapping may be written, so that
    /// the zero pages mapped over it after a fault are writable too). `None` if the
    /// trailer would not fit in the mapping or would be misaligned for its atomics.
    pub(crate) fn new(
        map: MmapRaw,
        trailer_at: Option<usize>,
        writable: bool,
    ) -> Option<FileMapping> {
        if let Some(at) = trailer_at {
            let fits = at
                .checked_add(TRAILER_SIZE)
                .is_some_and(|end| end <= map.len());
            // The mapping is page-aligned, so the offset decides the alignment.
            if !fits || at % 8 != 0 {
                return None;
            }
        }
        let guard = Guard::register(map.as_mut_ptr(), map.len(), writable);
        Some(FileMapping {
            guard,
            map,
            trailer_at,
        })
    }

    /// The mapping's registration with the `SIGBUS` handler: whether an access
    /// faulted because the file was truncated.
    pub(crate) fn guard(&self) -> &Guard {
        &self.guard
    }

    /// The mapping.
    pub(crate) fn map(&self) -> &MmapRaw {
        &self.map
    }

    /// The trailer's cells, borrowed from this mapping.
    pub(crate) fn trailer(&self) -> Option<&TrailerCells> {
        self.trailer_at.map(|at| {
            // SAFETY: `new` checked that `at + TRAILER_SIZE ≤ len` and that `at` is a
            // multiple of 8 in a page-aligned mapping, so the cells are in bounds and
            // aligned; they are atomics, valid for any bit pattern and shared access
            // from every party; the reference borrows `self`, which keeps the mapping.
            unsafe { &*self.map.as_ptr().add(at).cast::<TrailerCells>() }
        })
    }

    /// The version-4 trailer's `dropped_unrepresentable` counter, if the mapping
    /// holds a version-4 trailer (72 bytes).
    pub(crate) fn unrepresentable(&self) -> Option<&AtomicU64> {
        let at = self.trailer_at?;
        if at + TRAILER_SIZE_V4 > self.map.len() {
            return None;
        }
        // SAFETY: in bounds (checked above), 8-aligned (`at` is, and 64 is), an atomic
        // valid for any bit pattern and shared access; the reference borrows `self`,
        // which keeps the mapping.
        Some(unsafe {
            &*self
                .map
                .as_ptr()
                .add(at + trailer_offsets::DROPPED_UNREPRESENTABLE)
                .cast::<AtomicU64>()
        })
    }

    /// The trailer's values, `dropped_unrepresentable` included.
    pub(crate) fn trailer_info(&self) -> Option<crate::layout::TrailerInfo> {
        let mut info = self.trailer()?.read();
        if let Some(cell) = self.unrepresentable() {
            info.dropped_unrepresentable =
                TrailerCells::load64(cell, std::sync::atomic::Ordering::Relaxed);
        }
        Some(info)
    }
}
