//! NIXL's draining protocol over a mapped ring of any generation, for the rings whose
//! slots telering-core does not lay out (versions 2 and 3, and version 4 as NIXL
//! writes it).
//!
//! NIXL's writer fills the slot at `write_pos` with plain stores and then publishes it
//! with a release store of `write_pos`; it never writes a slot between `read_pos` and
//! `write_pos`, and it reuses a slot only after the reader's release store of
//! `read_pos` handed it back. The reader therefore:
//!
//! 1. loads `write_pos` with acquire ordering (the slots before it are then visible),
//! 2. copies each slot from `read_pos` up to it out of the mapping,
//! 3. stores the new `read_pos` with release ordering, once per batch.
//!
//! This is the protocol of telering-core's `Consumer` under `DropNewest`, and of
//! NIXL's own readers, applied to slots of 48 or 16 bytes. It checks no stamps: NIXL's
//! writer writes none, and under this protocol none are needed.
//!
//! Positions are accessed as whole 64-bit atomics, as NIXL's writer stores them, and
//! masked with the ring's mask, so a position corrupted after the file was opened
//! cannot send a read outside the slots.

use crate::generation::{Generation, RingRecord};
use crate::mapping::FileMapping;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use telering_core::ring::HEADER_SIZE;

/// The largest slot of any generation, in 64-bit words.
const MAX_SLOT_WORDS: usize = 7;

/// A mapped ring of any generation, accessed as NIXL's parties access it: the
/// mapping it owns, checked at construction to hold the header and every slot.
pub(crate) struct PlainRing {
    mapping: FileMapping,
    generation: Generation,
    mask: u32,
    writable: bool,
}

impl std::fmt::Debug for PlainRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainRing")
            .field("generation", &self.generation)
            .field("capacity", &(self.mask as u64 + 1))
            .finish()
    }
}

impl PlainRing {
    /// The ring of `capacity` slots of `generation` at the start of `mapping`, or
    /// `None` if the mapping is too short for it or `capacity` is not a power of two
    /// of at most 2²⁸. `writable`: the mapping may be written (a draining reader).
    pub(crate) fn new(
        mapping: FileMapping,
        generation: Generation,
        capacity: u32,
        writable: bool,
    ) -> Option<PlainRing> {
        let fits = capacity.is_power_of_two()
            && capacity <= telering_core::ring::MAX_CAPACITY
            && generation.ring_bytes(capacity as u64) <= mapping.map().len() as u64;
        fits.then_some(PlainRing {
            mapping,
            generation,
            mask: capacity - 1,
            writable,
        })
    }

    /// The mapping (for the trailer).
    pub(crate) fn mapping(&self) -> &FileMapping {
        &self.mapping
    }

    /// Slots in the ring.
    pub(crate) fn capacity(&self) -> u32 {
        self.mask + 1
    }

    /// The 64-bit word at byte `offset` of the mapping.
    fn word(&self, offset: usize) -> &AtomicU64 {
        assert!(offset % 8 == 0 && offset + 8 <= self.mapping.map().len());
        // SAFETY: in bounds and 8-aligned (asserted; the mapping is page-aligned);
        // any bit pattern is a valid `AtomicU64`, and shared access through `&` is
        // sound because every party in this process uses atomics (NIXL's writer in
        // another process stores slots before publishing them, which the acquire
        // load of `write_pos` orders before our loads). The reference borrows `self`,
        // which owns the mapping.
        unsafe { &*self.mapping.map().as_ptr().add(offset).cast::<AtomicU64>() }
    }

    fn write_pos(&self) -> &AtomicU64 {
        self.word(0)
    }

    fn read_pos(&self) -> &AtomicU64 {
        self.word(8)
    }

    /// `(write_pos, read_pos)` as stored (relaxed: for inspection only).
    pub(crate) fn positions(&self) -> (u64, u64) {
        (
            u64::from_le(self.write_pos().load(Ordering::Relaxed)),
            u64::from_le(self.read_pos().load(Ordering::Relaxed)),
        )
    }

    /// Copies slot `index` out of the mapping and decodes it.
    fn record(&self, index: u32) -> RingRecord {
        let size = self.generation.slot_size();
        let start = HEADER_SIZE + (index & self.mask) as usize * size;
        let mut bytes = [0u8; MAX_SLOT_WORDS * 8];
        for k in 0..size / 8 {
            let word = u64::from_le(self.word(start + k * 8).load(Ordering::Relaxed));
            bytes[k * 8..k * 8 + 8].copy_from_slice(&word.to_le_bytes());
        }
        self.generation.decode(&bytes[..size])
    }
}

/// The one draining consumer of a ring, by NIXL's protocol (see the module docs).
/// Holds a share of the ring, so the mapping lives as long as the drain.
#[derive(Debug)]
pub(crate) struct PlainDrain {
    ring: Arc<PlainRing>,
}

impl PlainDrain {
    /// The ring's draining consumer, or `None` if its mapping is read-only. Being the
    /// ring's only consumer is the caller's contract, as with NIXL's readers; a
    /// second one could only make events be read twice or skipped.
    pub(crate) fn new(ring: Arc<PlainRing>) -> Option<PlainDrain> {
        ring.writable.then_some(PlainDrain { ring })
    }

    /// Reads up to `max` published events, calling `each` with the slot index and the
    /// record of each, then releases their slots with one store of `read_pos`.
    pub(crate) fn read(&mut self, max: usize, each: &mut dyn FnMut(u64, RingRecord)) -> usize {
        let ring = &*self.ring;
        let mask = ring.mask as u64;
        let write = u64::from_le(ring.write_pos().load(Ordering::Acquire)) & mask;
        let mut read = u64::from_le(ring.read_pos().load(Ordering::Relaxed)) & mask;
        let mut n = 0;
        while n < max && read != write {
            each(read, ring.record(read as u32));
            read = (read + 1) & mask;
            n += 1;
        }
        if n > 0 {
            ring.read_pos().store(read.to_le(), Ordering::Release);
        }
        n
    }
}
