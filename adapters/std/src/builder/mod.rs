//! The [`TelemetryBuilder`]: one method per variable, reading them from an
//! [`EnvSource`], and the rules that resolve the settings into a [`ResolvedConfig`].
//! (Building the [`Telemetry`](crate::Telemetry) itself is the telemetry's side:
//! [`TelemetryBuilder::build`].)
//!
//! The builder reads the variables and their defaults from [`crate::config`] and
//! chooses among the exporters of an [`ExporterRegistry`]; its items keep their
//! public path under `config` (`telering_std::config::TelemetryBuilder`, …). Its
//! parts: `error`, the [`ConfigError`]s and [`ConfigWarning`]s and their messages;
//! `values`, the rules for single values and the [`ResolvedConfig`]; `exporters`,
//! the rules for the exporter list.

mod error;
mod exporters;
#[cfg(test)]
mod tests;
mod values;

pub use self::error::{ConfigError, ConfigWarning};
pub use self::values::{Mode, ResolvedConfig, check_buffer_size, parse_enable};
pub use crate::dir::check as check_dir;

use self::values::check_agent_name;
use crate::clock::{ClockProbe, ClockSource};
use crate::config::EnvSource;
use crate::config::file::Source;
use crate::config::vars::{
    self, DEFAULT_BUFFER_SIZE, DEFAULT_RUN_INTERVAL, MAX_BUFFER_SIZE, MAX_RUN_INTERVAL,
};
use crate::export::ExporterRegistry;
use std::path::PathBuf;
use std::time::Duration;
use telering_core::{Allowlist, builtin};
use telering_shm::RingLayout;

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
    /// The variable (or flag) that named `exporter`, for its errors.
    pub(crate) exporter_variable: String,
    dir: Option<PathBuf>,
    pub(crate) registry: ExporterRegistry,
    pub(crate) env: EnvSource,
    clock: ClockSource,
    clock_probe: Option<ClockProbe>,
    ring_layout: RingLayout,
    early_flush: bool,
    warnings: Vec<ConfigWarning>,
    /// Route bound and slow transfers kept ([`crate::route`]).
    pub(crate) routes: crate::route::RouteLimits,
}

impl TelemetryBuilder {
    /// Defaults: disabled, everything allowed, 4096 events, 100 ms, no exporter, no
    /// directory, the built-in exporters, [`ClockSource::Auto`].
    ///
    /// ```
    /// use telering_std::{Mode, TelemetryBuilder};
    /// let config = TelemetryBuilder::new("agent").resolve().unwrap();
    /// assert_eq!((config.mode, config.buffer_size), (Mode::Disabled, 4096));
    /// ```
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
            exporter_variable: vars::EXPORTER.to_string(),
            dir: None,
            registry: ExporterRegistry::with_builtins(),
            env: EnvSource::empty(),
            clock: ClockSource::default(),
            clock_probe: None,
            ring_layout: RingLayout::V1,
            early_flush: true,
            warnings: Vec::new(),
            routes: crate::route::RouteLimits::default(),
        }
    }

    /// A builder for `agent_name` configured from `env` (see [`apply_env`](Self::apply_env)).
    ///
    /// ```
    /// use telering_std::{EnvSource, Mode, TelemetryBuilder};
    /// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_ENABLE", "y"), ("NIXL_TELEMETRY_EXPORTER", "nop")]);
    /// let config = TelemetryBuilder::from_env("agent", &env).unwrap().resolve().unwrap();
    /// assert_eq!(config.mode, Mode::Export { exporter: "nop".into() });
    /// ```
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
    ///
    /// ```
    /// use telering_std::{EnvSource, TelemetryBuilder};
    /// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_BUFFER_SIZE", " 512\n")]);
    /// let b = TelemetryBuilder::new("agent").buffer_size(64).apply_env(&env).unwrap();
    /// assert_eq!(b.resolve().unwrap().buffer_size, 512);
    /// let bad = EnvSource::from_pairs([("NIXL_TELEMETRY_BUFFER_SIZE", "1000")]);
    /// assert!(TelemetryBuilder::new("agent").apply_env(&bad).is_err());
    /// ```
    pub fn apply_env(mut self, env: &EnvSource) -> Result<TelemetryBuilder, ConfigError> {
        const READ: [&str; 10] = [
            vars::ENABLE,
            vars::ENABLED_METRICS,
            vars::BUFFER_SIZE,
            vars::RUN_INTERVAL,
            vars::EXPORTER,
            vars::DIR,
            vars::CLOCK,
            vars::RING_LAYOUT,
            vars::ROUTES_MAX,
            vars::SLOW_XFERS,
        ];
        for name in READ {
            if let Some(v) = env.get_trimmed(name)? {
                self = self
                    .apply_var(name, v)
                    .map_err(|e| blame_file(env, name, e))?;
            }
        }
        self.env = env.clone();
        Ok(self)
    }

    /// Applies the value `v` (trimmed, not blank) of the variable `name`.
    fn apply_var(mut self, name: &str, v: String) -> Result<TelemetryBuilder, ConfigError> {
        use crate::parse::{IntegerError, unsigned};
        match name {
            vars::ENABLE => {
                let (on, warning) = parse_enable(&v);
                self.warnings.extend(warning);
                self = self.enabled(on);
            }
            vars::ENABLED_METRICS => self = self.enabled_metrics(&v),
            vars::BUFFER_SIZE => {
                let n = unsigned(&v).map_err(|e| match e {
                    IntegerError::NotDecimal => {
                        ConfigError::BufferSizeNotANumber { value: v.clone() }
                    }
                    IntegerError::TooLarge => ConfigError::IntegerTooLarge {
                        variable: vars::BUFFER_SIZE,
                        value: v.clone(),
                        max: MAX_BUFFER_SIZE.into(),
                    },
                })?;
                check_buffer_size(n)?;
                self.buffer_size = n;
            }
            vars::RUN_INTERVAL => match unsigned(&v) {
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
            },
            vars::EXPORTER => self = self.exporter(&v),
            vars::DIR => self = self.dir(v),
            vars::CLOCK => {
                self.clock =
                    ClockSource::from_name(&v).ok_or(ConfigError::ClockUnknown { value: v })?;
            }
            vars::RING_LAYOUT => {
                self = self.ring_layout(v.parse().map_err(ConfigError::RingLayout)?);
            }
            vars::ROUTES_MAX | vars::SLOW_XFERS => self = self.apply_route_var(name, v)?,
            _ => unreachable!("apply_env reads only the variables matched here"),
        }
        Ok(self)
    }

    /// `NIXL_TELEMETRY_ENABLE`: export events (with the exporter, or `buffer` when a
    /// directory is set).
    ///
    /// ```
    /// use telering_std::{Mode, TelemetryBuilder};
    /// // Enabled without exporter or directory: captured in process.
    /// assert_eq!(TelemetryBuilder::new("a").enabled(true).resolve().unwrap().mode, Mode::Capture);
    /// ```
    pub fn enabled(mut self, on: bool) -> Self {
        self.enabled = on;
        self
    }

    /// The agent configuration's `capture_telemetry`: capture per-transfer and
    /// backend telemetry in process even when exporting is not enabled.
    ///
    /// ```
    /// use telering_std::{Mode, TelemetryBuilder};
    /// let b = TelemetryBuilder::new("a").capture_telemetry(true);
    /// assert_eq!(b.resolve().unwrap().mode, Mode::Capture);
    /// ```
    pub fn capture_telemetry(mut self, on: bool) -> Self {
        self.capture = on;
        self
    }

    /// `NIXL_TELEMETRY_ENABLED_METRICS`: comma-separated `fnmatch` patterns of event
    /// names to record; empty records everything. A pattern that matches no built-in
    /// event adds a [`ConfigWarning`].
    ///
    /// ```
    /// use telering_std::{ConfigWarning, TelemetryBuilder};
    /// let b = TelemetryBuilder::new("a").enabled_metrics("agent_tx_*, my_counter");
    /// assert_eq!(b.resolve().unwrap().enabled_metrics, "agent_tx_*, my_counter");
    /// assert_eq!(b.warnings(), [ConfigWarning::MetricMatchesNoBuiltin { pattern: "my_counter".into() }]);
    /// ```
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
    ///
    /// ```
    /// use telering_std::TelemetryBuilder;
    /// assert_eq!(TelemetryBuilder::new("a").buffer_size(1024).resolve().unwrap().buffer_size, 1024);
    /// assert!(TelemetryBuilder::new("a").buffer_size(1000).resolve().is_err());
    /// ```
    pub fn buffer_size(mut self, events: u32) -> Self {
        self.buffer_size = events as u64;
        self
    }

    /// Events each recording thread's lane holds (a power of two from 2 to
    /// [`MAX_BUFFER_SIZE`]); defaults to the buffer size. A lane is drained every run
    /// interval, so it must hold what one thread records in that time.
    ///
    /// ```
    /// use telering_std::TelemetryBuilder;
    /// let config = TelemetryBuilder::new("a").buffer_size(256).lane_capacity(1 << 16).resolve().unwrap();
    /// assert_eq!((config.buffer_size, config.lane_capacity), (256, 1 << 16));
    /// ```
    pub fn lane_capacity(mut self, events: u32) -> Self {
        self.lane_capacity = Some(events as u64);
        self
    }

    /// Whether a recording thread whose lane is half full wakes the flush thread
    /// before its run interval is over (the default: `true`). Off, the flush runs only
    /// at its interval, at [`Telemetry::flush`](crate::Telemetry::flush) and at the
    /// end, so a lane that fills within one interval drops (counted, as ever): for an
    /// agent that wants its exporters called on schedule only (an exporter whose every
    /// call costs a request), or a test that counts a lane's drops exactly.
    ///
    /// ```
    /// use telering_std::TelemetryBuilder;
    /// assert!(TelemetryBuilder::new("a").resolve().unwrap().early_flush);
    /// assert!(!TelemetryBuilder::new("a").early_flush(false).resolve().unwrap().early_flush);
    /// ```
    pub fn early_flush(mut self, on: bool) -> Self {
        self.early_flush = on;
        self
    }

    /// `NIXL_TELEMETRY_RUN_INTERVAL`: how often events are flushed (1 ms to a day).
    ///
    /// ```
    /// use std::time::Duration;
    /// use telering_std::TelemetryBuilder;
    /// let b = TelemetryBuilder::new("a").run_interval(Duration::from_millis(20));
    /// assert_eq!(b.resolve().unwrap().run_interval, Duration::from_millis(20));
    /// ```
    pub fn run_interval(mut self, interval: Duration) -> Self {
        self.run_interval = interval;
        self
    }

    /// `NIXL_TELEMETRY_EXPORTER`: the exporter's registered name, any case, or a
    /// comma-separated list of names: each of them gets every event, on its own
    /// thread ([`crate::fanout`]). [`resolve`](Self::resolve) refuses a name listed
    /// twice (in any case: [`ConfigError::ExporterListedTwice`]) and an empty entry
    /// ([`ConfigError::ExporterListEmptyEntry`]), as rule 7 of [`crate::parse`] says.
    ///
    /// ```
    /// use telering_std::{Mode, TelemetryBuilder};
    /// let b = TelemetryBuilder::new("a").enabled(true).exporter(" NOP ");
    /// assert_eq!(b.resolve().unwrap().mode, Mode::Export { exporter: "nop".into() });
    /// let b = TelemetryBuilder::new("a").enabled(true).exporter("nop, CSV");
    /// assert_eq!(b.resolve().unwrap().mode, Mode::Export { exporter: "nop,csv".into() });
    /// let e = TelemetryBuilder::new("a").enabled(true).exporter("nop,kafka").resolve().unwrap_err();
    /// assert!(e.to_string().starts_with("NIXL_TELEMETRY_EXPORTER=kafka is not a known exporter"));
    /// let e = TelemetryBuilder::new("a").enabled(true).exporter("nop,NOP").resolve().unwrap_err();
    /// assert!(e.to_string().starts_with("nop is listed twice in NIXL_TELEMETRY_EXPORTER=nop,NOP"));
    /// let e = TelemetryBuilder::new("a").enabled(true).exporter("nop,,csv").resolve().unwrap_err();
    /// assert!(e.to_string().starts_with("NIXL_TELEMETRY_EXPORTER=nop,,csv has an empty entry at position 2"));
    /// ```
    pub fn exporter(self, name: &str) -> Self {
        self.exporter_from(vars::EXPORTER, name)
    }

    /// [`exporter`](Self::exporter) for a list that another variable or a flag
    /// gave (`TELERING_EXPORTERS`, `--exporter`): its errors name `variable`.
    ///
    /// ```
    /// use telering_std::TelemetryBuilder;
    /// let b = TelemetryBuilder::new("a").enabled(true);
    /// let e = b.clone().exporter_from("TELERING_EXPORTERS", "nop,,csv").resolve().unwrap_err();
    /// assert!(e.to_string().starts_with("TELERING_EXPORTERS=nop,,csv has an empty entry at position 2"));
    /// let e = b.exporter_from("--exporter", "").resolve().unwrap_err();
    /// assert!(e.to_string().starts_with("--exporter is empty"), "{e}");
    /// ```
    pub fn exporter_from(mut self, variable: &str, list: &str) -> Self {
        self.exporter = Some(list.trim().to_string());
        self.exporter_variable = variable.to_string();
        self
    }

    /// `NIXL_TELEMETRY_DIR`: the directory for the exporter's files, created if
    /// missing when the telemetry is built.
    ///
    /// ```
    /// use telering_std::{Mode, TelemetryBuilder};
    /// let config = TelemetryBuilder::new("a").enabled(true).dir("/tmp/t").resolve().unwrap();
    /// assert_eq!(config.mode, Mode::Export { exporter: "buffer".into() });
    /// assert_eq!(config.dir, Some("/tmp/t".into()));
    /// ```
    pub fn dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dir = Some(dir.into());
        self
    }

    /// The exporters to choose from (default: [`ExporterRegistry::with_builtins`]).
    ///
    /// ```
    /// use telering_std::{ExporterRegistry, TelemetryBuilder};
    /// let b = TelemetryBuilder::new("a").registry(ExporterRegistry::empty()).enabled(true).exporter("csv");
    /// assert!(b.resolve().unwrap_err().to_string().contains("is not a known exporter"));
    /// ```
    pub fn registry(mut self, registry: ExporterRegistry) -> Self {
        self.registry = registry;
        self
    }

    /// The registry, to add exporters to.
    ///
    /// ```
    /// use telering_std::{Mode, TelemetryBuilder, export::NopExporter};
    /// let mut b = TelemetryBuilder::new("a").enabled(true).exporter("quiet");
    /// b.registry_mut().register("quiet", NopExporter::factory);
    /// assert_eq!(b.resolve().unwrap().mode, Mode::Export { exporter: "quiet".into() });
    /// ```
    pub fn registry_mut(&mut self) -> &mut ExporterRegistry {
        &mut self.registry
    }

    /// The environment handed to exporters for their own variables (set by
    /// [`apply_env`](Self::apply_env)).
    ///
    /// ```
    /// use telering_std::{EnvSource, TelemetryBuilder};
    /// // Kept for exporters' own variables; the builder's settings are unchanged.
    /// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_BUFFER_SIZE", "64")]);
    /// let b = TelemetryBuilder::new("a").env(env);
    /// assert_eq!(b.resolve().unwrap().buffer_size, 4096);
    /// ```
    pub fn env(mut self, env: EnvSource) -> Self {
        self.env = env;
        self
    }

    /// `TELERING_CLOCK`: the clock stamping events (default [`ClockSource::Auto`]: the
    /// CPU counter where trusted, else `CLOCK_REALTIME`; see [`crate::clock`]).
    ///
    /// ```
    /// use telering_std::{ClockSource, TelemetryBuilder};
    /// let b = TelemetryBuilder::new("a").clock(ClockSource::Realtime);
    /// assert_eq!(b.resolve().unwrap().clock, ClockSource::Realtime);
    /// ```
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
    ///
    /// ```
    /// use telering_std::{EnvSource, TelemetryBuilder};
    /// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_ENABLE", "ture")]);
    /// let b = TelemetryBuilder::from_env("a", &env).unwrap();
    /// assert!(b.warnings()[0].to_string().starts_with("NIXL_TELEMETRY_ENABLE=ture"));
    /// ```
    pub fn warnings(&self) -> &[ConfigWarning] {
        &self.warnings
    }

    /// Applies the rules (see the module docs) and checks every value, without
    /// touching the file system.
    ///
    /// ```
    /// use telering_std::TelemetryBuilder;
    /// let e = TelemetryBuilder::new("a/b").resolve().unwrap_err();
    /// assert!(e.to_string().starts_with("agent name \"a/b\""));
    /// ```
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
                (Some(name), _) => self.export_mode(name)?,
                (None, Some(_)) => match self.registry.dir_default() {
                    Some(name) if self.registry.contains(name) => Mode::Export {
                        exporter: name.to_string(),
                    },
                    _ => {
                        return Err(ConfigError::NoDirExporter {
                            available: self.registry.names(),
                        });
                    }
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
            early_flush: self.early_flush,
            routes: self.routes,
        })
    }
}

/// `error`, about variable `name`, naming the configuration file and key when the
/// value came from the file.
pub(super) fn blame_file(env: &EnvSource, name: &str, error: ConfigError) -> ConfigError {
    match env.source(name) {
        Some(Source::File(path)) => ConfigError::FileValue {
            path,
            key: name.to_string(),
            source: Box::new(error),
        },
        _ => error,
    }
}
