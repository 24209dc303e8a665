//! The wire conversion: an [`Event`] to and from its 56-byte little-endian record, and
//! the [`DecodeError`] of a record that does not decode.

use core::fmt;

use super::{EVENT_SIZE, Event, NAME_FIELD_SIZE, UnknownCategory};

/// Why 56 bytes read from memory are not a valid event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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

impl Event {
    /// The 56-byte little-endian wire record. The reserved stamp field is zero.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// let bytes = Event::new(7, Category::Error, event_name!("NIXL_ERR_BACKEND"), 2).to_wire_bytes();
    /// assert_eq!(&bytes[0..8], &7u64.to_le_bytes());
    /// assert_eq!(&bytes[8..12], &4i32.to_le_bytes());
    /// assert_eq!(&bytes[12..28], b"NIXL_ERR_BACKEND");
    /// assert_eq!(&bytes[44..48], &[0; 4], "the stamp field is zero");
    /// ```
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

    /// [`Event::from_wire_words`] of words already in native order, whose stamp half
    /// (the upper half of word 5) is zero: on a little-endian target the words are the
    /// event's own bytes, so this is a move of seven words, not a field-by-field build.
    #[cfg(not(loom))]
    #[inline(always)]
    pub(crate) fn from_unstamped_words(w: [u64; 7]) -> Event {
        debug_assert_eq!(w[5] >> 32, 0);
        #[cfg(target_endian = "little")]
        {
            const { assert!(core::mem::size_of::<Event>() == core::mem::size_of::<[u64; 7]>()) };
            // SAFETY: `Event` is `repr(C)` with no padding (its offsets are asserted in
            // `event/mod.rs`), and on a little-endian target its bytes are the wire
            // record's words: timestamp, category and the name's first 4 bytes, the
            // name's next 24 bytes, its last 4 bytes with the reserved `u32` (zero, as
            // every constructor leaves it), the value. Every field is an integer or a
            // byte array, so any bytes are a valid `Event`; category and name are
            // validated by their accessors, as for `from_wire_unchecked`.
            unsafe { core::mem::transmute::<[u64; 7], Event>(w) }
        }
        #[cfg(not(target_endian = "little"))]
        {
            Event::from_wire_words(&w)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Category, EventName};

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
