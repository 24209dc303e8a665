//! Messages the libraries log (through the `log` crate) are printed on stderr as
//! `telering: warning: …`. `TELERING_LOG` (`error`, `warn`, `info`, `debug`, `trace`)
//! sets the level; the default is `warn`.

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
            eprintln!("telering: {level}: {}", record.args());
        }
    }

    fn flush(&self) {}
}

static LOGGER: StderrLogger = StderrLogger;

/// Sends log records to stderr at the level `TELERING_LOG` names (default `warn`).
/// Calling it twice is harmless.
pub fn init_logger() {
    let level = std::env::var("TELERING_LOG")
        .ok()
        .and_then(|v| v.trim().parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::Warn);
    if log::set_logger(&LOGGER).is_ok() {
        log::set_max_level(level);
    }
}
