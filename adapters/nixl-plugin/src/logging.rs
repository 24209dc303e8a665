//! The plug-in's log: what telering logs inside a NIXL agent (a configuration error
//! that stops `create_exporter`, a collector down, events not delivered at shutdown)
//! goes to stderr, one line a record, `telering: <level>: <message>`, at NIXL's own
//! level, `NIXL_LOG_LEVEL` (`trace`, `debug`, `info`, `warn`, `error`, `fatal`; any
//! case; default `warn`). An unknown value warns and keeps `warn`.
//!
//! Text telering did not create (agent names, names from `TELERING_EXPORTERS`) is
//! escaped where it enters a message ([`Escaped`]). As a last guard, a record whose
//! text still holds a control character or bidirectional control (text another crate
//! logged raw, such as an OTLP collector's error body) is written escaped whole, so a
//! record is always one line and never a terminal control sequence.
//!
//! The logger is installed when NIXL first asks for an exporter. If the process
//! already has a `log` logger, that one stays and receives the records.

use log::{Level, LevelFilter, Log, Metadata, Record};
use std::io::Write;
use std::sync::Once;
use telering_core::text::{Escaped, first_unsafe_char};

/// NIXL's log level variable.
pub const NIXL_LOG_LEVEL: &str = "NIXL_LOG_LEVEL";

struct StderrLogger;

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = match record.level() {
            Level::Error => "error",
            Level::Warn => "warning",
            Level::Info => "info",
            Level::Debug => "debug",
            Level::Trace => "trace",
        };
        // One write per line, so lines of concurrent records never interleave.
        let line = line(level, &record.args().to_string());
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    fn flush(&self) {}
}

/// One record's line. A record is one line: text another crate logged raw (a
/// collector's error body) that still holds a control character is written escaped,
/// the whole message (text already escaped holds none, so is never escaped twice).
fn line(level: &str, message: &str) -> String {
    match first_unsafe_char(message) {
        None => format!("telering: {level}: {message}\n"),
        Some(_) => format!("telering: {level}: {}\n", Escaped::new(message)),
    }
}

static LOGGER: StderrLogger = StderrLogger;
static INSTALL: Once = Once::new();

/// The level `NIXL_LOG_LEVEL`'s value names, or why it names none (`fatal` is
/// `error`: `log` has no fatal level). Unset or blank is `warn`.
///
/// ```
/// use log::LevelFilter;
/// use telemetry_exporter_telering::logging::level_from;
/// assert_eq!(level_from(None), Ok(LevelFilter::Warn));
/// assert_eq!(level_from(Some(" DEBUG ")), Ok(LevelFilter::Debug));
/// assert_eq!(level_from(Some("fatal")), Ok(LevelFilter::Error));
/// assert!(level_from(Some("loud")).unwrap_err().contains("NIXL_LOG_LEVEL=loud"));
/// ```
pub fn level_from(value: Option<&str>) -> Result<LevelFilter, String> {
    let Some(value) = value.and_then(telering_std::parse::value) else {
        return Ok(LevelFilter::Warn);
    };
    if value.eq_ignore_ascii_case("fatal") {
        return Ok(LevelFilter::Error);
    }
    value.parse::<LevelFilter>().map_err(|_| {
        format!(
            "{NIXL_LOG_LEVEL}={value} is not a log level; use trace, debug, info, warn, error or fatal (logging at warn)"
        )
    })
}

/// Installs the logger once, at the level `NIXL_LOG_LEVEL` names.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        let level = level_from(std::env::var(NIXL_LOG_LEVEL).ok().as_deref());
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(*level.as_ref().unwrap_or(&LevelFilter::Warn));
        }
        if let Err(warning) = level {
            log::warn!("{warning}");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::line;

    #[test]
    fn a_record_with_a_control_character_is_one_escaped_line() {
        assert_eq!(
            line("error", "HTTP 500 body\n\u{1b}[2Jtelering: error: forged\0"),
            "telering: error: HTTP 500 body\\n\\u{1b}[2Jtelering: error: forged\\u{0}\n"
        );
    }

    #[test]
    fn a_clean_record_is_written_as_it_is() {
        assert_eq!(
            line("warning", "agent `a\\u{1b}` lost 3"),
            "telering: warning: agent `a\\u{1b}` lost 3\n"
        );
    }
}
