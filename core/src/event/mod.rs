//! The event: a fixed 56-byte record, its category and its name.
//!
//! This module holds the layout and [`Event`] itself; the parts live in their own
//! modules and are re-exported here: [`Category`] (`category`), [`EventName`] and
//! [`event_name!`](crate::event_name) (`name`), and the wire conversion with its
//! [`DecodeError`] (`wire`).
//!
//! # Wire layout
//!
//! Every event crosses memory boundaries (a ring slot, a shared-memory file, a
//! DPU-to-host window) as exactly these 56 bytes, little-endian, the layout NIXL's
//! version-1 readers expect:
//!
//! | offset | field | type |
//! |---|---|---|
//! | 0 | `timestamp_us`, taken after the operation completed | `u64` |
//! | 8 | `category` ([`Category`] as `i32`) | `i32` |
//! | 12 | `name`: UTF-8, NUL-padded, at most 31 bytes so a NUL always ends it | `[u8; 32]` |
//! | 44 | reserved for the ring: the slot stamp ([`crate::ring`]), zero in [`Event::to_wire_bytes`] | `u32` |
//! | 48 | `value` | `u64` |
//!
//! [`Event`] itself is `#[repr(C)]` with that layout (compile-time asserted below), but
//! its integer fields hold *native-endian* values so that arithmetic on them is free.
//! The conversion to the little-endian wire form happens in one place,
//! [`Event::to_wire_bytes`] / [`Event::from_wire_bytes`], which the ring uses for every
//! slot. On little-endian targets that conversion compiles to nothing; on a
//! big-endian target (s390x, some PowerPC DPUs) the integers are byte-swapped on the
//! way in and out, so a big-endian writer and a little-endian reader agree on every
//! byte. The name bytes are never swapped.
//!
//! # Trust
//!
//! Events built through [`Event::new`] always carry a valid category and a valid,
//! NUL-terminated UTF-8 name. Events read out of memory that another party wrote (a
//! ring over a shared region, a file) may not; their accessors therefore validate:
//! [`Event::category`] and [`Event::name`] return typed errors instead of trusting
//! the bytes, and [`Event::from_wire_bytes`] validates every field at once.

use core::fmt;

mod category;
mod name;
mod wire;

pub use category::{Category, UnknownCategory};
pub use name::{EventName, NameError};
pub use wire::DecodeError;

/// Size of one event on the wire and in every ring slot, in bytes.
pub const EVENT_SIZE: usize = 56;
/// Capacity of the name field, including the terminating NUL.
pub const NAME_FIELD_SIZE: usize = 32;
/// Longest name in bytes: one byte of the field is always left for the NUL.
pub const NAME_MAX_LEN: usize = NAME_FIELD_SIZE - 1;

/// Byte offsets of each field in the 56-byte wire layout.
pub mod offsets {
    /// `timestamp_us: u64`.
    pub const TIMESTAMP_US: usize = 0;
    /// `category: i32`.
    pub const CATEGORY: usize = 8;
    /// `name: [u8; 32]`.
    pub const NAME: usize = 12;
    /// The reserved `u32` the ring uses for its slot stamp.
    pub const STAMP: usize = 44;
    /// `value: u64`.
    pub const VALUE: usize = 48;
}

/// One telemetry event, laid out exactly like the 56-byte wire record (see the module
/// docs), with native-endian integers.
///
/// ```
/// use telering_core::{event_name, Category, Event};
/// let e = Event::new(1_700_000_000_000_000, Category::Transfer, event_name!("agent_tx_bytes"), 4096);
/// assert_eq!(e.category(), Ok(Category::Transfer));
/// assert_eq!(e.name(), Ok("agent_tx_bytes"));
/// let bytes = e.to_wire_bytes();
/// assert_eq!(&bytes[48..56], &4096u64.to_le_bytes());
/// assert_eq!(Event::from_wire_bytes(&bytes), Ok(e));
/// ```
// `align(8)`: `u64` is only 4-aligned on some 32-bit targets (i686), but the wire
// record is 8-aligned everywhere.
#[repr(C, align(8))]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Event {
    timestamp_us: u64,
    category: i32,
    name: [u8; NAME_FIELD_SIZE],
    reserved: u32,
    value: u64,
}

const _: () = {
    assert!(core::mem::size_of::<Event>() == EVENT_SIZE);
    assert!(core::mem::align_of::<Event>() == 8);
    assert!(core::mem::offset_of!(Event, timestamp_us) == offsets::TIMESTAMP_US);
    assert!(core::mem::offset_of!(Event, category) == offsets::CATEGORY);
    assert!(core::mem::offset_of!(Event, name) == offsets::NAME);
    assert!(core::mem::offset_of!(Event, reserved) == offsets::STAMP);
    assert!(core::mem::offset_of!(Event, value) == offsets::VALUE);
};

impl Event {
    /// An event with a valid category and name.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// let e = Event::new(5, Category::Memory, event_name!("agent_memory_registered"), 4096);
    /// assert_eq!((e.timestamp_us(), e.value()), (5, 4096));
    /// assert_eq!(e.category(), Ok(Category::Memory));
    /// ```
    #[inline]
    pub const fn new(timestamp_us: u64, category: Category, name: EventName, value: u64) -> Event {
        Event {
            timestamp_us,
            category: category as i32,
            name: *name.field(),
            reserved: 0,
            value,
        }
    }

    /// Microseconds since the Unix epoch (or the platform clock's epoch), taken after
    /// the operation completed.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// let e = Event::new(1_700_000_000_000_000, Category::System, event_name!("boot"), 0);
    /// assert_eq!(e.timestamp_us(), 1_700_000_000_000_000);
    /// ```
    #[inline]
    pub const fn timestamp_us(&self) -> u64 {
        self.timestamp_us
    }

    /// The value: bytes, a count or microseconds, depending on the event.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// assert_eq!(Event::new(0, Category::Transfer, event_name!("agent_rx_bytes"), 512).value(), 512);
    /// ```
    #[inline]
    pub const fn value(&self) -> u64 {
        self.value
    }

    /// Replaces the value, keeping the rest (handy for prebuilt events).
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// let mut e = Event::new(0, Category::Custom, event_name!("depth"), 1);
    /// e.set_value(9);
    /// assert_eq!(e.value(), 9);
    /// ```
    #[inline]
    pub fn set_value(&mut self, value: u64) {
        self.value = value;
    }

    /// Replaces the timestamp.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// let mut e = Event::new(0, Category::Custom, event_name!("depth"), 1);
    /// e.set_timestamp_us(42);
    /// assert_eq!(e.timestamp_us(), 42);
    /// ```
    #[inline]
    pub fn set_timestamp_us(&mut self, timestamp_us: u64) {
        self.timestamp_us = timestamp_us;
    }

    /// The category field as stored, without validation.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// let e = Event::new(0, Category::Performance, event_name!("agent_xfer_time"), 1);
    /// assert_eq!(e.raw_category(), 5);
    /// ```
    #[inline]
    pub const fn raw_category(&self) -> i32 {
        self.category
    }

    /// The category, or an error if the field holds an unknown value.
    ///
    /// ```
    /// use telering_core::{Category, Event, UnknownCategory};
    /// let mut bytes = [0u8; 56];
    /// bytes[12] = b'x';
    /// bytes[8..12].copy_from_slice(&6i32.to_le_bytes());
    /// assert_eq!(Event::from_wire_bytes(&bytes).unwrap().category(), Ok(Category::System));
    /// // Events of a foreign writer may hold any value; accessors never trust it.
    /// assert_eq!(Category::try_from(11), Err(UnknownCategory(11)));
    /// ```
    #[inline]
    pub fn category(&self) -> Result<Category, UnknownCategory> {
        Category::try_from(self.category)
    }

    /// The name, validated: NUL-terminated, non-empty UTF-8.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// let e = Event::new(0, Category::Custom, event_name!("cache_hits"), 1);
    /// assert_eq!(e.name(), Ok("cache_hits"));
    /// ```
    pub fn name(&self) -> Result<&str, DecodeError> {
        let len = self
            .name
            .iter()
            .position(|&b| b == 0)
            .ok_or(DecodeError::NameNotTerminated)?;
        if len == 0 {
            return Err(DecodeError::NameEmpty);
        }
        core::str::from_utf8(&self.name[..len]).map_err(|e| DecodeError::NameNotUtf8 {
            valid_up_to: e.valid_up_to(),
        })
    }

    /// The name as an [`EventName`], validated.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// let e = Event::new(0, Category::Custom, event_name!("cache_hits"), 1);
    /// assert_eq!(e.event_name(), Ok(event_name!("cache_hits")));
    /// ```
    pub fn event_name(&self) -> Result<EventName, DecodeError> {
        EventName::from_field(&self.name)
    }

    /// The raw 32-byte name field.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// let e = Event::new(0, Category::Custom, event_name!("ab"), 1);
    /// assert_eq!(&e.name_field()[..3], b"ab\0");
    /// assert_eq!(e.name_field().len(), 32);
    /// ```
    pub const fn name_field(&self) -> &[u8; NAME_FIELD_SIZE] {
        &self.name
    }

    /// Checks that the category and name are valid, as [`Event::from_wire_bytes`] does.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// assert_eq!(Event::new(0, Category::Custom, event_name!("ok"), 1).validate(), Ok(()));
    /// ```
    pub fn validate(&self) -> Result<(), DecodeError> {
        self.category()?;
        self.name()?;
        Ok(())
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Event");
        d.field("timestamp_us", &self.timestamp_us);
        match self.category() {
            Ok(c) => d.field("category", &c),
            Err(e) => d.field("category", &e),
        };
        match self.name() {
            Ok(n) => d.field("name", &n),
            Err(e) => d.field("name", &e),
        };
        d.field("value", &self.value).finish()
    }
}
