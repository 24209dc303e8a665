//! Event names: 1 to 31 bytes of UTF-8 without NUL, kept NUL-padded as on the wire.
//!
//! A name recorded through telering also has no control character (a newline, an
//! `ESC`…) and no Unicode bidirectional control: printed, such a name would forge a
//! line of output or drive the terminal. Names read from a ring another program wrote
//! may still hold them, so every output escapes names with [`Escaped`].

use core::fmt;

use super::{DecodeError, NAME_FIELD_SIZE, NAME_MAX_LEN};
use crate::text::{Escaped, first_unsafe_char};

/// Why a string cannot be an event name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// The name contains a control character (a newline, a tab, an `ESC`…) or a
    /// Unicode bidirectional control (see [`is_unsafe_char`](crate::text::is_unsafe_char)),
    /// which would forge a line or drive a terminal wherever the name is printed.
    ControlCharacter {
        /// Byte offset of the first such character.
        at: usize,
        /// The character.
        ch: char,
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
            NameError::ControlCharacter { at, ch } => {
                let mut buf = [0u8; 4];
                write!(
                    f,
                    "event name contains the control character {} at offset {at}; names are printed, so they may hold no control or bidirectional-control characters",
                    Escaped::new(ch.encode_utf8(&mut buf))
                )
            }
        }
    }
}

/// A valid event name: 1 to 31 bytes of UTF-8 without NUL, stored NUL-padded in 32
/// bytes exactly as on the wire. Names made here also hold no control character;
/// names decoded from memory ([`EventName::from_field`]) may.
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
    ///
    /// ```
    /// use telering_core::EventName;
    /// const QUEUE_DEPTH: EventName = EventName::from_static("queue_depth");
    /// assert_eq!(QUEUE_DEPTH.as_str(), "queue_depth");
    /// ```
    pub const fn from_static(name: &'static str) -> EventName {
        match EventName::checked(name) {
            Ok(n) => n,
            Err(NameError::Empty) => panic!("event name is empty"),
            Err(NameError::TooLong { .. }) => panic!("event name is longer than 31 bytes"),
            Err(NameError::ContainsNul { .. }) => panic!("event name contains a NUL byte"),
            Err(NameError::ControlCharacter { .. }) => {
                panic!("event name contains a control character")
            }
        }
    }

    /// Builds a name from a run-time string, rejecting one that is empty, longer than
    /// 31 bytes, or contains a NUL or a control character.
    ///
    /// ```
    /// use telering_core::{EventName, NameError};
    /// assert_eq!(EventName::new("ucx_retries").unwrap().as_str(), "ucx_retries");
    /// assert_eq!(EventName::new("a\0b"), Err(NameError::ContainsNul { at: 1 }));
    /// assert_eq!(
    ///     EventName::new("x\nValue: 9"),
    ///     Err(NameError::ControlCharacter { at: 1, ch: '\n' })
    /// );
    /// ```
    pub const fn new(name: &str) -> Result<EventName, NameError> {
        EventName::checked(name)
    }

    /// Builds a name from a run-time string, cutting it at the last UTF-8 character
    /// boundary that fits in 31 bytes. Still rejects an empty name or one with a NUL
    /// or a control character.
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

    /// The rule for names recorded through telering: [`EventName::stored`]'s, and no
    /// control character.
    ///
    /// One pass over the bytes finds a NUL and the ASCII controls (C0 and `DEL`) with
    /// one test per byte; only a name with a non-ASCII byte is decoded for the others
    /// (C1, bidirectional controls). Names are almost always ASCII, and decoding every
    /// name cost four times the whole check. Measured with callgrind on names of 11 to
    /// 24 bytes: 144 instructions per `EventName::new` without the control check, 203
    /// with this one, 571 when every name went through the decoder.
    const fn checked(name: &str) -> Result<EventName, NameError> {
        let src = name.as_bytes();
        if src.is_empty() {
            return Err(NameError::Empty);
        }
        if src.len() > NAME_MAX_LEN {
            return Err(NameError::TooLong { len: src.len() });
        }
        let mut bytes = [0u8; NAME_FIELD_SIZE];
        let mut high_bits = 0u8;
        let mut i = 0;
        while i < src.len() {
            let byte = src[i];
            if byte < 0x20 || byte == 0x7f {
                return Err(match byte {
                    0 => NameError::ContainsNul { at: i },
                    _ => NameError::ControlCharacter {
                        at: i,
                        ch: byte as char,
                    },
                });
            }
            high_bits |= byte;
            bytes[i] = byte;
            i += 1;
        }
        if high_bits >= 0x80 {
            if let Some((at, ch)) = first_unsafe_char(name) {
                return Err(NameError::ControlCharacter { at, ch });
            }
        }
        Ok(EventName {
            bytes,
            len: src.len() as u8,
        })
    }

    /// The rule for names as stored on the wire: 1 to 31 bytes without NUL. A name
    /// read from a ring another program wrote may hold control characters.
    const fn stored(name: &str) -> Result<EventName, NameError> {
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
    ///
    /// ```
    /// use telering_core::{DecodeError, EventName};
    /// let mut field = [0u8; 32];
    /// field[..5].copy_from_slice(b"hello");
    /// assert_eq!(EventName::from_field(&field).unwrap().as_str(), "hello");
    /// assert_eq!(EventName::from_field(&[b'a'; 32]), Err(DecodeError::NameNotTerminated));
    /// ```
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
        // mapping the error keeps the decoder panic-free regardless. Control
        // characters are kept: they are what the writer stored, and outputs escape them.
        EventName::stored(text).map_err(|_| DecodeError::NameNotTerminated)
    }

    /// The name as text.
    ///
    /// ```
    /// use telering_core::event_name;
    /// assert_eq!(event_name!("agent_tx_bytes").as_str(), "agent_tx_bytes");
    /// ```
    #[inline]
    pub fn as_str(&self) -> &str {
        // SAFETY: every constructor either copies the bytes of a `&str` (`checked`) or
        // validates them as UTF-8 (`from_field` goes through `from_utf8`), and the
        // fields are private, so the first `len` bytes are always valid UTF-8.
        unsafe { core::str::from_utf8_unchecked(&self.bytes[..self.len as usize]) }
    }

    /// The name's bytes without padding.
    ///
    /// ```
    /// use telering_core::event_name;
    /// assert_eq!(event_name!("tx").as_bytes(), b"tx");
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// The 32-byte NUL-padded field as stored on the wire.
    ///
    /// ```
    /// use telering_core::event_name;
    /// let field = event_name!("tx").field();
    /// assert_eq!((&field[..2], field[2], field.len()), (&b"tx"[..], 0, 32));
    /// ```
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
/// empty, longer than 31 bytes, or contains a NUL or a control character fails the
/// build.
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
///
/// ```compile_fail
/// use telering_core::event_name;
/// let name = event_name!("forged\nValue: 9");
/// ```
#[macro_export]
macro_rules! event_name {
    ($name:expr) => {
        const { $crate::EventName::from_static($name) }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::ToString;

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
    fn control_characters_are_refused_at_record_time_and_kept_when_read() {
        for (name, at, ch) in [
            ("x\nValue: 9", 1, '\n'),
            ("\u{1b}]0;pwned\u{7}", 0, '\u{1b}'),
            ("tab\there", 3, '\t'),
            ("cr\r", 2, '\r'),
            ("del\u{7f}", 3, '\u{7f}'),
            ("c1\u{85}", 2, '\u{85}'),
            ("é\u{202e}txt", 2, '\u{202e}'),
        ] {
            let refused = Err(NameError::ControlCharacter { at, ch });
            assert_eq!(EventName::new(name), refused, "{name:?}");
            assert_eq!(EventName::new_truncated(name), refused, "{name:?}");
            let mut field = [0u8; NAME_FIELD_SIZE];
            field[..name.len()].copy_from_slice(name.as_bytes());
            assert_eq!(EventName::from_field(&field).unwrap().as_str(), name);
        }
        let message = EventName::new("a\u{1b}]0;x").unwrap_err().to_string();
        assert!(
            message.contains("control character \\u{1b} at offset 1"),
            "{message}"
        );
        assert!(!message.contains('\u{1b}'), "{message}");
        assert!(EventName::new("héllo wörld ✓").is_ok());
    }

    #[test]
    fn the_ascii_fast_path_and_the_decoder_refuse_exactly_the_unsafe_characters() {
        for c in (1u32..0x11_0000).filter_map(char::from_u32) {
            let mut buf = [0u8; 4];
            let mut name = [b'a'; 8];
            let encoded = c.encode_utf8(&mut buf).as_bytes();
            name[2..2 + encoded.len()].copy_from_slice(encoded);
            let text = core::str::from_utf8(&name[..2 + encoded.len()]).unwrap();
            let expected = match crate::text::is_unsafe_char(c) {
                true => Err(NameError::ControlCharacter { at: 2, ch: c }),
                false => Ok(text),
            };
            assert_eq!(
                EventName::new(text).as_ref().map(EventName::as_str),
                expected.as_ref().map(|t| *t),
                "{c:?}"
            );
        }
    }

    #[test]
    fn truncation_never_splits_a_character() {
        // 10 × 3-byte characters = 30 bytes, then one 4-byte character straddles 31.
        let s = "€€€€€€€€€€😀";
        let n = EventName::new_truncated(s).unwrap();
        assert_eq!(n.as_str(), "€€€€€€€€€€");
    }
}
