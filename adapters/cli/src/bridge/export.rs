//! The bridge's optional exporter list: besides its ring file, each link's agent goes
//! through the exporters `--exporter` (else `TELERING_EXPORTERS`) names — `otlp`,
//! `prometheus`, `prometheus_mp`, `csv`, `nop` or a plug-in — configured as every
//! agent's are (`NIXL_TELEMETRY_*`, `OTEL_*`, the configuration file), with the
//! exporters telering-std builds for any agent.
//!
//! The whole configuration is resolved and every exporter's settings are checked for
//! every link ([`ExportPlan::resolve`], [`ExportPlan::check`]) before any link starts,
//! so a bad setting creates and replaces nothing. Each link opens its own list (a
//! [`FanOut`]: one thread and queue per exporter) when it first writes, under the
//! agent name its ring has, before its ring file is created; a device that names
//! itself anew gets a new list under its new name.
//!
//! Every event the ring gets, the exporters get too (the device's events and the
//! link's own `telering_link_*` events), gathered and handed over in timestamp order
//! once per `NIXL_TELEMETRY_RUN_INTERVAL` as a telemetry's flush does, and every event
//! lost before the ring is added to their losses ([`Exporter::add_dropped`]), which each
//! exporter reports in-band as `agent_telemetry_events_dropped` — so recorded =
//! delivered + lost holds at every exporter as at the ring. `buffer` is refused: the
//! bridge writes the ring itself, and an unknown name's message offers only the names
//! the bridge accepts ([`ConfigError::without_exporter`]).

use crate::CliError;
use std::path::Path;
use telering_core::Event;
use telering_core::text::Escaped;
use telering_std::export::{Exporter, ExporterContext, ExporterRegistry};
use telering_std::fanout::FanOut;
use telering_std::{ConfigError, EnvSource, ExporterStats, Mode, TelemetryBuilder};

/// The variable naming the exporter list when `--exporter` is not given (the list
/// telering's NIXL plug-in reads too).
pub const EXPORTERS_VAR: &str = "TELERING_EXPORTERS";

/// The registered exporter the bridge refuses in its list (it writes each link's
/// ring file itself), so its messages never offer it.
const REFUSED: &str = "buffer";

/// A resolved, checked exporter list, opened once per link.
#[derive(Clone)]
pub struct ExportPlan {
    registry: ExporterRegistry,
    /// The names, lower case, comma-separated.
    names: String,
    /// The flag or variable that named them, for errors.
    variable: String,
    context: ExporterContext,
}

impl std::fmt::Debug for ExportPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportPlan")
            .field("names", &self.names)
            .field("variable", &self.variable)
            .finish_non_exhaustive()
    }
}

/// At most this many bytes of an exporter list are echoed in an error: the list may
/// be as long as the command line allows, and an error echoing it all (a 10 000-entry
/// list with one name twice) would bury what it says.
const ECHO_MAX: usize = 200;

fn config_error(e: impl std::fmt::Display) -> CliError {
    CliError::Config(e.to_string())
}

/// `list` as an error echoes it: escaped, and cut after [`ECHO_MAX`] bytes (at a
/// character boundary, before escaping) with how much was left out.
fn echo(list: &str) -> String {
    if list.len() <= ECHO_MAX {
        return Escaped::new(list).to_string();
    }
    let mut cut = ECHO_MAX;
    while !list.is_char_boundary(cut) {
        cut -= 1;
    }
    format!(
        "{}… ({} bytes more)",
        Escaped::new(&list[..cut]),
        list.len() - cut
    )
}

/// An error of the configuration that may echo `list` whole, with the echo bounded.
fn list_error(e: impl std::fmt::Display, list: &str) -> CliError {
    let message = e.to_string();
    if list.len() <= ECHO_MAX {
        return CliError::Config(message);
    }
    CliError::Config(message.replace(&Escaped::new(list).to_string(), &echo(list)))
}

impl ExportPlan {
    /// The list `flag` gives, else `TELERING_EXPORTERS` from `env`; `None` when
    /// neither names one. The configuration is resolved as any agent's is, with `dir`
    /// as `NIXL_TELEMETRY_DIR`.
    pub fn resolve(
        flag: Option<&str>,
        env: &EnvSource,
        dir: &Path,
    ) -> Result<Option<ExportPlan>, CliError> {
        let (variable, list) = match flag {
            Some(list) => ("--exporter", list.to_owned()),
            None => match env.get_trimmed(EXPORTERS_VAR).map_err(config_error)? {
                Some(list) => (EXPORTERS_VAR, list),
                None => return Ok(None),
            },
        };
        let mut registry = ExporterRegistry::with_builtins();
        telering_prometheus::register(&mut registry);
        telering_otlp::register(&mut registry);
        let config = TelemetryBuilder::new("bridge")
            .registry(registry.clone())
            .apply_env(env)
            .map_err(config_error)?
            .enabled(true)
            .dir(dir)
            .exporter_from(variable, &list)
            .resolve()
            .map_err(|e| list_error(e.without_exporter(REFUSED), &list))?;
        let Mode::Export { exporter: names } = config.mode else {
            return Err(config_error(format!(
                "{variable}={} names no exporter",
                echo(&list)
            )));
        };
        if telering_std::parse::list(&names).any(|n| n == REFUSED) {
            return Err(config_error(format!(
                "{variable}={}: the bridge writes each link's ring file itself; leave `buffer` out of the list",
                echo(&list)
            )));
        }
        let mut context = ExporterContext::new("");
        context.dir = config.dir;
        context.buffer_size = config.buffer_size;
        context.run_interval = config.run_interval;
        context.env = env.clone();
        context.clock = config.clock;
        context.ring_layout = config.ring_layout;
        Ok(Some(ExportPlan {
            registry,
            names,
            variable: variable.to_owned(),
            context,
        }))
    }

    /// The exporter names, comma-separated.
    pub fn names(&self) -> &str {
        &self.names
    }

    /// Refuses `prometheus` for more than one link on one fixed port: each link's
    /// agent has its own exporters, and one port serves one of them (`prometheus_mp`
    /// serves them all; port 0 gives each a free one).
    pub fn check_links(&self, links: usize) -> Result<(), CliError> {
        if links < 2 || !telering_std::parse::list(&self.names).any(|n| n == "prometheus") {
            return Ok(());
        }
        let env = &self.context.env;
        let port =
            telering_prometheus::PrometheusConfig::from_lookup(|name| env.get(name).ok().flatten())
                .map_err(config_error)?
                .port;
        if port == 0 {
            return Ok(());
        }
        Err(config_error(format!(
            "{}={}: `prometheus` serves one agent on port {port}, and these {links} links are {links} agents; use `prometheus_mp` (with NIXL_TELEMETRY_MULTIPROC_DIR) to serve them all, or {}=0 for a free port each",
            self.variable,
            Escaped::new(&self.names),
            telering_prometheus::config::ENV_PORT
        )))
    }

    /// How often a link hands its gathered events to the list
    /// (`NIXL_TELEMETRY_RUN_INTERVAL`).
    pub fn run_interval(&self) -> std::time::Duration {
        self.context.run_interval
    }

    fn context(&self, agent: &str) -> ExporterContext {
        let mut context = self.context.clone();
        context.agent_name = agent.to_owned();
        context
    }

    /// Checks every exporter's settings for the agent `agent`, creating nothing.
    pub fn check(&self, agent: &str) -> Result<(), CliError> {
        telering_std::fanout::check_all(&self.registry, &self.names, &self.context(agent)).map_err(
            |(name, e)| {
                config_error(
                    ConfigError::from_export_in(&self.variable, name, e).without_exporter(REFUSED),
                )
            },
        )
    }

    /// Opens the list for `agent`: exporters that create or replace files last.
    pub fn open(&self, agent: &str) -> Result<FanOut, String> {
        let context = self.context(agent);
        if let Some(dir) = &context.dir {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("{}: {e}", Escaped::new(&dir.display().to_string())))?;
        }
        let names: Vec<&str> = telering_std::parse::list(&self.names).collect();
        let mut opened: Vec<Option<Box<dyn Exporter>>> = Vec::new();
        opened.resize_with(names.len(), || None);
        for writes_files in [false, true] {
            for (i, name) in names.iter().enumerate() {
                if self.registry.writes_files(name) == writes_files {
                    let exporter = telering_std::fanout::create(&self.registry, name, &context)
                        .map_err(|e| {
                            ConfigError::from_export_in(&self.variable, name, e)
                                .without_exporter(REFUSED)
                                .to_string()
                        })?;
                    opened[i] = Some(exporter);
                }
            }
        }
        FanOut::new(opened.into_iter().flatten().collect()).map_err(|e| e.to_string())
    }
}

/// One link's open exporter list and the counts of the lists it closed. Batches are
/// gathered and handed over once per `NIXL_TELEMETRY_RUN_INTERVAL`, as a telemetry's
/// flush hands them to its exporters, and at the end.
#[derive(Debug, Default)]
pub struct LinkExport {
    open: Option<FanOut>,
    interval: std::time::Duration,
    last: Option<std::time::Instant>,
    waiting: Vec<Event>,
    lost: u64,
    closed: Vec<ExporterStats>,
}

impl LinkExport {
    /// Whether a list is open.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Takes `list` as the open one, handed batches every `interval`.
    pub fn set(&mut self, list: FanOut, interval: std::time::Duration) {
        self.open = Some(list);
        self.interval = interval;
        self.last = Some(std::time::Instant::now());
    }

    /// Gathers one batch (any order) and the losses before it for the open list,
    /// and hands what was gathered over once the interval has passed.
    pub fn export(&mut self, lost: u64, batch: &[Event]) {
        if self.open.is_none() {
            return;
        }
        self.lost = self.lost.saturating_add(lost);
        self.waiting.extend_from_slice(batch);
        if self.last.is_none_or(|t| t.elapsed() >= self.interval) {
            self.hand_over();
        }
    }

    fn hand_over(&mut self) {
        let Some(list) = &mut self.open else {
            return;
        };
        if self.lost > 0 {
            list.add_dropped(std::mem::take(&mut self.lost));
        }
        self.waiting.sort_by_key(Event::timestamp_us);
        // A fan-out only queues: its exporters' failures are their own counts. Empty
        // batches too: some exporters take each export as a sign of life.
        let _ = list.export(&self.waiting);
        if !self.waiting.is_empty() {
            let _ = list.flush();
        }
        self.waiting.clear();
        self.last = Some(std::time::Instant::now());
    }

    /// Hands over what waits, shuts the open list down (its exporters export what
    /// they hold, then stop) and keeps its counts.
    pub fn close(&mut self) {
        self.hand_over();
        if let Some(mut list) = self.open.take() {
            let _ = list.shutdown();
            merge(&mut self.closed, list.stats());
        }
    }

    /// Each exporter's counts over every list this link opened.
    pub fn stats(&self) -> Vec<ExporterStats> {
        let mut all = self.closed.clone();
        if let Some(list) = &self.open {
            merge(&mut all, list.stats());
        }
        all
    }
}

fn merge(into: &mut Vec<ExporterStats>, more: Vec<ExporterStats>) {
    for s in more {
        match into.iter_mut().find(|a| a.name == s.name) {
            Some(a) => {
                a.events_delivered = a.events_delivered.saturating_add(s.events_delivered);
                a.events_dropped = a.events_dropped.saturating_add(s.events_dropped);
                a.export_errors = a.export_errors.saturating_add(s.export_errors);
                a.exporter_dropped = a.exporter_dropped.saturating_add(s.exporter_dropped);
                a.events_undelivered = a.events_undelivered.saturating_add(s.events_undelivered);
                a.events_not_in_layout = a
                    .events_not_in_layout
                    .saturating_add(s.events_not_in_layout);
                a.exporter_failing = s.exporter_failing;
                if s.endpoint.is_some() {
                    a.endpoint = s.endpoint;
                }
            }
            None => into.push(s),
        }
    }
}
