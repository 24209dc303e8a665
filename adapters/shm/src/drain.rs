//! How a draining reader takes the events of one mapped ring file: telering-core's
//! consumer for the rings it lays out (version 1, and version 4 as telering writes
//! it), NIXL's protocol (`plain`) for the others; and starting over from the header
//! when someone else laid it out again in place (see the `reader` module).

use crate::error::ShmError;
use crate::file::{MappedRing, RingMemory};
use crate::generation::RingRecord;
use crate::mapping::{CompactRegion, FileRegion};
use crate::plain::PlainDrain;
use crate::reader::{SlotRead, compact_record};
use std::sync::Arc;
use telering_core::ring::{ItemOf, RingOwner};
use telering_core::{Consumer, OverflowPolicy};

/// How a draining reader reads its ring.
enum Consume {
    /// A version-1 ring: telering-core's consumer.
    Events(CoreDrain<Arc<FileRegion>>),
    /// A version-4 ring telering wrote: telering-core's consumer of 16-byte slots.
    Compact(CoreDrain<Arc<CompactRegion>>),
    /// Any other generation: NIXL's draining protocol.
    Plain(PlainDrain),
}

/// telering-core's consumer of a ring, and what it takes to name each event's slot.
struct CoreDrain<R: RingOwner> {
    consumer: Consumer<R>,
    policy: OverflowPolicy,
    /// The slot the consumer reads next under `DropNewest`.
    next_slot: u32,
}

impl<R: RingOwner> CoreDrain<R> {
    /// Reads up to `max` events, each as a record (`record`) with its slot.
    fn read(
        &mut self,
        ring: &MappedRing,
        max: usize,
        record: impl Fn(&ItemOf<R>) -> RingRecord,
        each: &mut dyn FnMut(SlotRead),
    ) -> usize {
        let mask = ring.capacity() - 1;
        let with_slot = |item: &ItemOf<R>, slot: u32| RingRecord {
            slot: Some(slot as u64),
            ..record(item)
        };
        match self.policy {
            OverflowPolicy::DropNewest => {
                let start = self.next_slot;
                let mut i = 0u32;
                let n = self.consumer.read_batch(max, |e| {
                    let slot = start.wrapping_add(i) & mask;
                    i = i.wrapping_add(1);
                    each(with_slot(e, slot));
                });
                self.next_slot = start.wrapping_add(n as u32) & mask;
                n
            }
            OverflowPolicy::OverwriteOldest => {
                // One at a time, so that the slot of each event is known even when the
                // consumer skips overwritten ones.
                let mut n = 0;
                while n < max {
                    let mut got = None;
                    if self.consumer.read_batch(1, |e| got = Some(*e)) == 0 {
                        break;
                    }
                    let (_, after) = ring.positions();
                    let slot = (after as u32).wrapping_sub(1) & mask;
                    if let Some(e) = got {
                        each(with_slot(&e, slot));
                    }
                    n += 1;
                }
                n
            }
        }
    }
}

/// One mapped file and its consumer (which holds a share of the file's memory).
pub(crate) struct Drain {
    consume: Consume,
    pub(crate) ring: MappedRing,
    /// When this reader last warned that it started over (see
    /// [`Drain::restart_if_moved`]): a NIXL reader draining alongside would move
    /// `read_pos` at every poll, and one warning a minute says it.
    restart_warned: Option<std::time::Instant>,
}

/// At most one warning per this interval about starting over.
const RESTART_WARNING_INTERVAL: std::time::Duration = std::time::Duration::from_secs(60);

impl Drain {
    pub(crate) fn new(ring: MappedRing) -> Result<Drain, ShmError> {
        // Positions the trailer contradicts would have this reader return slots
        // nobody wrote and advance `read_pos` over them: refused, file untouched.
        ring.check_positions()?;
        let policy = ring.policy();
        if policy == OverflowPolicy::OverwriteOldest {
            // This consumer follows the stamps.
            ring.check_stamps()?;
        }
        let consume = Drain::consume(&ring, policy)?;
        Ok(Drain {
            consume,
            ring,
            restart_warned: None,
        })
    }

    /// A consumer of `ring` starting at the header's `read_pos`.
    fn consume(ring: &MappedRing, policy: OverflowPolicy) -> Result<Consume, ShmError> {
        let read_only = |e: &dyn std::fmt::Display| {
            ShmError::io(
                &ring.path,
                "map for writing",
                std::io::Error::new(std::io::ErrorKind::PermissionDenied, e.to_string()),
            )
        };
        // This reader is the file's one consumer by the documented contract of
        // `DrainingReader`, as with NIXL's readers. No local type can stop another
        // process from breaking that contract, but every access to the shared bytes is
        // atomic, so a second consumer could only make events be read twice or
        // skipped — never a data race or a torn value.
        let next_slot = ring.positions().1 as u32 & (ring.capacity() - 1);
        Ok(match &ring.memory {
            RingMemory::Events(region) => Consume::Events(CoreDrain {
                consumer: Consumer::from_region(Arc::clone(region), policy)
                    .map_err(|e| read_only(&e))?,
                policy,
                next_slot,
            }),
            RingMemory::Compact(region) => Consume::Compact(CoreDrain {
                consumer: Consumer::from_region(Arc::clone(region), policy)
                    .map_err(|e| read_only(&e))?,
                policy,
                next_slot,
            }),
            RingMemory::Plain(plain) => Consume::Plain(
                PlainDrain::new(Arc::clone(plain))
                    .ok_or_else(|| read_only(&"the ring was mapped read-only"))?,
            ),
        })
    }

    /// Where telering-core's consumer takes the next event under `DropNewest`, if
    /// this ring is read by it (it keeps its own position, as the ring's one
    /// consumer; NIXL's protocol, for the other layouts, loads `read_pos` each time).
    fn own_position(&self) -> Option<u32> {
        match &self.consume {
            Consume::Events(d) if d.policy == OverflowPolicy::DropNewest => Some(d.next_slot),
            Consume::Compact(d) if d.policy == OverflowPolicy::DropNewest => Some(d.next_slot),
            _ => None,
        }
    }

    /// Starts over from the header's positions if `read_pos` is no longer where this
    /// reader left it: only the ring's one consumer stores it, so someone else laid
    /// the header out again — NIXL's version-1 writer re-creates its ring in place, at
    /// the same size and inode, with both positions 0, when it restarts — or drains
    /// the ring alongside. Going on from its own position would return slots of the
    /// previous run again, or slots never written. Returns whether it started over.
    fn restart_if_moved(&mut self) -> bool {
        let Some(own) = self.own_position() else {
            return false;
        };
        let mask = self.ring.capacity() - 1;
        let (w, r) = self.ring.positions();
        if r as u32 & mask == own {
            return false;
        }
        let Ok(consume) = Drain::consume(&self.ring, OverflowPolicy::DropNewest) else {
            return false;
        };
        self.consume = consume;
        let level = match self.restart_warned {
            Some(at) if at.elapsed() < RESTART_WARNING_INTERVAL => log::Level::Debug,
            _ => {
                self.restart_warned = Some(std::time::Instant::now());
                log::Level::Warn
            }
        };
        log::log!(
            level,
            "{}: `read_pos` changed under this reader (slot {own} → {r}, `write_pos` {w}): the ring was laid out again in place (NIXL's version-1 writer does so when it restarts) or another reader drains it; restarted following from the header's positions",
            self.ring.path.display()
        );
        true
    }

    pub(crate) fn events_lost(&self) -> u64 {
        match &self.consume {
            Consume::Events(drain) => drain.consumer.events_lost(),
            Consume::Compact(drain) => drain.consumer.events_lost(),
            Consume::Plain(_) => 0,
        }
    }

    pub(crate) fn read(&mut self, max: usize, each: &mut dyn FnMut(SlotRead)) -> usize {
        self.restart_if_moved();
        match &mut self.consume {
            Consume::Events(drain) => drain.read(&self.ring, max, RingRecord::from_event, each),
            Consume::Compact(drain) => drain.read(&self.ring, max, compact_record, each),
            Consume::Plain(drain) => drain.read(max, &mut |slot, mut record| {
                record.slot = Some(slot);
                each(record)
            }),
        }
    }
}
