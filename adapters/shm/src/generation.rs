//! The generations of NIXL's ring file, how a reader tells them apart, and how each
//! generation's slot becomes a [`RingRecord`].
//!
//! Every generation shares NIXL's 40-byte header (`write_pos` u64 @0, `read_pos` u64
//! @8, `version` i32 @16, `expected_version` i32 @20, `capacity` u64 @24, `mask` u64
//! @32); the slots start at offset 40 and only their size and layout differ:
//!
//! | [`Generation`] | `version` | NIXL releases | slot | layout |
//! |---|---|---|---|---|
//! | [`V1`](Generation::V1) | 1 | 0.5.1 – 1.0.1 | 56 B | timestamp_us u64 @0, category i32 @8, name \[u8; 32\] @12, 4 bytes @44, value u64 @48 |
//! | [`V2Named`](Generation::V2Named) | 2 | development builds | 48 B | category i32 @0, name \[u8; 32\] @4, 4 bytes @36, value u64 @40 |
//! | [`V2`](Generation::V2) | 2 | 1.1.0, 1.2.0 | 16 B | category i32 @0, type u32 @4, value u64 @8 |
//! | [`V3`](Generation::V3) | 3 | 1.3.0, 1.3.2 | 16 B | type u32 @0, 4 bytes @4, value u64 @8 |
//! | [`V4`](Generation::V4) | 4 | 1.3.1, 1.4.0, current | 16 B | as version 3; adds type 20 |
//!
//! # Detection
//!
//! A reader decides the generation from the header's `version` and the file's size
//! only, never from slot contents ([`Generation::detect`]):
//!
//! - versions 1, 3 and 4: the file holds at least `40 + capacity × slot` bytes. Bytes
//!   after the slots are telering's trailer when they start with its magic (versions
//!   1 and 4, the layouts telering writes).
//! - then one size rule for every generation, checked once the trailer is known: the
//!   file is exactly its ring, plus the trailer if it has one; trailing bytes are
//!   refused.
//! - version 2: the file is exactly `40 + capacity × 48` bytes (the first form) or
//!   exactly `40 + capacity × 16` bytes (the released form). Any other size could be
//!   either, so it is refused.
//! - any other version is refused, naming the version found.
//!
//! A refused file is never changed: no byte is written, nothing is truncated or
//! unlinked (NIXL's own readers unlink a file whose version is not theirs).
//!
//! # Records
//!
//! Generations 2 to 4 store no timestamp, and 3 and 4 no category: their records
//! carry `timestamp_us: None`, a name from NIXL's type table
//! ([`telering_core::builtin::NIXL_TYPE_NAMES`]; an unknown number becomes
//! `unknown_type_N`) and the category NIXL implies from that name
//! ([`telering_core::builtin::implied_category`]; [`Category::Custom`] for an unknown
//! type). Generation 2's 16-byte form keeps the category it stores.

use std::borrow::Cow;
use std::fmt;
use telering_core::builtin::{NIXL_EVENTS_DROPPED_TYPE, implied_category, nixl_type_name};
use telering_core::event::NAME_FIELD_SIZE;
use telering_core::ring::HEADER_SIZE;
use telering_core::{Category, DecodeError, EVENT_SIZE, Event, UnknownCategory};

/// One generation of NIXL's ring file. See the module docs for the layouts.
///
/// ```
/// use telering_shm::Generation;
/// assert_eq!(Generation::V4.slot_size(), 16);
/// assert_eq!(Generation::V2Named.version(), 2);
/// assert!(Generation::V1.has_timestamps() && !Generation::V3.has_timestamps());
/// assert_eq!(Generation::V4.ring_bytes(1024), 40 + 1024 * 16);
/// assert_eq!(Generation::V2.to_string(), "version 2 (16-byte slots, NIXL 1.1.0 and 1.2.0)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Generation {
    /// Version 1: 56-byte slots with timestamp, category and name (NIXL 0.5.1 – 1.0.1;
    /// telering's default layout).
    V1,
    /// Version 2, first form: 48-byte slots with category and name, no timestamp
    /// (NIXL development builds, never released).
    V2Named,
    /// Version 2: 16-byte slots with category and type number (NIXL 1.1.0, 1.2.0).
    V2,
    /// Version 3: 16-byte slots with a type number only (NIXL 1.3.0, 1.3.2).
    V3,
    /// Version 4: as version 3, plus type 20 (NIXL 1.3.1, 1.4.0 and current).
    V4,
}

impl Generation {
    /// Every generation, oldest first.
    pub const ALL: [Generation; 5] = [
        Generation::V1,
        Generation::V2Named,
        Generation::V2,
        Generation::V3,
        Generation::V4,
    ];

    /// The header's `version` field.
    pub const fn version(self) -> i32 {
        match self {
            Generation::V1 => 1,
            Generation::V2Named | Generation::V2 => 2,
            Generation::V3 => 3,
            Generation::V4 => 4,
        }
    }

    /// Bytes per slot.
    pub const fn slot_size(self) -> usize {
        match self {
            Generation::V1 => EVENT_SIZE,
            Generation::V2Named => 48,
            Generation::V2 | Generation::V3 | Generation::V4 => 16,
        }
    }

    /// Whether its slots carry a timestamp (only version 1).
    pub const fn has_timestamps(self) -> bool {
        matches!(self, Generation::V1)
    }

    /// Whether its slots carry a name (versions 1 and 2's first form); the others
    /// carry a type number.
    pub const fn has_names(self) -> bool {
        matches!(self, Generation::V1 | Generation::V2Named)
    }

    /// The NIXL releases that write it.
    pub const fn nixl_releases(self) -> &'static str {
        match self {
            Generation::V1 => "NIXL 0.5.1 to 1.0.1",
            Generation::V2Named => "NIXL development builds",
            Generation::V2 => "NIXL 1.1.0 and 1.2.0",
            Generation::V3 => "NIXL 1.3.0 and 1.3.2",
            Generation::V4 => "NIXL 1.3.1, 1.4.0 and later",
        }
    }

    /// Bytes a ring of `capacity` slots occupies: header plus slots (no trailer);
    /// saturates at `u64::MAX` for a capacity no file can hold.
    pub const fn ring_bytes(self, capacity: u64) -> u64 {
        capacity
            .saturating_mul(self.slot_size() as u64)
            .saturating_add(HEADER_SIZE as u64)
    }

    /// Whether telering writes this layout, and so a telering trailer may follow it.
    pub(crate) const fn may_have_trailer(self) -> bool {
        matches!(self, Generation::V1 | Generation::V4)
    }

    /// Decodes one slot of this generation (`slot.len() == self.slot_size()`) into a
    /// record, without validating it.
    pub fn decode(self, slot: &[u8]) -> RingRecord {
        debug_assert_eq!(slot.len(), self.slot_size());
        let u32_at =
            |at: usize| u32::from_le_bytes([slot[at], slot[at + 1], slot[at + 2], slot[at + 3]]);
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&slot[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let name_at = |at: usize| {
            let mut name = [0u8; NAME_FIELD_SIZE];
            name.copy_from_slice(&slot[at..at + NAME_FIELD_SIZE]);
            name
        };
        match self {
            Generation::V1 => RingRecord {
                slot: None,
                timestamp_us: Some(u64_at(0)),
                category: u32_at(8) as i32,
                name: name_at(12),
                type_number: None,
                value: u64_at(48),
            },
            Generation::V2Named => RingRecord {
                slot: None,
                timestamp_us: None,
                category: u32_at(0) as i32,
                name: name_at(4),
                type_number: None,
                value: u64_at(40),
            },
            Generation::V2 => {
                let type_number = u32_at(4);
                // An unknown type reads as CUSTOM in every generation; a known one
                // keeps the category version 2 stores.
                let category = match self.type_name(type_number) {
                    Some(_) => u32_at(0) as i32,
                    None => Category::Custom as i32,
                };
                RingRecord {
                    slot: None,
                    timestamp_us: None,
                    category,
                    name: type_name_field(self, type_number),
                    type_number: Some(type_number),
                    value: u64_at(8),
                }
            }
            Generation::V3 | Generation::V4 => {
                let type_number = u32_at(0);
                let name = type_name_field(self, type_number);
                let category = self
                    .type_name(type_number)
                    .and_then(implied_category)
                    .unwrap_or(Category::Custom);
                RingRecord {
                    slot: None,
                    timestamp_us: None,
                    category: category as i32,
                    name,
                    type_number: Some(type_number),
                    value: u64_at(8),
                }
            }
        }
    }

    /// The name of a type number in this generation (type 20 exists from version 4).
    pub fn type_name(self, type_number: u32) -> Option<&'static str> {
        match self {
            Generation::V1 | Generation::V2Named => None,
            Generation::V2 | Generation::V3 if type_number >= NIXL_EVENTS_DROPPED_TYPE => None,
            _ => nixl_type_name(type_number),
        }
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let form = match self {
            Generation::V2Named => "48-byte slots, first form, ",
            _ => "",
        };
        if form.is_empty() {
            write!(
                f,
                "version {} ({}-byte slots, {})",
                self.version(),
                self.slot_size(),
                self.nixl_releases()
            )
        } else {
            write!(
                f,
                "version {} ({form}{})",
                self.version(),
                self.nixl_releases()
            )
        }
    }
}

fn type_name_field(generation: Generation, type_number: u32) -> [u8; NAME_FIELD_SIZE] {
    let mut field = [0u8; NAME_FIELD_SIZE];
    let unknown;
    let name = match generation.type_name(type_number) {
        Some(name) => name,
        None => {
            unknown = format!("unknown_type_{type_number}");
            &unknown
        }
    };
    // At most 23 bytes ("unknown_type_4294967295"): always fits with its NUL.
    field[..name.len()].copy_from_slice(name.as_bytes());
    field
}

/// One event as read from a ring file of any generation, before validation: what the
/// slot holds, with what its generation lacks filled in from NIXL's tables (see the
/// module docs).
///
/// [`RingRecord::to_event`] validates it into a telering [`Event`]; the lossy
/// accessors ([`RingRecord::name_lossy`], [`RingRecord::category_text`]) show what is
/// there even when it does not validate (an empty name, a category outside 0 to 7,
/// a name cut inside a UTF-8 character), as NIXL's own reader does.
///
/// ```
/// use telering_shm::{Generation, RingRecord};
/// let mut slot = [0u8; 16];
/// slot[0..4].copy_from_slice(&6u32.to_le_bytes()); // agent_xfer_time
/// slot[8..16].copy_from_slice(&250u64.to_le_bytes());
/// let r = Generation::V4.decode(&slot);
/// assert_eq!((r.timestamp_us, r.type_number, r.value), (None, Some(6), 250));
/// assert_eq!(r.name_lossy(), "agent_xfer_time");
/// assert_eq!(r.category_text(), "PERFORMANCE");
/// assert_eq!(r.to_event().unwrap().timestamp_us(), 0);
///
/// slot[0..4].copy_from_slice(&99u32.to_le_bytes());
/// assert_eq!(Generation::V4.decode(&slot).name_lossy(), "unknown_type_99");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RingRecord {
    /// The slot it was read from, when the reader knows it (a draining reader
    /// always does; an observer does not).
    pub slot: Option<u64>,
    /// The event's timestamp, µs; `None` for generations without timestamps.
    pub timestamp_us: Option<u64>,
    /// The category as stored (versions 1 and 2) or as implied by the name (3, 4).
    pub category: i32,
    /// The 32-byte NUL-padded name field, as stored (version 1, version 2's first
    /// form) or from the type table.
    pub name: [u8; NAME_FIELD_SIZE],
    /// The stored type number (versions 2 to 4).
    pub type_number: Option<u32>,
    /// The value.
    pub value: u64,
}

/// What is wrong with a record that does not validate, one kind per check, so that a
/// reader can warn once per kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordProblem {
    /// The category is outside 0 to 7.
    UnknownCategory,
    /// The name is empty.
    EmptyName,
    /// The name has no NUL within its 32 bytes.
    NameNotTerminated,
    /// The name is not valid UTF-8 (for example cut inside a multi-byte character).
    NameNotUtf8,
    /// The type number is not in NIXL's table for the ring's generation.
    UnknownType,
}

impl RecordProblem {
    /// A short description for warnings.
    pub const fn describe(self) -> &'static str {
        match self {
            RecordProblem::UnknownCategory => "a category outside 0 to 7 (shown as UNKNOWN(n))",
            RecordProblem::EmptyName => "an empty name",
            RecordProblem::NameNotTerminated => "a name without its terminating NUL",
            RecordProblem::NameNotUtf8 => {
                "a name that is not UTF-8 (invalid bytes shown as U+FFFD)"
            }
            RecordProblem::UnknownType => {
                "a type number NIXL does not define (shown as unknown_type_N)"
            }
        }
    }
}

impl RingRecord {
    /// The record of a telering event (as read from a version-1 ring).
    pub fn from_event(event: &Event) -> RingRecord {
        RingRecord {
            slot: None,
            timestamp_us: Some(event.timestamp_us()),
            category: event.raw_category(),
            name: *event.name_field(),
            type_number: None,
            value: event.value(),
        }
    }

    /// The 56-byte version-1 wire record of this record (timestamp 0 when it has
    /// none).
    pub fn to_wire_bytes(&self) -> [u8; EVENT_SIZE] {
        let mut b = [0u8; EVENT_SIZE];
        b[0..8].copy_from_slice(&self.timestamp_us.unwrap_or(0).to_le_bytes());
        b[8..12].copy_from_slice(&self.category.to_le_bytes());
        b[12..44].copy_from_slice(&self.name);
        b[48..56].copy_from_slice(&self.value.to_le_bytes());
        b
    }

    /// Validates the record into a telering [`Event`] with telering-core's strict
    /// decoder. A record without a timestamp gets timestamp 0 (check
    /// [`RingRecord::timestamp_us`] to tell).
    pub fn to_event(&self) -> Result<Event, DecodeError> {
        Event::from_wire_bytes(&self.to_wire_bytes())
    }

    /// The category, if it is one of NIXL's eight.
    pub fn category(&self) -> Result<Category, UnknownCategory> {
        Category::try_from(self.category)
    }

    /// The category without its `NIXL_TELEMETRY_` prefix (`TRANSFER`), or
    /// `UNKNOWN(n)` for a value outside 0 to 7.
    pub fn category_text(&self) -> Cow<'static, str> {
        match self.category() {
            Ok(c) => Cow::Borrowed(c.short_name()),
            Err(UnknownCategory(n)) => Cow::Owned(format!("UNKNOWN({n})")),
        }
    }

    /// The name bytes up to the first NUL (all 32 if there is none).
    pub fn name_bytes(&self) -> &[u8] {
        let end = self
            .name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(NAME_FIELD_SIZE);
        &self.name[..end]
    }

    /// The name as text, with U+FFFD in place of bytes that are not UTF-8; empty for
    /// an empty name.
    pub fn name_lossy(&self) -> Cow<'_, str> {
        String::from_utf8_lossy(self.name_bytes())
    }

    /// Every problem that keeps the record from validating, in a fixed order; empty
    /// for a valid record.
    pub fn problems(&self) -> Vec<RecordProblem> {
        let mut out = Vec::new();
        if self.category().is_err() {
            out.push(RecordProblem::UnknownCategory);
        }
        if !self.name.contains(&0) {
            out.push(RecordProblem::NameNotTerminated);
        }
        let name = self.name_bytes();
        if name.is_empty() {
            out.push(RecordProblem::EmptyName);
        }
        if std::str::from_utf8(name).is_err() {
            out.push(RecordProblem::NameNotUtf8);
        }
        if self.type_number.is_some() && name.starts_with(b"unknown_type_") {
            out.push(RecordProblem::UnknownType);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_20_is_known_from_version_4_only() {
        let mut slot = [0u8; 16];
        slot[0..4].copy_from_slice(&20u32.to_le_bytes());
        assert_eq!(
            Generation::V4.decode(&slot).name_lossy(),
            "agent_telemetry_events_dropped"
        );
        assert_eq!(Generation::V4.decode(&slot).category_text(), "ERROR");
        assert_eq!(Generation::V3.decode(&slot).name_lossy(), "unknown_type_20");
        assert_eq!(Generation::V3.decode(&slot).category_text(), "CUSTOM");
        assert_eq!(
            Generation::V3.decode(&slot).problems(),
            [RecordProblem::UnknownType]
        );
    }

    #[test]
    fn the_longest_unknown_type_name_fits() {
        let mut slot = [0u8; 16];
        slot[0..4].copy_from_slice(&u32::MAX.to_le_bytes());
        let r = Generation::V4.decode(&slot);
        assert_eq!(r.name_lossy(), "unknown_type_4294967295");
        assert_eq!(r.to_event().unwrap().name(), Ok("unknown_type_4294967295"));
    }

    #[test]
    fn lossy_accessors_show_what_strict_decoding_refuses() {
        let mut r = RingRecord {
            slot: None,
            timestamp_us: Some(1),
            category: 8,
            name: [0; 32],
            type_number: None,
            value: 3,
        };
        assert_eq!(r.category_text(), "UNKNOWN(8)");
        assert_eq!(r.name_lossy(), "");
        assert_eq!(
            r.problems(),
            [RecordProblem::UnknownCategory, RecordProblem::EmptyName]
        );
        assert!(r.to_event().is_err());
        // 30 ASCII bytes, then the first byte of a two-byte character: cut by strncpy.
        r.category = 1;
        r.name[..30].fill(b'a');
        r.name[30] = 0xC3;
        assert_eq!(r.name_lossy(), format!("{}\u{FFFD}", "a".repeat(30)));
        assert_eq!(r.problems(), [RecordProblem::NameNotUtf8]);
        r.name.fill(b'b');
        assert_eq!(r.name_lossy(), "b".repeat(32));
        assert_eq!(r.problems(), [RecordProblem::NameNotTerminated]);
    }
}
