//! The demo's setup: the embedded defaults, the resolved configuration, the started
//! telemetry, where its exporter puts the events, and the node collector that serves a
//! ring directory's metrics.

use std::io::Write;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::serve::dashboard::Dashboard;
use telering_core::Allowlist;
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_prometheus::multiproc::ENV_MULTIPROC_DIR;
use telering_prometheus::{HttpLimits, MetricsServer, PrometheusConfig, ServeError};
use telering_shm::RingLayout;
use telering_std::config::{Mode, vars};
use telering_std::{
    ConfigError, EnvSource, ExportError, ExporterRegistry, Telemetry, TelemetryBuilder,
};

use super::workload::demo_event_names;
use super::{DEFAULT_AGENT, DEFAULT_BUFFER_SIZE, DEFAULT_DIR, DemoOptions, PORT_ATTEMPTS};
use crate::error::CliError;

/// The exporter serving a node's ranks on one port.
const MP_EXPORTER: &str = "prometheus_mp";

/// Everything the workload runs against: the started telemetry, its targets and the
/// metrics endpoint.
pub(super) struct Setup {
    /// The agent name.
    pub agent: String,
    /// The started telemetry.
    pub telemetry: Telemetry,
    /// `NIXL_TELEMETRY_ENABLED_METRICS` as resolved, for the workers' tallies.
    pub allowlist_text: String,
    /// The exporter (`None`: telemetry disabled or capture only).
    pub exporter: Option<String>,
    /// The ring file the `buffer` exporter writes, as it reports it.
    pub ring_file: Option<PathBuf>,
    /// The file the `csv` exporter writes, as it reports it.
    pub csv_file: Option<PathBuf>,
    /// The metrics URL, only when this run serves it.
    pub metrics_url: Option<String>,
    /// Where an exporter that pushes sends the events (the OTLP collector's URL).
    pub endpoint: Option<String>,
    /// The node collector serving the ring directory, if any.
    pub collector: Option<Collector>,
    /// How the telemetry runs (disabled, capture only, export).
    mode: Mode,
    /// The ring file's layout.
    ring_layout: RingLayout,
}

impl Setup {
    /// Resolves the configuration (the embedded defaults under `env`, the flags on top),
    /// starts the telemetry and, for a ring file, the node collector over its directory.
    pub(super) fn start(options: &DemoOptions, env: &EnvSource) -> Result<Setup, CliError> {
        // The embedded defaults, each only while its variable is unset.
        let mut env = env.clone();
        if !env_is_set(&env, vars::ENABLE)? {
            env = env.with(vars::ENABLE, "y");
        }
        if !env_is_set(&env, vars::DIR)? {
            env = env.with(vars::DIR, DEFAULT_DIR);
        }
        let port_explicit =
            options.port.is_some() || env_is_set(&env, telering_prometheus::config::ENV_PORT)?;
        if !env_is_set(&env, telering_prometheus::config::ENV_LOCAL)? {
            env = env.with(telering_prometheus::config::ENV_LOCAL, "true");
        }
        let exporter_named = match &options.exporter {
            Some(e) => Some(e.trim().to_ascii_lowercase()),
            None => env
                .get_trimmed(vars::EXPORTER)
                .map_err(|e| telemetry_error(e.into()))?
                .map(|e| e.to_ascii_lowercase()),
        };
        // The exporter, or one of a list.
        let named = |name: &str| {
            exporter_named
                .as_deref()
                .is_some_and(|e| telering_std::parse::list(e).any(|n| n == name))
        };
        let multiproc = named(MP_EXPORTER);
        if multiproc && !env_is_set(&env, ENV_MULTIPROC_DIR)? {
            // The node's store directory: one inside the demo's own directory.
            let dir = match &options.dir {
                Some(dir) => dir.clone(),
                None => PathBuf::from(
                    env.get_trimmed(vars::DIR)
                        .map_err(|e| telemetry_error(e.into()))?
                        .unwrap_or_else(|| DEFAULT_DIR.to_string()),
                ),
            };
            env = env.with(
                ENV_MULTIPROC_DIR,
                dir.join(MP_EXPORTER).to_string_lossy().into_owned(),
            );
        }
        let lookup_env = env.clone();
        let lookup = move |name: &str| lookup_env.get(name).ok().flatten();
        let mut prom = PrometheusConfig::from_lookup(&lookup)?;
        if let Some(port) = options.port {
            prom.port = port;
        }
        // `prometheus_mp` serves the node's metrics (this rank's among them).
        let serves_metrics = named("prometheus") || multiproc;
        if serves_metrics {
            // The exporter binds its own endpoint (and reports the port it got, port 0
            // included); when the port is the default, start it on the first free one.
            if prom.port != 0 && !port_explicit {
                prom.port = free_port(Ipv4Addr::LOCALHOST, prom.port).unwrap_or(prom.port);
            }
            env = env.with(telering_prometheus::config::ENV_PORT, prom.port.to_string());
        }

        // Every exporter the README's table names, as an agent has them.
        let mut registry = ExporterRegistry::with_builtins();
        telering_prometheus::register(&mut registry);
        telering_otlp::register(&mut registry);
        let agent = options.agent.as_deref().unwrap_or(DEFAULT_AGENT);
        let mut builder = TelemetryBuilder::new(agent)
            .registry(registry)
            .apply_env(&env)
            .map_err(telemetry_error)?;
        if !env_is_set(&env, vars::BUFFER_SIZE)? {
            builder = builder.buffer_size(DEFAULT_BUFFER_SIZE);
        }
        if let Some(dir) = &options.dir {
            builder = builder.dir(dir);
        }
        if let Some(exporter) = &options.exporter {
            builder = builder.exporter_from("--exporter", exporter);
        }
        if let Some(layout) = options.layout {
            builder = builder.ring_layout(layout);
        }
        let config = builder.resolve().map_err(telemetry_error)?;
        let allowlist_text = config.enabled_metrics.clone();
        let allowlist = Allowlist::new(&allowlist_text);
        if options.events.is_some()
            && config.mode != Mode::Disabled
            && !demo_event_names().any(|n| allowlist.allows(n))
        {
            return Err(CliError::Config(format!(
                "{}={allowlist_text} allows none of the demo's events, so --events would never be reached; allow some of: {}",
                vars::ENABLED_METRICS,
                demo_event_names().collect::<Vec<_>>().join(", ")
            )));
        }
        let exporter = match &config.mode {
            Mode::Export { exporter } => Some(exporter.clone()),
            _ => None,
        };
        let telemetry = builder.build().map_err(telemetry_error)?;

        // Each exporter (one, or each of a list) says where its events go: a file, or an
        // address it serves or pushes to.
        let (mut ring_file, mut csv_file, mut served, mut endpoint) = (None, None, None, None);
        for each in telemetry.exporter_stats() {
            if each.name == MP_EXPORTER {
                // The rank holding the directory's lock serves the node: this one,
                // unless another rank shares the directory.
                let store = env
                    .get_trimmed(ENV_MULTIPROC_DIR)
                    .map_err(|e| telemetry_error(e.into()))?
                    .unwrap_or_default();
                endpoint = endpoint.or(Some(format!(
                    "{store} (node metrics served by the rank holding {store}/owner.lock)"
                )));
                // Only while this process serves the node page: another server on the
                // port (or another rank of the directory) is not this run's address.
                served = served.or_else(|| node_page_served(&telemetry));
                continue;
            }
            let Some(target) = each.endpoint else {
                continue;
            };
            match each.name.as_str() {
                "buffer" => ring_file = Some(PathBuf::from(target)),
                "csv" => csv_file = Some(PathBuf::from(target)),
                "otlp" => endpoint = Some(target),
                _ => served = served.or(Some(target)),
            }
        }
        // An agent serving its own metrics needs no collector over the ring.
        let collector = match (&ring_file, &config.dir) {
            (Some(_), Some(dir)) if !options.no_serve && !serves_metrics => {
                Some(Collector::start(dir.clone(), &prom, port_explicit)?)
            }
            _ => None,
        };
        // Only an address this run serves: an exporter that could not bind reports none
        // (and has warned), and then none is shown.
        let metrics_url = match &collector {
            Some(c) => Some(format!("http://{}/metrics", c.server.local_addr())),
            None => served,
        };
        Ok(Setup {
            agent: agent.to_string(),
            telemetry,
            allowlist_text,
            exporter,
            ring_file,
            csv_file,
            metrics_url,
            endpoint,
            collector,
            mode: config.mode,
            ring_layout: config.ring_layout,
        })
    }

    /// Writes where the events go: the ring file, the CSV file, the exporter, or that
    /// nothing is exported; then the metrics address.
    pub(super) fn write_targets(&self, out: &mut dyn Write) {
        match (&self.exporter, &self.ring_file, &self.csv_file) {
            (_, Some(path), _) => {
                let _ = writeln!(
                    out,
                    "ring file: {} ({})",
                    path.display(),
                    self.ring_layout.generation()
                );
            }
            (_, None, Some(path)) => {
                let _ = writeln!(out, "csv file:  {}", path.display());
            }
            (Some(e), None, None) => match &self.endpoint {
                Some(url) => {
                    let _ = writeln!(out, "exporter:  {e}, to {url}");
                }
                None => {
                    let _ = writeln!(out, "exporter:  {e}");
                }
            },
            (None, None, None) => {
                let _ = writeln!(
                    out,
                    "telemetry: {} (nothing is exported; set NIXL_TELEMETRY_ENABLE=y to export)",
                    if self.mode == Mode::Disabled {
                        "disabled"
                    } else {
                        "captured in process only"
                    }
                );
            }
        }
        if let Some(url) = &self.metrics_url {
            let _ = writeln!(out, "metrics:   {url}");
        }
        if let Some(c) = &self.collector {
            let _ = writeln!(out, "dashboard: http://{}/", c.server.local_addr());
        }
        let _ = out.flush();
    }
}

/// The exit code class of a telemetry start error: a value a variable or flag holds
/// is a configuration error (exit 2); a thread that cannot start or an exporter that
/// fails on the system (another writer holds the ring file, a foreign file sits in
/// its place) is a runtime error (exit 1).
fn telemetry_error(e: ConfigError) -> CliError {
    let config = match &e {
        ConfigError::FlushThread { .. } => false,
        ConfigError::ExporterStart { source, .. } => matches!(
            source,
            ExportError::Config { .. } | ExportError::MissingDir { .. }
        ),
        _ => true,
    };
    CliError::Telemetry {
        message: e.to_string(),
        config,
    }
}

/// Whether `name` is set to a value that is not blank (blank is unset, by the rule
/// of `telering_std::parse`).
fn env_is_set(env: &EnvSource, name: &str) -> Result<bool, CliError> {
    Ok(env
        .get_trimmed(name)
        .map_err(|e| telemetry_error(e.into()))?
        .is_some())
}

/// The node page's address while this process's `prometheus_mp` rank serves it,
/// waiting up to two seconds (a rank binds its port once it holds the node's lock; the
/// flush these calls ask for brings the exporter's endpoint up to date).
fn node_page_served(telemetry: &telering_std::Telemetry) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let endpoint = telemetry
            .exporter_stats()
            .into_iter()
            .find(|each| each.name == MP_EXPORTER)
            .and_then(|each| each.endpoint);
        if endpoint.is_some() || Instant::now() >= deadline {
            return endpoint;
        }
        std::thread::sleep(Duration::from_millis(50));
        let _ = telemetry.flush();
    }
}

/// The first port from `first` on that can be bound on `ip` (a probe: the listener is
/// closed again at once).
fn free_port(ip: Ipv4Addr, first: u16) -> Option<u16> {
    (0..PORT_ATTEMPTS)
        .filter_map(|i| first.checked_add(i))
        .find(|&p| TcpListener::bind((ip, p)).is_ok())
}

/// The metrics endpoint of the demo's ring directory, with `serve`'s dashboard at `/`.
pub(super) struct Collector {
    pub collector: NodeCollector,
    pub server: MetricsServer,
    pub dashboard: Dashboard,
}

impl Collector {
    /// Reads the rings, and rebuilds the dashboard's JSON if it was asked for since.
    pub fn poll(&mut self) {
        self.collector.poll();
        self.dashboard.update_if_requested();
    }

    /// Starts the node collector over `dir`, on the configured port or — when the port
    /// was not set explicitly — the first free one from there.
    fn start(dir: PathBuf, config: &PrometheusConfig, explicit: bool) -> Result<Self, CliError> {
        let mut options = CollectorOptions::new(dir);
        options.buckets = config.buckets.clone();
        options.poll_interval = Duration::from_millis(100);
        let poll_interval = options.poll_interval;
        let collector = NodeCollector::new(options)?;
        let dashboard = Dashboard::of_collector(&collector, poll_interval);
        let mut addr = config.bind_addr();
        let mut attempts = 1;
        loop {
            match MetricsServer::start(addr, dashboard.clone(), HttpLimits::default()) {
                Ok(server) => {
                    return Ok(Collector {
                        collector,
                        server,
                        dashboard,
                    });
                }
                Err(ServeError::Bind { source, .. })
                    if !explicit
                        && source.kind() == std::io::ErrorKind::AddrInUse
                        && attempts < PORT_ATTEMPTS
                        && addr.port() < u16::MAX =>
                {
                    attempts += 1;
                    addr.set_port(addr.port() + 1);
                }
                Err(e) => return Err(CliError::Collector(e.into())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_port_falls_back_to_the_next_free_one_unless_set_explicitly() {
        let dir = tempfile::tempdir().unwrap();
        // Hold a port, as another exporter holding 9090 would.
        let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let config = PrometheusConfig {
            port,
            local: true,
            ..PrometheusConfig::default()
        };
        let collector = Collector::start(dir.path().into(), &config, false).unwrap();
        let bound = collector.server.local_addr().port();
        assert!(
            bound > port && bound - port < PORT_ATTEMPTS,
            "{port} -> {bound}"
        );
        collector.server.shutdown();

        let error = Collector::start(dir.path().into(), &config, true)
            .map(|_| ())
            .unwrap_err();
        assert!(error.to_string().contains(&port.to_string()), "{error}");
        assert_eq!(error.exit_code(), crate::EXIT_RUNTIME);
    }
}
