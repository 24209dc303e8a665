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
use crate::layout::{TRAILER_SIZE, TrailerCells};
use memmap2::MmapRaw;
use telering_core::ring::RingRegion;

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
}
