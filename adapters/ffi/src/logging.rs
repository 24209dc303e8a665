//! Logs of libtelering: what the Rust side logs (a configuration warning, an exporter
//! that cannot bind its port or reach its collector, events not delivered at
//! shutdown) reaches the C program.
//!
//! By default each record at or above the level goes to stderr as one line,
//! `telering: warning: …`. The level is NIXL's own variable, `NIXL_LOG_LEVEL`
//! (`trace`, `debug`, `info`, `warn`, `error`, `fatal`; any case), unless
//! `TELERING_LOG` is set, which wins (`off` too); the default is `warn`. An unknown
//! level warns and keeps the default. A program with its own logger installs
//! [`telering_set_log_callback`], which then takes every record instead of stderr.
//!
//! The logger is installed on the first create, reader open or callback call; if the
//! process already has a `log` logger (a Rust program linking the library), that one
//! stays and receives the records.

use std::ffi::{CString, c_char, c_void};
use std::io::Write;
use std::sync::{Once, PoisonError, RwLock};

use log::{Level, LevelFilter, Log, Metadata, Record};

use crate::status::{Status, telering_status_t};

/// The level of a log record handed to a `telering_log_callback_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum telering_log_level_t {
    /// An error: something failed (an exporter refused, a thread could not start).
    TELERING_LOG_ERROR = 1,
    /// A warning: telemetry runs, but not as configured or not fully (a port in use,
    /// a collector down, an unrecognized `NIXL_TELEMETRY_ENABLE`).
    TELERING_LOG_WARN = 2,
    /// Information (a collector reachable again).
    TELERING_LOG_INFO = 3,
    /// Debugging detail.
    TELERING_LOG_DEBUG = 4,
    /// Tracing detail.
    TELERING_LOG_TRACE = 5,
}

impl From<Level> for telering_log_level_t {
    fn from(level: Level) -> Self {
        match level {
            Level::Error => telering_log_level_t::TELERING_LOG_ERROR,
            Level::Warn => telering_log_level_t::TELERING_LOG_WARN,
            Level::Info => telering_log_level_t::TELERING_LOG_INFO,
            Level::Debug => telering_log_level_t::TELERING_LOG_DEBUG,
            Level::Trace => telering_log_level_t::TELERING_LOG_TRACE,
        }
    }
}

/// A program's log function: called with the `user_data` given to
/// `telering_set_log_callback`, the record's level, its target (the Rust module that
/// logged it, such as `telering_otlp::push`) and its message, both NUL-terminated
/// UTF-8 valid only during the call. It may be called from any thread (the flush
/// thread, the OTLP push thread), at the same time from several, so it must be thread
/// safe; it must not call back into libtelering's logging setup.
#[allow(non_camel_case_types)]
pub type telering_log_callback_t = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        level: telering_log_level_t,
        target: *const c_char,
        message: *const c_char,
    ),
>;

/// A callback and its user data.
#[derive(Clone, Copy)]
struct Callback {
    function: unsafe extern "C" fn(*mut c_void, telering_log_level_t, *const c_char, *const c_char),
    user_data: *mut c_void,
}

// SAFETY: `user_data` is the program's pointer, only ever passed back to its own
// callback, which the header requires to be callable from any thread; libtelering
// never dereferences it.
unsafe impl Send for Callback {}
// SAFETY: as for `Send`: shared references only copy the pointer out to call the
// callback with it.
unsafe impl Sync for Callback {}

struct CLogger {
    callback: RwLock<Option<Callback>>,
}

static LOGGER: CLogger = CLogger {
    callback: RwLock::new(None),
};

static INSTALL: Once = Once::new();

impl Log for CLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let callback = *self.callback.read().unwrap_or_else(PoisonError::into_inner);
        match callback {
            Some(c) => {
                let text = |s: String| CString::new(s.replace('\0', "\\0")).unwrap_or_default();
                let target = text(record.target().to_string());
                let message = text(record.args().to_string());
                // SAFETY: the program registered this function with this user data for
                // exactly this call; both strings live until it returns.
                unsafe {
                    (c.function)(
                        c.user_data,
                        record.level().into(),
                        target.as_ptr(),
                        message.as_ptr(),
                    )
                };
            }
            None => {
                let level = match record.level() {
                    Level::Error => "error",
                    Level::Warn => "warning",
                    Level::Info => "info",
                    Level::Debug => "debug",
                    Level::Trace => "trace",
                };
                // One write per line, so lines of concurrent records never interleave.
                let line = format!("telering: {level}: {}\n", record.args());
                let _ = std::io::stderr().lock().write_all(line.as_bytes());
            }
        }
    }

    fn flush(&self) {}
}

/// `NIXL_LOG_LEVEL`, NIXL's variable.
const NIXL_VARIABLE: &str = "NIXL_LOG_LEVEL";
/// `TELERING_LOG`, which wins over it.
const TELERING_VARIABLE: &str = "TELERING_LOG";

/// The level a value names (`fatal` is `error`: `log` has no fatal level).
fn level_named(value: &str) -> Option<LevelFilter> {
    if value.eq_ignore_ascii_case("fatal") {
        return Some(LevelFilter::Error);
    }
    value.parse::<LevelFilter>().ok()
}

/// The level the environment asks for, and a warning when a value names none.
fn level_from(telering: Option<&str>, nixl: Option<&str>) -> (LevelFilter, Option<String>) {
    let pick = [(TELERING_VARIABLE, telering), (NIXL_VARIABLE, nixl)]
        .into_iter()
        .find_map(|(name, raw)| Some((name, telering_std::parse::value(raw?)?)));
    match pick {
        None => (LevelFilter::Warn, None),
        Some((name, value)) => match level_named(value) {
            Some(level) => (level, None),
            None => (
                LevelFilter::Warn,
                Some(format!(
                    "{name}={value} is not a log level; use trace, debug, info, warn, error or fatal (logging at warn)"
                )),
            ),
        },
    }
}

/// Installs the logger once, at the level the environment names.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        let get = |name| std::env::var(name).ok();
        let (level, warning) = level_from(
            get(TELERING_VARIABLE).as_deref(),
            get(NIXL_VARIABLE).as_deref(),
        );
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(level);
        }
        if let Some(warning) = warning {
            log::warn!("{warning}");
        }
    });
}

/// Hands every log record to `callback` with `user_data` instead of writing it to
/// stderr; NULL restores stderr. The level still comes from `NIXL_LOG_LEVEL` or
/// `TELERING_LOG` (default `warn`). May be called before any create, and again at any
/// time; records logged while it runs go to the old or the new callback.
///
/// Returns `TELERING_OK`.
/// Thread safety: callable from any thread; the callback is called from any thread.
///
/// # Safety
///
/// `callback` is NULL or a function that is safe to call from any thread, with
/// `user_data`, until another call of `telering_set_log_callback` returns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_set_log_callback(
    callback: telering_log_callback_t,
    user_data: *mut c_void,
) -> telering_status_t {
    install();
    *LOGGER
        .callback
        .write()
        .unwrap_or_else(PoisonError::into_inner) = callback.map(|function| Callback {
        function,
        user_data,
    });
    Status::TELERING_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn telering_log_wins_over_nixl_log_level_and_fatal_is_error() {
        assert_eq!(level_from(None, None).0, LevelFilter::Warn);
        assert_eq!(level_from(None, Some("INFO")).0, LevelFilter::Info);
        assert_eq!(level_from(None, Some("fatal")).0, LevelFilter::Error);
        assert_eq!(
            level_from(Some("debug"), Some("error")).0,
            LevelFilter::Debug
        );
        assert_eq!(level_from(Some("off"), Some("trace")).0, LevelFilter::Off);
        assert_eq!(level_from(Some(" "), Some("trace")).0, LevelFilter::Trace);
        let (level, warning) = level_from(None, Some("loud"));
        assert_eq!(level, LevelFilter::Warn);
        assert!(
            warning
                .unwrap()
                .starts_with("NIXL_LOG_LEVEL=loud is not a log level")
        );
    }
}
