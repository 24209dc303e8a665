//! The event: a fixed 56-byte record, its category and its name.
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

/// What an event is about. The discriminants are NIXL's and travel on the wire as `i32`.
///
/// ```
/// use telering_core::Category;
/// assert_eq!(Category::Transfer as i32, 1);
/// assert_eq!(Category::try_from(4), Ok(Category::Error));
/// assert_eq!(Category::Memory.to_string(), "NIXL_TELEMETRY_MEMORY");
/// assert_eq!(Category::Memory.short_name(), "MEMORY");
/// ```
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// Memory registration and deregistration.
    Memory = 0,
    /// Bytes and requests moved.
    Transfer = 1,
    /// Connections made and lost.
    Connection = 2,
    /// Events a transfer backend reports about itself.
    Backend = 3,
    /// Error counts, one event per status.
    Error = 4,
    /// Latencies and other performance figures.
    Performance = 5,
    /// The telemetry system itself and its host.
    System = 6,
    /// Anything the program defines.
    Custom = 7,
}

impl Category {
    /// All categories in discriminant order.
    pub const ALL: [Category; 8] = [
        Category::Memory,
        Category::Transfer,
        Category::Connection,
        Category::Backend,
        Category::Error,
        Category::Performance,
        Category::System,
        Category::Custom,
    ];

    /// The name NIXL uses, such as `NIXL_TELEMETRY_TRANSFER`.
    pub const fn nixl_name(self) -> &'static str {
        match self {
            Category::Memory => "NIXL_TELEMETRY_MEMORY",
            Category::Transfer => "NIXL_TELEMETRY_TRANSFER",
            Category::Connection => "NIXL_TELEMETRY_CONNECTION",
            Category::Backend => "NIXL_TELEMETRY_BACKEND",
            Category::Error => "NIXL_TELEMETRY_ERROR",
            Category::Performance => "NIXL_TELEMETRY_PERFORMANCE",
            Category::System => "NIXL_TELEMETRY_SYSTEM",
            Category::Custom => "NIXL_TELEMETRY_CUSTOM",
        }
    }

    /// The name without its `NIXL_TELEMETRY_` prefix, such as `TRANSFER`.
    pub fn short_name(self) -> &'static str {
        &self.nixl_name()["NIXL_TELEMETRY_".len()..]
    }

    /// Parses either form of the name (`TRANSFER` or `NIXL_TELEMETRY_TRANSFER`),
    /// ignoring ASCII case.
    ///
    /// ```
    /// use telering_core::Category;
    /// assert_eq!(Category::from_name("transfer"), Some(Category::Transfer));
    /// assert_eq!(Category::from_name("NIXL_TELEMETRY_ERROR"), Some(Category::Error));
    /// assert_eq!(Category::from_name("bogus"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| {
            c.nixl_name().eq_ignore_ascii_case(name) || c.short_name().eq_ignore_ascii_case(name)
        })
    }
}

impl TryFrom<i32> for Category {
    type Error = UnknownCategory;

    /// Decodes a category read from memory; values outside 0..=7 are an error, never a
    /// transmute.
    #[inline]
    fn try_from(raw: i32) -> Result<Self, UnknownCategory> {
        match raw {
            0 => Ok(Category::Memory),
            1 => Ok(Category::Transfer),
            2 => Ok(Category::Connection),
            3 => Ok(Category::Backend),
            4 => Ok(Category::Error),
            5 => Ok(Category::Performance),
            6 => Ok(Category::System),
            7 => Ok(Category::Custom),
            other => Err(UnknownCategory(other)),
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.nixl_name())
    }
}

/// A category value outside NIXL's 0..=7, read from memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnknownCategory(pub i32);

impl fmt::Display for UnknownCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown event category {} (valid categories are 0 to 7)",
            self.0
        )
    }
}

/// Why a string cannot be an event name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameError {
    /// The name is empty.
    Empty,
    /// The name is longer than [`NAME_MAX_LEN`] bytes.
    TooLong {
        /// The name's length in bytes.
        len: usize,
    },
    /// The name contains a NUL byte, which would end it early on the wire.
    ContainsNul {
        /// Byte offset of the first NUL.
        at: usize,
    },
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NameError::Empty => f.write_str("event name is empty"),
            NameError::TooLong { len } => write!(
                f,
                "event name is {len} bytes long; at most {NAME_MAX_LEN} bytes fit (use EventName::new_truncated to cut it)"
            ),
            NameError::ContainsNul { at } => {
                write!(f, "event name contains a NUL byte at offset {at}")
            }
        }
    }
}

/// A valid event name: 1 to 31 bytes of UTF-8 without NUL, stored NUL-padded in 32
/// bytes exactly as on the wire.
///
/// Three constructors, one per intent:
/// - [`event_name!`](crate::event_name) / [`EventName::from_static`] in a `const`:
///   a literal that is too long is a compile error;
/// - [`EventName::new`]: a runtime string, rejected with a [`NameError`];
/// - [`EventName::new_truncated`]: a runtime string cut at a UTF-8 character boundary.
///
/// ```
/// use telering_core::{event_name, EventName, NameError};
/// const TX: EventName = event_name!("agent_tx_bytes");
/// assert_eq!(TX.as_str(), "agent_tx_bytes");
/// assert_eq!(EventName::new(""), Err(NameError::Empty));
/// let long = "a_name_that_is_much_longer_than_31_bytes";
/// assert_eq!(EventName::new(long), Err(NameError::TooLong { len: 40 }));
/// assert_eq!(EventName::new_truncated(long).unwrap().as_str().len(), 31);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventName {
    bytes: [u8; NAME_FIELD_SIZE],
    len: u8,
}

impl EventName {
    /// Builds a name from a literal. Evaluated in a `const` (use [`event_name!`]), an
    /// invalid literal fails the build; called at run time with an invalid string it
    /// panics, so use [`EventName::new`] for run-time strings.
    ///
    /// [`event_name!`]: crate::event_name
    pub const fn from_static(name: &'static str) -> EventName {
        match EventName::checked(name) {
            Ok(n) => n,
            Err(NameError::Empty) => panic!("event name is empty"),
            Err(NameError::TooLong { .. }) => panic!("event name is longer than 31 bytes"),
            Err(NameError::ContainsNul { .. }) => panic!("event name contains a NUL byte"),
        }
    }

    /// Builds a name from a run-time string, rejecting one that is empty, longer than
    /// 31 bytes or contains a NUL.
    pub const fn new(name: &str) -> Result<EventName, NameError> {
        EventName::checked(name)
    }

    /// Builds a name from a run-time string, cutting it at the last UTF-8 character
    /// boundary that fits in 31 bytes. Still rejects an empty name or one with a NUL.
    ///
    /// ```
    /// use telering_core::EventName;
    /// // 'é' is two bytes; a cut through it would leave invalid UTF-8.
    /// let s = "ééééééééééééééééé"; // 34 bytes
    /// assert_eq!(EventName::new_truncated(s).unwrap().as_str(), "ééééééééééééééé");
    /// ```
    pub fn new_truncated(name: &str) -> Result<EventName, NameError> {
        let mut end = name.len().min(NAME_MAX_LEN);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        EventName::checked(&name[..end])
    }

    const fn checked(name: &str) -> Result<EventName, NameError> {
        let src = name.as_bytes();
        if src.is_empty() {
            return Err(NameError::Empty);
        }
        if src.len() > NAME_MAX_LEN {
            return Err(NameError::TooLong { len: src.len() });
        }
        let mut bytes = [0u8; NAME_FIELD_SIZE];
        let mut i = 0;
        while i < src.len() {
            if src[i] == 0 {
                return Err(NameError::ContainsNul { at: i });
            }
            bytes[i] = src[i];
            i += 1;
        }
        Ok(EventName {
            bytes,
            len: src.len() as u8,
        })
    }

    /// Decodes a 32-byte NUL-padded name field read from memory.
    pub fn from_field(field: &[u8; NAME_FIELD_SIZE]) -> Result<EventName, DecodeError> {
        let len = field
            .iter()
            .position(|&b| b == 0)
            .ok_or(DecodeError::NameNotTerminated)?;
        if len == 0 {
            return Err(DecodeError::NameEmpty);
        }
        let text = core::str::from_utf8(&field[..len]).map_err(|e| DecodeError::NameNotUtf8 {
            valid_up_to: e.valid_up_to(),
        })?;
        // `text` has no NUL (it ends before the first) and fits, so this cannot fail;
        // mapping the error keeps the decoder panic-free regardless.
        EventName::checked(text).map_err(|_| DecodeError::NameNotTerminated)
    }

    /// The name as text.
    #[inline]
    pub fn as_str(&self) -> &str {
        // SAFETY: every constructor either copies the bytes of a `&str` (`checked`) or
        // validates them as UTF-8 (`from_field` goes through `from_utf8`), and the
        // fields are private, so the first `len` bytes are always valid UTF-8.
        unsafe { core::str::from_utf8_unchecked(&self.bytes[..self.len as usize]) }
    }

    /// The name's bytes without padding.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// The 32-byte NUL-padded field as stored on the wire.
    pub const fn field(&self) -> &[u8; NAME_FIELD_SIZE] {
        &self.bytes
    }
}

impl fmt::Debug for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for EventName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Builds an [`EventName`] from a string literal at compile time; a literal that is
/// empty, longer than 31 bytes or contains a NUL fails the build.
///
/// ```
/// use telering_core::event_name;
/// let name = event_name!("agent_rx_bytes");
/// assert_eq!(name.as_str(), "agent_rx_bytes");
/// ```
///
/// ```compile_fail
/// use telering_core::event_name;
/// let name = event_name!("this_name_is_definitely_longer_than_31_bytes");
/// ```
#[macro_export]
macro_rules! event_name {
    ($name:expr) => {
        const { $crate::EventName::from_static($name) }
    };
}

/// Why 56 bytes read from memory are not a valid event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The input is not exactly [`EVENT_SIZE`] bytes long.
    WrongLength {
        /// The input length in bytes.
        len: usize,
    },
    /// The category field holds a value outside 0..=7.
    UnknownCategory(i32),
    /// The name field holds no NUL, so the name has no end.
    NameNotTerminated,
    /// The name field starts with NUL.
    NameEmpty,
    /// The name is not valid UTF-8.
    NameNotUtf8 {
        /// Length of the valid UTF-8 prefix.
        valid_up_to: usize,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::WrongLength { len } => {
                write!(f, "event record is {len} bytes; expected {EVENT_SIZE}")
            }
            DecodeError::UnknownCategory(raw) => write!(
                f,
                "field `category` (offset 8) holds {raw}, not a category 0 to 7"
            ),
            DecodeError::NameNotTerminated => {
                f.write_str("field `name` (offset 12) has no terminating NUL within 32 bytes")
            }
            DecodeError::NameEmpty => f.write_str("field `name` (offset 12) is empty"),
            DecodeError::NameNotUtf8 { valid_up_to } => write!(
                f,
                "field `name` (offset 12) is not UTF-8 after byte {valid_up_to}"
            ),
        }
    }
}

impl From<UnknownCategory> for DecodeError {
    fn from(e: UnknownCategory) -> Self {
        DecodeError::UnknownCategory(e.0)
    }
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
    #[inline]
    pub const fn new(timestamp_us: u64, category: Category, name: EventName, value: u64) -> Event {
        Event {
            timestamp_us,
            category: category as i32,
            name: name.bytes,
            reserved: 0,
            value,
        }
    }

    /// Microseconds since the Unix epoch (or the platform clock's epoch), taken after
    /// the operation completed.
    #[inline]
    pub const fn timestamp_us(&self) -> u64 {
        self.timestamp_us
    }

    /// The value: bytes, a count or microseconds, depending on the event.
    #[inline]
    pub const fn value(&self) -> u64 {
        self.value
    }

    /// Replaces the value, keeping the rest (handy for prebuilt events).
    #[inline]
    pub fn set_value(&mut self, value: u64) {
        self.value = value;
    }

    /// Replaces the timestamp.
    #[inline]
    pub fn set_timestamp_us(&mut self, timestamp_us: u64) {
        self.timestamp_us = timestamp_us;
    }

    /// The category field as stored, without validation.
    #[inline]
    pub const fn raw_category(&self) -> i32 {
        self.category
    }

    /// The category, or an error if the field holds an unknown value.
    #[inline]
    pub fn category(&self) -> Result<Category, UnknownCategory> {
        Category::try_from(self.category)
    }

    /// The name, validated: NUL-terminated, non-empty UTF-8.
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
    pub fn event_name(&self) -> Result<EventName, DecodeError> {
        EventName::from_field(&self.name)
    }

    /// The raw 32-byte name field.
    pub const fn name_field(&self) -> &[u8; NAME_FIELD_SIZE] {
        &self.name
    }

    /// Checks that the category and name are valid, as [`Event::from_wire_bytes`] does.
    pub fn validate(&self) -> Result<(), DecodeError> {
        self.category()?;
        self.name()?;
        Ok(())
    }

    /// The 56-byte little-endian wire record. The reserved stamp field is zero.
    #[inline]
    pub fn to_wire_bytes(&self) -> [u8; EVENT_SIZE] {
        let mut out = [0u8; EVENT_SIZE];
        out[0..8].copy_from_slice(&self.timestamp_us.to_le_bytes());
        out[8..12].copy_from_slice(&self.category.to_le_bytes());
        out[12..44].copy_from_slice(&self.name);
        out[48..56].copy_from_slice(&self.value.to_le_bytes());
        out
    }

    /// The record as seven little-endian `u64` words, as numbers: word `k` holds bytes
    /// `8k..8k+8` of the wire record read as a little-endian integer. The stamp half of
    /// word 5 is zero. The ring stores these with atomic word stores (converting to
    /// little-endian memory order with `to_le`), which avoids building the byte
    /// array on the stack.
    #[inline]
    pub(crate) fn wire_words(&self) -> [u64; 7] {
        let n = &self.name;
        let le8 = |at: usize| {
            u64::from_le_bytes([
                n[at],
                n[at + 1],
                n[at + 2],
                n[at + 3],
                n[at + 4],
                n[at + 5],
                n[at + 6],
                n[at + 7],
            ])
        };
        let name_head = u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as u64;
        let name_tail = u32::from_le_bytes([n[28], n[29], n[30], n[31]]) as u64;
        [
            self.timestamp_us,
            (self.category as u32 as u64) | name_head << 32,
            le8(4),
            le8(12),
            le8(20),
            name_tail,
            self.value,
        ]
    }

    /// The inverse of [`Event::wire_words`] (the stamp half of word 5 is ignored).
    #[inline]
    pub(crate) fn from_wire_words(w: &[u64; 7]) -> Event {
        let mut name = [0u8; NAME_FIELD_SIZE];
        name[0..4].copy_from_slice(&((w[1] >> 32) as u32).to_le_bytes());
        name[4..12].copy_from_slice(&w[2].to_le_bytes());
        name[12..20].copy_from_slice(&w[3].to_le_bytes());
        name[20..28].copy_from_slice(&w[4].to_le_bytes());
        name[28..32].copy_from_slice(&(w[5] as u32).to_le_bytes());
        Event {
            timestamp_us: w[0],
            category: w[1] as u32 as i32,
            name,
            reserved: 0,
            value: w[6],
        }
    }

    /// Rebuilds an event from a wire record without validating category or name; the
    /// stamp field is ignored. Used by the ring, whose accessors validate lazily.
    #[inline]
    pub(crate) fn from_wire_unchecked(bytes: &[u8; EVENT_SIZE]) -> Event {
        let mut name = [0u8; NAME_FIELD_SIZE];
        name.copy_from_slice(&bytes[12..44]);
        Event {
            timestamp_us: u64::from_le_bytes(le8(bytes, 0)),
            category: i32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]),
            name,
            reserved: 0,
            value: u64::from_le_bytes(le8(bytes, 48)),
        }
    }

    /// Decodes and validates a 56-byte wire record read from memory. The reserved
    /// stamp field at offset 44 is ignored, as NIXL readers ignore it.
    ///
    /// ```
    /// use telering_core::{DecodeError, Event};
    /// let mut bytes = [0u8; 56];
    /// bytes[8..12].copy_from_slice(&9i32.to_le_bytes());
    /// assert_eq!(Event::from_wire_bytes(&bytes), Err(DecodeError::UnknownCategory(9)));
    /// assert_eq!(Event::from_wire_bytes(&bytes[..10]), Err(DecodeError::WrongLength { len: 10 }));
    /// ```
    pub fn from_wire_bytes(bytes: &[u8]) -> Result<Event, DecodeError> {
        let record: &[u8; EVENT_SIZE] = bytes
            .try_into()
            .map_err(|_| DecodeError::WrongLength { len: bytes.len() })?;
        let event = Event::from_wire_unchecked(record);
        event.validate()?;
        Ok(event)
    }
}

#[inline]
fn le8(bytes: &[u8; EVENT_SIZE], at: usize) -> [u8; 8] {
    let mut out = [0u8; 8];
    out.copy_from_slice(&bytes[at..at + 8]);
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_bytes_sit_at_the_documented_offsets() {
        let e = Event::new(
            0x0102_0304_0506_0708,
            Category::Performance,
            EventName::new("agent_xfer_time").unwrap(),
            0x1112_1314_1516_1718,
        );
        let b = e.to_wire_bytes();
        assert_eq!(b[0..8], [8, 7, 6, 5, 4, 3, 2, 1]);
        assert_eq!(b[8..12], [5, 0, 0, 0]);
        assert_eq!(&b[12..27], b"agent_xfer_time");
        assert!(b[27..44].iter().all(|&x| x == 0));
        assert_eq!(b[44..48], [0, 0, 0, 0]);
        assert_eq!(b[48..56], [0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11]);
    }

    #[test]
    fn every_category_round_trips_and_unknown_values_are_errors() {
        for c in Category::ALL {
            assert_eq!(Category::try_from(c as i32), Ok(c));
            assert_eq!(Category::from_name(c.short_name()), Some(c));
        }
        for raw in [-1, 8, i32::MIN, i32::MAX] {
            assert_eq!(Category::try_from(raw), Err(UnknownCategory(raw)));
        }
    }

    #[test]
    fn names_of_exactly_31_bytes_fit_and_32_do_not() {
        let ok = "a".repeat(31);
        let long = "a".repeat(32);
        assert_eq!(EventName::new(&ok).unwrap().as_str(), ok);
        assert_eq!(EventName::new(&long), Err(NameError::TooLong { len: 32 }));
        assert_eq!(
            EventName::new("a\0b"),
            Err(NameError::ContainsNul { at: 1 })
        );
        assert_eq!(EventName::new_truncated(&long).unwrap().as_str(), ok);
        // A 31-byte name still leaves the NUL at byte 31.
        assert_eq!(EventName::new(&ok).unwrap().field()[31], 0);
    }

    #[test]
    fn truncation_never_splits_a_character() {
        // 10 × 3-byte characters = 30 bytes, then one 4-byte character straddles 31.
        let s = "€€€€€€€€€€😀";
        let n = EventName::new_truncated(s).unwrap();
        assert_eq!(n.as_str(), "€€€€€€€€€€");
    }

    #[test]
    fn decoding_rejects_bad_names_with_typed_errors() {
        let good = Event::new(1, Category::Custom, EventName::new("x").unwrap(), 2);
        let mut b = good.to_wire_bytes();
        b[12..44].fill(b'a');
        assert_eq!(
            Event::from_wire_bytes(&b),
            Err(DecodeError::NameNotTerminated)
        );
        b[12..44].fill(0);
        assert_eq!(Event::from_wire_bytes(&b), Err(DecodeError::NameEmpty));
        b[12] = 0xFF;
        assert_eq!(
            Event::from_wire_bytes(&b),
            Err(DecodeError::NameNotUtf8 { valid_up_to: 0 })
        );
    }

    #[test]
    fn the_stamp_field_is_ignored_when_decoding() {
        let good = Event::new(1, Category::Custom, EventName::new("x").unwrap(), 2);
        let mut b = good.to_wire_bytes();
        b[44..48].copy_from_slice(&0xdead_beefu32.to_le_bytes());
        assert_eq!(Event::from_wire_bytes(&b), Ok(good));
    }
}
