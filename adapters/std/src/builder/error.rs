//! The configuration's errors and warnings, and their messages: each names the
//! variable, the value and what to use instead.

use crate::clock::ClockSource;
use crate::config::EnvError;
use crate::config::vars;
use crate::export::ExportError;
use std::fmt;
use std::path::PathBuf;

/// A configuration value that cannot be used. The text names the variable (or the
/// builder method's variable), the value, and what to use instead.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// A variable's value is not UTF-8.
    NotUnicode {
        /// The variable.
        variable: String,
    },
    /// `NIXL_TELEMETRY_BUFFER_SIZE` is not a number.
    BufferSizeNotANumber {
        /// The value given.
        value: String,
    },
    /// `NIXL_TELEMETRY_BUFFER_SIZE` is not a power of two.
    BufferSizeNotPowerOfTwo {
        /// The value given.
        value: u64,
        /// The nearest valid size below it.
        below: u64,
        /// The nearest valid size above it.
        above: u64,
    },
    /// `NIXL_TELEMETRY_BUFFER_SIZE` is below 2.
    BufferSizeTooSmall {
        /// The value given.
        value: u64,
    },
    /// `NIXL_TELEMETRY_BUFFER_SIZE` is above [`MAX_BUFFER_SIZE`](vars::MAX_BUFFER_SIZE).
    BufferSizeTooLarge {
        /// The value given.
        value: u64,
    },
    /// `NIXL_TELEMETRY_RUN_INTERVAL` is not a positive number of milliseconds.
    RunIntervalInvalid {
        /// The value given.
        value: String,
    },
    /// `NIXL_TELEMETRY_RUN_INTERVAL` is longer than [`MAX_RUN_INTERVAL`](vars::MAX_RUN_INTERVAL).
    RunIntervalTooLong {
        /// The value given, in milliseconds.
        value: String,
    },
    /// `NIXL_TELEMETRY_EXPORTER` (or the variable or flag that named the list, see
    /// [`TelemetryBuilder::exporter_from`](crate::TelemetryBuilder::exporter_from))
    /// names no registered exporter.
    UnknownExporter {
        /// The name given.
        name: String,
        /// The registered names.
        available: Vec<String>,
        /// The variable or flag that named it.
        variable: String,
    },
    /// The exporter list is empty: a program or flag set it to nothing (a blank
    /// variable is unset instead).
    ExporterListEmpty {
        /// The variable or flag that set it.
        variable: String,
        /// The registered names.
        available: Vec<String>,
    },
    /// The exporter list has an empty entry (`buffer,,prometheus`, a trailing comma):
    /// refused rather than skipped, as it is almost always a typo.
    ExporterListEmptyEntry {
        /// The list as given.
        list: String,
        /// Which entry is empty, from 1.
        position: usize,
        /// The variable or flag that named the list.
        variable: String,
    },
    /// The exporter list names one exporter twice (names are matched ignoring ASCII
    /// case, so `Buffer,buffer` does): two exporters of one name would write the
    /// same output.
    ExporterListedTwice {
        /// The name, in lower case.
        name: String,
        /// The list as given.
        list: String,
        /// The entries naming it, from 1.
        entries: (usize, usize),
        /// The variable or flag that named the list.
        variable: String,
    },
    /// The exporter list names no registered exporter, and `NIXL_PLUGIN_DIR` has no
    /// plug-in library of that name.
    NoSuchPlugin {
        /// The variable or flag that named it (a `Box<str>`, which keeps
        /// `ConfigError` within the size a `Result` carries cheaply).
        variable: Box<str>,
        /// The name given.
        name: String,
        /// The registered names.
        available: Vec<String>,
        /// `NIXL_PLUGIN_DIR`: the folder searched for the library
        /// ([`plugin::library_path`](crate::plugin::library_path)).
        dir: PathBuf,
        /// What the operating system said about it.
        reason: String,
    },
    /// `NIXL_TELEMETRY_DIR` is set without an exporter, and the registry has no
    /// exporter that writes a directory by default
    /// ([`ExporterRegistry::dir_default`](crate::ExporterRegistry::dir_default)).
    NoDirExporter {
        /// The registered names.
        available: Vec<String>,
    },
    /// `NIXL_TELEMETRY_DIR` cannot be created or is not a directory.
    DirUnusable {
        /// The directory.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// `NIXL_TELEMETRY_DIR` names something that is not a directory, such as a
    /// regular file or a dangling symbolic link.
    DirNotADirectory {
        /// The variable's value.
        path: PathBuf,
        /// What it names instead, in words (`is a regular file`).
        what: String,
    },
    /// The agent name cannot name a file.
    AgentName {
        /// The name given.
        name: String,
        /// Why not.
        reason: &'static str,
    },
    /// The flush thread could not be started.
    FlushThread {
        /// What the operating system said.
        source: std::io::Error,
    },
    /// An integer variable's value has only digits but is larger than any value it
    /// accepts.
    IntegerTooLarge {
        /// The variable.
        variable: &'static str,
        /// The value given.
        value: String,
        /// The largest accepted value.
        max: u64,
    },
    /// An exporter's settings are unusable (its check, before anything is opened), or
    /// it failed to start.
    ExporterStart {
        /// The exporter's name.
        exporter: String,
        /// Why.
        source: ExportError,
    },
    /// `TELERING_CLOCK` names no clock.
    ClockUnknown {
        /// The value given.
        value: String,
    },
    /// The CPU counter was asked for (`TELERING_CLOCK=tsc`) where it is not trusted.
    ClockUnreliable {
        /// What the probe found.
        source: crate::clock::CounterUnreliable,
    },
    /// `TELERING_RING_LAYOUT` is neither `v1` nor `v4`.
    RingLayout(telering_shm::UnknownLayout),
    /// The configuration file cannot be used ([`crate::config::file`]).
    ConfigFile(crate::config::ConfigFileError),
    /// A value set in the configuration file is not one its variable accepts.
    FileValue {
        /// The configuration file.
        path: PathBuf,
        /// The key (the variable's name).
        key: String,
        /// What is wrong with the value, as if the variable were set to it.
        source: Box<ConfigError>,
    },
    /// `TELERING_ROUTES_MAX` or `TELERING_SLOW_XFERS` is not a number in its range
    /// ([`crate::route::RouteLimits`]).
    RouteLimit {
        /// The variable.
        variable: &'static str,
        /// The value given.
        value: String,
        /// The smallest accepted value.
        min: u16,
        /// The largest accepted value.
        max: u16,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use vars::*;
        match self {
            ConfigError::NotUnicode { variable } => {
                write!(f, "{variable} is not valid UTF-8; set it to plain text")
            }
            ConfigError::BufferSizeNotANumber { value } => write!(
                f,
                "{BUFFER_SIZE}={value} is not a number; use a power of two from 2 to {MAX_BUFFER_SIZE}, such as {DEFAULT_BUFFER_SIZE}"
            ),
            ConfigError::BufferSizeNotPowerOfTwo {
                value,
                below,
                above,
            } => write!(
                f,
                "{BUFFER_SIZE}={value} is not a power of two; use {below} or {above}"
            ),
            ConfigError::BufferSizeTooSmall { value } => write!(
                f,
                "{BUFFER_SIZE}={value} is too small; use 2 or a larger power of two, such as {DEFAULT_BUFFER_SIZE}"
            ),
            ConfigError::BufferSizeTooLarge { value } => write!(
                f,
                "{BUFFER_SIZE}={value} is above the maximum; use {MAX_BUFFER_SIZE} or a smaller power of two"
            ),
            ConfigError::RunIntervalInvalid { value } => write!(
                f,
                "{RUN_INTERVAL}={value} is not a positive number of milliseconds; use an interval such as {}",
                DEFAULT_RUN_INTERVAL.as_millis()
            ),
            ConfigError::RunIntervalTooLong { value } => write!(
                f,
                "{RUN_INTERVAL}={value} is longer than a day; use at most {} milliseconds",
                MAX_RUN_INTERVAL.as_millis()
            ),
            ConfigError::UnknownExporter {
                name,
                available,
                variable,
            } => write!(
                f,
                "{variable}={name} is not a known exporter; use one of: {}",
                available.join(", ")
            ),
            ConfigError::ExporterListEmpty {
                variable,
                available,
            } => write!(
                f,
                "{variable} is empty; name one or more exporters, separated by commas, of: {}",
                available.join(", ")
            ),
            ConfigError::ExporterListEmptyEntry {
                list,
                position,
                variable,
            } => write!(
                f,
                "{variable}={list} has an empty entry at position {position}; remove the extra comma or name an exporter there"
            ),
            ConfigError::ExporterListedTwice {
                name,
                list,
                entries: (first, again),
                variable,
            } => write!(
                f,
                "{name} is listed twice in {variable}={list} (entries {first} and {again}, names matched ignoring case); list each exporter once"
            ),
            ConfigError::NoSuchPlugin {
                variable,
                name,
                available,
                dir,
                reason,
            } => write!(
                f,
                "{variable}={name} is neither a built-in exporter ({}) nor a plug-in: {PLUGIN_DIR}={} was searched for {}: {reason}; use a built-in name or install the plug-in there",
                available.join(", "),
                dir.display(),
                plugin_library_path(dir, name)
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy(),
            ),
            ConfigError::NoDirExporter { available } => write!(
                f,
                "{DIR} is set but no exporter writes it by default; set {EXPORTER} to one of: {}",
                available.join(", ")
            ),
            ConfigError::DirUnusable { path, source } => write!(
                f,
                "{DIR}={} cannot be used as the telemetry directory: {source}; set it to a writable directory",
                path.display()
            ),
            ConfigError::DirNotADirectory { path, what } => write!(
                f,
                "{DIR}={} {what}; set it to a directory (a missing one is created)",
                path.display()
            ),
            ConfigError::AgentName { name, reason } => write!(
                f,
                "agent name {name:?} cannot name the telemetry file: {reason}"
            ),
            ConfigError::FlushThread { source } => write!(
                f,
                "the telemetry flush thread could not be started: {source}; set {ENABLE}=n to run without telemetry"
            ),
            ConfigError::IntegerTooLarge {
                variable,
                value,
                max,
            } => write!(f, "{variable}={value} is too large; use at most {max}"),
            ConfigError::ExporterStart { exporter, source } => match source {
                ExportError::Config { .. } | ExportError::MissingDir { .. } => write!(
                    f,
                    "telemetry exporter `{exporter}` cannot be used as configured, so nothing was started: {source}"
                ),
                _ => write!(
                    f,
                    "telemetry exporter `{exporter}` could not start: {source}"
                ),
            },
            ConfigError::RingLayout(e) => e.fmt(f),
            ConfigError::ConfigFile(e) => e.fmt(f),
            ConfigError::FileValue { path, key, source } => write!(
                f,
                "configuration file {}, key {key}: {source}",
                path.display()
            ),
            ConfigError::ClockUnknown { value } => write!(
                f,
                "{CLOCK}={value} is not a clock; use one of: {}",
                ClockSource::CHOICES
            ),
            ConfigError::ClockUnreliable { source } => write!(
                f,
                "{CLOCK}=tsc: the CPU counter cannot stamp events here: {source}; use {CLOCK}=auto or realtime"
            ),
            ConfigError::RouteLimit {
                variable,
                value,
                min,
                max,
            } => write!(
                f,
                "{variable}={} is not a number from {min} to {max}; use one in that range",
                telering_core::text::Escaped::new(value)
            ),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::DirUnusable { source, .. } => Some(source),
            ConfigError::FlushThread { source } => Some(source),
            ConfigError::ExporterStart { source, .. } => Some(source),
            ConfigError::ClockUnreliable { source } => Some(source),
            ConfigError::ConfigFile(e) => Some(e),
            ConfigError::FileValue { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// A configuration value that works but is probably not what was meant.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigWarning {
    /// `NIXL_TELEMETRY_ENABLE` holds a value that is neither an enabling nor a
    /// disabling word; telemetry stays disabled.
    UnrecognizedEnable {
        /// The value given.
        value: String,
    },
    /// A `NIXL_TELEMETRY_ENABLED_METRICS` pattern matches no built-in event.
    MetricMatchesNoBuiltin {
        /// The pattern.
        pattern: String,
    },
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigWarning::UnrecognizedEnable { value } => write!(
                f,
                "{}={value} is not recognized, so telemetry stays disabled; use y, yes, on, true, enable or 1 to enable it",
                vars::ENABLE
            ),
            ConfigWarning::MetricMatchesNoBuiltin { pattern } => write!(
                f,
                "allowlist pattern `{pattern}` ({} or the enabled_metrics option) matches no built-in event (it may still match custom events)",
                vars::ENABLED_METRICS
            ),
        }
    }
}

impl ConfigError {
    /// The configuration's error for the exporter registered as `exporter` that could
    /// not be made: an unknown name becomes [`ConfigError::UnknownExporter`] (naming
    /// `NIXL_TELEMETRY_EXPORTER`), any other failure [`ConfigError::ExporterStart`].
    ///
    /// ```
    /// use telering_std::{ConfigError, ExportError};
    /// let unknown = ExportError::UnknownExporter { name: "x".into(), available: vec!["csv".into()] };
    /// let e = ConfigError::from_export("x", unknown);
    /// assert_eq!(e.to_string(), "NIXL_TELEMETRY_EXPORTER=x is not a known exporter; use one of: csv");
    /// let missing = ExportError::MissingDir { exporter: "csv".into() };
    /// assert!(matches!(ConfigError::from_export("CSV", missing), ConfigError::ExporterStart { .. }));
    /// ```
    pub fn from_export(exporter: &str, error: ExportError) -> ConfigError {
        ConfigError::from_export_in(vars::EXPORTER, exporter, error)
    }

    /// [`from_export`](Self::from_export) for an exporter that `variable` (a variable
    /// or a flag) named.
    ///
    /// ```
    /// use telering_std::{ConfigError, ExportError};
    /// let unknown = ExportError::UnknownExporter { name: "x".into(), available: vec!["csv".into()] };
    /// let e = ConfigError::from_export_in("--exporter", "x", unknown);
    /// assert_eq!(e.to_string(), "--exporter=x is not a known exporter; use one of: csv");
    /// ```
    pub fn from_export_in(variable: &str, exporter: &str, error: ExportError) -> ConfigError {
        match error {
            ExportError::UnknownExporter { name, available } => ConfigError::UnknownExporter {
                name,
                available,
                variable: variable.to_string(),
            },
            // The source names what is at fault (a variable, a file, a port).
            source => ConfigError::ExporterStart {
                exporter: exporter.trim().to_ascii_lowercase(),
                source,
            },
        }
    }

    /// The same error, with `refused` left out of the exporter names it offers to
    /// use instead: for a program that registers an exporter but refuses it in a list
    /// of its own (`telering bridge` writes its ring file itself, so it refuses
    /// `buffer`), so that its message offers only names it accepts. Every other error
    /// is returned as it is.
    ///
    /// ```
    /// use telering_std::ConfigError;
    /// let e = ConfigError::UnknownExporter {
    ///     name: "x".into(),
    ///     available: vec!["buffer".into(), "csv".into()],
    ///     variable: "--exporter".into(),
    /// };
    /// assert_eq!(
    ///     e.without_exporter("buffer").to_string(),
    ///     "--exporter=x is not a known exporter; use one of: csv"
    /// );
    /// ```
    pub fn without_exporter(self, refused: &str) -> ConfigError {
        match self {
            ConfigError::FileValue { path, key, source } => ConfigError::FileValue {
                path,
                key,
                source: Box::new(source.without_exporter(refused)),
            },
            mut error => {
                if let ConfigError::UnknownExporter { available, .. }
                | ConfigError::ExporterListEmpty { available, .. }
                | ConfigError::NoSuchPlugin { available, .. }
                | ConfigError::NoDirExporter { available } = &mut error
                {
                    available.retain(|name| name != refused);
                }
                error
            }
        }
    }
}

impl From<EnvError> for ConfigError {
    fn from(e: EnvError) -> ConfigError {
        match e {
            EnvError::NotUnicode { variable } => ConfigError::NotUnicode { variable },
            EnvError::ConfigFile(e) => ConfigError::ConfigFile(e),
            // EnvError is non-exhaustive for other crates, not for this one.
        }
    }
}
