//! Escaping text that telering did not create, before a person reads it.
//!
//! Event names, agent names, file names, label values and error bodies come from other
//! programs. Printed raw, a newline in one forges a line of output, an `ESC` starts a
//! terminal control sequence (set the title, clear the screen), and a right-to-left
//! override reorders what follows. [`Escaped`] is the one escaper every text output of
//! telering uses: the CLI's listings, logs, the NIXL plug-in's messages.
//!
//! The rules, chosen so that the output is one line, unambiguous and reversible:
//! - printable characters, including non-ASCII letters, are written as they are;
//! - `\` is written `\\`, so an escape in the output always means one was made;
//! - `\t`, `\n` and `\r` are written as those two-character escapes;
//! - every other control character (C0, `DEL`, C1) and the Unicode bidirectional
//!   controls (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069) are written
//!   `\u{XXXX}` with their code point in lower-case hex;
//! - a byte that is not part of valid UTF-8 is written `\xNN`.
//!
//! It needs neither `std` nor `alloc`: it is a [`Display`](core::fmt::Display) over
//! borrowed bytes, so it writes straight into any formatter.
//!
//! ```
//! use telering_core::text::Escaped;
//! assert_eq!(format!("{}", Escaped::new("rx_bytes")), "rx_bytes");
//! assert_eq!(format!("{}", Escaped::new("x\nValue: 9")), "x\\nValue: 9");
//! assert_eq!(format!("{}", Escaped::new("\u{1b}]0;pwned\u{7}")), "\\u{1b}]0;pwned\\u{7}");
//! assert_eq!(format!("{}", Escaped::bytes(b"caf\xc3\xa9 \xff")), "café \\xff");
//! ```

use core::fmt::{self, Write as _};

/// Bytes or a string, displayed with every character a terminal or a log would act on
/// escaped. See the [module docs](self) for the rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Escaped<'a> {
    bytes: &'a [u8],
}

impl<'a> Escaped<'a> {
    /// Escapes a string.
    ///
    /// ```
    /// use telering_core::text::Escaped;
    /// assert_eq!(format!("{}", Escaped::new("a\\b")), "a\\\\b");
    /// ```
    pub fn new(text: &'a str) -> Self {
        Escaped {
            bytes: text.as_bytes(),
        }
    }

    /// Escapes bytes that should be UTF-8 but may not be.
    ///
    /// ```
    /// use telering_core::text::Escaped;
    /// assert_eq!(format!("{}", Escaped::bytes(b"\x00ok")), "\\u{0}ok");
    /// ```
    pub fn bytes(bytes: &'a [u8]) -> Self {
        Escaped { bytes }
    }
}

/// Whether a character is written escaped: a control character (C0, `DEL`, C1) or a
/// Unicode bidirectional control. Event names containing one are refused at record
/// time, so this is also the rule of [`EventName`](crate::EventName).
///
/// ```
/// use telering_core::text::is_unsafe_char;
/// assert!(is_unsafe_char('\u{1b}'));
/// assert!(is_unsafe_char('\u{202e}'));
/// assert!(!is_unsafe_char('é'));
/// ```
pub const fn is_unsafe_char(c: char) -> bool {
    // The control characters (Unicode category Cc, what `char::is_control` tests) are
    // exactly C0, DEL and C1; spelled out so that the test is `const` and an event
    // name literal with one fails the build.
    matches!(
        c,
        '\u{0}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{061c}'
            | '\u{200e}'
            | '\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// The position of the first character of `text` that [`is_unsafe_char`], if any.
///
/// ```
/// use telering_core::text::first_unsafe_char;
/// assert_eq!(first_unsafe_char("ab\ncd"), Some((2, '\n')));
/// assert_eq!(first_unsafe_char("abc"), None);
/// ```
pub const fn first_unsafe_char(text: &str) -> Option<(usize, char)> {
    // A hand-written UTF-8 decoder, because `str::chars` cannot run in a `const fn`;
    // `text` is valid UTF-8, so the lead byte gives the length.
    let bytes = text.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let lead = bytes[at] as u32;
        let (code, len) = if lead < 0x80 {
            (lead, 1)
        } else if lead < 0xe0 {
            (((lead & 0x1f) << 6) | cont(bytes, at + 1), 2)
        } else if lead < 0xf0 {
            (
                ((lead & 0x0f) << 12) | (cont(bytes, at + 1) << 6) | cont(bytes, at + 2),
                3,
            )
        } else {
            (
                ((lead & 0x07) << 18)
                    | (cont(bytes, at + 1) << 12)
                    | (cont(bytes, at + 2) << 6)
                    | cont(bytes, at + 3),
                4,
            )
        };
        if let Some(c) = char::from_u32(code) {
            if is_unsafe_char(c) {
                return Some((at, c));
            }
        }
        at += len;
    }
    None
}

/// The six payload bits of the continuation byte `bytes[i]`.
const fn cont(bytes: &[u8], i: usize) -> u32 {
    (bytes[i] & 0x3f) as u32
}

fn write_char(f: &mut fmt::Formatter<'_>, c: char) -> fmt::Result {
    match c {
        '\\' => f.write_str("\\\\"),
        '\t' => f.write_str("\\t"),
        '\n' => f.write_str("\\n"),
        '\r' => f.write_str("\\r"),
        c if is_unsafe_char(c) => write!(f, "\\u{{{:x}}}", c as u32),
        c => f.write_char(c),
    }
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for chunk in self.bytes.utf8_chunks() {
            for c in chunk.valid().chars() {
                write_char(f, c)?;
            }
            for byte in chunk.invalid() {
                write!(f, "\\x{byte:02x}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{format, string::ToString};

    #[test]
    fn every_control_character_is_escaped_and_printable_text_is_kept() {
        for c in (0u32..0x2100).filter_map(char::from_u32) {
            let mut buf = [0u8; 4];
            let shown = format!("{}", Escaped::new(c.encode_utf8(&mut buf)));
            if c == '\\' || is_unsafe_char(c) {
                assert!(shown.starts_with('\\'), "{c:?} shown as {shown:?}");
                assert!(!shown.chars().any(|s| s.is_control()), "{shown:?}");
            } else {
                assert_eq!(shown, c.to_string());
            }
        }
    }

    #[test]
    fn the_const_rules_match_the_standard_library() {
        for c in (0u32..0x11_0000).filter_map(char::from_u32) {
            let bidi =
                matches!(c as u32, 0x061c | 0x200e | 0x200f | 0x202a..=0x202e | 0x2066..=0x2069);
            assert_eq!(is_unsafe_char(c), c.is_control() || bidi, "{c:?}");
            let mut buf = [0u8; 4];
            let text = format!("ab{}", c.encode_utf8(&mut buf));
            let found = text.char_indices().find(|&(_, c)| is_unsafe_char(c));
            assert_eq!(first_unsafe_char(&text), found, "{c:?}");
        }
    }

    #[test]
    fn a_forged_line_stays_on_one_line() {
        let shown = format!("{}", Escaped::new("name\r\nValue: 999999"));
        assert_eq!(shown, "name\\r\\nValue: 999999");
    }

    #[test]
    fn invalid_utf8_is_shown_byte_by_byte() {
        assert_eq!(
            format!("{}", Escaped::bytes(b"a\xe2\x82b\xff")),
            "a\\xe2\\x82b\\xff"
        );
    }

    #[test]
    fn bidirectional_overrides_are_escaped() {
        assert_eq!(
            format!("{}", Escaped::new("a\u{202e}b\u{2066}")),
            "a\\u{202e}b\\u{2066}"
        );
    }
}
