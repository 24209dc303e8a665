//! The event as a C program reads it back: from a ring file or a backend's buffer.
//!
//! A ring file may hold events telering's own writer never produces: NIXL's writers of
//! versions 2 to 4 store no timestamp, and NIXL's version-1 writer stores empty names,
//! category 8 (`NIXL_TELEMETRY_MAX`) and names cut inside a UTF-8 character. The
//! readers deliver every such event as it is found, as `telering read` shows it, and
//! say so in `flags`, so that a C program decides what to do with it.

use std::ffi::c_char;
use telering_core::Event;
use telering_shm::{RecordProblem, RingRecord};

/// `telering_event_t.flags`: the event carries a timestamp. Ring files of NIXL's
/// versions 2 to 4 store none; then `timestamp_us` is 0 and this bit is clear.
pub const TELERING_EVENT_HAS_TIMESTAMP: u32 = 1;

/// `telering_event_t.flags`: the event does not validate as a telering event and is
/// delivered as it was found in the file; at least one of
/// `TELERING_EVENT_UNKNOWN_CATEGORY`, `TELERING_EVENT_BAD_NAME` and
/// `TELERING_EVENT_UNKNOWN_TYPE` says why. Never set for events telering wrote.
pub const TELERING_EVENT_LENIENT: u32 = 2;

/// `telering_event_t.flags`: `category` is the stored value and lies outside the
/// eight `telering_category_t` values (NIXL's writer stores 8, its
/// `NIXL_TELEMETRY_MAX`). Comes with `TELERING_EVENT_LENIENT`.
pub const TELERING_EVENT_UNKNOWN_CATEGORY: u32 = 4;

/// `telering_event_t.flags`: `name` holds the stored bytes although they are not a
/// valid name: empty, not UTF-8 (for example cut inside a multi-byte character), or
/// 32 bytes without a NUL (then the first 31 are kept). Comes with
/// `TELERING_EVENT_LENIENT`.
pub const TELERING_EVENT_BAD_NAME: u32 = 8;

/// `telering_event_t.flags`: the stored type number (versions 2 to 4) is not in NIXL's
/// table; `name` is `unknown_type_<n>` and `category` `TELERING_CATEGORY_CUSTOM`.
/// Comes with `TELERING_EVENT_LENIENT`.
pub const TELERING_EVENT_UNKNOWN_TYPE: u32 = 16;

/// One event.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct telering_event_t {
    /// When it was recorded, µs since the Unix epoch (valid when `flags` has
    /// `TELERING_EVENT_HAS_TIMESTAMP`, else 0).
    pub timestamp_us: u64,
    /// Its value.
    pub value: u64,
    /// Its category, a `telering_category_t`; with `TELERING_EVENT_UNKNOWN_CATEGORY`
    /// the value stored in the file, outside that enum.
    pub category: i32,
    /// `TELERING_EVENT_*` bits.
    pub flags: u32,
    /// Its name, NUL-terminated (at most 31 bytes before the NUL). Events of versions
    /// 2 to 4 carry NIXL's name for their type number. With `TELERING_EVENT_BAD_NAME`
    /// the bytes as found, which may be empty or not UTF-8.
    pub name: [c_char; 32],
}

impl telering_event_t {
    /// An all-zero event (name empty).
    pub const ZERO: telering_event_t = telering_event_t {
        timestamp_us: 0,
        value: 0,
        category: 0,
        flags: 0,
        name: [0; 32],
    };

    /// The C form of a validated event.
    pub fn from_event(event: &Event) -> telering_event_t {
        let mut name = event.name_field().map(|b| b as c_char);
        name[31] = 0;
        telering_event_t {
            timestamp_us: event.timestamp_us(),
            value: event.value(),
            category: event.raw_category(),
            flags: TELERING_EVENT_HAS_TIMESTAMP,
            name,
        }
    }

    /// The C form of a record read from a ring file of any generation, validated or
    /// not (the flags say which).
    pub fn from_record(record: &RingRecord) -> telering_event_t {
        let mut flags = 0;
        if record.timestamp_us.is_some() {
            flags |= TELERING_EVENT_HAS_TIMESTAMP;
        }
        for problem in record.problems() {
            flags |= TELERING_EVENT_LENIENT
                | match problem {
                    RecordProblem::UnknownCategory => TELERING_EVENT_UNKNOWN_CATEGORY,
                    RecordProblem::EmptyName
                    | RecordProblem::NameNotTerminated
                    | RecordProblem::NameNotUtf8 => TELERING_EVENT_BAD_NAME,
                    RecordProblem::UnknownType => TELERING_EVENT_UNKNOWN_TYPE,
                };
        }
        let mut name = record.name.map(|b| b as c_char);
        name[31] = 0;
        telering_event_t {
            timestamp_us: record.timestamp_us.unwrap_or(0),
            value: record.value,
            category: record.category,
            flags,
            name,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telering_shm::Generation;

    #[test]
    fn foreign_v1_records_keep_their_bytes_and_name_each_problem() {
        let mut slot = [0u8; 56];
        slot[0..8].copy_from_slice(&7u64.to_le_bytes());
        slot[8..12].copy_from_slice(&8i32.to_le_bytes());
        slot[48..56].copy_from_slice(&3u64.to_le_bytes());
        let e = telering_event_t::from_record(&Generation::V1.decode(&slot));
        assert_eq!(
            e.flags,
            TELERING_EVENT_HAS_TIMESTAMP
                | TELERING_EVENT_LENIENT
                | TELERING_EVENT_UNKNOWN_CATEGORY
                | TELERING_EVENT_BAD_NAME
        );
        assert_eq!(
            (e.timestamp_us, e.category, e.value, e.name[0]),
            (7, 8, 3, 0)
        );

        slot[8..12].copy_from_slice(&1i32.to_le_bytes());
        slot[12..44].fill(b'x');
        let e = telering_event_t::from_record(&Generation::V1.decode(&slot));
        assert_eq!(
            e.flags,
            TELERING_EVENT_HAS_TIMESTAMP | TELERING_EVENT_LENIENT | TELERING_EVENT_BAD_NAME
        );
        assert!(e.name[..31].iter().all(|&b| b == b'x' as c_char) && e.name[31] == 0);
    }

    #[test]
    fn typed_records_have_no_timestamp_and_flag_unknown_types() {
        let mut slot = [0u8; 16];
        slot[8..16].copy_from_slice(&5u64.to_le_bytes());
        let e = telering_event_t::from_record(&Generation::V4.decode(&slot));
        assert_eq!((e.flags, e.timestamp_us, e.value), (0, 0, 5));
        slot[0..4].copy_from_slice(&99u32.to_le_bytes());
        let e = telering_event_t::from_record(&Generation::V4.decode(&slot));
        assert_eq!(
            e.flags,
            TELERING_EVENT_LENIENT | TELERING_EVENT_UNKNOWN_TYPE
        );
    }
}
