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

use chrono::{Local, TimeZone};
use std::io::{self, Write};
use telering_core::Event;

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
/// event before returning it); an invalid category or name is printed as `?`.
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
    let category = event.category().map(|c| c.short_name()).unwrap_or("?");
    let name = event.name().unwrap_or("?");
    match format {
        EventFormat::Text => write!(
            out,
            "=== Telemetry Event ===\nTimestamp: {}\nCategory: {category}\nEvent: {name}\nValue: {}\n=======================\n\n",
            local_time(event.timestamp_us()),
            event.value()
        ),
        EventFormat::Json => {
            write!(
                out,
                "{{\"timestamp_us\":{},\"category\":\"{category}\",\"event\":",
                event.timestamp_us()
            )?;
            write_json_string(out, name)?;
            writeln!(out, ",\"value\":{}}}", event.value())
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
    fn local_time_of_an_out_of_range_timestamp_is_the_raw_number() {
        assert_eq!(local_time(u64::MAX), format!("{}us", u64::MAX));
    }
}
