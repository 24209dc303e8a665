//! How events are printed: NIXL's text block, or one JSON object per line.
//!
//! The text block is the one NIXL's telemetry readers print, with the timestamp in
//! local time and the category without its `NIXL_TELEMETRY_` prefix:
//!
//! ```text
//! === Telemetry Event ===
//! Timestamp: 2025-01-15 14:30:25.123456
//! Category: TRANSFER
//! Event: agent_tx_bytes
//! Value: 1048576
//! =======================
//! ```
//!
//! followed by an empty line. `--json` prints instead one object per line with the
//! fields `timestamp_us`, `category`, `event` and `value`, for `jq` and scripts.
//!
//! Ring generations without timestamps (NIXL versions 2 to 4) print no `Timestamp:`
//! line and `"timestamp_us":null`. Records NIXL's writer can produce but telering's
//! strict decoder refuses are shown as they are: a category outside 0 to 7 as
//! `UNKNOWN(n)`, an empty name as empty.
//!
//! Text telering did not create — event names, file names, paths, other programs'
//! error texts — is escaped with [`Escaped`] wherever it is printed as text: a
//! newline in an event name cannot forge a `Value:` line, an `ESC` cannot set the
//! terminal's title. In the text block a name's control characters show as `\n`,
//! `\u{1b}`…, its bytes that are not UTF-8 as `\xNN`, a `\` as `\\`. JSON output
//! escapes with JSON's own rules instead (and a name's bytes that are not UTF-8 are
//! U+FFFD there).

use chrono::{Local, TimeZone};
use std::borrow::Cow;
use std::io::{self, Write};
use std::path::Path;
use telering_core::Event;
use telering_core::text::{Escaped, first_unsafe_char};
use telering_shm::RingRecord;

/// A path as printed in text: escaped, so that a file name holding a newline or an
/// `ESC` can neither forge a line nor drive the terminal; bytes that are not UTF-8
/// show as `\xNN`.
///
/// ```
/// use std::path::Path;
/// let shown = telering_cli::output::shown_path(Path::new("dir/a\nb\u{1b}]0;t\u{7}"));
/// assert_eq!(shown.to_string(), "dir/a\\nb\\u{1b}]0;t\\u{7}");
/// ```
pub fn shown_path(path: &Path) -> Escaped<'_> {
    Escaped::bytes(path.as_os_str().as_encoded_bytes())
}

/// A message of another part (a library's error or log text) made safe to print as
/// one line: unchanged when it holds no control character, else escaped whole (so
/// a file name it quotes cannot split it or drive the terminal).
///
/// ```
/// use telering_cli::output::message_line;
/// assert_eq!(message_line("dir/a: cannot open"), "dir/a: cannot open");
/// assert_eq!(message_line("dir/a\nforged: cannot open"), "dir/a\\nforged: cannot open");
/// ```
pub fn message_line(text: &str) -> Cow<'_, str> {
    match first_unsafe_char(text) {
        None => Cow::Borrowed(text),
        Some(_) => Cow::Owned(Escaped::new(text).to_string()),
    }
}

/// The two output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum EventFormat {
    /// NIXL's text block.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

impl EventFormat {
    /// `Json` when `json` is set, else `Text`.
    pub fn from_json_flag(json: bool) -> EventFormat {
        if json {
            EventFormat::Json
        } else {
            EventFormat::Text
        }
    }
}

/// Formats microseconds since the Unix epoch as local time with microseconds,
/// `2025-01-15 14:30:25.123456`; a value outside the calendar's range is printed as
/// the raw number followed by `us`.
///
/// ```
/// let text = telering_cli::output::local_time(1_736_951_425_123_456);
/// assert!(text.ends_with(".123456"), "{text}");
/// assert_eq!(text.len(), "2025-01-15 14:30:25.123456".len());
/// ```
pub fn local_time(timestamp_us: u64) -> String {
    i64::try_from(timestamp_us)
        .ok()
        .and_then(|us| Local.timestamp_micros(us).single())
        .map(|t| t.format("%Y-%m-%d %H:%M:%S%.6f").to_string())
        .unwrap_or_else(|| format!("{timestamp_us}us"))
}

/// Writes `text` as a JSON string literal (quotes included).
///
/// ```
/// let mut out = Vec::new();
/// telering_cli::output::write_json_string(&mut out, "a\"b\\c\n\u{1}").unwrap();
/// assert_eq!(String::from_utf8(out).unwrap(), r#""a\"b\\c\n\u0001""#);
/// ```
pub fn write_json_string(out: &mut (impl Write + ?Sized), text: &str) -> io::Result<()> {
    out.write_all(b"\"")?;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        let escape: Option<&str> = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\r' => Some("\\r"),
            '\t' => Some("\\t"),
            c if (c as u32) < 0x20 => None,
            _ => continue,
        };
        out.write_all(&text.as_bytes()[start..i])?;
        match escape {
            Some(e) => out.write_all(e.as_bytes())?,
            None => write!(out, "\\u{:04x}", c as u32)?,
        }
        start = i + c.len_utf8();
    }
    out.write_all(&text.as_bytes()[start..])?;
    out.write_all(b"\"")
}

/// Writes one event in `format`. The event must be valid (the readers validate every
/// event before returning it); an invalid category or name is printed lossily, as
/// [`write_record`] prints it.
///
/// ```
/// use telering_core::{event_name, Category, Event};
/// use telering_cli::output::{write_event, EventFormat};
/// let e = Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), 1048576);
/// let mut out = Vec::new();
/// write_event(&mut out, &e, EventFormat::Json).unwrap();
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "{\"timestamp_us\":1,\"category\":\"TRANSFER\",\"event\":\"agent_tx_bytes\",\"value\":1048576}\n"
/// );
/// let mut out = Vec::new();
/// write_event(&mut out, &e, EventFormat::Text).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.starts_with("=== Telemetry Event ===\nTimestamp: "));
/// assert!(text.ends_with("Category: TRANSFER\nEvent: agent_tx_bytes\nValue: 1048576\n=======================\n\n"));
/// ```
pub fn write_event(
    out: &mut (impl Write + ?Sized),
    event: &Event,
    format: EventFormat,
) -> io::Result<()> {
    write_record(out, &RingRecord::from_event(event), format)
}

/// Writes one record of any ring generation in `format`, showing what is there: a
/// record without a timestamp (ring versions 2 to 4) has no `Timestamp:` line and
/// `"timestamp_us":null`; a category outside 0 to 7 prints as `UNKNOWN(n)`. In text
/// the name is escaped ([`Escaped`]: control characters as `\n` or `\u{1b}`, bytes
/// that are not UTF-8 as `\xNN`); in JSON it is a JSON string (bytes that are not
/// UTF-8 as U+FFFD).
///
/// ```
/// use telering_cli::output::{write_record, EventFormat};
/// use telering_shm::Generation;
/// let mut slot = [0u8; 16];
/// slot[0..4].copy_from_slice(&1u32.to_le_bytes()); // agent_rx_bytes
/// slot[8..16].copy_from_slice(&512u64.to_le_bytes());
/// let record = Generation::V4.decode(&slot);
/// let mut out = Vec::new();
/// write_record(&mut out, &record, EventFormat::Json).unwrap();
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "{\"timestamp_us\":null,\"category\":\"TRANSFER\",\"event\":\"agent_rx_bytes\",\"value\":512}\n"
/// );
/// let mut out = Vec::new();
/// write_record(&mut out, &record, EventFormat::Text).unwrap();
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "=== Telemetry Event ===\nCategory: TRANSFER\nEvent: agent_rx_bytes\nValue: 512\n=======================\n\n"
/// );
/// ```
pub fn write_record(
    out: &mut (impl Write + ?Sized),
    record: &RingRecord,
    format: EventFormat,
) -> io::Result<()> {
    let category = record.category_text();
    match format {
        EventFormat::Text => {
            let name = Escaped::bytes(record.name_bytes());
            out.write_all(b"=== Telemetry Event ===\n")?;
            if let Some(ts) = record.timestamp_us {
                writeln!(out, "Timestamp: {}", local_time(ts))?;
            }
            write!(
                out,
                "Category: {category}\nEvent: {name}\nValue: {}\n=======================\n\n",
                record.value
            )
        }
        EventFormat::Json => {
            let name = record.name_lossy();
            match record.timestamp_us {
                Some(ts) => write!(out, "{{\"timestamp_us\":{ts}")?,
                None => out.write_all(b"{\"timestamp_us\":null")?,
            }
            write!(out, ",\"category\":")?;
            write_json_string(out, &category)?;
            out.write_all(b",\"event\":")?;
            write_json_string(out, &name)?;
            writeln!(out, ",\"value\":{}}}", record.value)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_string_escapes_every_control_character() {
        for c in 0u32..0x20 {
            let s = char::from_u32(c).unwrap().to_string();
            let mut out = Vec::new();
            write_json_string(&mut out, &s).unwrap();
            let parsed: String = serde_json::from_slice(&out).unwrap();
            assert_eq!(parsed, s);
        }
        let mut out = Vec::new();
        write_json_string(&mut out, "héllo \"wörld\" \\ ✓").unwrap();
        let parsed: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(parsed, "héllo \"wörld\" \\ ✓");
    }

    #[test]
    fn a_hostile_name_prints_on_its_line_escaped() {
        let mut slot = [0u8; 56];
        slot[8..12].copy_from_slice(&1i32.to_le_bytes());
        let name = b"x\r\nValue: 999999\x1b]0;t\x07\xff";
        slot[12..12 + name.len()].copy_from_slice(name);
        let record = telering_shm::Generation::V1.decode(&slot);
        let mut out = Vec::new();
        write_record(&mut out, &record, EventFormat::Text).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("\nEvent: x\\r\\nValue: 999999\\u{1b}]0;t\\u{7}\\xff\nValue: 0\n"),
            "{text}"
        );
        assert!(!text.contains('\u{1b}') && !text.contains('\r'), "{text}");
    }

    #[test]
    fn local_time_of_an_out_of_range_timestamp_is_the_raw_number() {
        assert_eq!(local_time(u64::MAX), format!("{}us", u64::MAX));
    }
}
