//! `telering demo`: a simulated data-movement agent that records real telemetry.
//!
//! Several worker threads perform fake transfers on routes — sizes log-normal around
//! 256 KiB, latencies from a 20 GB/s link plus log-normal per-request overhead with an
//! occasional congested tail; reads from a prefill peer, writes to two decode peers
//! (one behind a slow link) and to a file (`routes`) — register and deregister memory regions, hit an
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

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use telering_shm::RingLayout;
use telering_std::EnvSource;

use crate::error::CliError;

mod routes;
mod setup;
mod summary;
mod workload;

pub use routes::{DECODE_PEER, PREFILL_PEER, SLOW_PEER, SLOW_PEER_FACTOR, mean_xfer_us, p99_le_us};
pub use summary::{DemoSummary, telering_command, write_summary_json, write_summary_text};
pub use workload::{NameTally, Rng, demo_event_names};

/// The agent name when neither `--agent` nor anything else names one.
pub const DEFAULT_AGENT: &str = "demo-agent";
/// The telemetry directory when neither `--dir` nor `NIXL_TELEMETRY_DIR` is set.
pub const DEFAULT_DIR: &str = crate::ring_dir::DEFAULT_DIR;
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
    /// `--exporter`: the exporter name, or a comma-separated list of names.
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

/// Runs the demo and returns its summary (print it with [`write_summary_text`] or
/// [`write_summary_json`]): `env` is the environment (`EnvSource::from_process()` for
/// the command), `out` receives the start lines (ring file, metrics address),
/// `progress` (a terminal) the live progress line.
pub fn demo(
    options: &DemoOptions,
    env: &EnvSource,
    stop: &AtomicBool,
    out: &mut dyn Write,
    progress: Option<&mut dyn Write>,
) -> Result<DemoSummary, CliError> {
    let mut setup = setup::Setup::start(options, env)?;
    let plan = workload::Plan {
        threads: options.threads.max(1),
        rate: options.rate.unwrap_or(DEFAULT_RATE).max(0.0),
        duration: match (options.duration, options.events) {
            (None, None) => Some(DEFAULT_DURATION),
            (d, _) => d,
        },
        events: options.events,
        seed: options.seed,
    };
    write_plan(out, &setup.agent, &plan);
    setup.write_targets(out);
    let workload = workload::run(
        &plan,
        &setup.telemetry,
        &setup.allowlist_text,
        &mut || {
            if let Some(c) = setup.collector.as_mut() {
                c.poll();
            }
        },
        stop,
        progress,
    );
    Ok(summary::finish(
        setup,
        workload,
        stop.load(Ordering::SeqCst),
    ))
}

/// The first start line: threads, rate and when the run ends.
fn write_plan(out: &mut dyn Write, agent: &str, plan: &workload::Plan) {
    let _ = writeln!(
        out,
        "{agent}: simulated agent on {} threads, {}, {}; Ctrl-C stops it",
        plan.threads,
        if plan.rate > 0.0 {
            format!("~{:.0} events/s", plan.rate)
        } else {
            "as fast as it can".to_string()
        },
        match (plan.events, plan.duration) {
            (Some(n), Some(d)) => format!("up to {n} events or {:.1} s", d.as_secs_f64()),
            (Some(n), None) => format!("{n} events"),
            (None, Some(d)) => format!("for {:.1} s", d.as_secs_f64()),
            (None, None) => "until stopped".to_string(),
        }
    );
}
