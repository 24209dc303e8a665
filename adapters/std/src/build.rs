//! Building a [`Telemetry`]: resolving the configuration, preparing the directory,
//! starting the exporter and the flush thread — or, when that fails and the program
//! asks for it, falling back to capture in process.

use crate::clock::ClockSource;
use crate::clock::stamp::StampKind;
use crate::config::{ConfigError, Mode, ResolvedConfig, TelemetryBuilder};
use crate::export::ExporterContext;
use crate::flush::{Shared, flush_loop};
use crate::telemetry::Telemetry;
use std::sync::Arc;

impl TelemetryBuilder {
    /// Resolves the configuration, checks every exporter's settings (each exporter
    /// of a list, each of its variables), and only then creates the directory, opens
    /// the exporters (those that create or replace files last) and starts the flush
    /// thread: a configuration mistake changes nothing on disk. See
    /// [`Telemetry`](Telemetry).
    ///
    /// ```
    /// use telering_std::{Recorded, TelemetryBuilder};
    /// let t = TelemetryBuilder::new("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.update_tx_bytes(1), Recorded::Written);
    /// let e = TelemetryBuilder::new("a").enabled(true).exporter("csv").build().unwrap_err();
    /// assert!(e.to_string().contains("NIXL_TELEMETRY_DIR"));
    /// ```
    pub fn build(self) -> Result<Telemetry, ConfigError> {
        Telemetry::from_builder(self)
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
    pub fn build_or_capture(self) -> (Telemetry, Option<ConfigError>) {
        let agent_name = self.agent_name.clone();
        let fallback = self.clone().enabled(false).capture_telemetry(true);
        match self.build() {
            Ok(telemetry) => (telemetry, None),
            Err(error) => {
                log::error!("{error}; telemetry is captured in process and not exported");
                let telemetry = fallback
                    .build()
                    .unwrap_or_else(|_| Telemetry::disabled(agent_name));
                (telemetry, Some(error))
            }
        }
    }
}

impl Telemetry {
    /// A builder with the defaults (see [`TelemetryBuilder::new`]).
    ///
    /// ```
    /// use telering_std::{Mode, Telemetry};
    /// let telemetry = Telemetry::builder("agent").capture_telemetry(true).build().unwrap();
    /// assert_eq!(telemetry.mode(), &Mode::Capture);
    /// ```
    pub fn builder(agent_name: impl Into<String>) -> TelemetryBuilder {
        TelemetryBuilder::new(agent_name)
    }

    /// Telemetry configured from the process's `NIXL_TELEMETRY_*` variables.
    ///
    /// ```
    /// use telering_std::{Mode, Telemetry};
    /// // Whatever the process environment says, the result is a usable telemetry or a
    /// // typed error naming the variable.
    /// match Telemetry::from_env("agent") {
    ///     Ok(telemetry) => assert_eq!(telemetry.agent_name(), "agent"),
    ///     Err(e) => assert!(e.to_string().contains("NIXL_TELEMETRY_") || e.to_string().contains("TELERING_")),
    /// }
    /// ```
    pub fn from_env(agent_name: impl Into<String>) -> Result<Telemetry, ConfigError> {
        TelemetryBuilder::from_env(agent_name, &crate::EnvSource::from_process())?.build()
    }

    /// Telemetry that records nothing: what a program runs with when it chooses to
    /// go on after a [`ConfigError`].
    ///
    /// ```
    /// use telering_std::{Mode, Recorded, Telemetry};
    /// let telemetry = Telemetry::disabled("agent");
    /// assert_eq!(telemetry.mode(), &Mode::Disabled);
    /// assert_eq!(telemetry.update_tx_bytes(1), Recorded::Disabled);
    /// ```
    pub fn disabled(agent_name: impl Into<String>) -> Telemetry {
        let config = ResolvedConfig {
            agent_name: agent_name.into(),
            mode: Mode::Disabled,
            enabled_metrics: String::new(),
            buffer_size: crate::config::DEFAULT_BUFFER_SIZE,
            lane_capacity: crate::config::DEFAULT_BUFFER_SIZE,
            run_interval: crate::config::DEFAULT_RUN_INTERVAL,
            dir: None,
            clock: ClockSource::Realtime,
            ring_layout: telering_shm::RingLayout::V1,
            early_flush: true,
            routes: crate::route::RouteLimits::default(),
        };
        Telemetry {
            shared: Arc::new(Shared::new(config, None, None, false)),
            flusher: None,
        }
    }

    pub(crate) fn from_builder(builder: TelemetryBuilder) -> Result<Telemetry, ConfigError> {
        let config = builder.resolve()?;
        for warning in builder.warnings() {
            log::warn!("{warning}");
        }
        let exporter = match &config.mode {
            Mode::Export { exporter } => {
                let variable = builder.exporter_variable.as_str();
                let context = ExporterContext {
                    agent_name: config.agent_name.clone(),
                    dir: config.dir.clone(),
                    buffer_size: config.buffer_size,
                    run_interval: config.run_interval,
                    env: builder.env.clone(),
                    clock: config.clock,
                    ring_layout: config.ring_layout,
                };
                // Every exporter's settings first: a mistake in the last one must not
                // find the first one's file already created or replaced.
                crate::fanout::check_all(&builder.registry, exporter, &context)
                    .map_err(|(name, e)| ConfigError::from_export_in(variable, name, e))?;
                if let Some(dir) = &config.dir {
                    crate::dir::prepare(dir)?;
                }
                Some(
                    crate::fanout::create_with_roster(&builder.registry, exporter, &context)
                        .map_err(|e| ConfigError::from_export_in(variable, exporter, e))?,
                )
            }
            Mode::Disabled | Mode::Capture => None,
        };
        let (exporter, roster) = exporter.map_or((None, None), |(e, r)| (Some(e), r));
        let has_exporter = exporter.is_some();
        let (asked, probe) = builder.clock_choice();
        let counter_trusted = probe.counter_reliable().is_ok();
        let shared = Arc::new(Shared::new(config, exporter, roster, counter_trusted));
        if shared.config.mode != Mode::Disabled {
            log::info!(
                "telemetry for agent {}: {}",
                shared.config.agent_name,
                crate::clock::describe(
                    asked,
                    shared.config.clock,
                    &probe,
                    shared.stamper.kind() != StampKind::Off
                )
            );
        }
        let flusher = if has_exporter {
            let for_thread = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name("telering-flush".into())
                .spawn(move || flush_loop(for_thread))
                .map_err(|source| ConfigError::FlushThread { source })?;
            Some(handle)
        } else {
            None
        };
        log::debug!(
            "telemetry for agent {} runs in mode {:?}",
            shared.config.agent_name,
            shared.config.mode
        );
        Ok(Telemetry { shared, flusher })
    }
}
