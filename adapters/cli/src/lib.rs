#![doc = include_str!("../README.md")]
//!
//! # The `telering-cli` crate
//!
//! The `telering` command's logic, as a library so that it is tested directly: [`Cli`]
//! is the command line (clap), [`run`] executes it, and each subcommand lives in its
//! module ([`demo`], [`read`] for `read` and `tail`, [`stat`], [`serve`], [`decode`],
//! [`config`], [`top`]); [`ring_dir`] is the directory they read when given none.
//! Output formats are in [`output`]; exit codes and error texts in [`CliError`].
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod bridge;
pub mod config;
pub mod decode;
pub mod delivery;
pub mod demo;
mod error;
pub mod lenient;
mod logger;
pub mod output;
pub mod read;
pub mod ring_dir;
pub mod serve;
pub mod stat;
pub mod top;

pub use error::{CliError, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, error_line, usage_error, usage_line};

/// The project README's examples, run as this crate's doctests by `cargo test
/// --workspace` (only there: a packaged crate has no project README).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ProjectReadme;
pub use logger::init_logger;

use clap::{Args, Parser, Subcommand};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;
use telering_core::ObserverStart;

/// telering: telemetry rings for data-movement agents.
#[derive(Debug, Parser)]
#[command(name = "telering", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a simulated agent that records telemetry (ring file + Prometheus by default).
    Demo(DemoArgs),
    /// Drain a ring file as its one consumer and print its events (taking them; `tail` only looks).
    Read(ReadArgs),
    /// Follow a ring file as a read-only observer (never modifies it), reporting gaps.
    Tail(TailArgs),
    /// Show capacity, fill, writer and loss counters of a ring file or of every ring in a directory.
    Stat(StatArgs),
    /// Serve every ring in a directory on one Prometheus /metrics endpoint, and with --otlp push them to an OpenTelemetry collector.
    Serve(ServeArgs),
    /// Decode a telering-embedded-io frame stream (a firmware UART capture) and print its events.
    Decode(DecodeArgs),
    /// Live view of every ring in a directory: rates, latencies, errors, losses (read-only).
    Top(TopArgs),
    /// Print the effective configuration: each variable's value and where it comes from (environment, file or default).
    Config,
    /// Turn firmware links (serial, TCP, Unix socket, file, memory window) into agents: each device's events into a ring file, every loss counted.
    Bridge(bridge::BridgeArgs),
}

/// `telering top`.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// A ring directory, or ring files [default: $NIXL_TELEMETRY_DIR, else ./telemetry].
    #[arg(value_name = "DIR | FILE")]
    pub paths: Vec<PathBuf>,
    /// Display interval (1s, 500ms, 2m).
    #[arg(long, value_parser = demo::parse_duration, value_name = "TIME", default_value = "1s")]
    pub interval: Duration,
    /// Print the table once as plain text (also when stdout is not a terminal).
    #[arg(long)]
    pub once: bool,
    /// Print the table once, one JSON object per ring.
    #[arg(long)]
    pub json: bool,
    /// Rows from this Prometheus server's query API (http://host:9090): every agent of every node it scrapes.
    #[arg(long, value_name = "URL", conflicts_with = "paths")]
    pub prometheus: Option<String>,
    /// With --prometheus: how far back a rate may look for two samples (at least two scrape intervals).
    #[arg(long, value_parser = demo::parse_duration, value_name = "TIME", default_value = "5m", requires = "prometheus")]
    pub window: Duration,
    /// With --prometheus: how long a refresh waits for the server's answers, whatever --interval is.
    #[arg(long, value_parser = demo::parse_duration, value_name = "TIME", default_value = "10s", requires = "prometheus")]
    pub timeout: Duration,
}

/// `telering demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Telemetry directory [env: NIXL_TELEMETRY_DIR, default ./telemetry].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Agent name: the ring file is DIR/AGENT.
    #[arg(long, value_name = "NAME", default_value = demo::DEFAULT_AGENT)]
    pub agent: String,
    /// Exporter: buffer, csv, prometheus, prometheus_mp, otlp or nop, or a comma-separated list of them [env: NIXL_TELEMETRY_EXPORTER, default buffer].
    #[arg(long, value_name = "NAME")]
    pub exporter: Option<String>,
    /// Stop after this long (20s, 500ms, 2m) [default 20s unless --events is given].
    #[arg(long, value_parser = demo::parse_duration, value_name = "TIME")]
    pub duration: Option<Duration>,
    /// Stop after exactly this many events were recorded.
    #[arg(long, value_name = "N")]
    pub events: Option<u64>,
    /// Events per second across all threads; 0 runs flat out.
    #[arg(long, value_name = "PER_SEC", default_value_t = demo::DEFAULT_RATE, value_parser = demo::parse_rate)]
    pub rate: f64,
    /// Worker threads.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
    /// Metrics port [env: NIXL_TELEMETRY_PROMETHEUS_PORT, default 9090 or the next free one]; 0 picks any free port.
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Do not serve the ring directory's metrics.
    #[arg(long)]
    pub no_serve: bool,
    /// Seed of the simulated workload.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,
    /// Print the final summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Ring file layout: v1 (timestamps, categories, names) or v4 (for NIXL 1.3.1 and later readers) [env: TELERING_RING_LAYOUT, default v1].
    #[arg(long, value_name = "v1|v4", value_parser = demo::parse_layout)]
    pub layout: Option<telering_shm::RingLayout>,
}

/// `telering read`.
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The ring file, $NIXL_TELEMETRY_DIR/AGENT.
    pub path: PathBuf,
    /// Print one JSON object per line (timestamp_us, category, event, value).
    #[arg(long)]
    pub json: bool,
    /// Keep waiting for new events until Ctrl-C.
    #[arg(short, long)]
    pub follow: bool,
    /// Poll interval in milliseconds with --follow.
    #[arg(long, value_name = "MS", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub interval: u64,
    /// Take exactly N events (fewer when the ring holds fewer, unless --follow waits for them), then stop.
    #[arg(long, value_name = "N")]
    pub max: Option<u64>,
}

/// `telering tail`.
#[derive(Debug, Args)]
pub struct TailArgs {
    /// The common reading options.
    #[command(flatten)]
    pub read: ReadArgs,
    /// Start at the next event published instead of the oldest still in the ring.
    #[arg(long)]
    pub newest: bool,
    /// The file is a ring window laid out by telering-core alone (stamped slots, no trailer).
    #[arg(long)]
    pub core_window: bool,
}

/// `telering stat`.
#[derive(Debug, Args)]
pub struct StatArgs {
    /// A ring file, or a directory of ring files.
    pub path: PathBuf,
    /// Print one JSON object per ring.
    #[arg(long)]
    pub json: bool,
}

/// `telering serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The ring directory [env: NIXL_TELEMETRY_DIR, default ./telemetry].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Port [env: NIXL_TELEMETRY_PROMETHEUS_PORT, default 9090]; 0 picks a free one.
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Bind 127.0.0.1 only [env: NIXL_TELEMETRY_PROMETHEUS_LOCAL].
    #[arg(long)]
    pub local: bool,
    /// Drain the rings (advance read_pos) instead of observing them; only when nothing else reads them.
    #[arg(long)]
    pub drain: bool,
    /// Also push the node's metrics to an OpenTelemetry collector (OTLP/HTTP protobuf),
    /// configured by OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_METRIC_EXPORT_INTERVAL and the other OTEL_* variables.
    #[arg(long)]
    pub otlp: bool,
    /// Do not serve the Prometheus /metrics endpoint (with --otlp: push only).
    #[arg(long, requires = "otlp")]
    pub no_prometheus: bool,
}

/// `telering decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// The frame stream: a file, or - for standard input.
    #[arg(long, short, value_name = "FILE", default_value = "-")]
    pub input: PathBuf,
    /// Print one JSON object per line.
    #[arg(long)]
    pub json: bool,
}

/// Set by the first Ctrl-C, SIGTERM or SIGHUP once [`install_interrupt_handler`] ran.
/// (An `Arc` because the signal handlers hold it.)
static STOP: LazyLock<Arc<AtomicBool>> = LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// The flag that Ctrl-C (SIGINT), SIGTERM and SIGHUP set once
/// [`install_interrupt_handler`] ran; long-running subcommands finish cleanly when
/// it is set.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}

/// Whether the first Ctrl-C or SIGTERM ends the process at once (see
/// [`exit_on_first_signal`]).
static EXIT_ON_FIRST: LazyLock<Arc<AtomicBool>> =
    LazyLock::new(|| Arc::new(AtomicBool::new(false)));

/// Makes the first Ctrl-C or SIGTERM end the process at once with code 130, for a
/// command that may block in a system call the handler cannot interrupt (`decode`
/// opening a FIFO or waiting for input; `stat` and `config` writing to a pipe nobody
/// reads) and has nothing left to finish: it writes out what it has as it goes.
pub fn exit_on_first_signal() {
    EXIT_ON_FIRST.store(true, Ordering::SeqCst);
    // A signal that came before: the handler set the flag without exiting. (Both
    // sides store, then load the other's flag, sequentially consistent: at least one
    // of them sees both.)
    if STOP.load(Ordering::SeqCst) {
        std::process::exit(130);
    }
}

/// Makes Ctrl-C, SIGTERM and SIGHUP set [`stop_flag`]; a second one (or the first,
/// after [`exit_on_first_signal`]) ends the process at once with code 130.
///
/// The handlers only load and store atomics and call `_exit`, all async-signal-safe
/// (signal-hook's `flag` module); they run in the order registered, so the exits
/// look at the flags before the first signal sets [`stop_flag`].
pub fn install_interrupt_handler() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::flag;
    let installed = [SIGINT, SIGTERM, SIGHUP]
        .into_iter()
        .try_for_each(|signal| {
            flag::register_conditional_shutdown(signal, 130, Arc::clone(&EXIT_ON_FIRST))?;
            flag::register_conditional_shutdown(signal, 130, Arc::clone(&STOP))?;
            flag::register(signal, Arc::clone(&STOP)).map(drop)
        });
    if let Err(e) = installed {
        log::warn!("Ctrl-C will end the process without a final flush: {e}");
    }
}

/// The process's `NIXL_TELEMETRY_*` variables over the configuration file, every one
/// of them checked to be UTF-8 and the file to be readable (a value that is not, or a
/// broken file, is a configuration error naming it, as in the libraries).
fn process_env() -> Result<telering_std::EnvSource, CliError> {
    let env = telering_std::EnvSource::from_process();
    env.check().map_err(|e| CliError::Config(e.to_string()))?;
    Ok(env)
}

/// Runs `cli` with the process's environment, standard output and standard error.
pub fn run(cli: Cli) -> Result<(), CliError> {
    let stop = stop_flag();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match cli.command {
        Command::Demo(a) => {
            let options = demo::DemoOptions {
                dir: a.dir,
                agent: Some(a.agent),
                exporter: a.exporter,
                duration: a.duration,
                events: a.events,
                rate: Some(a.rate),
                threads: usize::from(a.threads),
                port: a.port,
                no_serve: a.no_serve,
                seed: a.seed,
                json: a.json,
                layout: a.layout,
            };
            let env = telering_std::EnvSource::from_process();
            let mut progress_to = std::io::stderr();
            let progress: Option<&mut dyn Write> = if progress_to.is_terminal() {
                Some(&mut progress_to)
            } else {
                None
            };
            // With --json, stdout carries the JSON summary alone.
            let mut info_to = std::io::stderr();
            let info: &mut dyn Write = if options.json { &mut info_to } else { &mut out };
            let summary = demo::demo(&options, &env, stop, info, progress)?;
            if options.json {
                demo::write_summary_json(&mut out, &summary)
            } else {
                demo::write_summary_text(&mut out, &summary)
            }
            .map_err(CliError::Output)
        }
        Command::Read(a) => {
            let options = read_options(&a);
            // Unbuffered: `read` writes whole batches, each ending in a newline, so
            // standard output's line buffering passes them straight through, and the
            // bytes it accepts are the bytes that went out.
            let mut unbuffered = stdout.lock();
            read::read(&options, stop, &mut unbuffered, &mut stderr.lock()).map(|_| ())
        }
        Command::Tail(a) => {
            let options = read_options(&a.read);
            let start = if a.newest {
                ObserverStart::Newest
            } else {
                ObserverStart::Oldest
            };
            let tail = if a.core_window {
                read::tail_core_window
            } else {
                read::tail
            };
            tail(&options, start, stop, &mut out, &mut stderr.lock()).map(|_| ())
        }
        Command::Stat(a) => {
            // Nothing to finish: a signal ends it even while a write blocks.
            exit_on_first_signal();
            stat::stat(&a.path, a.json, &mut out, &mut stderr.lock()).map(|_| ())
        }
        Command::Serve(a) => {
            let env = process_env()?;
            let lookup = |name: &str| env.get(name).ok().flatten();
            let env_dir = lookup(telering_std::config::vars::DIR);
            let dir = ring_dir::RingDir::choose(a.dir, env_dir);
            dir.require("telering serve --dir DIR")?;
            let dir = dir.path;
            let otlp = match a.otlp {
                true => Some(
                    telering_otlp::OtlpConfig::from_process_env()
                        .map_err(|e| CliError::Config(e.to_string()))?,
                ),
                false => None,
            };
            let options = serve::ServeOptions {
                dir,
                port: a.port,
                local: a.local,
                drain: a.drain,
                otlp,
                prometheus: !a.no_prometheus,
            };
            serve::serve(&options, lookup, stop, |serving| {
                if let Some(addr) = serving.metrics {
                    let _ = writeln!(
                        out,
                        "serving http://{addr}/metrics, dashboard http://{addr}/ (Ctrl-C stops)"
                    );
                }
                if let Some((url, interval_ms)) = &serving.otlp {
                    let _ = writeln!(
                        out,
                        "pushing to {url} every {interval_ms} ms (OTLP/HTTP; Ctrl-C stops)"
                    );
                }
                let _ = out.flush();
            })
        }
        Command::Top(a) if a.prometheus.is_some() => {
            let url = a.prometheus.unwrap_or_default();
            let source = top::prometheus::PromSource::new(&url, a.window, a.timeout)
                .map_err(CliError::Usage)?;
            if a.once || a.json || !std::io::stdout().is_terminal() {
                top::prom_view::once(&source, a.json, &mut out)
            } else {
                drop(out);
                top::prom_view::live(&source, a.interval, stop)
            }
        }
        Command::Top(a) => {
            let env_dir = process_env()?
                .get_trimmed(telering_std::config::vars::DIR)
                .map_err(|e| CliError::Config(e.to_string()))?;
            if a.paths.is_empty() {
                ring_dir::RingDir::choose(None, env_dir.clone()).require("telering top DIR")?;
            }
            let options = top::TopOptions {
                source: top::source_from(a.paths, env_dir),
                interval: a.interval,
                once: a.once || a.json || !std::io::stdout().is_terminal(),
                json: a.json,
            };
            if options.once {
                top::once(&options, stop, &mut out)
            } else {
                drop(out);
                top::live(&options, stop)
            }
        }
        Command::Bridge(a) => bridge::bridge(a, &process_env()?, stop, &mut out),
        Command::Config => {
            // Nothing to finish: a signal ends it even while a write blocks.
            exit_on_first_signal();
            config::config(&config::process_env(), &mut out)
        }
        Command::Decode(a) => {
            // Blocked opening a FIFO or reading a quiet port, `decode` could not see
            // the stop flag: the first signal ends it.
            exit_on_first_signal();
            let format = output::EventFormat::from_json_flag(a.json);
            if a.input.as_os_str() == "-" {
                let stdin = std::io::stdin();
                let mut input = stdin.lock();
                decode::decode(
                    &mut input,
                    "<stdin>".as_ref(),
                    format,
                    &mut out,
                    &mut stderr.lock(),
                )
                .map(|_| ())
            } else {
                let mut file = std::fs::File::open(&a.input).map_err(|source| CliError::Input {
                    path: a.input.clone(),
                    source,
                })?;
                decode::decode(&mut file, &a.input, format, &mut out, &mut stderr.lock())
                    .map(|_| ())
            }
        }
    }
}

fn read_options(a: &ReadArgs) -> read::ReadOptions {
    read::ReadOptions {
        path: a.path.clone(),
        format: output::EventFormat::from_json_flag(a.json),
        follow: a.follow,
        interval: Duration::from_millis(a.interval),
        max: a.max,
        unread_output: Some(delivery::stdout_unread_bytes),
    }
}
