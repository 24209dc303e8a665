//! `telering serve [--dir DIR] [--port P] [--local] [--drain] [--otlp [--no-prometheus]]`:
//! every agent ring in a directory on one Prometheus `/metrics` endpoint, with a live
//! dashboard at `/` ([`dashboard`]), pushed to an OpenTelemetry collector, or both.
//!
//! This is telering-prometheus's node collector
//! ([`NodeCollector`]): it follows each
//! ring file in `DIR` (default `$NIXL_TELEMETRY_DIR`, else `./telemetry`) as a
//! read-only observer (or, with `--drain`, as the ring's one draining reader) and
//! keeps NIXL's metric families with an `agent_name` label per file in one model. The endpoint's address comes from `NIXL_TELEMETRY_PROMETHEUS_PORT` and
//! `NIXL_TELEMETRY_PROMETHEUS_LOCAL` (default `0.0.0.0:9090`), which the flags
//! override; histogram buckets from `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US`. An agent
//! whose `buffer` exporter records routes also has its route file read
//! (`DIR/.routes/<agent>`): its `telering_route_*` families are on `/metrics`, its
//! routes in `/api/agents` and on the dashboard (docs/ROUTES.md).
//!
//! With `--otlp` the same model is also pushed by telering-otlp's [`Pusher`] (the
//! thread behind `NIXL_TELEMETRY_EXPORTER=otlp`, configured by the same `OTEL_*`
//! variables), so a node's rings reach a collector as one process's push: one resource,
//! one point per agent and series. `--no-prometheus` leaves the endpoint out. At the end
//! (Ctrl-C, SIGTERM) the rings are read once more and pushed one last time.

pub mod agents_json;
pub mod dashboard;
pub mod query;

use crate::error::CliError;
use dashboard::Dashboard;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use telering_otlp::{OtlpConfig, Pusher};
use telering_prometheus::MetricsServer;
use telering_prometheus::collector::{CollectorOptions, NodeCollector, ReadMode};

/// What `serve` does.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The ring directory.
    pub dir: PathBuf,
    /// The port, overriding `NIXL_TELEMETRY_PROMETHEUS_PORT` (0 picks a free one).
    pub port: Option<u16>,
    /// Bind 127.0.0.1 only, overriding `NIXL_TELEMETRY_PROMETHEUS_LOCAL`.
    pub local: bool,
    /// Drain the rings instead of observing them.
    pub drain: bool,
    /// Push to an OpenTelemetry collector with this configuration (`--otlp`).
    pub otlp: Option<OtlpConfig>,
    /// Serve the Prometheus endpoint (`false` with `--no-prometheus`).
    pub prometheus: bool,
}

/// Where a running `serve` delivers the node's metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Serving {
    /// The bound `/metrics` address, unless `--no-prometheus`.
    pub metrics: Option<SocketAddr>,
    /// The OTLP URL pushed to and the push interval in milliseconds, with `--otlp`.
    pub otlp: Option<(String, u128)>,
}

/// The collector's options: `NIXL_TELEMETRY_PROMETHEUS_*` read through `lookup`, then
/// the flags.
///
/// ```
/// use telering_cli::serve::{collector_options, ServeOptions};
/// let options = ServeOptions {
///     dir: "/tmp/t".into(), port: Some(0), local: true, drain: false, otlp: None, prometheus: true,
/// };
/// let env = |name: &str| (name == "NIXL_TELEMETRY_PROMETHEUS_PORT").then(|| "9400".to_string());
/// assert_eq!(collector_options(&options, env).unwrap().addr.to_string(), "127.0.0.1:0");
/// let bad = |name: &str| (name == "NIXL_TELEMETRY_PROMETHEUS_PORT").then(|| "http".to_string());
/// let error = collector_options(&options, bad).unwrap_err();
/// assert!(error.to_string().contains("NIXL_TELEMETRY_PROMETHEUS_PORT"));
/// assert_eq!(error.exit_code(), 2);
/// ```
pub fn collector_options(
    options: &ServeOptions,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<CollectorOptions, CliError> {
    let mut collector = CollectorOptions::new(&options.dir).with_env(lookup)?;
    if let Some(port) = options.port {
        collector = collector.port(port);
    }
    if options.local {
        collector = collector.local(true);
    }
    if options.drain {
        collector.mode = ReadMode::Drain;
    }
    Ok(collector)
}

/// Serves the rings of `options.dir` until `stop` is set; `on_started` learns where
/// once the endpoint accepts connections and the push thread runs.
///
/// ```
/// use std::sync::atomic::AtomicBool;
/// use telering_cli::serve::{serve, ServeOptions};
/// let dir = std::env::temp_dir().join(format!("telering-doc-serve-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let options = ServeOptions {
///     dir: dir.clone(), port: Some(0), local: true, drain: false, otlp: None, prometheus: true,
/// };
/// let stop = AtomicBool::new(true); // already asked to stop: returns after one poll
/// serve(&options, |_| None, &stop, |serving| assert!(serving.metrics.is_some())).unwrap();
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn serve(
    options: &ServeOptions,
    lookup: impl Fn(&str) -> Option<String>,
    stop: &AtomicBool,
    on_started: impl FnOnce(&Serving),
) -> Result<(), CliError> {
    if !options.prometheus && options.otlp.is_none() {
        return Err(CliError::Usage(
            "--no-prometheus leaves nothing to serve: add --otlp to push to a collector".into(),
        ));
    }
    let collector_options = collector_options(options, lookup)?;
    let poll_interval = collector_options.poll_interval;
    let addr = collector_options.addr;
    let limits = collector_options.limits.clone();
    // A node of a thousand agents holds a descriptor per ring, past the usual soft
    // limit of 1024; rings past the limit are counted and logged, not fatal.
    telering_prometheus::collector::raise_fd_limit();
    let mut collector = NodeCollector::new(collector_options)?;
    collector.poll();
    let dashboard = Dashboard::of_collector(&collector, poll_interval);
    let server = match options.prometheus {
        true => Some(
            MetricsServer::start(addr, dashboard.clone(), limits)
                .map_err(telering_prometheus::collector::CollectorError::from)?,
        ),
        false => None,
    };
    let mut pusher = match &options.otlp {
        Some(config) => Some(
            Pusher::start(collector.model(), config.clone()).map_err(|e| CliError::Telemetry {
                message: format!("cannot start the OTLP push thread: {e}"),
                config: false,
            })?,
        ),
        None => None,
    };
    on_started(&Serving {
        metrics: server.as_ref().map(MetricsServer::local_addr),
        otlp: options
            .otlp
            .as_ref()
            .map(|c| (c.endpoint.clone(), c.interval.as_millis())),
    });
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(poll_interval);
        collector.poll();
        if server.is_some() {
            dashboard.update_if_requested();
        }
    }
    // What was written since the last poll goes into the last push.
    collector.poll();
    if let Some(pusher) = &mut pusher {
        pusher.shutdown();
    }
    if let Some(server) = server {
        server.shutdown();
    }
    Ok(())
}
