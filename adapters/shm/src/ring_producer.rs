//! The writer's producer for either layout it writes: telering-core's one ring
//! algorithm over 56-byte version-1 slots or over 16-byte version-4 slots.
//!
//! Under version 4 each event becomes its NIXL type number and its value
//! ([`crate::v4_type_of`]); the slot stamp sits in the 4 bytes at offset 4, which
//! NIXL's readers never look at, so telering's observers follow a version-4 ring as
//! they follow a version-1 ring. An event version 4 cannot represent is not written:
//! it is counted ([`RingProducer::unrepresentable`], the trailer's
//! `dropped_unrepresentable`) and its name is warned about once in the log.

use crate::error::ShmError;
use crate::mapping::{CompactRegion, FileMapping, FileRegion};
use crate::ring_layout::{RingLayout, v4_type_of};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use telering_core::builtin::AGENT_TELEMETRY_EVENTS_DROPPED;
use telering_core::ring::{CompactEvent, ItemOf, Producer, ReadOnlyRegion, RegionError, RingOwner};
use telering_core::{Event, EventName, OverflowPolicy};

/// Names warned about at most; a program inventing names without end cannot grow
/// the set without bound.
const MAX_WARNED_NAMES: usize = 256;

/// The producer of a ring file in its layout.
#[derive(Debug)]
pub(crate) enum RingProducer {
    /// Version 1.
    Events(Producer<Arc<FileRegion>>),
    /// Version 4.
    Compact(CompactProducer),
}

/// The version-4 producer and its bookkeeping.
#[derive(Debug)]
pub(crate) struct CompactProducer {
    producer: Producer<Arc<CompactRegion>>,
    /// The batch as version-4 items, reused from batch to batch.
    scratch: Vec<CompactEvent>,
    unrepresentable: u64,
    warned: HashSet<EventName>,
}

impl RingProducer {
    /// Lays out a new ring of `capacity` slots in `layout` at the start of `mapping`
    /// and becomes its producer.
    ///
    /// # Safety
    ///
    /// `ptr` is the start of `mapping`, which is writable, page-aligned, `len` bytes
    /// long, and reachable by nobody else yet (a file not yet renamed into place), so
    /// laying the ring out has exclusive access; afterwards every party accesses it
    /// only through atomics (or from another program).
    pub(crate) unsafe fn create(
        layout: RingLayout,
        mapping: FileMapping,
        ptr: *mut u8,
        len: usize,
        capacity: u32,
        policy: OverflowPolicy,
        path: &Path,
    ) -> Result<RingProducer, ShmError> {
        let bad = bad_header(path);
        match layout {
            RingLayout::V1 => {
                // SAFETY: the caller's contract.
                let region =
                    unsafe { FileRegion::init(mapping, ptr, len, capacity) }.map_err(bad)?;
                RingProducer::events(region, policy)
            }
            RingLayout::V4 => {
                let version = layout.generation().version();
                // SAFETY: the caller's contract.
                let region =
                    unsafe { CompactRegion::init_as(mapping, ptr, len, capacity, version) }
                        .map_err(bad)?;
                RingProducer::compact(region, policy)
            }
        }
    }

    /// Attaches to the ring already laid out in `layout` at the start of `mapping` (a
    /// dead writer's ring reused in place) and becomes its producer, continuing from
    /// the header's positions. `foreign`: another program wrote the ring (it has no
    /// telering trailer), so the stamp bytes hold whatever it left there; they are
    /// cleared first (see `RingRegion::clear_stamps`), so that observers show only
    /// the events this producer writes.
    ///
    /// # Safety
    ///
    /// `ptr` is the start of `mapping`, which is writable, page-aligned and `len`
    /// bytes long; the caller holds the file's exclusive lock, so there is no other
    /// producer, and every party accesses the ring only through atomics (or from
    /// another program).
    pub(crate) unsafe fn attach(
        layout: RingLayout,
        mapping: FileMapping,
        ptr: *mut u8,
        len: usize,
        policy: OverflowPolicy,
        path: &Path,
        foreign: bool,
    ) -> Result<RingProducer, ShmError> {
        let bad = bad_header(path);
        match layout {
            RingLayout::V1 => {
                // SAFETY: the caller's contract.
                let region = unsafe { FileRegion::attach(mapping, ptr, len) }.map_err(bad)?;
                if foreign {
                    region.clear_stamps();
                }
                RingProducer::events(region, policy)
            }
            RingLayout::V4 => {
                let version = layout.generation().version();
                // SAFETY: the caller's contract.
                let region = unsafe { CompactRegion::attach_as(mapping, ptr, len, version, true) }
                    .map_err(bad)?;
                if foreign {
                    region.clear_stamps();
                }
                RingProducer::compact(region, policy)
            }
        }
    }

    /// The version-1 producer of `region`.
    fn events(region: FileRegion, policy: OverflowPolicy) -> Result<RingProducer, ShmError> {
        let producer = Producer::from_region(Arc::new(region), policy).map_err(read_only)?;
        Ok(RingProducer::Events(producer))
    }

    /// The version-4 producer of `region`, with empty bookkeeping.
    fn compact(region: CompactRegion, policy: OverflowPolicy) -> Result<RingProducer, ShmError> {
        Ok(RingProducer::Compact(CompactProducer {
            producer: Producer::from_region(Arc::new(region), policy).map_err(read_only)?,
            scratch: Vec::new(),
            unrepresentable: 0,
            warned: HashSet::new(),
        }))
    }

    /// Pushes `events` as one batch, published with one store of `write_pos`, with
    /// an `agent_telemetry_events_dropped` report when `pending` losses (not yet
    /// reported in-band) or this batch's own losses call for one (see
    /// [`push_reporting`]). `timestamp_us` stamps the report.
    pub(crate) fn push(
        &mut self,
        path: &Path,
        pending: u64,
        timestamp_us: u64,
        events: &[Event],
    ) -> Pushed {
        let report_event = |value: u64| {
            Event::new(
                timestamp_us,
                AGENT_TELEMETRY_EVENTS_DROPPED.category,
                AGENT_TELEMETRY_EVENTS_DROPPED.name,
                value,
            )
        };
        match self {
            RingProducer::Events(producer) => {
                push_reporting(producer, pending, events, report_event)
            }
            RingProducer::Compact(c) => {
                c.scratch.clear();
                for e in events {
                    match v4_type_of(e) {
                        Some(type_id) => c.scratch.push(CompactEvent::new(type_id, e.value())),
                        None => c.not_representable(path, e),
                    }
                }
                let dropped_type = v4_type_of(&report_event(0))
                    .expect("the drop report has a version-4 type (20)");
                let pushed = push_reporting(&mut c.producer, pending, &c.scratch, |v| {
                    CompactEvent::new(dropped_type, v)
                });
                Pushed {
                    report: pushed.report.map(|r| report_event(r.value)),
                    written: pushed.written,
                    refused: pushed.refused,
                }
            }
        }
    }

    /// Events the layout cannot hold, not written (always 0 for version 1).
    pub(crate) fn unrepresentable(&self) -> u64 {
        match self {
            RingProducer::Events(_) => 0,
            RingProducer::Compact(c) => c.unrepresentable,
        }
    }

    /// The mapping the ring and the trailer live in.
    pub(crate) fn mapping(&self) -> &FileMapping {
        match self {
            RingProducer::Events(p) => p.owner().owner(),
            RingProducer::Compact(c) => c.producer.owner().owner(),
        }
    }

    /// Events refused because the ring was full.
    pub(crate) fn events_dropped(&self) -> u64 {
        match self {
            RingProducer::Events(p) => p.events_dropped(),
            RingProducer::Compact(c) => c.producer.events_dropped(),
        }
    }

    /// Events published.
    pub(crate) fn events_published(&self) -> u64 {
        match self {
            RingProducer::Events(p) => p.events_published(),
            RingProducer::Compact(c) => c.producer.events_published(),
        }
    }

    /// Events that fit now without dropping.
    pub(crate) fn free_slots(&self) -> u32 {
        match self {
            RingProducer::Events(p) => p.free_slots(),
            RingProducer::Compact(c) => c.producer.free_slots(),
        }
    }

    /// Slots in the ring.
    pub(crate) fn capacity(&self) -> u32 {
        match self {
            RingProducer::Events(p) => p.capacity(),
            RingProducer::Compact(c) => c.producer.capacity(),
        }
    }
}

impl CompactProducer {
    fn not_representable(&mut self, path: &Path, e: &Event) {
        self.unrepresentable = self.unrepresentable.saturating_add(1);
        let Ok(name) = e.event_name() else {
            return;
        };
        if self.warned.len() < MAX_WARNED_NAMES && self.warned.insert(name) {
            let category = e.category().map(|c| c.short_name()).unwrap_or("?");
            log::warn!(
                "{}: events `{name}` ({category}) have no NIXL version-4 type, so the version-4 ring does not hold them; they are counted in the trailer's dropped_unrepresentable (TELERING_RING_LAYOUT=v1 keeps them)",
                path.display()
            );
            if self.warned.len() == MAX_WARNED_NAMES {
                log::warn!(
                    "{}: further names without a version-4 type are counted but not listed",
                    path.display()
                );
            }
        }
    }
}

/// What one [`RingProducer::push`] did.
#[derive(Debug)]
pub(crate) struct Pushed<T = Event> {
    /// The drop report written into the ring, if one was.
    pub(crate) report: Option<T>,
    /// Events of the batch written (version 4: of those it can represent).
    pub(crate) written: usize,
    /// Events of the batch withheld because the ring was full (`DropNewest`), beyond
    /// those the core producer refused and counted itself.
    pub(crate) refused: u64,
}

/// Pushes `items` and a drop report (`report(value)`) into one batch, by the rule
/// of `telering_core::drop_report` — the report goes in as soon as there is room,
/// never at the cost of an event that would otherwise fit — with one addition for a
/// `DropNewest` ring that cannot take the whole batch: the events that fit are
/// written up to the last free slot, which takes the report of every loss so far,
/// this batch's included. So a ring that fills while events are being refused always
/// ends with a report of those losses, even if its writer never finds room again
/// (a ring nobody drains); losses after that are counted in the trailer and reported
/// once room frees up.
fn push_reporting<R: RingOwner>(
    producer: &mut Producer<R>,
    pending: u64,
    items: &[ItemOf<R>],
    report: impl Fn(u64) -> ItemOf<R>,
) -> Pushed<ItemOf<R>> {
    let mut free = producer.free_slots() as usize;
    if items.len() >= free {
        // By the producer's last look the batch does not fit: look again.
        free = producer.free_slots_now() as usize;
    }
    let drop_newest = producer.policy() == OverflowPolicy::DropNewest;
    let mut batch = producer.batch();
    if drop_newest && items.len() > free {
        // Events will be refused anyway: the last free slot takes the report.
        let keep = free.saturating_sub(1);
        // The core counts what it refuses of `items[..keep]` itself (none, unless
        // `free_slots` was out of date); the rest is withheld here.
        let written = batch.push_slice(&items[..keep]);
        let lost_here = (items.len() - written) as u64;
        // A report the ring refused would be counted as a lost event: only try when
        // the slot kept for it is there.
        let report = (free > 0 && written == keep)
            .then(|| report(pending.saturating_add(lost_here)))
            .filter(|event| batch.push(event).is_ok());
        return Pushed {
            report,
            written,
            refused: (items.len() - keep) as u64,
        };
    }
    // Room for the report, and for the events after it.
    let room = if drop_newest {
        items.len() + 1
    } else {
        1 + usize::from(!items.is_empty())
    };
    let report = (pending > 0 && free >= room)
        .then(|| report(pending))
        .filter(|event| batch.push(event).is_ok());
    // One fence for the whole slice (see the core ring's docs).
    let written = batch.push_slice(items);
    Pushed {
        report,
        written,
        refused: 0,
    }
}

/// The error for a header of the ring file `path` that the core refused.
fn bad_header(path: &Path) -> impl Fn(RegionError) -> ShmError + '_ {
    move |source| ShmError::BadHeader {
        path: path.to_path_buf(),
        source,
    }
}

/// The error for a mapping the core found read-only (the writer maps its file
/// read-write, so this names the mapping).
fn read_only(e: ReadOnlyRegion) -> ShmError {
    ShmError::InvalidOption {
        field: "mapping",
        reason: e.to_string(),
    }
}
