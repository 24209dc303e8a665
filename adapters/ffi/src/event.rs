//! The event as a C program reads it back: from a ring file or a backend's buffer.

use std::ffi::c_char;
use telering_core::Event;

/// `telering_event_t.flags`: the event carries a timestamp. Ring files of the oldest
/// generations store none; then `timestamp_us` is 0 and this bit is clear.
pub const TELERING_EVENT_HAS_TIMESTAMP: u32 = 1;

/// One event.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct telering_event_t {
    /// When it was recorded, µs since the Unix epoch (valid when `flags` has
    /// `TELERING_EVENT_HAS_TIMESTAMP`).
    pub timestamp_us: u64,
    /// Its value.
    pub value: u64,
    /// Its category, a `telering_category_t`.
    pub category: i32,
    /// `TELERING_EVENT_*` bits.
    pub flags: u32,
    /// Its name, NUL-terminated (at most 31 bytes before the NUL).
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
}
