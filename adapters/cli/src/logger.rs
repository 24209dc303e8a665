//! Messages the libraries log (through the `log` crate) are printed on stderr as
//! `telering: warning: …`, escaped like every message ([`crate::error_line`]).
//! `TELERING_LOG` (`off`, `error`, `warn`, `info`, `debug`,
//! `trace`, any case) sets the level; the default is `warn`. The value is read by the
//! rule every variable follows ([`telering_std::parse`]): trimmed, blank is unset. An
//! unknown level is not an error — diagnostics must not stop the command — but it
//! warns, and the level stays `warn`. A line stderr cannot take (a full disk) is lost,
//! for the same reason.

use log::{Level, LevelFilter, Log, Metadata, Record};

#[derive(Debug)]
struct StderrLogger;

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            let level = match record.level() {
                Level::Error => "error",
                Level::Warn => "warning",
                Level::Info => "info",
                Level::Debug => "debug",
                Level::Trace => "trace",
            };
            // Through the one line writer: escaped (a library may quote a file name),
            // and a stderr that cannot be written loses the line instead of panicking.
            crate::error::error_line(&format!("{level}: {}", record.args()));
        }
    }

    fn flush(&self) {}
}

static LOGGER: StderrLogger = StderrLogger;

/// Sends log records to stderr at the level `TELERING_LOG` names (default `warn`).
/// Calling it twice is harmless.
pub fn init_logger() {
    let (level, unknown) = match std::env::var_os(VARIABLE) {
        None => (LevelFilter::Warn, None),
        Some(raw) => level_of(&raw.to_string_lossy()),
    };
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
    if let Some(warning) = unknown.and_then(|v| unknown_level(Some(v))) {
        log::warn!("{warning}");
    }
}

/// The warning for a `TELERING_LOG` value (trimmed, not blank) that names no level.
pub(crate) fn unknown_level(value: Option<String>) -> Option<String> {
    let (_, unknown) = level_of(&value?);
    Some(format!(
        "{VARIABLE}={} is not a log level; use off, error, warn, info, debug or trace (logging at warn)",
        unknown?
    ))
}

/// The variable naming the level.
const VARIABLE: &str = "TELERING_LOG";

/// The level a `TELERING_LOG` value names, and the value itself when it names none.
fn level_of(raw: &str) -> (LevelFilter, Option<String>) {
    match telering_std::parse::value(raw) {
        None => (LevelFilter::Warn, None),
        Some(v) => match v.parse::<LevelFilter>() {
            Ok(level) => (level, None),
            Err(_) => (LevelFilter::Warn, Some(v.to_string())),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_levels_follow_the_one_parsing_rule_and_unknown_ones_are_returned() {
        for (raw, level, unknown) in [
            ("debug", LevelFilter::Debug, None),
            (" INFO\n", LevelFilter::Info, None),
            ("off", LevelFilter::Off, None),
            ("", LevelFilter::Warn, None),
            ("  ", LevelFilter::Warn, None),
            ("garbage", LevelFilter::Warn, Some("garbage")),
            ("3", LevelFilter::Warn, Some("3")),
        ] {
            assert_eq!(
                level_of(raw),
                (level, unknown.map(str::to_string)),
                "{raw:?}"
            );
        }
    }
}
