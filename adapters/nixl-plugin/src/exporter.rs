//! The exporter NIXL's flush feeds: a [`Telemetry`] of telering-std, configured from
//! the agent's environment, into which each event NIXL hands over is recorded.
//!
//! # How NIXL's events reach telering's exporters
//!
//! NIXL's flush runs every `NIXL_TELEMETRY_RUN_INTERVAL` on one thread and calls
//! `exportEvent` once per event it staged (after 1.4.0 inside `onBatchBegin` /
//! `onBatchEnd`; 1.3.x and 1.4.0 have no hooks). Each call records the event into
//! the telemetry's lane — stamped with telering's clock, named by its type number
//! ([`nixl_type_name`](telering_core::builtin::nixl_type_name)) — and returns; the
//! telemetry's own flush thread hands the lane to the exporters
//! (`TELERING_EXPORTERS`, one thread each) at the same interval. A host with batch
//! hooks forwards each batch at its end: `onBatchEnd` wakes that flush thread
//! ([`Telemetry::flush_soon`]) without waiting for it, so a batch reaches the
//! exporters right after NIXL handed it over rather than up to one interval later.
//! So delivery never waits for a batch hook, works the same on hosts that have none
//! (an event then waits at most one interval in the lane), and a slow collector never
//! blocks NIXL's flush. Dropping the exporter (NIXL destroying its telemetry) flushes
//! everything.
//!
//! # Losses
//!
//! - NIXL's own `AGENT_TELEMETRY_EVENTS_DROPPED` (type 20, events its staging buffer
//!   refused) is not recorded as one event, which a full lane or ring could refuse
//!   and lose its count with it: its whole value is added to the telemetry's losses
//!   ([`Telemetry::add_dropped_upstream`], cause *dropped upstream by NIXL*), so it is
//!   in the statistics, a ring file's trailer (`dropped_staging`, "before the ring"),
//!   Prometheus's and OTLP's `agent_telemetry_events_dropped`, telering's in-band loss
//!   reports (made again until they fit) and the log.
//! - A full lane (more than its capacity between two of telering's flushes) is
//!   counted by the telemetry and reported in-band, as for any telering agent. The
//!   lane holds four of NIXL's batches (`4 × maxEventsBuffered`, at least
//!   `NIXL_TELEMETRY_BUFFER_SIZE`), so two flushes out of phase lose nothing.
//! - A type number no NIXL release defines is counted, reported in-band as one
//!   dropped event, and logged once per number.
//! - What an exporter could not deliver (a collector down, a full ring) is counted
//!   per exporter and logged when the exporter is destroyed.
//! - A bad telering setting leaves a degraded exporter ([`crate::degraded`]) that
//!   counts every event as undelivered.
//!
//! Text telering did not create (the agent's name, exporter names from
//! `TELERING_EXPORTERS`) is logged through [`Escaped`].

use crate::degraded::Degraded;
use log::{info, warn};
use std::fmt;
use telering_core::builtin::NIXL_EVENTS_DROPPED_TYPE;
use telering_core::text::Escaped;
use telering_std::config::Mode;
use telering_std::{ConfigError, EnvError, EnvSource, Recorded, Telemetry, TelemetryBuilder};

/// The variable naming telering's exporters, for example `otlp,prometheus_mp,csv`
/// (`NIXL_TELEMETRY_EXPORTER` names this plug-in, `telering`).
pub const EXPORTERS_VAR: &str = "TELERING_EXPORTERS";

/// Largest lane: 2²⁰ events (56 MiB), as for `NIXL_TELEMETRY_BUFFER_SIZE`.
const MAX_LANE: u64 = 1 << 20;

/// Why no exporter was created; NIXL's `create_exporter` then answers null.
#[derive(Debug)]
#[non_exhaustive]
pub enum CreateError {
    /// A setting is wrong: a variable, the configuration file, the agent name.
    Config(ConfigError),
    /// A variable or NIXL's configuration file could not be read.
    Env(EnvError),
    /// `TELERING_EXPORTERS` names an exporter telering does not have.
    UnknownExporter {
        /// The name given.
        name: String,
        /// The names telering has.
        available: Vec<String>,
    },
    /// Neither `TELERING_EXPORTERS` nor `NIXL_TELEMETRY_DIR` is set: nowhere to export.
    NothingToExport,
    /// `TELERING_EXPORTERS` names this plug-in itself.
    ExportsToItself,
    /// NIXL's agent name is not UTF-8.
    AgentNameNotUtf8,
    /// `TELERING_PLUGIN_STRICT` is not a boolean (the message names it).
    Strict(String),
    /// telering panicked while creating the exporter.
    Panicked,
}

impl fmt::Display for CreateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CreateError::Config(e) => e.fmt(f),
            CreateError::Env(e) => e.fmt(f),
            CreateError::UnknownExporter { name, available } => {
                let name = Escaped::new(name);
                write!(
                    f,
                    "{EXPORTERS_VAR}={name} is not a known exporter; use one of: {} (or put a telering exporter plug-in libtelemetry_exporter_{name}.so in NIXL_PLUGIN_DIR)",
                    available.join(", ")
                )
            }
            CreateError::ExportsToItself => write!(
                f,
                "{EXPORTERS_VAR} names `telering`, this plug-in; name telering's exporters instead, for example {EXPORTERS_VAR}=otlp,prometheus_mp,csv"
            ),
            CreateError::NothingToExport => write!(
                f,
                "{EXPORTERS_VAR} is not set and neither is NIXL_TELEMETRY_DIR; name telering's exporters, for example {EXPORTERS_VAR}=otlp,prometheus_mp,csv"
            ),
            CreateError::AgentNameNotUtf8 => f.write_str("the agent name is not UTF-8"),
            CreateError::Strict(message) => f.write_str(message),
            CreateError::Panicked => f.write_str("telering panicked"),
        }
    }
}

impl std::error::Error for CreateError {}

impl From<ConfigError> for CreateError {
    fn from(e: ConfigError) -> CreateError {
        match e {
            ConfigError::UnknownExporter {
                name, available, ..
            } => CreateError::UnknownExporter { name, available },
            e => CreateError::Config(e),
        }
    }
}

/// Refuses, with the variable's name, a list naming this plug-in or an exporter that
/// is neither telering's nor a telering plug-in in `NIXL_PLUGIN_DIR` (telering-std
/// checks the list again when it builds).
fn check_names(list: &str, registry: &telering_std::ExporterRegistry) -> Result<(), CreateError> {
    let dir = std::env::var_os(telering_std::plugin::PLUGIN_DIR_VAR);
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let name = name.to_ascii_lowercase();
        if name == "telering" {
            return Err(CreateError::ExportsToItself);
        }
        let plugin = dir
            .as_deref()
            .is_some_and(|d| telering_std::plugin::library_path(d.as_ref(), &name).is_file());
        if !registry.contains(&name) && !plugin {
            return Err(CreateError::UnknownExporter {
                name,
                available: registry.names(),
            });
        }
    }
    Ok(())
}

/// One NIXL agent's exporter: its telemetry and what NIXL handed over, or, after a
/// bad setting, a degraded exporter counting what it did not deliver.
#[derive(Debug)]
pub struct PluginExporter {
    telemetry: Option<Telemetry>,
    /// Set (and `telemetry` not) when telering's settings were refused.
    degraded: Option<Box<Degraded>>,
    /// Events NIXL handed over, its loss reports (type 20) left out.
    events: u64,
    /// The sum of NIXL's loss reports: events NIXL itself dropped before export.
    nixl_dropped: u64,
    /// Events of a type number no NIXL release defines.
    unknown_type: u64,
    /// Type numbers already logged as unknown (the first 64).
    logged_unknown: u64,
    batches: u64,
}

impl PluginExporter {
    /// The exporter of NIXL agent `agent_name`, configured from `env`
    /// (`EnvSource::from_process()` in an agent: the process's variables over NIXL's
    /// configuration file): every `NIXL_TELEMETRY_*` variable but
    /// `NIXL_TELEMETRY_EXPORTER` and `NIXL_TELEMETRY_ENABLED_METRICS` (NIXL chose this
    /// plug-in and filtered the events already), `TELERING_*`, and the exporters of
    /// [`EXPORTERS_VAR`] (unset: the ring file in `NIXL_TELEMETRY_DIR`).
    ///
    /// ```
    /// use telering_std::EnvSource;
    /// use telemetry_exporter_telering::PluginExporter;
    /// let env = EnvSource::from_pairs([("TELERING_EXPORTERS", "nop"), ("NIXL_TELEMETRY_EXPORTER", "telering")]);
    /// let mut exporter = PluginExporter::create("agent-0", 4096, &env).unwrap();
    /// assert_eq!(exporter.export(0, 4096), 0); // NIXL_SUCCESS
    /// assert_eq!(exporter.export(99, 1), -2); // NIXL_ERR_INVALID_PARAM: no such type
    /// let stats = exporter.close();
    /// assert_eq!(stats.events_recorded, 2); // the event and the one of no known type,
    /// assert_eq!(stats.events_dropped, 1); // which is counted as dropped
    ///
    /// let env = EnvSource::from_pairs([("TELERING_EXPORTERS", "nop,kafka")]);
    /// let e = PluginExporter::create("agent-0", 4096, &env).unwrap_err();
    /// assert!(e.to_string().starts_with("TELERING_EXPORTERS=kafka is not a known exporter"));
    ///
    /// // A name telering did not create is shown escaped.
    /// let env = EnvSource::from_pairs([("TELERING_EXPORTERS", "kafka\u{1b}[2J\n")]);
    /// let e = PluginExporter::create("agent-0", 4096, &env).unwrap_err();
    /// assert!(e.to_string().starts_with("TELERING_EXPORTERS=kafka\\u{1b}[2j is not a known exporter"), "{e}");
    /// ```
    pub fn create(
        agent_name: &str,
        max_events_buffered: usize,
        env: &EnvSource,
    ) -> Result<PluginExporter, CreateError> {
        // NIXL's variable says `telering`; blank is unset for telering's reading.
        let env = env.with("NIXL_TELEMETRY_EXPORTER", "");
        let exporters = env.get(EXPORTERS_VAR).map_err(CreateError::Env)?;
        let mut builder = TelemetryBuilder::from_env(agent_name, &env)?;
        telering_prometheus::register(builder.registry_mut());
        telering_otlp::register(builder.registry_mut());
        builder = builder.enabled(true).enabled_metrics("");
        if let Some(list) = exporters.as_deref().and_then(telering_std::parse::value) {
            check_names(list, builder.registry_mut())?;
            builder = builder.exporter_from(EXPORTERS_VAR, list);
        }
        let resolved = builder.resolve()?;
        if !matches!(resolved.mode, Mode::Export { .. }) {
            return Err(CreateError::NothingToExport);
        }
        let batches = (max_events_buffered as u64)
            .saturating_add(1)
            .saturating_mul(4);
        let lane = batches
            .next_power_of_two()
            .clamp(resolved.buffer_size as u64, MAX_LANE);
        let telemetry = builder.lane_capacity(lane as u32).build()?;
        info!(
            "telering exports NIXL agent `{}` to {}",
            Escaped::new(agent_name),
            Escaped::new(match telemetry.mode() {
                Mode::Export { exporter } => exporter.as_str(),
                _ => "nothing",
            })
        );
        Ok(PluginExporter {
            telemetry: Some(telemetry),
            degraded: None,
            events: 0,
            nixl_dropped: 0,
            unknown_type: 0,
            logged_unknown: 0,
            batches: 0,
        })
    }

    /// The degraded exporter of NIXL agent `agent_name`, for when
    /// [`create`](Self::create) refused telering's settings with `error`: it records
    /// nothing, counts every event NIXL hands over as undelivered and NIXL's loss
    /// reports as dropped upstream, and repeats `error` at most once a minute while
    /// events come ([`crate::degraded`]). The caller logs `error` first.
    ///
    /// ```
    /// use telemetry_exporter_telering::{CreateError, PluginExporter};
    /// let mut exporter = PluginExporter::degraded(b"agent-0", &CreateError::NothingToExport);
    /// assert!(exporter.is_degraded());
    /// assert_eq!(exporter.export(0, 4096), -3); // NIXL_ERR_BACKEND: not delivered
    /// assert_eq!(exporter.export(20, 1000), 0); // NIXL's loss report: counted
    /// let stats = exporter.close();
    /// assert_eq!((stats.events_undelivered, stats.events_dropped, stats.events_recorded), (1, 1000, 1001));
    /// ```
    pub fn degraded(agent_name: &[u8], error: &CreateError) -> PluginExporter {
        let agent = Escaped::bytes(agent_name).to_string();
        PluginExporter {
            telemetry: None,
            degraded: Some(Box::new(Degraded::new(agent, error.to_string()))),
            events: 0,
            nixl_dropped: 0,
            unknown_type: 0,
            logged_unknown: 0,
            batches: 0,
        }
    }

    /// Whether this is a degraded exporter ([`degraded`](Self::degraded)).
    pub fn is_degraded(&self) -> bool {
        self.degraded.is_some()
    }

    /// Records one event NIXL hands over; answers NIXL's status: `NIXL_SUCCESS` (0),
    /// `NIXL_ERR_BACKEND` (-3) when the lane was full (the event is counted as
    /// dropped) or the exporter is degraded (counted as undelivered),
    /// `NIXL_ERR_INVALID_PARAM` (-2) for an unknown type number (counted as dropped).
    /// NIXL's loss reports (type 20) add their value to the losses and answer
    /// `NIXL_SUCCESS`.
    #[inline]
    pub fn export(&mut self, event_type: u32, value: u64) -> i32 {
        let Some(telemetry) = &self.telemetry else {
            return self.export_degraded(event_type, value);
        };
        if event_type == NIXL_EVENTS_DROPPED_TYPE {
            return self.nixl_loss_report(value);
        }
        self.events += 1;
        match telemetry.record_nixl_type(event_type, value) {
            Some(Recorded::Written) => 0,
            Some(_) => -3,
            None => self.unknown(event_type),
        }
    }

    /// NIXL's `AGENT_TELEMETRY_EVENTS_DROPPED`: its count joins the telemetry's
    /// losses instead of taking a slot that could be refused.
    #[cold]
    fn nixl_loss_report(&mut self, value: u64) -> i32 {
        self.nixl_dropped = self.nixl_dropped.saturating_add(value);
        if let Some(t) = &self.telemetry {
            t.add_dropped_upstream(value);
        }
        0
    }

    #[cold]
    fn export_degraded(&mut self, event_type: u32, value: u64) -> i32 {
        match &mut self.degraded {
            Some(d) => d.export(event_type == NIXL_EVENTS_DROPPED_TYPE, value),
            None => -8, // NIXL_ERR_UNKNOWN: closed (not reachable through the shim)
        }
    }

    #[cold]
    fn unknown(&mut self, event_type: u32) -> i32 {
        self.unknown_type += 1;
        if let Some(t) = self.telemetry.as_ref() {
            t.add_dropped_upstream(1);
        }
        let bit = 1u64.checked_shl(event_type).unwrap_or(0);
        if self.logged_unknown & bit == 0 {
            self.logged_unknown |= bit;
            warn!(
                "NIXL event type {event_type} is not one telering knows (0 to 20); such events are counted as dropped"
            );
        }
        -2
    }

    /// The end of one of NIXL's batches (NIXL after 1.4.0): counted, and telering's
    /// flush thread is woken to deliver the batch now ([`Telemetry::flush_soon`]: one
    /// wake per batch, not per event); without the hook it runs on its schedule.
    #[inline]
    pub fn batch_end(&mut self) {
        self.batches += 1;
        if let Some(telemetry) = &self.telemetry {
            telemetry.flush_soon();
        }
    }

    /// The telemetry the events are recorded into.
    pub fn telemetry(&self) -> Option<&Telemetry> {
        self.telemetry.as_ref()
    }

    /// What was recorded, delivered and lost so far: the telemetry's statistics, or
    /// a degraded exporter's counts (every event undelivered).
    pub fn stats(&self) -> telering_std::TelemetryStats {
        match (&self.telemetry, &self.degraded) {
            (Some(t), _) => t.stats(),
            (None, Some(d)) => d.stats(),
            (None, None) => Default::default(),
        }
    }

    /// Flushes everything, shuts the exporters down, logs what each could not
    /// deliver (warning) or that all was delivered (info), and returns the
    /// telemetry's statistics (a degraded exporter's counts, logged as an error).
    pub fn close(mut self) -> telering_std::TelemetryStats {
        self.shut_down().unwrap_or_default()
    }

    fn shut_down(&mut self) -> Option<telering_std::TelemetryStats> {
        if let Some(degraded) = self.degraded.take() {
            degraded.log_close();
            return Some(degraded.stats());
        }
        let telemetry = self.telemetry.take()?;
        let agent = Escaped::new(telemetry.agent_name()).to_string();
        let (stats, each) = telemetry.close_with_exporter_stats();
        let events = self.events;
        info!(
            "NIXL agent `{agent}`: {events} events in {} batches handed to telering",
            self.batches
        );
        if self.nixl_dropped > 0 {
            warn!(
                "NIXL agent `{agent}`: {} events dropped upstream by NIXL before export (its AGENT_TELEMETRY_EVENTS_DROPPED), counted as dropped",
                self.nixl_dropped
            );
        }
        if self.unknown_type > 0 {
            warn!(
                "NIXL agent `{agent}`: {} events of an unknown NIXL type counted as dropped",
                self.unknown_type
            );
        }
        let before = stats
            .events_dropped
            .saturating_sub(self.nixl_dropped.saturating_add(self.unknown_type));
        if before > 0 {
            warn!(
                "NIXL agent `{agent}`: {before} events dropped before any exporter (a full lane, a failed export)"
            );
        }
        for e in &each {
            let lost = e
                .events_dropped
                .saturating_add(e.exporter_dropped)
                .saturating_add(e.events_undelivered);
            if lost > 0 {
                warn!(
                    "NIXL agent `{agent}`: exporter `{}` delivered {} events, lost {lost} (dropped {}, lost inside {}, undelivered {})",
                    Escaped::new(&e.name),
                    e.events_delivered,
                    e.events_dropped,
                    e.exporter_dropped,
                    e.events_undelivered
                );
            } else {
                info!(
                    "NIXL agent `{agent}`: exporter `{}` delivered {} events",
                    Escaped::new(&e.name),
                    e.events_delivered
                );
            }
        }
        Some(stats)
    }
}

impl Drop for PluginExporter {
    fn drop(&mut self) {
        self.shut_down();
    }
}
