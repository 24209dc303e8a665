//! Configuration: the [`TelemetryBuilder`] and the `NIXL_TELEMETRY_*` variables.
//!
//! Every variable has a builder method; [`TelemetryBuilder::from_env`] is a thin layer
//! that parses the variables from an [`EnvSource`] and calls those methods, so a
//! program can read the environment and then apply its own flags on top.
//!
//! Every value is read by the one rule of [`crate::parse`]: trimmed, empty means
//! unset, integers are plain decimal digits (no sign, fraction or exponent), booleans
//! are one fixed set of words, lists skip empty items.
//!
//! The variables, their defaults and rules are listed once, in the workspace README's
//! table (*Environment variables*). Each maps to one builder method:
//! `NIXL_TELEMETRY_ENABLE` → [`enabled`](TelemetryBuilder::enabled),
//! `NIXL_TELEMETRY_ENABLED_METRICS` → [`enabled_metrics`](TelemetryBuilder::enabled_metrics),
//! `NIXL_TELEMETRY_BUFFER_SIZE` → [`buffer_size`](TelemetryBuilder::buffer_size) (at most
//! [`MAX_BUFFER_SIZE`]), `NIXL_TELEMETRY_RUN_INTERVAL` →
//! [`run_interval`](TelemetryBuilder::run_interval) (at most [`MAX_RUN_INTERVAL`]),
//! `NIXL_TELEMETRY_EXPORTER` → [`exporter`](TelemetryBuilder::exporter) (a name in the
//! [`ExporterRegistry`]), `NIXL_TELEMETRY_DIR` → [`dir`](TelemetryBuilder::dir),
//! `TELERING_CLOCK` → [`clock`](TelemetryBuilder::clock) ([`ClockSource`]).
//!
//! How they combine ([`TelemetryBuilder::resolve`]):
//!
//! - not enabled and [`capture_telemetry`](TelemetryBuilder::capture_telemetry) off →
//!   [`Mode::Disabled`]: recording does nothing, per-transfer telemetry answers
//!   `NoTelemetry`;
//! - enabled with an exporter → [`Mode::Export`] with it;
//! - enabled, no exporter, `DIR` set → [`Mode::Export`] with `buffer` (`DIR/<agent>`);
//! - enabled, no exporter, no `DIR` → [`Mode::Capture`]: per-transfer and backend
//!   telemetry work in process, nothing is written, `RUN_INTERVAL` is unused;
//! - `capture_telemetry` on but not enabled → [`Mode::Capture`] too.
//!
//! Errors are [`ConfigError`]s whose text names the variable, the value and what to
//! use instead; the program decides whether to run without telemetry. Warnings are
//! collected as [`ConfigWarning`]s and logged through `log` when the
//! [`Telemetry`](crate::Telemetry) is built.

use crate::clock::{ClockProbe, ClockSource};
use crate::export::{ExportError, ExporterRegistry};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use telering_core::{Allowlist, builtin};
use telering_shm::RingLayout;

/// The variable names.
pub mod vars {
    /// Turns exporting on.
    pub const ENABLE: &str = "NIXL_TELEMETRY_ENABLE";
    /// The metric allowlist.
    pub const ENABLED_METRICS: &str = "NIXL_TELEMETRY_ENABLED_METRICS";
    /// Events in the cyclic buffer.
    pub const BUFFER_SIZE: &str = "NIXL_TELEMETRY_BUFFER_SIZE";
    /// Flush interval in milliseconds.
    pub const RUN_INTERVAL: &str = "NIXL_TELEMETRY_RUN_INTERVAL";
    /// The exporter's name.
    pub const EXPORTER: &str = "NIXL_TELEMETRY_EXPORTER";
    /// The directory for files.
    pub const DIR: &str = "NIXL_TELEMETRY_DIR";
    /// The clock stamping events (`auto`, `tsc`, `realtime`, `coarse`).
    pub const CLOCK: &str = "TELERING_CLOCK";
    /// Prefix of every telemetry variable.
    pub const PREFIX: &str = "NIXL_TELEMETRY_";
    /// The layout of the ring file the `buffer` exporter writes, `v1` or `v4`
    /// (telering's own variable: NIXL has no such setting).
    pub const RING_LAYOUT: &str = telering_shm::RING_LAYOUT_VAR;
}

/// `NIXL_TELEMETRY_BUFFER_SIZE` when unset.
pub const DEFAULT_BUFFER_SIZE: u32 = 4096;
/// Largest accepted `NIXL_TELEMETRY_BUFFER_SIZE`: 2²⁰ events, 56 MiB per ring.
pub const MAX_BUFFER_SIZE: u32 = 1 << 20;
/// `NIXL_TELEMETRY_RUN_INTERVAL` when unset.
pub const DEFAULT_RUN_INTERVAL: Duration = Duration::from_millis(100);
/// Longest accepted `NIXL_TELEMETRY_RUN_INTERVAL`: one day.
pub const MAX_RUN_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// Where `NIXL_TELEMETRY_*` variables are read from: a snapshot of the process
/// environment, or pairs given by the program (tests use these instead of changing
/// the process environment).
///
/// ```
/// use telering_std::EnvSource;
/// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_ENABLE", "y")]);
/// assert_eq!(env.get("NIXL_TELEMETRY_ENABLE").unwrap().as_deref(), Some("y"));
/// assert_eq!(env.get("NIXL_TELEMETRY_DIR").unwrap(), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvSource {
    vars: Arc<BTreeMap<String, OsString>>,
}

impl EnvSource {
    /// No variables set.
    pub fn empty() -> EnvSource {
        EnvSource::default()
    }

    /// A snapshot of the process's `NIXL_TELEMETRY_*` and `TELERING_*` variables
    /// (telering's own, such as `TELERING_CLOCK`), taken now.
    pub fn from_process() -> EnvSource {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| {
                let k = k.into_string().ok()?;
                (k.starts_with(vars::PREFIX) || k.starts_with("TELERING_")).then_some((k, v))
            })
            .collect();
        EnvSource {
            vars: Arc::new(vars),
        }
    }

    /// The given variables.
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> EnvSource
    where
        K: Into<String>,
        V: Into<OsString>,
    {
        EnvSource {
            vars: Arc::new(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
        }
    }

    /// A copy with `name` set to `value`.
    pub fn with(&self, name: impl Into<String>, value: impl Into<OsString>) -> EnvSource {
        let mut vars = (*self.vars).clone();
        vars.insert(name.into(), value.into());
        EnvSource {
            vars: Arc::new(vars),
        }
    }

    /// The value of `name`, or [`ConfigError::NotUnicode`] if it is not UTF-8.
    pub fn get(&self, name: &str) -> Result<Option<String>, ConfigError> {
        match self.vars.get(name) {
            None => Ok(None),
            Some(v) => v
                .clone()
                .into_string()
                .map(Some)
                .map_err(|_| ConfigError::NotUnicode {
                    variable: name.to_string(),
                }),
        }
    }

    /// The value of `name` by [`crate::parse::value`]: trimmed, `None` when unset or
    /// blank.
    ///
    /// ```
    /// use telering_std::EnvSource;
    /// let env = EnvSource::from_pairs([("A", " 1024\n"), ("B", "  ")]);
    /// assert_eq!(env.get_trimmed("A").unwrap().as_deref(), Some("1024"));
    /// assert_eq!(env.get_trimmed("B").unwrap(), None);
    /// ```
    pub fn get_trimmed(&self, name: &str) -> Result<Option<String>, ConfigError> {
        Ok(self
            .get(name)?
            .and_then(|v| crate::parse::value(&v).map(str::to_string)))
    }

    /// The names of the variables that are set, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(String::as_str)
    }
}

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
    /// `NIXL_TELEMETRY_BUFFER_SIZE` is above [`MAX_BUFFER_SIZE`].
    BufferSizeTooLarge {
        /// The value given.
        value: u64,
    },
    /// `NIXL_TELEMETRY_RUN_INTERVAL` is not a positive number of milliseconds.
    RunIntervalInvalid {
        /// The value given.
        value: String,
    },
    /// `NIXL_TELEMETRY_RUN_INTERVAL` is longer than [`MAX_RUN_INTERVAL`].
    RunIntervalTooLong {
        /// The value given, in milliseconds.
        value: String,
    },
    /// `NIXL_TELEMETRY_EXPORTER` names no registered exporter.
    UnknownExporter {
        /// The name given.
        name: String,
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
    /// The exporter failed to start.
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
            ConfigError::UnknownExporter { name, available } => write!(
                f,
                "{EXPORTER}={name} is not a known exporter; use one of: {}",
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
            ConfigError::ExporterStart { exporter, source } => write!(
                f,
                "telemetry exporter `{exporter}` ({EXPORTER}, or `buffer` when only {DIR} is set) could not start: {source}"
            ),
            ConfigError::RingLayout(e) => e.fmt(f),
            ConfigError::ClockUnknown { value } => write!(
                f,
                "{CLOCK}={value} is not a clock; use one of: {}",
                ClockSource::CHOICES
            ),
            ConfigError::ClockUnreliable { source } => write!(
                f,
                "{CLOCK}=tsc: the CPU counter cannot stamp events here: {source}; use {CLOCK}=auto or realtime"
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
                "{}: pattern `{pattern}` matches no built-in event (it may still match custom events)",
                vars::ENABLED_METRICS
            ),
        }
    }
}

/// Parses a `NIXL_TELEMETRY_ENABLE` value: whether it enables, and a warning for a
/// value that is neither an enabling nor a disabling word.
///
/// ```
/// use telering_std::config::parse_enable;
/// assert_eq!(parse_enable(" TRUE ").0, true);
/// assert_eq!(parse_enable("off"), (false, None));
/// let (on, warning) = parse_enable("ture");
/// assert!(!on && warning.is_some());
/// ```
pub fn parse_enable(value: &str) -> (bool, Option<ConfigWarning>) {
    match crate::parse::boolean(value) {
        Some(on) => (on, None),
        None if value.trim().is_empty() => (false, None),
        None => (
            false,
            Some(ConfigWarning::UnrecognizedEnable {
                value: value.trim().to_string(),
            }),
        ),
    }
}

/// Checks a buffer size: a power of two from 2 to [`MAX_BUFFER_SIZE`].
///
/// ```
/// use telering_std::config::check_buffer_size;
/// assert_eq!(check_buffer_size(1024).unwrap(), 1024);
/// assert_eq!(
///     check_buffer_size(1000).unwrap_err().to_string(),
///     "NIXL_TELEMETRY_BUFFER_SIZE=1000 is not a power of two; use 512 or 1024"
/// );
/// ```
pub fn check_buffer_size(value: u64) -> Result<u32, ConfigError> {
    if value < 2 {
        Err(ConfigError::BufferSizeTooSmall { value })
    } else if value > MAX_BUFFER_SIZE as u64 {
        Err(ConfigError::BufferSizeTooLarge { value })
    } else if !value.is_power_of_two() {
        let above = value.next_power_of_two();
        Err(ConfigError::BufferSizeNotPowerOfTwo {
            value,
            below: above / 2,
            above,
        })
    } else {
        Ok(value as u32)
    }
}

/// What a built [`Telemetry`](crate::Telemetry) does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Nothing is recorded or captured.
    Disabled,
    /// Per-transfer and backend telemetry are captured in process; nothing is
    /// exported and no flush thread runs.
    Capture,
    /// Events are recorded and flushed to the named exporter (lower case).
    Export {
        /// The exporter's registered name.
        exporter: String,
    },
}

/// The configuration after every rule was applied ([`TelemetryBuilder::resolve`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedConfig {
    /// The agent's name.
    pub agent_name: String,
    /// What the telemetry does.
    pub mode: Mode,
    /// The allowlist patterns (empty: everything).
    pub enabled_metrics: String,
    /// Events in the exporter's cyclic buffer.
    pub buffer_size: u32,
    /// Events each recording thread's lane holds before it drops.
    pub lane_capacity: u32,
    /// How often the flush thread runs.
    pub run_interval: Duration,
    /// The telemetry directory.
    pub dir: Option<PathBuf>,
    /// The clock stamping events, resolved: [`ClockSource::Tsc`],
    /// [`ClockSource::Realtime`] or [`ClockSource::RealtimeCoarse`], never `Auto`.
    pub clock: ClockSource,
    /// The layout of the ring file the `buffer` exporter writes.
    pub ring_layout: RingLayout,
}

/// Builds a [`Telemetry`](crate::Telemetry). Every `NIXL_TELEMETRY_*` variable has a
/// method here; [`TelemetryBuilder::from_env`] reads them.
///
/// ```
/// use std::time::Duration;
/// use telering_std::{EnvSource, Telemetry, config::Mode};
/// let dir = tempfile::tempdir().unwrap();
/// let env = EnvSource::from_pairs([
///     ("NIXL_TELEMETRY_ENABLE", "yes"),
///     ("NIXL_TELEMETRY_EXPORTER", "CSV"),
///     ("NIXL_TELEMETRY_RUN_INTERVAL", "50"),
/// ]);
/// // The environment first, then the program's own settings on top.
/// let builder = Telemetry::builder("agent-1")
///     .apply_env(&env)
///     .unwrap()
///     .dir(dir.path())
///     .run_interval(Duration::from_millis(10));
/// let config = builder.resolve().unwrap();
/// assert_eq!(config.mode, Mode::Export { exporter: "csv".into() });
/// assert_eq!(config.run_interval, Duration::from_millis(10));
/// let telemetry = builder.build().unwrap();
/// telemetry.update_tx_bytes(4096);
/// drop(telemetry); // flushes everything
/// let csv = std::fs::read_to_string(dir.path().join("agent-1.csv")).unwrap();
/// assert!(csv.contains(",TRANSFER,agent_tx_bytes,4096\r\n"));
/// ```
#[derive(Clone, Debug)]
pub struct TelemetryBuilder {
    pub(crate) agent_name: String,
    enabled: bool,
    capture: bool,
    enabled_metrics: String,
    buffer_size: u64,
    lane_capacity: Option<u64>,
    run_interval: Duration,
    exporter: Option<String>,
    dir: Option<PathBuf>,
    pub(crate) registry: ExporterRegistry,
    pub(crate) env: EnvSource,
    clock: ClockSource,
    clock_probe: Option<ClockProbe>,
    ring_layout: RingLayout,
    warnings: Vec<ConfigWarning>,
}

impl TelemetryBuilder {
    /// Defaults: disabled, everything allowed, 4096 events, 100 ms, no exporter, no
    /// directory, the built-in exporters, [`ClockSource::Auto`].
    pub fn new(agent_name: impl Into<String>) -> TelemetryBuilder {
        TelemetryBuilder {
            agent_name: agent_name.into(),
            enabled: false,
            capture: false,
            enabled_metrics: String::new(),
            buffer_size: DEFAULT_BUFFER_SIZE as u64,
            lane_capacity: None,
            run_interval: DEFAULT_RUN_INTERVAL,
            exporter: None,
            dir: None,
            registry: ExporterRegistry::with_builtins(),
            env: EnvSource::empty(),
            clock: ClockSource::default(),
            clock_probe: None,
            ring_layout: RingLayout::V1,
            warnings: Vec::new(),
        }
    }

    /// A builder for `agent_name` configured from `env` (see [`apply_env`](Self::apply_env)).
    pub fn from_env(
        agent_name: impl Into<String>,
        env: &EnvSource,
    ) -> Result<TelemetryBuilder, ConfigError> {
        TelemetryBuilder::new(agent_name).apply_env(env)
    }

    /// Applies every `NIXL_TELEMETRY_*` variable set in `env` through the matching
    /// method, and keeps `env` for exporter-specific variables. Values are read by
    /// the rule of [`crate::parse`]: trimmed, and unset (or blank) variables leave
    /// the builder's value alone.
    pub fn apply_env(mut self, env: &EnvSource) -> Result<TelemetryBuilder, ConfigError> {
        use crate::parse::{IntegerError, unsigned};
        if let Some(v) = env.get_trimmed(vars::ENABLE)? {
            let (on, warning) = parse_enable(&v);
            self.warnings.extend(warning);
            self = self.enabled(on);
        }
        if let Some(v) = env.get_trimmed(vars::ENABLED_METRICS)? {
            self = self.enabled_metrics(&v);
        }
        if let Some(v) = env.get_trimmed(vars::BUFFER_SIZE)? {
            let n = unsigned(&v).map_err(|e| match e {
                IntegerError::NotDecimal => ConfigError::BufferSizeNotANumber { value: v.clone() },
                IntegerError::TooLarge => ConfigError::IntegerTooLarge {
                    variable: vars::BUFFER_SIZE,
                    value: v.clone(),
                    max: MAX_BUFFER_SIZE.into(),
                },
            })?;
            check_buffer_size(n)?;
            self.buffer_size = n;
        }
        if let Some(v) = env.get_trimmed(vars::RUN_INTERVAL)? {
            match unsigned(&v) {
                Ok(ms) if ms > 0 => {
                    if Duration::from_millis(ms) > MAX_RUN_INTERVAL {
                        return Err(ConfigError::RunIntervalTooLong { value: v });
                    }
                    self.run_interval = Duration::from_millis(ms);
                }
                Err(IntegerError::TooLarge) => {
                    return Err(ConfigError::RunIntervalTooLong { value: v });
                }
                _ => return Err(ConfigError::RunIntervalInvalid { value: v }),
            }
        }
        if let Some(v) = env.get_trimmed(vars::EXPORTER)? {
            self = self.exporter(&v);
        }
        if let Some(v) = env.get_trimmed(vars::DIR)? {
            self = self.dir(v);
        }
        if let Some(v) = env.get_trimmed(vars::CLOCK)? {
            self.clock =
                ClockSource::from_name(&v).ok_or(ConfigError::ClockUnknown { value: v })?;
        }
        if let Some(v) = env.get_trimmed(vars::RING_LAYOUT)? {
            self = self.ring_layout(v.parse().map_err(ConfigError::RingLayout)?);
        }
        self.env = env.clone();
        Ok(self)
    }

    /// `NIXL_TELEMETRY_ENABLE`: export events (with the exporter, or `buffer` when a
    /// directory is set).
    pub fn enabled(mut self, on: bool) -> Self {
        self.enabled = on;
        self
    }

    /// The agent configuration's `capture_telemetry`: capture per-transfer and
    /// backend telemetry in process even when exporting is not enabled.
    pub fn capture_telemetry(mut self, on: bool) -> Self {
        self.capture = on;
        self
    }

    /// `NIXL_TELEMETRY_ENABLED_METRICS`: comma-separated `fnmatch` patterns of event
    /// names to record; empty records everything. A pattern that matches no built-in
    /// event adds a [`ConfigWarning`].
    pub fn enabled_metrics(mut self, patterns: &str) -> Self {
        self.enabled_metrics = patterns.to_string();
        self.warnings
            .retain(|w| !matches!(w, ConfigWarning::MetricMatchesNoBuiltin { .. }));
        for pattern in Allowlist::new(patterns).patterns() {
            let single = Allowlist::new(pattern);
            if !builtin::all_builtin_names().any(|n| single.allows(n)) {
                self.warnings.push(ConfigWarning::MetricMatchesNoBuiltin {
                    pattern: pattern.to_string(),
                });
            }
        }
        self
    }

    /// `TELERING_RING_LAYOUT`: the layout of the ring file the `buffer` exporter
    /// writes — NIXL's version 1 (the default: timestamps, categories and names) or
    /// version 4, which NIXL 1.3.1 and later read (events it cannot hold, such as
    /// custom events, are counted, not written; see telering-shm's `RingLayout`).
    ///
    /// ```
    /// use telering_shm::RingLayout;
    /// use telering_std::{EnvSource, Telemetry};
    /// let env = EnvSource::from_pairs([("TELERING_RING_LAYOUT", "v4")]);
    /// let config = Telemetry::builder("agent").apply_env(&env).unwrap().resolve().unwrap();
    /// assert_eq!(config.ring_layout, RingLayout::V4);
    /// let bad = EnvSource::from_pairs([("TELERING_RING_LAYOUT", "v5")]);
    /// let error = Telemetry::builder("agent").apply_env(&bad).unwrap_err();
    /// assert!(error.to_string().starts_with("TELERING_RING_LAYOUT=v5 is not a ring layout; use v1"));
    /// let config = Telemetry::builder("agent").ring_layout(RingLayout::V4).resolve().unwrap();
    /// assert_eq!(config.ring_layout, RingLayout::V4);
    /// ```
    pub fn ring_layout(mut self, layout: RingLayout) -> Self {
        self.ring_layout = layout;
        self
    }

    /// `NIXL_TELEMETRY_BUFFER_SIZE`: events in the cyclic buffer, a power of two from 2
    /// to [`MAX_BUFFER_SIZE`] (checked by [`resolve`](Self::resolve)).
    pub fn buffer_size(mut self, events: u32) -> Self {
        self.buffer_size = events as u64;
        self
    }

    /// Events each recording thread's lane holds (a power of two from 2 to
    /// [`MAX_BUFFER_SIZE`]); defaults to the buffer size. A lane is drained every run
    /// interval, so it must hold what one thread records in that time.
    pub fn lane_capacity(mut self, events: u32) -> Self {
        self.lane_capacity = Some(events as u64);
        self
    }

    /// `NIXL_TELEMETRY_RUN_INTERVAL`: how often events are flushed (1 ms to a day).
    pub fn run_interval(mut self, interval: Duration) -> Self {
        self.run_interval = interval;
        self
    }

    /// `NIXL_TELEMETRY_EXPORTER`: the exporter's registered name, any case.
    pub fn exporter(mut self, name: &str) -> Self {
        self.exporter = Some(name.trim().to_string());
        self
    }

    /// `NIXL_TELEMETRY_DIR`: the directory for the exporter's files, created if
    /// missing when the telemetry is built.
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// The exporters to choose from (default: [`ExporterRegistry::with_builtins`]).
    pub fn registry(mut self, registry: ExporterRegistry) -> Self {
        self.registry = registry;
        self
    }

    /// The registry, to add exporters to.
    pub fn registry_mut(&mut self) -> &mut ExporterRegistry {
        &mut self.registry
    }

    /// The environment handed to exporters for their own variables (set by
    /// [`apply_env`](Self::apply_env)).
    pub fn env(mut self, env: EnvSource) -> Self {
        self.env = env;
        self
    }

    /// `TELERING_CLOCK`: the clock stamping events (default [`ClockSource::Auto`]: the
    /// CPU counter where trusted, else `CLOCK_REALTIME`; see [`crate::clock`]).
    pub fn clock(mut self, clock: ClockSource) -> Self {
        self.clock = clock;
        self
    }

    /// What decides whether the CPU counter is trusted (default:
    /// [`ClockProbe::system`]); for programs and tests that know better.
    ///
    /// ```
    /// use telering_std::{ClockSource, Telemetry, clock::ClockProbe};
    /// let hpet = ClockProbe { invariant_tsc: true, clocksource: Some("hpet".into()) };
    /// let b = Telemetry::builder("a").clock_probe(hpet);
    /// assert_eq!(b.resolve().unwrap().clock, ClockSource::Realtime);
    /// let e = b.clock(ClockSource::Tsc).resolve().unwrap_err();
    /// assert!(e.to_string().starts_with("TELERING_CLOCK=tsc"), "{e}");
    /// ```
    pub fn clock_probe(mut self, probe: ClockProbe) -> Self {
        self.clock_probe = Some(probe);
        self
    }

    /// The clock asked for and the probe that decides it, for the build's log line.
    pub(crate) fn clock_choice(&self) -> (ClockSource, ClockProbe) {
        let probe = self.clock_probe.clone().unwrap_or_else(ClockProbe::system);
        (self.clock, probe)
    }

    /// Warnings gathered so far; [`build`](Self::build) logs them.
    pub fn warnings(&self) -> &[ConfigWarning] {
        &self.warnings
    }

    /// Applies the rules (see the module docs) and checks every value, without
    /// touching the file system.
    pub fn resolve(&self) -> Result<ResolvedConfig, ConfigError> {
        check_agent_name(&self.agent_name)?;
        let buffer_size = check_buffer_size(self.buffer_size)?;
        let lane_capacity = match self.lane_capacity {
            Some(n) => check_buffer_size(n)?,
            None => buffer_size,
        };
        if self.run_interval < Duration::from_millis(1) {
            return Err(ConfigError::RunIntervalInvalid {
                value: self.run_interval.as_millis().to_string(),
            });
        }
        if self.run_interval > MAX_RUN_INTERVAL {
            return Err(ConfigError::RunIntervalTooLong {
                value: self.run_interval.as_millis().to_string(),
            });
        }
        let clock = match &self.clock_probe {
            Some(probe) => self.clock.resolve(probe),
            None => self.clock.resolve(&ClockProbe::system()),
        }
        .map_err(|source| ConfigError::ClockUnreliable { source })?;
        let mode = if self.enabled {
            match (&self.exporter, &self.dir) {
                (Some(name), _) => {
                    if !self.registry.contains(name) {
                        return Err(ConfigError::UnknownExporter {
                            name: name.clone(),
                            available: self.registry.names(),
                        });
                    }
                    Mode::Export {
                        exporter: name.to_ascii_lowercase(),
                    }
                }
                (None, Some(_)) => Mode::Export {
                    exporter: "buffer".to_string(),
                },
                (None, None) => Mode::Capture,
            }
        } else if self.capture {
            Mode::Capture
        } else {
            Mode::Disabled
        };
        Ok(ResolvedConfig {
            agent_name: self.agent_name.clone(),
            mode,
            enabled_metrics: self.enabled_metrics.clone(),
            buffer_size,
            lane_capacity,
            run_interval: self.run_interval,
            dir: self.dir.clone(),
            clock,
            ring_layout: self.ring_layout,
        })
    }

    /// Resolves the configuration, creates the directory, starts the exporter and the
    /// flush thread. See [`Telemetry`](crate::Telemetry).
    pub fn build(self) -> Result<crate::Telemetry, ConfigError> {
        crate::Telemetry::from_builder(self)
    }

    /// Builds the telemetry without ever failing, for a program that runs on whatever
    /// happens: when the configuration is unusable or the exporter cannot start (a
    /// port in use, a directory that cannot be written), the error is logged and
    /// returned next to telemetry that captures in process without exporting
    /// (per-transfer and backend telemetry keep working), or, if even that
    /// configuration is invalid, disabled telemetry.
    ///
    /// ```
    /// use telering_std::{config::Mode, Telemetry};
    /// let (telemetry, error) = Telemetry::builder("agent")
    ///     .enabled(true)
    ///     .exporter("csv") // but no directory
    ///     .build_or_capture();
    /// assert!(error.unwrap().to_string().contains("NIXL_TELEMETRY_DIR"));
    /// assert_eq!(telemetry.mode(), &Mode::Capture);
    /// ```
    pub fn build_or_capture(self) -> (crate::Telemetry, Option<ConfigError>) {
        let agent_name = self.agent_name.clone();
        let fallback = self.clone().enabled(false).capture_telemetry(true);
        match self.build() {
            Ok(telemetry) => (telemetry, None),
            Err(error) => {
                log::error!("{error}; telemetry is captured in process and not exported");
                let telemetry = fallback
                    .build()
                    .unwrap_or_else(|_| crate::Telemetry::disabled(agent_name));
                (telemetry, Some(error))
            }
        }
    }
}

/// The agent name must be a file name of its own in the telemetry directory — the
/// ring file's rule (telering-shm) — and leave room for the CSV exporter's `.csv`.
fn check_agent_name(name: &str) -> Result<(), ConfigError> {
    const CSV_SUFFIX: usize = ".csv".len();
    let reason = match telering_shm::validate_agent_name(name) {
        Err(telering_shm::ShmError::InvalidAgentName { reason, .. }) => Some(reason),
        Err(_) => Some("it cannot name a file"),
        Ok(()) if name.len() + CSV_SUFFIX > telering_shm::MAX_AGENT_NAME_LEN => {
            Some("it is longer than 251 bytes, which leaves no room for `.csv`")
        }
        Ok(()) => None,
    };
    match reason {
        Some(reason) => Err(ConfigError::AgentName {
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> EnvSource {
        EnvSource::from_pairs(pairs.iter().map(|&(k, v)| (k, v)))
    }

    fn resolve(pairs: &[(&str, &str)]) -> Result<ResolvedConfig, ConfigError> {
        TelemetryBuilder::from_env("agent", &env(pairs))?.resolve()
    }

    fn export(exporter: &str) -> Mode {
        Mode::Export {
            exporter: exporter.to_string(),
        }
    }

    #[test]
    fn every_enabling_word_enables_in_any_case_and_with_whitespace() {
        for word in crate::parse::TRUE_WORDS {
            for v in [
                word.to_string(),
                word.to_ascii_uppercase(),
                format!("  {word}\t"),
            ] {
                let b = TelemetryBuilder::from_env("a", &env(&[(vars::ENABLE, &v)])).unwrap();
                assert!(b.warnings().is_empty(), "{v:?}");
                assert_eq!(b.resolve().unwrap().mode, Mode::Capture, "{v:?}");
            }
        }
    }

    #[test]
    fn disabling_words_and_unset_disable_without_warning() {
        assert_eq!(resolve(&[]).unwrap().mode, Mode::Disabled);
        for v in crate::parse::FALSE_WORDS.into_iter().chain(["", "  "]) {
            let b = TelemetryBuilder::from_env("a", &env(&[(vars::ENABLE, v)])).unwrap();
            assert!(b.warnings().is_empty(), "{v:?}");
            assert_eq!(b.resolve().unwrap().mode, Mode::Disabled);
        }
    }

    #[test]
    fn an_unrecognized_enable_value_disables_and_warns_naming_it() {
        let b = TelemetryBuilder::from_env("a", &env(&[(vars::ENABLE, "ture")])).unwrap();
        assert_eq!(b.resolve().unwrap().mode, Mode::Disabled);
        assert_eq!(
            b.warnings(),
            [ConfigWarning::UnrecognizedEnable {
                value: "ture".into()
            }]
        );
        let text = b.warnings()[0].to_string();
        assert!(text.starts_with("NIXL_TELEMETRY_ENABLE=ture "), "{text}");
    }

    #[test]
    fn metric_patterns_matching_no_builtin_warn_and_are_kept() {
        let b = TelemetryBuilder::from_env(
            "a",
            &env(&[(
                vars::ENABLED_METRICS,
                " agent_tx_*, my_counter ,NIXL_ERR_*,, ",
            )]),
        )
        .unwrap();
        assert_eq!(
            b.warnings(),
            [ConfigWarning::MetricMatchesNoBuiltin {
                pattern: "my_counter".into()
            }]
        );
        // Trimmed, as every value is; the allowlist skips the empty items.
        assert_eq!(
            b.resolve().unwrap().enabled_metrics,
            "agent_tx_*, my_counter ,NIXL_ERR_*,,"
        );
        let b = TelemetryBuilder::from_env("a", &env(&[(vars::ENABLED_METRICS, " ")])).unwrap();
        assert!(b.warnings().is_empty());
    }

    #[test]
    fn buffer_size_must_be_a_power_of_two_within_bounds() {
        assert_eq!(resolve(&[]).unwrap().buffer_size, 4096);
        assert_eq!(
            resolve(&[(vars::BUFFER_SIZE, " 2 ")]).unwrap().buffer_size,
            2
        );
        let max = MAX_BUFFER_SIZE.to_string();
        assert_eq!(
            resolve(&[(vars::BUFFER_SIZE, &max)]).unwrap().buffer_size,
            MAX_BUFFER_SIZE
        );
        let cases = [
            (
                "1000",
                "NIXL_TELEMETRY_BUFFER_SIZE=1000 is not a power of two; use 512 or 1024",
            ),
            (
                "0",
                "NIXL_TELEMETRY_BUFFER_SIZE=0 is too small; use 2 or a larger power of two, such as 4096",
            ),
            (
                "1",
                "NIXL_TELEMETRY_BUFFER_SIZE=1 is too small; use 2 or a larger power of two, such as 4096",
            ),
            (
                "2097152",
                "NIXL_TELEMETRY_BUFFER_SIZE=2097152 is above the maximum; use 1048576 or a smaller power of two",
            ),
            (
                "-4",
                "NIXL_TELEMETRY_BUFFER_SIZE=-4 is not a number; use a power of two from 2 to 1048576, such as 4096",
            ),
            (
                "lots",
                "NIXL_TELEMETRY_BUFFER_SIZE=lots is not a number; use a power of two from 2 to 1048576, such as 4096",
            ),
        ];
        for (value, message) in cases {
            let err = resolve(&[(vars::BUFFER_SIZE, value)]).unwrap_err();
            assert_eq!(err.to_string(), message);
        }
        let err = TelemetryBuilder::new("a")
            .buffer_size(3)
            .resolve()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "NIXL_TELEMETRY_BUFFER_SIZE=3 is not a power of two; use 2 or 4"
        );
    }

    #[test]
    fn run_interval_must_be_a_positive_number_of_milliseconds() {
        assert_eq!(
            resolve(&[]).unwrap().run_interval,
            Duration::from_millis(100)
        );
        assert_eq!(
            resolve(&[(vars::RUN_INTERVAL, "250")])
                .unwrap()
                .run_interval,
            Duration::from_millis(250)
        );
        let err = resolve(&[(vars::RUN_INTERVAL, "86400001")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "NIXL_TELEMETRY_RUN_INTERVAL=86400001 is longer than a day; use at most 86400000 milliseconds"
        );
        assert_eq!(
            resolve(&[(vars::RUN_INTERVAL, "86400000")])
                .unwrap()
                .run_interval,
            MAX_RUN_INTERVAL
        );
        let err = resolve(&[(vars::RUN_INTERVAL, "99999999999999999999")]).unwrap_err();
        assert!(
            matches!(&err, ConfigError::RunIntervalTooLong { .. }),
            "{err}"
        );
        for value in ["0", "-5", "fast", "1.5", "+100", "1e2"] {
            let err = resolve(&[(vars::RUN_INTERVAL, value)]).unwrap_err();
            assert!(
                matches!(&err, ConfigError::RunIntervalInvalid { value: v } if v == value),
                "{err}"
            );
            assert!(
                err.to_string()
                    .starts_with(&format!("NIXL_TELEMETRY_RUN_INTERVAL={value} is not")),
                "{err}"
            );
        }
        let err = TelemetryBuilder::new("a")
            .run_interval(Duration::ZERO)
            .resolve()
            .unwrap_err();
        assert!(err.to_string().contains("NIXL_TELEMETRY_RUN_INTERVAL=0"));
    }

    #[test]
    fn exporter_names_match_in_any_case_and_unknown_ones_list_the_choices() {
        let on = (vars::ENABLE, "1");
        assert_eq!(
            resolve(&[on, (vars::EXPORTER, "Csv")]).unwrap().mode,
            export("csv")
        );
        assert_eq!(
            resolve(&[on, (vars::EXPORTER, " NOP ")]).unwrap().mode,
            export("nop")
        );
        let err = resolve(&[on, (vars::EXPORTER, "prometheus")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "NIXL_TELEMETRY_EXPORTER=prometheus is not a known exporter; use one of: buffer, csv, nop"
        );
    }

    #[test]
    fn a_registered_exporter_can_be_chosen() {
        fn factory(
            ctx: &crate::export::ExporterContext,
        ) -> Result<Box<dyn crate::export::Exporter>, ExportError> {
            crate::export::NopExporter::factory(ctx)
        }
        let mut registry = ExporterRegistry::with_builtins();
        registry.register("Prometheus", factory);
        let b = TelemetryBuilder::new("a")
            .registry(registry)
            .apply_env(&env(&[(vars::ENABLE, "y"), (vars::EXPORTER, "PROMETHEUS")]))
            .unwrap();
        assert_eq!(b.resolve().unwrap().mode, export("prometheus"));
    }

    #[test]
    fn directory_without_exporter_selects_the_buffer_exporter() {
        let r = resolve(&[(vars::ENABLE, "y"), (vars::DIR, "/tmp/t")]).unwrap();
        assert_eq!(r.mode, export("buffer"));
        assert_eq!(r.dir, Some(PathBuf::from("/tmp/t")));
        // An explicit exporter wins over the default.
        let r = resolve(&[
            (vars::ENABLE, "y"),
            (vars::DIR, "/tmp/t"),
            (vars::EXPORTER, "csv"),
        ])
        .unwrap();
        assert_eq!(r.mode, export("csv"));
    }

    #[test]
    fn enabled_without_exporter_or_directory_captures_in_process() {
        let r = resolve(&[(vars::ENABLE, "y"), (vars::DIR, "  ")]).unwrap();
        assert_eq!(r.mode, Mode::Capture);
    }

    #[test]
    fn capture_telemetry_with_environment_disabled_captures_without_exporting() {
        let b = TelemetryBuilder::new("a")
            .capture_telemetry(true)
            .apply_env(&env(&[
                (vars::ENABLE, "no"),
                (vars::EXPORTER, "csv"),
                (vars::DIR, "/tmp/t"),
            ]))
            .unwrap();
        assert_eq!(b.resolve().unwrap().mode, Mode::Capture);
    }

    #[test]
    fn flags_applied_after_the_environment_win() {
        let b = TelemetryBuilder::from_env(
            "a",
            &env(&[(vars::ENABLE, "y"), (vars::BUFFER_SIZE, "64")]),
        )
        .unwrap()
        .buffer_size(128)
        .enabled(false);
        let r = b.resolve().unwrap();
        assert_eq!((r.buffer_size, r.mode), (128, Mode::Disabled));
    }

    /// The rule of `crate::parse`, applied to every numeric variable: trimmed, blank
    /// is unset, and only plain decimal digits are a number.
    #[test]
    fn every_numeric_variable_follows_the_one_parsing_rule() {
        for (variable, default) in [(vars::BUFFER_SIZE, 4096u64), (vars::RUN_INTERVAL, 100)] {
            let read = |v: &str| {
                resolve(&[(variable, v)]).map(|r| {
                    if variable == vars::BUFFER_SIZE {
                        u64::from(r.buffer_size)
                    } else {
                        r.run_interval.as_millis() as u64
                    }
                })
            };
            for (value, want) in [
                ("1024", Some(1024)),
                (" 1024", Some(1024)),
                ("1024\n", Some(1024)),
                ("\t1024 ", Some(1024)),
                ("01024", Some(1024)),
                ("", Some(default)),
                ("  \n", Some(default)),
                ("+1024", None),
                ("-1024", None),
                ("1024.0", None),
                ("1e3", None),
                ("0x400", None),
                ("1_024", None),
                ("1024ms", None),
                ("18446744073709551616", None),
            ] {
                match (read(value), want) {
                    (Ok(got), Some(want)) => assert_eq!(got, want, "{variable}={value:?}"),
                    (Err(e), None) => {
                        let text = e.to_string();
                        assert!(
                            text.starts_with(&format!("{variable}={}", value.trim())),
                            "{variable}={value:?}: {text}"
                        );
                    }
                    (got, want) => panic!("{variable}={value:?}: {got:?}, expected {want:?}"),
                }
            }
        }
        // Blank is unset for the other variables too.
        let r = resolve(&[
            (vars::ENABLE, " "),
            (vars::EXPORTER, "\n"),
            (vars::DIR, " "),
            (vars::ENABLED_METRICS, "  "),
        ])
        .unwrap();
        assert_eq!(
            (r.mode, r.dir, r.enabled_metrics),
            (Mode::Disabled, None, String::new())
        );
        // Trimmed, the directory too.
        let r = resolve(&[(vars::ENABLE, " yes\n"), (vars::DIR, " /tmp/t\n")]).unwrap();
        assert_eq!(
            (r.mode, r.dir),
            (export("buffer"), Some(PathBuf::from("/tmp/t")))
        );
    }

    #[test]
    fn a_value_that_is_not_utf8_is_an_error_naming_the_variable() {
        use std::os::unix::ffi::OsStringExt;
        let env = EnvSource::from_pairs([(vars::DIR, OsString::from_vec(vec![0x66, 0xff]))]);
        let err = TelemetryBuilder::from_env("a", &env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "NIXL_TELEMETRY_DIR is not valid UTF-8; set it to plain text"
        );
    }

    #[test]
    fn agent_names_that_cannot_name_a_file_are_refused() {
        let too_long_for_csv = "n".repeat(252);
        for bad in ["", ".", "..", "a/b", "a\0b", too_long_for_csv.as_str()] {
            let err = TelemetryBuilder::new(bad).resolve().unwrap_err();
            assert!(matches!(err, ConfigError::AgentName { .. }), "{bad:?}");
        }
        assert!(TelemetryBuilder::new("n".repeat(251)).resolve().is_ok());
    }

    #[test]
    fn the_process_environment_snapshot_keeps_only_telemetry_variables() {
        let env = EnvSource::from_process();
        assert!(env.names().all(|n| n.starts_with(vars::PREFIX)));
    }
}
