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
//! - A slot that does not decode as a telering event (NIXL's writer stores some that
//!   strict decoding refuses), and every event of a generation without timestamps
//!   going into a version-1 ring (it would get a made-up time), is counted the same
//!   way instead of being copied.

use crate::error::ShmError;
use crate::generation::Generation;
use crate::leftover::DeadRing;
use std::path::Path;
use telering_core::Event;
use telering_core::builtin::AGENT_TELEMETRY_EVENTS_DROPPED;
use telering_core::ring::{HEADER_SIZE, HeaderInfo};

/// What becomes of a replaced ring's unread events.
#[derive(Debug, Default)]
pub(crate) struct Carried {
    /// Unread events the old ring held.
    pub(crate) unread: u64,
    /// What goes into the new ring, oldest first: a drop report first if any were
    /// lost, then the events.
    pub(crate) events: Vec<Event>,
    /// Unread events that are not carried: counted as lost ("replaced").
    pub(crate) lost: u64,
    /// A telering draining reader still reads the old file, so the unread events
    /// were left for it.
    pub(crate) left_for_reader: bool,
}

/// Reads the unread events of `dead` (at `path`) that a new ring of `generation` and
/// `capacity` slots can take.
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
    let slot_size = old.slot_size();
    let mut slot = vec![0u8; slot_size];
    let mut events = Vec::with_capacity(take as usize);
    let mut lost = unread - take;
    for i in (unread - take)..unread {
        let index = h.read_pos.wrapping_add(i) & h.mask;
        let offset = HEADER_SIZE as u64 + index * slot_size as u64;
        if crate::file::read_at(&dead.file, path, &mut slot, offset)? < slot_size {
            lost += 1;
            continue;
        }
        let record = old.decode(&slot);
        let untimed = record.timestamp_us.is_none() && generation.has_timestamps();
        match record.to_event() {
            Ok(event) if !untimed => events.push(event),
            _ => lost += 1,
        }
    }
    if lost > 0 {
        // The report takes a slot: the oldest carried event gives it up.
        if events.len() as u64 == room {
            events.remove(0);
            lost += 1;
        }
        let at = events
            .first()
            .map_or_else(crate::layout::realtime_us, |e| e.timestamp_us());
        let report = Event::new(
            at,
            AGENT_TELEMETRY_EVENTS_DROPPED.category,
            AGENT_TELEMETRY_EVENTS_DROPPED.name,
            lost,
        );
        events.insert(0, report);
    }
    Ok(Carried {
        unread,
        events,
        lost,
        left_for_reader: false,
    })
}

impl Carried {
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
