//! `telering demo`: a simulated data-movement agent that records real telemetry.
//!
//! Several worker threads perform fake transfers — sizes log-normal around 256 KiB,
//! latencies from a 20 GB/s link plus log-normal per-request overhead with an
//! occasional congested tail — register and deregister memory regions, hit an
//! occasional error, and report a queue depth; a fake `UCX` backend reports its own
//! events. Everything goes through [`telering_std::Telemetry`], configured from every
//! `NIXL_TELEMETRY_*` variable with the flags on top.
//!
//! With no flag and no variable set the demo runs on an embedded default: telemetry
//! on, the `buffer` exporter writing the shared-memory ring `./telemetry/demo-agent`
//! (65536 slots, so a 20-second run at the default rate fits without a reader), and
//! telering-prometheus's node collector serving that directory on 127.0.0.1, port
//! 9090 or the next free one. Each default applies only while its variable is unset.
//!
//! The run ends after `--duration` or `--events` (exactly that many events recorded),
//! or at Ctrl-C; the telemetry is then flushed and the ring file closed cleanly
//! before the summary is printed.

use crate::error::CliError;
use crate::read::sleep_unless_stopped;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use telering_core::builtin::{self, BuiltinEvent, ErrorStatus};
use telering_core::{Allowlist, Category};
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_prometheus::{HttpLimits, MetricsServer, PrometheusConfig, ServeError};
use telering_shm::RingLayout;
use telering_std::Recorded;
use telering_std::config::{Mode, vars};
use telering_std::{
    ConfigError, EnvSource, ExportError, ExporterRegistry, Telemetry, TelemetryBuilder,
};

/// The agent name when neither `--agent` nor anything else names one.
pub const DEFAULT_AGENT: &str = "demo-agent";
/// The telemetry directory when neither `--dir` nor `NIXL_TELEMETRY_DIR` is set.
pub const DEFAULT_DIR: &str = "./telemetry";
/// The ring size when `NIXL_TELEMETRY_BUFFER_SIZE` is unset.
pub const DEFAULT_BUFFER_SIZE: u32 = 65536;
/// Events per second across all threads when `--rate` is not given.
pub const DEFAULT_RATE: f64 = 2000.0;
/// How long the demo runs when neither `--duration` nor `--events` is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(20);
/// Ports tried after the first one when the metrics port is not set explicitly.
pub const PORT_ATTEMPTS: u16 = 64;

/// Name of the custom queue-depth event.
pub const QUEUE_DEPTH: &str = "demo_queue_depth";
/// Name of the backend's rendezvous-bytes event.
pub const BACKEND_RNDV_BYTES: &str = "ucx_rndv_bytes";
/// Name of the backend's retry event.
pub const BACKEND_RETRIES: &str = "ucx_retries";

/// What the demo does; `None` fields take the environment's value, then the default.
#[derive(Clone, Debug, Default)]
pub struct DemoOptions {
    /// `--dir`: the telemetry directory.
    pub dir: Option<PathBuf>,
    /// `--agent`: the agent name.
    pub agent: Option<String>,
    /// `--exporter`: the exporter name.
    pub exporter: Option<String>,
    /// `--duration`: stop after this long.
    pub duration: Option<Duration>,
    /// `--events`: stop after exactly this many events were recorded.
    pub events: Option<u64>,
    /// `--rate`: events per second across all threads; 0 runs flat out.
    pub rate: Option<f64>,
    /// `--threads`: worker threads (at least 1).
    pub threads: usize,
    /// `--port`: the metrics port (0 picks a free one).
    pub port: Option<u16>,
    /// `--no-serve`: do not serve metrics for the ring directory.
    pub no_serve: bool,
    /// `--seed`: seed of the random workload.
    pub seed: u64,
    /// `--json`: print the summary as one JSON object.
    pub json: bool,
    /// `--layout`: the ring file's layout; `TELERING_RING_LAYOUT` applies when unset.
    pub layout: Option<RingLayout>,
}

/// Events of one name recorded by the demo.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NameTally {
    /// The category the events were recorded in.
    pub category: Option<Category>,
    /// Events recorded.
    pub count: u64,
    /// Sum of their values.
    pub sum: u64,
    /// Events of this name lost: at record time (a full lane or backend buffer), in
    /// a failed export or by the exporter itself (a full ring).
    pub dropped: u64,
}

impl NameTally {
    fn add(&mut self, category: Category, value: u64, recorded: Recorded) {
        self.category = Some(category);
        match recorded {
            Recorded::Written => {
                self.count += 1;
                self.sum = self.sum.saturating_add(value);
            }
            Recorded::Dropped => self.dropped += 1,
            Recorded::Filtered
            | Recorded::Disabled
            | Recorded::CaptureOnly
            | Recorded::AlreadyCompleted => {}
        }
    }
}

/// What a finished demo did.
#[derive(Clone, Debug, Default)]
pub struct DemoSummary {
    /// The agent name.
    pub agent: String,
    /// The exporter used (`None`: telemetry disabled or capture only).
    pub exporter: Option<String>,
    /// The ring file (with the `buffer` exporter).
    pub ring_file: Option<PathBuf>,
    /// The CSV file (with the `csv` exporter).
    pub csv_file: Option<PathBuf>,
    /// The metrics URL, only when this run served it: the node collector's bound
    /// address, or the one the `prometheus` exporter reports it bound.
    pub metrics_url: Option<String>,
    /// How long the workload ran.
    pub elapsed: Duration,
    /// Per event name: what the demo recorded.
    pub names: BTreeMap<String, NameTally>,
    /// The telemetry's own counters after the final flush.
    pub stats: telering_std::TelemetryStats,
    /// Whether the run was cut short by Ctrl-C.
    pub interrupted: bool,
}

impl DemoSummary {
    /// Events recorded (written into a lane or backend buffer) across all names.
    pub fn events_recorded(&self) -> u64 {
        self.names.values().map(|t| t.count).sum()
    }

    /// Every event lost on the way: dropped at record time, by the flush, or by the
    /// exporter (a full ring).
    pub fn events_dropped(&self) -> u64 {
        self.stats.events_dropped + self.stats.exporter_dropped
    }

    /// Events the exporter delivered to its sink (into the ring file, the CSV file,
    /// the metrics): those handed to it minus those it dropped itself. Every event
    /// the workload tried to record is delivered or counted:
    /// `events_recorded + dropped at record time = events_exported + events_dropped`.
    pub fn events_exported(&self) -> u64 {
        self.stats
            .events_exported
            .saturating_sub(self.stats.exporter_dropped)
    }
}

/// SplitMix64: a small, fast, well-distributed generator; plenty for a workload.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so its logarithm is finite.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A standard normal deviate (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Log-normal with the given median and shape `sigma`.
    ///
    /// ```
    /// let mut rng = telering_cli::demo::Rng::new(1);
    /// let mut xs: Vec<f64> = (0..10_001).map(|_| rng.log_normal(1000.0, 1.0)).collect();
    /// xs.sort_by(f64::total_cmp);
    /// let median = xs[5000];
    /// assert!((900.0..1100.0).contains(&median), "{median}");
    /// ```
    pub fn log_normal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.normal()).exp()
    }
}

/// Parses an event rate: a finite number of events per second, 0 or more.
///
/// ```
/// use telering_cli::demo::parse_rate;
/// assert_eq!(parse_rate("2500"), Ok(2500.0));
/// assert!(parse_rate("-1").is_err() && parse_rate("inf").is_err() && parse_rate("NaN").is_err());
/// ```
pub fn parse_rate(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r >= 0.0)
        .ok_or_else(|| {
            format!(
                "`{text}` is not a rate; use events per second, such as 2000, or 0 for no limit"
            )
        })
}

/// Parses a duration such as `20s`, `500ms`, `2m`, `1h` or a plain number of seconds
/// (`1.5`).
///
/// ```
/// use std::time::Duration;
/// use telering_cli::demo::parse_duration;
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
/// assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
/// assert!(parse_duration("soon").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .and_then(|v| Duration::try_from_secs_f64(v * scale).ok())
        .ok_or_else(|| {
            format!("`{text}` is not a duration; use a number with s, ms, m or h, such as 20s")
        })
}

/// Parses `--layout`: `v1` or `v4`.
///
/// ```
/// use telering_shm::RingLayout;
/// assert_eq!(telering_cli::demo::parse_layout("v4"), Ok(RingLayout::V4));
/// assert!(telering_cli::demo::parse_layout("v3").unwrap_err().contains("use v1"));
/// ```
pub fn parse_layout(text: &str) -> Result<RingLayout, String> {
    text.parse().map_err(|_| {
        format!("`{text}` is not a ring layout; use v1 (timestamps, categories and names) or v4 (for NIXL 1.3.1 and later readers)")
    })
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

/// The first port from `first` on that can be bound on `ip` (a probe: the listener is
/// closed again at once).
fn free_port(ip: Ipv4Addr, first: u16) -> Option<u16> {
    (0..PORT_ATTEMPTS)
        .filter_map(|i| first.checked_add(i))
        .find(|&p| TcpListener::bind((ip, p)).is_ok())
}

/// The metrics endpoint of the demo's ring directory.
struct Collector {
    collector: NodeCollector,
    server: MetricsServer,
}

impl Collector {
    /// Starts the node collector over `dir`, on the configured port or — when the port
    /// was not set explicitly — the first free one from there.
    fn start(dir: PathBuf, config: &PrometheusConfig, explicit: bool) -> Result<Self, CliError> {
        let mut options = CollectorOptions::new(dir);
        options.buckets = config.buckets.clone();
        options.poll_interval = Duration::from_millis(100);
        let collector = NodeCollector::new(options)?;
        let mut addr = config.bind_addr();
        let mut attempts = 1;
        loop {
            match MetricsServer::start(addr, collector.model(), HttpLimits::default()) {
                Ok(server) => return Ok(Collector { collector, server }),
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

/// Runs the demo and returns its summary (print it with [`write_summary_text`] or
/// [`write_summary_json`]): `env` is the environment (`EnvSource::from_process()` for
/// the command), `out` receives the start lines (ring file, metrics address),
/// `progress` (a terminal) the live progress line.
pub fn demo(
    options: &DemoOptions,
    env: &EnvSource,
    stop: &AtomicBool,
    out: &mut dyn Write,
    mut progress: Option<&mut dyn Write>,
) -> Result<DemoSummary, CliError> {
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
    let lookup_env = env.clone();
    let lookup = move |name: &str| lookup_env.get(name).ok().flatten();
    let mut prom = PrometheusConfig::from_lookup(&lookup)?;
    if let Some(port) = options.port {
        prom.port = port;
    }
    if exporter_named.as_deref() == Some("prometheus") {
        // The exporter binds its own endpoint (and reports the port it got, port 0
        // included); when the port is the default, start it on the first free one.
        if prom.port != 0 && !port_explicit {
            prom.port = free_port(Ipv4Addr::LOCALHOST, prom.port).unwrap_or(prom.port);
        }
        env = env.with(telering_prometheus::config::ENV_PORT, prom.port.to_string());
    }

    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
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
        builder = builder.exporter(exporter);
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
    let ring_file = match (&exporter, &config.dir) {
        (Some(e), Some(dir)) if e == "buffer" => Some(dir.join(agent)),
        _ => None,
    };
    let csv_file = match (&exporter, &config.dir) {
        (Some(e), Some(dir)) if e == "csv" => Some(dir.join(format!("{agent}.csv"))),
        _ => None,
    };
    let telemetry = builder.build().map_err(telemetry_error)?;

    let mut collector = match (&ring_file, &config.dir) {
        (Some(_), Some(dir)) if !options.no_serve => {
            Some(Collector::start(dir.clone(), &prom, port_explicit)?)
        }
        _ => None,
    };
    // Only an address this run serves: an exporter that could not bind reports none
    // (and has warned), and then none is shown.
    let metrics_url = match &collector {
        Some(c) => Some(format!("http://{}/metrics", c.server.local_addr())),
        None => telemetry.exporter_endpoint(),
    };

    let threads = options.threads.max(1);
    let rate = options.rate.unwrap_or(DEFAULT_RATE).max(0.0);
    let duration = match (options.duration, options.events) {
        (None, None) => Some(DEFAULT_DURATION),
        (d, _) => d,
    };
    let _ = writeln!(
        out,
        "{agent}: simulated agent on {threads} threads, {}, {}; Ctrl-C stops it",
        if rate > 0.0 {
            format!("~{rate:.0} events/s")
        } else {
            "as fast as it can".to_string()
        },
        match (options.events, duration) {
            (Some(n), Some(d)) => format!("up to {n} events or {:.1} s", d.as_secs_f64()),
            (Some(n), None) => format!("{n} events"),
            (None, Some(d)) => format!("for {:.1} s", d.as_secs_f64()),
            (None, None) => "until stopped".to_string(),
        }
    );
    match (&exporter, &ring_file) {
        (_, Some(path)) => {
            let _ = writeln!(
                out,
                "ring file: {} ({})",
                path.display(),
                config.ring_layout.generation()
            );
        }
        (Some(e), None) => match &csv_file {
            Some(path) => {
                let _ = writeln!(out, "csv file:  {}", path.display());
            }
            None => {
                let _ = writeln!(out, "exporter:  {e}");
            }
        },
        (None, None) => {
            let _ = writeln!(
                out,
                "telemetry: {} (nothing is exported; set NIXL_TELEMETRY_ENABLE=y to export)",
                if config.mode == Mode::Disabled {
                    "disabled"
                } else {
                    "captured in process only"
                }
            );
        }
    }
    if let Some(url) = &metrics_url {
        let _ = writeln!(out, "metrics:   {url}");
    }
    let _ = out.flush();

    let budget = options.events.map(AtomicU64::new);
    let running = AtomicUsize::new(threads);
    let started = Instant::now();
    // A duration past what `Instant` can hold is no deadline at all.
    let deadline = duration.and_then(|d| started.checked_add(d));
    let per_thread_rate = rate / threads as f64;
    let mut names: BTreeMap<String, NameTally> = BTreeMap::new();

    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let worker = Worker {
                    rng: Rng::new(options.seed ^ (i as u64).wrapping_mul(0xA076_1D64_78BD_642F)),
                    telemetry: &telemetry,
                    backend: telemetry.backend("UCX"),
                    allowlist: Allowlist::new(&allowlist_text),
                    budget: budget.as_ref(),
                    stop,
                    deadline,
                    rate: per_thread_rate,
                    regions: Vec::new(),
                    queue_depth: 0,
                    tallies: BTreeMap::new(),
                };
                let running = &running;
                scope.spawn(move || {
                    let tallies = worker.run();
                    running.fetch_sub(1, Ordering::SeqCst);
                    tallies
                })
            })
            .collect();

        let mut last_line = Instant::now();
        while running.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(50));
            if let Some(c) = collector.as_mut() {
                c.collector.poll();
            }
            if let Some(p) = progress.as_deref_mut() {
                if last_line.elapsed() >= Duration::from_millis(250) {
                    last_line = Instant::now();
                    let s = telemetry.stats();
                    let secs = started.elapsed().as_secs_f64().max(1e-3);
                    let _ = write!(
                        p,
                        "\r{:6.1} s  {:>10} events  {:>8.0} events/s  {:>6} dropped ",
                        secs,
                        s.events_recorded,
                        s.events_recorded as f64 / secs,
                        s.events_dropped + s.exporter_dropped
                    );
                    let _ = p.flush();
                }
            }
        }
        for handle in handles {
            // A worker only returns tallies; it has no code path that panics.
            if let Ok(tallies) = handle.join() {
                for (name, t) in tallies {
                    let total = names.entry(name.to_string()).or_default();
                    total.category = t.category;
                    total.count += t.count;
                    total.sum = total.sum.saturating_add(t.sum);
                    total.dropped += t.dropped;
                }
            }
        }
    });
    let elapsed = started.elapsed();
    if let Some(p) = progress {
        let _ = writeln!(p);
    }

    // Everything recorded goes out now; dropping the telemetry closes the ring file.
    if let Err(e) = telemetry.flush() {
        log::warn!("final telemetry flush: {e}");
    }
    let stats = telemetry.stats();
    for (name, lost) in telemetry.dropped_by_name() {
        if let Some(tally) = names.get_mut(&name) {
            tally.dropped += lost;
        }
    }
    drop(telemetry);
    if let Some(mut c) = collector.take() {
        c.collector.poll();
        c.server.shutdown();
    }

    let summary = DemoSummary {
        agent: agent.to_string(),
        exporter,
        ring_file,
        csv_file,
        metrics_url,
        elapsed,
        names,
        stats,
        interrupted: stop.load(Ordering::SeqCst),
    };
    Ok(summary)
}

/// Every event name the demo records.
pub fn demo_event_names() -> impl Iterator<Item = &'static str> {
    [
        &builtin::AGENT_TX_BYTES,
        &builtin::AGENT_RX_BYTES,
        &builtin::AGENT_TX_REQUESTS_NUM,
        &builtin::AGENT_RX_REQUESTS_NUM,
        &builtin::AGENT_XFER_TIME,
        &builtin::AGENT_XFER_POST_TIME,
        &builtin::AGENT_MEMORY_REGISTERED,
        &builtin::AGENT_MEMORY_DEREGISTERED,
    ]
    .into_iter()
    .map(|b: &'static BuiltinEvent| b.name.as_str())
    .chain(DEMO_ERRORS.iter().map(|s| s.as_str()))
    .chain([QUEUE_DEPTH, BACKEND_RNDV_BYTES, BACKEND_RETRIES])
}

/// The errors the demo hits, most frequent first.
const DEMO_ERRORS: [ErrorStatus; 4] = [
    ErrorStatus::RemoteDisconnect,
    ErrorStatus::Backend,
    ErrorStatus::Canceled,
    ErrorStatus::NotFound,
];

/// One worker thread of the simulated agent.
struct Worker<'a> {
    rng: Rng,
    telemetry: &'a Telemetry,
    backend: telering_std::BackendTelemetry,
    allowlist: Allowlist<'a>,
    budget: Option<&'a AtomicU64>,
    stop: &'a AtomicBool,
    deadline: Option<Instant>,
    /// Events per second for this thread; 0 is unlimited.
    rate: f64,
    /// Sizes of the memory regions this thread has registered.
    regions: Vec<u64>,
    queue_depth: u64,
    tallies: BTreeMap<&'static str, NameTally>,
}

impl Worker<'_> {
    fn run(mut self) -> BTreeMap<&'static str, NameTally> {
        let started = Instant::now();
        let mut done: u64 = 0;
        // Steps that recorded nothing in a row: with `--events`, an allowlist that
        // admits only multi-event actions can leave a remainder no action fits.
        let mut idle_steps = 0u32;
        loop {
            if self.stop.load(Ordering::Relaxed)
                || self.deadline.is_some_and(|d| Instant::now() >= d)
            {
                break;
            }
            let n = match self.step() {
                Some(n) => n,
                None => break, // the event budget is spent
            };
            done += n;
            idle_steps = if n == 0 { idle_steps + 1 } else { 0 };
            if idle_steps > 100_000 {
                break;
            }
            if self.rate > 0.0 {
                // Pace to the rate: event `done` is due `done / rate` seconds in. A due
                // time past what `Instant` can hold (a tiny rate) means "not in this run".
                let now = Instant::now();
                let wait = Duration::try_from_secs_f64(done as f64 / self.rate)
                    .ok()
                    .and_then(|d| started.checked_add(d))
                    .map_or(Duration::MAX, |due| due.saturating_duration_since(now));
                let wait = match self.deadline {
                    Some(d) => wait.min(d.saturating_duration_since(now)),
                    None => wait,
                };
                if !wait.is_zero() {
                    sleep_unless_stopped(wait, self.stop);
                }
            }
        }
        self.tallies
    }

    /// Takes `n` events from the budget; false when fewer are left.
    fn take(&self, n: u64) -> bool {
        match self.budget {
            None => true,
            Some(b) => b
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                    left.checked_sub(n)
                })
                .is_ok(),
        }
    }

    fn budget_left(&self) -> bool {
        self.budget.is_none_or(|b| b.load(Ordering::Relaxed) > 0)
    }

    fn allowed(&self, name: &str) -> u64 {
        u64::from(self.allowlist.allows(name))
    }

    fn tally(&mut self, name: &'static str, category: Category, value: u64, r: Recorded) {
        if self.allowlist.allows(name) {
            self.tallies
                .entry(name)
                .or_default()
                .add(category, value, r);
        }
    }

    /// Does one thing; returns how many events it took from the budget, or `None`
    /// when the budget is spent.
    fn step(&mut self) -> Option<u64> {
        let roll = self.rng.below(100);
        let taken = match roll {
            0..80 => self.transfer(),
            80..86 => self.register(),
            86..92 => self.deregister(),
            92..96 => self.queue_depth(),
            96..98 => self.backend_event(),
            _ => self.error(),
        };
        match taken {
            0 if !self.budget_left() => None,
            n => Some(n),
        }
    }

    fn transfer(&mut self) -> u64 {
        let is_write = self.rng.below(100) < 60;
        let (bytes_event, requests_event) = if is_write {
            (&builtin::AGENT_TX_BYTES, &builtin::AGENT_TX_REQUESTS_NUM)
        } else {
            (&builtin::AGENT_RX_BYTES, &builtin::AGENT_RX_REQUESTS_NUM)
        };
        let parts: [&'static BuiltinEvent; 4] = [
            bytes_event,
            requests_event,
            &builtin::AGENT_XFER_TIME,
            &builtin::AGENT_XFER_POST_TIME,
        ];
        let n: u64 = parts.iter().map(|b| self.allowed(b.name.as_str())).sum();
        if n == 0 || !self.take(n) {
            return 0;
        }
        let bytes = self.rng.log_normal(256.0 * 1024.0, 1.2).clamp(512.0, 256e6) as u64;
        // A 20 GB/s link plus per-request overhead; one transfer in 50 meets congestion.
        let mut micros = bytes as f64 / 20_000.0 + self.rng.log_normal(8.0, 0.6);
        if self.rng.below(50) == 0 {
            micros *= 5.0 + self.rng.unit() * 20.0;
        }
        let xfer_us = (micros as u64).max(1);
        let post_us = (self.rng.log_normal(3.0, 0.5) as u64).max(1);
        let r = self.telemetry.add_xfer_stats(
            Duration::from_micros(xfer_us),
            is_write,
            bytes,
            Duration::from_micros(post_us),
        );
        for (event, value) in parts.iter().zip([bytes, 1, xfer_us, post_us]) {
            self.tally(event.name.as_str(), event.category, value, r);
        }
        n
    }

    fn register(&mut self) -> u64 {
        let b: &'static BuiltinEvent = &builtin::AGENT_MEMORY_REGISTERED;
        if self.allowed(b.name.as_str()) == 0 || !self.take(1) {
            return 0;
        }
        let size = (self.rng.log_normal(64.0 * 1048576.0, 1.0) as u64 / 4096).max(1) * 4096;
        self.regions.push(size);
        let r = self.telemetry.update_memory_registered(size);
        self.tally(b.name.as_str(), b.category, size, r);
        1
    }

    fn deregister(&mut self) -> u64 {
        let b: &'static BuiltinEvent = &builtin::AGENT_MEMORY_DEREGISTERED;
        if self.regions.is_empty() || self.allowed(b.name.as_str()) == 0 || !self.take(1) {
            return 0;
        }
        let i = self.rng.below(self.regions.len() as u64) as usize;
        let size = self.regions.swap_remove(i);
        let r = self.telemetry.update_memory_deregistered(size);
        self.tally(b.name.as_str(), b.category, size, r);
        1
    }

    fn queue_depth(&mut self) -> u64 {
        if self.allowed(QUEUE_DEPTH) == 0 || !self.take(1) {
            return 0;
        }
        // A random walk between 0 and 64 outstanding requests.
        self.queue_depth = match self.rng.below(2) {
            0 => self.queue_depth.saturating_sub(1 + self.rng.below(4)),
            _ => (self.queue_depth + 1 + self.rng.below(4)).min(64),
        };
        let depth = self.queue_depth;
        // The name is a valid constant, so `record` cannot refuse it.
        if let Ok(r) = self.telemetry.record(Category::Custom, QUEUE_DEPTH, depth) {
            self.tally(QUEUE_DEPTH, Category::Custom, depth, r);
        }
        1
    }

    fn backend_event(&mut self) -> u64 {
        let (name, value) = if self.rng.below(4) == 0 {
            (BACKEND_RETRIES, 1 + self.rng.below(3))
        } else {
            (
                BACKEND_RNDV_BYTES,
                self.rng.log_normal(1048576.0, 1.0) as u64,
            )
        };
        if self.allowed(name) == 0 || !self.take(1) {
            return 0;
        }
        if let Ok(r) = self.backend.add_telemetry_event(name, value) {
            self.tally(name, Category::Backend, value, r);
        }
        1
    }

    fn error(&mut self) -> u64 {
        // Disconnects are the most common failure; weights 8:4:2:1.
        let status = match self.rng.below(15) {
            0..8 => DEMO_ERRORS[0],
            8..12 => DEMO_ERRORS[1],
            12..14 => DEMO_ERRORS[2],
            _ => DEMO_ERRORS[3],
        };
        let event = status.event();
        if self.allowed(event.name.as_str()) == 0 || !self.take(1) {
            return 0;
        }
        let r = self.telemetry.update_error_count(status);
        self.tally(status.as_str(), event.category, 1, r);
        1
    }
}

/// Writes the summary as a table: per event name the category, count and sum, then
/// losses and how to read the ring file.
pub fn write_summary_text(out: &mut dyn Write, s: &DemoSummary) -> std::io::Result<()> {
    let secs = s.elapsed.as_secs_f64().max(1e-3);
    writeln!(out)?;
    writeln!(
        out,
        "{}: {} events recorded in {:.1} s ({:.0}/s){}",
        s.agent,
        s.events_recorded(),
        secs,
        s.events_recorded() as f64 / secs,
        if s.interrupted {
            ", stopped by Ctrl-C"
        } else {
            ""
        }
    )?;
    writeln!(
        out,
        "  {:<31} {:<12} {:>10} {:>20} {:>10}",
        "event", "category", "count", "sum", "dropped"
    )?;
    for (name, t) in &s.names {
        let category = t.category.map(|c| c.short_name()).unwrap_or("-");
        writeln!(
            out,
            "  {name:<31} {category:<12} {:>10} {:>20} {:>10}",
            t.count, t.sum, t.dropped
        )?;
    }
    if s.exporter.is_some() {
        writeln!(
            out,
            "exported:  {} delivered by the {} exporter",
            s.events_exported(),
            s.exporter.as_deref().unwrap_or("")
        )?;
    }
    writeln!(
        out,
        "dropped:   {} (at record time {}, by the exporter {}){}",
        s.events_dropped(),
        s.stats.events_dropped,
        s.stats.exporter_dropped,
        if s.events_dropped() > 0 {
            "; each loss is also reported in-band as agent_telemetry_events_dropped"
        } else {
            ""
        }
    )?;
    if let Some(path) = &s.ring_file {
        writeln!(out, "ring file: {}", path.display())?;
        writeln!(out, "read it:   telering read {}", path.display())?;
        writeln!(
            out,
            "       or: python3 examples/python/nixl_telemetry_reader.py --telemetry_path {}",
            path.display()
        )?;
        writeln!(out, "inspect:   telering stat {}", path.display())?;
    } else if let Some(path) = &s.csv_file {
        writeln!(out, "csv file:  {}", path.display())?;
    } else if let Some(e) = &s.exporter {
        writeln!(out, "exporter:  {e}")?;
    }
    out.flush()
}

/// Writes the summary as one JSON object on one line.
pub fn write_summary_json(out: &mut dyn Write, s: &DemoSummary) -> std::io::Result<()> {
    use crate::output::write_json_string;
    let mut line = Vec::new();
    line.extend_from_slice(b"{\"agent\":");
    write_json_string(&mut line, &s.agent)?;
    line.extend_from_slice(b",\"exporter\":");
    match &s.exporter {
        Some(e) => write_json_string(&mut line, e)?,
        None => line.extend_from_slice(b"null"),
    }
    line.extend_from_slice(b",\"ring_file\":");
    match &s.ring_file {
        Some(p) => write_json_string(&mut line, &p.to_string_lossy())?,
        None => line.extend_from_slice(b"null"),
    }
    line.extend_from_slice(b",\"csv_file\":");
    match &s.csv_file {
        Some(p) => write_json_string(&mut line, &p.to_string_lossy())?,
        None => line.extend_from_slice(b"null"),
    }
    line.extend_from_slice(b",\"metrics_url\":");
    match &s.metrics_url {
        Some(url) => write_json_string(&mut line, url)?,
        None => line.extend_from_slice(b"null"),
    }
    write!(
        line,
        ",\"elapsed_s\":{:.3},\"interrupted\":{},\"events_recorded\":{},\"events_dropped\":{},\"dropped_at_record\":{},\"dropped_by_exporter\":{},\"events_exported\":{},\"names\":{{",
        s.elapsed.as_secs_f64(),
        s.interrupted,
        s.events_recorded(),
        s.events_dropped(),
        s.stats.events_dropped,
        s.stats.exporter_dropped,
        s.events_exported()
    )?;
    for (i, (name, t)) in s.names.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        write_json_string(&mut line, name)?;
        write!(
            line,
            ":{{\"category\":\"{}\",\"count\":{},\"sum\":{},\"dropped\":{}}}",
            t.category.map(|c| c.short_name()).unwrap_or("-"),
            t.count,
            t.sum,
            t.dropped
        )?;
    }
    line.extend_from_slice(b"}}\n");
    out.write_all(&line)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_draws_are_never_zero_so_box_muller_stays_finite() {
        let mut rng = Rng::new(0);
        for _ in 0..100_000 {
            let u = rng.unit();
            assert!(u > 0.0 && u <= 1.0);
            assert!(rng.normal().is_finite());
        }
    }

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

    #[test]
    fn every_demo_event_name_fits_the_wire() {
        for name in demo_event_names() {
            telering_core::EventName::new(name).unwrap();
        }
    }
}
