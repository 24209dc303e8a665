//! The unread events of a dead writer's ring that a new writer replaces (another
//! capacity, as a restart with another `NIXL_TELEMETRY_BUFFER_SIZE` asks, or another
//! layout): they are carried into the new ring, so a restart loses nothing a reader
//! had not taken yet.
//!
//! - The unread events are the slots from the header's `read_pos` up to its
//!   `write_pos`. If a telering draining reader still holds the old file's lock it
//!   will read them itself before it takes up the new file: they stay where they are,
//!   and nothing is copied (a copy would be read twice).
//! - They go into the new ring, oldest first, before it is put in place, so a reader
//!   of the new file reads them first. When they do not all fit, the oldest are
//!   dropped first: the new ring then starts with one `agent_telemetry_events_dropped`
//!   report of them, and they are counted in its trailer's `dropped_staging` (loss
//!   cause "replaced").
//! - The new ring's trailer says how many events it starts with
//!   (`unread_at_start`), so an observer that read them in the replaced file skips
//!   them when it takes up the new one.
//! - A slot that does not decode as a telering event (NIXL's writer stores some that
//!   strict decoding refuses), and every event of a generation without timestamps
//!   going into a version-1 ring (it would get a made-up time), is counted the same
//!   way instead of being copied.

use crate::error::ShmError;
use crate::generation::Generation;
use crate::leftover::DeadRing;
use crate::ring_producer::RingProducer;
use std::path::Path;
use telering_core::Event;
use telering_core::builtin::AGENT_TELEMETRY_EVENTS_DROPPED;
use telering_core::ring::{HEADER_SIZE, HeaderInfo};

/// Slots read from the old file at once.
const CHUNK_SLOTS: u64 = 4096;

/// What becomes of a replaced ring's unread events.
#[derive(Debug, Default)]
pub(crate) struct Carried {
    /// Unread events the old ring held.
    pub(crate) unread: u64,
    /// Unread events that are not carried: counted as lost ("replaced").
    pub(crate) lost: u64,
    /// A telering draining reader still reads the old file, so the unread events
    /// were left for it.
    pub(crate) left_for_reader: bool,
    /// What to copy: the old ring's slots from `first` to its unread end, counted from
    /// its `read_pos`, of which the first decodable one is skipped if `skip_first` (it
    /// gives its slot to the report).
    plan: Option<Plan>,
}

#[derive(Debug)]
struct Plan {
    old: Generation,
    new: Generation,
    header: HeaderInfo,
    /// Unread slots, from the old ring's `read_pos`.
    unread: u64,
    first: u64,
    skip_first: bool,
}

/// Reads which unread events of `dead` (at `path`) a new ring of `generation` and
/// `capacity` slots can take. Nothing is kept in memory but the plan: the events are
/// read again, a chunk at a time, by [`Carried::push_into`].
pub(crate) fn unread_events(
    dead: &DeadRing,
    path: &Path,
    generation: Generation,
    capacity: u64,
) -> Result<Carried, ShmError> {
    let old = dead.shape.generation;
    let mut header = [0u8; HEADER_SIZE];
    let got = crate::file::read_at(&dead.file, path, &mut header, 0)?;
    let Ok(h) = HeaderInfo::from_bytes(&header[..got]).and_then(|h| {
        h.validate_for(
            dead.shape.ring_bytes() as usize,
            old.version(),
            old.slot_size(),
        )
        .map(|()| h)
    }) else {
        // Positions that mean nothing: there is nothing to carry.
        return Ok(Carried::default());
    };
    let unread = h.write_pos.wrapping_sub(h.read_pos) & h.mask;
    if unread == 0 {
        return Ok(Carried::default());
    }
    if crate::drain_lock::held_by_other(&dead.file) {
        return Ok(Carried {
            unread,
            left_for_reader: true,
            ..Carried::default()
        });
    }
    // The newest that fit (a ring of `capacity` slots holds `capacity − 1`).
    let room = capacity - 1;
    let take = unread.min(room);
    let mut plan = Plan {
        old,
        new: generation,
        header: h,
        unread,
        first: unread - take,
        skip_first: false,
    };
    // What is not carried is lost: an event counts one, a loss report that is not
    // carried counts the losses it reported (it is no event itself).
    let (mut carried, mut lost, mut first_weight) = (0u64, 0u64, None);
    plan.visit(dead, path, |event, carry| {
        if carry {
            carried += 1;
            first_weight.get_or_insert(event.map_or(1, weight));
        } else {
            lost = lost.saturating_add(event.map_or(1, weight));
        }
    })?;
    if lost > 0 && carried == room {
        // The report takes a slot: the oldest carried event gives it up.
        plan.skip_first = true;
        lost = lost.saturating_add(first_weight.unwrap_or(1));
    }
    Ok(Carried {
        unread,
        lost,
        left_for_reader: false,
        plan: Some(plan),
    })
}

/// What an unread slot that is not carried adds to the losses: one event, or, for an
/// in-band loss report, the losses it reports.
fn weight(event: &Event) -> u64 {
    if event.name_field() == AGENT_TELEMETRY_EVENTS_DROPPED.name.field() {
        event.value()
    } else {
        1
    }
}

impl Plan {
    /// Calls `each` with every unread slot, oldest first: its event (`None` when it
    /// does not decode) and whether it is carried.
    fn visit(
        &self,
        dead: &DeadRing,
        path: &Path,
        mut each: impl FnMut(Option<&Event>, bool),
    ) -> Result<(), ShmError> {
        let slot_size = self.old.slot_size() as u64;
        let capacity = self.header.mask + 1;
        let mut buf = Vec::new();
        let mut skip = self.skip_first;
        let mut i = 0;
        while i < self.unread {
            let index = self.header.read_pos.wrapping_add(i) & self.header.mask;
            // Contiguous slots up to the end of the ring, the chunk, or the range.
            let n = (capacity - index).min(CHUNK_SLOTS).min(self.unread - i);
            buf.resize((n * slot_size) as usize, 0);
            let offset = HEADER_SIZE as u64 + index * slot_size;
            let got = crate::file::read_at(&dead.file, path, &mut buf, offset)? as u64;
            for (k, slot) in buf.chunks_exact(slot_size as usize).enumerate() {
                let in_range = i + k as u64 >= self.first;
                if k as u64 >= got / slot_size {
                    // Past the end of a short file: nothing there to carry.
                    each(None, false);
                    continue;
                }
                let record = self.old.decode(slot);
                let event = record.to_event().ok();
                // A made-up time would be a lie: events without one stay out of a
                // version-1 ring.
                let timed = record.timestamp_us.is_some() || !self.new.has_timestamps();
                let carry = in_range && timed && event.is_some() && !std::mem::take(&mut skip);
                each(event.as_ref(), carry);
            }
            i += n;
        }
        Ok(())
    }
}

impl Carried {
    /// Writes the carried events into `producer`'s ring (not yet visible to anyone),
    /// oldest first, after the report of the lost ones if any were lost. Returns
    /// whether anything was written.
    pub(crate) fn push_into(
        &self,
        dead: &DeadRing,
        path: &Path,
        producer: &mut RingProducer,
    ) -> Result<bool, ShmError> {
        let Some(plan) = &self.plan else {
            return Ok(false);
        };
        let mut chunk: Vec<Event> = Vec::with_capacity(CHUNK_SLOTS as usize);
        let mut reported = self.lost == 0;
        let mut flush = |chunk: &mut Vec<Event>, producer: &mut RingProducer| {
            if !reported {
                let at = chunk
                    .first()
                    .map_or_else(crate::layout::realtime_us, Event::timestamp_us);
                let report = Event::new(
                    at,
                    AGENT_TELEMETRY_EVENTS_DROPPED.category,
                    AGENT_TELEMETRY_EVENTS_DROPPED.name,
                    self.lost,
                );
                producer.push(path, 0, at, &[report]);
                reported = true;
            }
            producer.push(path, 0, 0, chunk);
            chunk.clear();
        };
        plan.visit(dead, path, |event, carry| {
            if let (Some(event), true) = (event, carry) {
                chunk.push(*event);
                if chunk.len() as u64 == CHUNK_SLOTS {
                    flush(&mut chunk, producer);
                }
            }
        })?;
        flush(&mut chunk, producer);
        Ok(true)
    }

    /// The end of the replacement warning: what became of the unread events.
    pub(crate) fn describe(&self) -> String {
        if self.unread == 0 {
            return "it held no unread events".to_string();
        }
        if self.left_for_reader {
            return format!(
                "its {} unread events stay in the replaced file for the draining reader that still reads it",
                self.unread
            );
        }
        if self.lost == 0 {
            return format!(
                "its {} unread events are carried into the new ring",
                self.unread
            );
        }
        format!(
            "of its {} unread events, {} are carried into the new ring and {} are lost (did not fit or could not be carried; counted in the new ring's dropped_staging, cause \"replaced\", and reported in-band)",
            self.unread,
            self.unread - self.lost,
            self.lost
        )
    }
}
