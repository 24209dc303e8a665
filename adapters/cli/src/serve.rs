//! `telering serve --dir DIR [--port P] [--local] [--drain]`: every agent ring in a
//! directory on one Prometheus `/metrics` endpoint.
//!
//! This is telering-prometheus's node collector
//! ([`run_collector`]): it follows each
//! ring file in `DIR` as a read-only observer (or, with `--drain`, as the ring's one
//! draining reader) and serves NIXL's metric families with an `agent_name` label per
//! file. The address comes from `NIXL_TELEMETRY_PROMETHEUS_PORT` and
//! `NIXL_TELEMETRY_PROMETHEUS_LOCAL` (default `0.0.0.0:9090`), which the flags
//! override; histogram buckets from `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US`.

use crate::error::CliError;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use telering_prometheus::collector::{CollectorOptions, ReadMode, run_collector};

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
}

/// The collector's options: `NIXL_TELEMETRY_PROMETHEUS_*` read through `lookup`, then
/// the flags.
///
/// ```
/// use telering_cli::serve::{collector_options, ServeOptions};
/// let options = ServeOptions { dir: "/tmp/t".into(), port: Some(0), local: true, drain: false };
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

/// Serves the rings of `options.dir` until `stop` is set; `on_listening` receives the
/// bound address once the endpoint accepts connections.
pub fn serve(
    options: &ServeOptions,
    lookup: impl Fn(&str) -> Option<String>,
    stop: &AtomicBool,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), CliError> {
    let collector = collector_options(options, lookup)?;
    run_collector(collector, stop, on_listening)?;
    Ok(())
}
