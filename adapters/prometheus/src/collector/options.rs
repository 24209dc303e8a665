//! What a [`NodeCollector`](super::NodeCollector) is told: how it reads the rings,
//! how often it looks, how long dead agents stay, and the errors starting it can give.

use std::fmt;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::config::{Buckets, ConfigError, PrometheusConfig};
use crate::http::{HttpLimits, ServeError};

/// How the collector reads each ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReadMode {
    /// Read-only observer; never changes the file.
    #[default]
    Observe,
    /// The ring's one draining reader.
    Drain,
}

/// Everything [`NodeCollector`](super::NodeCollector) and
/// [`run_collector`](super::run_collector) need.
#[derive(Clone, Debug)]
pub struct CollectorOptions {
    /// The directory of ring files (`NIXL_TELEMETRY_DIR`).
    pub dir: PathBuf,
    /// Address of the endpoint ([`run_collector`](super::run_collector) only); port 0 picks a free port.
    pub addr: SocketAddr,
    /// Observer (default) or draining reader.
    pub mode: ReadMode,
    /// How long a dead agent's series stay before they are dropped (default 5 min).
    pub ttl: Duration,
    /// A heartbeat older than this marks the writer dead (default 30 s).
    pub stale_after: Duration,
    /// Pause between polls of the rings (default 100 ms).
    pub poll_interval: Duration,
    /// Pause between directory scans for new agents (default 1 s).
    pub rescan_interval: Duration,
    /// Latency histogram buckets.
    pub buckets: Buckets,
    /// The `hostname` label (default: this host's name).
    pub hostname: String,
    /// Bounds of the HTTP endpoint.
    pub limits: HttpLimits,
    /// Most agents followed at once (default 4096); files past it are skipped with a
    /// warning, so a directory flooded with files cannot exhaust memory or mappings.
    pub max_agents: usize,
    /// An agent that lost events (by any cause) within this long is `dropping` in
    /// [`NodeStatus`](super::NodeStatus) rather than `ok` (default 5 s).
    pub dropping_for: Duration,
}

impl CollectorOptions {
    /// Defaults for `dir`: port 9090 on all interfaces, observer mode.
    ///
    /// ```
    /// use telering_prometheus::collector::{CollectorOptions, ReadMode};
    /// let o = CollectorOptions::new("/tmp/telemetry").port(9400).local(true);
    /// assert_eq!(o.addr.to_string(), "127.0.0.1:9400");
    /// assert_eq!(o.mode, ReadMode::Observe);
    /// ```
    pub fn new(dir: impl Into<PathBuf>) -> CollectorOptions {
        CollectorOptions {
            dir: dir.into(),
            addr: PrometheusConfig::default().bind_addr(),
            mode: ReadMode::Observe,
            ttl: Duration::from_secs(300),
            stale_after: Duration::from_secs(30),
            poll_interval: Duration::from_millis(100),
            rescan_interval: Duration::from_secs(1),
            buckets: Buckets::default(),
            hostname: crate::hostname(),
            limits: HttpLimits::default(),
            max_agents: 4096,
            dropping_for: Duration::from_secs(5),
        }
    }

    /// Takes port, bind address and buckets from `NIXL_TELEMETRY_PROMETHEUS_*` and
    /// `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US` through `lookup`.
    pub fn with_env(
        mut self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<CollectorOptions, ConfigError> {
        let config = PrometheusConfig::from_lookup(lookup)?;
        self.addr = config.bind_addr();
        self.buckets = config.buckets;
        Ok(self)
    }

    /// Sets the port, keeping the interface.
    pub fn port(mut self, port: u16) -> CollectorOptions {
        self.addr.set_port(port);
        self
    }

    /// Binds 127.0.0.1 (`true`) or 0.0.0.0 (`false`).
    pub fn local(mut self, local: bool) -> CollectorOptions {
        let ip = if local {
            Ipv4Addr::LOCALHOST
        } else {
            Ipv4Addr::UNSPECIFIED
        };
        self.addr.set_ip(IpAddr::V4(ip));
        self
    }
}

/// Why the collector could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum CollectorError {
    /// The ring directory cannot be read.
    Dir {
        /// The directory.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// The endpoint could not start.
    Serve(ServeError),
}

impl fmt::Display for CollectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectorError::Dir { path, source } => write!(
                f,
                "cannot read the ring directory {}: {source}; pass the agents' NIXL_TELEMETRY_DIR (--dir)",
                path.display()
            ),
            CollectorError::Serve(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CollectorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CollectorError::Dir { source, .. } => Some(source),
            CollectorError::Serve(e) => Some(e),
        }
    }
}

impl From<ServeError> for CollectorError {
    fn from(e: ServeError) -> Self {
        CollectorError::Serve(e)
    }
}
