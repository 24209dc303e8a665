//! `telering top [DIR | FILE…]`: a live view of every agent on a node.
//!
//! One row per ring: agent, writer alive/gone (pid), events/s, tx and rx bytes/s,
//! requests/s, transfer time p50 and p99 and post time p50, errors/s with the most
//! frequent status, events the view missed and events the writer dropped (trailer).
//! A detail pane shows the selected agent's sparklines (tx/rx bytes/s, transfer p99
//! over the last minutes), its error statuses and its custom/backend event rates.
//!
//! The view is read-only: every ring is followed by an observer
//! ([`telering_shm::ObserverReader`]) that maps the file read-only, exactly as
//! `telering tail` does. The rings are polled every [`POLL_PERIOD`] whatever the
//! display `--interval`, so that a 4096-slot ring written at 10 000 events/s (full
//! in 410 ms) is read long before it wraps; figures are recomputed per display
//! interval. Rates are per second of the view's own clock between two displays, so
//! rings whose generation has no timestamps get the same figures (the view notes it).
//!
//! With `--once`, `--json`, or when standard output is not a terminal, the view
//! follows the rings for one interval and prints the table once, as text or as one
//! JSON object per ring.
//!
//! With `--prometheus URL` the rows come from a Prometheus server instead, one per
//! agent of every node it scrapes ([`prometheus`], shown by [`prom_view`]).
//!
//! Each ring's routes (its agent's route file, `DIR/.routes/<agent>`) are read beside
//! it ([`routes`]): `r` shows the selected agent's routes (bytes/s, transfers/s,
//! transfer p99, totals) in the detail pane, and `--once` prints a route table after
//! the agents' when any agent has routes (`--json`: each ring's `routes`).
//!
//! Modules: [`stats`] (bounded incremental statistics), [`scan`] (finding and
//! following rings), [`routes`] (route files), [`render`] (screen, text, JSON),
//! [`input`] (keys).

pub mod input;
pub mod prom_view;
pub mod prometheus;
pub mod render;
pub mod route_table;
pub mod routes;
pub mod scan;
pub mod stats;

use crate::error::CliError;
use input::ViewState;
use ratatui::crossterm::event::{self, Event as TermEvent};
use scan::{Rings, Source};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the rings are read. A default 4096-slot ring holds 4095 events: at
/// 10 000 events/s that is 410 ms of writing, so reading every 100 ms leaves a
/// fourfold margin.
pub const POLL_PERIOD: Duration = Duration::from_millis(100);
/// How often the directory is listed for new and vanished rings.
const RESCAN_PERIOD: Duration = Duration::from_secs(1);

/// What `telering top` does.
#[derive(Clone, Debug)]
pub struct TopOptions {
    /// A directory of rings, or individual ring files.
    pub source: Source,
    /// The display (and statistics) interval.
    pub interval: Duration,
    /// Print the table once instead of the live screen.
    pub once: bool,
    /// Print JSON (implies once).
    pub json: bool,
}

/// Where the rings are: the given paths (one directory, or files), else
/// `NIXL_TELEMETRY_DIR`, else `./telemetry`.
pub fn source_from(paths: Vec<PathBuf>, env_dir: Option<String>) -> Source {
    match paths.as_slice() {
        [] => Source::Dir(env_dir.filter(|d| !d.trim().is_empty()).map_or_else(
            || PathBuf::from(crate::ring_dir::DEFAULT_DIR),
            PathBuf::from,
        )),
        [one] if one.is_dir() => Source::Dir(one.clone()),
        _ => Source::Files(paths),
    }
}

/// Follows the rings for one `interval` and writes the table (text or JSON) to `out`.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("telering-cli-doc-top-{}", std::process::id()));
/// use std::time::Duration;
/// use telering_cli::top::{once, scan::Source, TopOptions};
/// use telering_shm::{ShmWriter, WriterOptions};
/// let writer = ShmWriter::create(WriterOptions::new(&dir, "agent-0"))?;
/// let options = TopOptions {
///     source: Source::Dir(dir.clone()),
///     interval: Duration::from_millis(100),
///     once: true,
///     json: false,
/// };
/// let mut out = Vec::new();
/// once(&options, &std::sync::atomic::AtomicBool::new(false), &mut out)?;
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.lines().nth(1).unwrap().starts_with("agent-0"), "{text}");
/// # writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn once(options: &TopOptions, stop: &AtomicBool, out: &mut dyn Write) -> Result<(), CliError> {
    // A directory that cannot be listed is an error here; the live view shows it.
    if let Source::Dir(dir) = &options.source {
        crate::stat::ring_paths(dir)?;
    }
    let mut rings = Rings::new(options.source.clone());
    let start = Instant::now();
    let deadline = start + options.interval;
    loop {
        rings.poll();
        let now = Instant::now();
        if now >= deadline || stop.load(Ordering::SeqCst) {
            break;
        }
        std::thread::sleep((deadline - now).min(POLL_PERIOD));
    }
    rings.rescan();
    rings.poll();
    rings.close_interval(start.elapsed().as_secs_f64());
    let sort = input::SortColumn::Agent;
    if options.json {
        render::write_json(out, &rings, sort)
    } else {
        render::write_text(out, &rings, sort)
    }
    .and_then(|()| out.flush())
    .map_err(CliError::Output)
}

/// Runs the live screen on the terminal until `q` (or `stop`).
pub fn live(options: &TopOptions, stop: &AtomicBool) -> Result<(), CliError> {
    let mut terminal = ratatui::try_init().map_err(CliError::Output)?;
    let result = live_loop(&mut terminal, options, stop);
    ratatui::try_restore().map_err(CliError::Output)?;
    result
}

fn live_loop(
    terminal: &mut ratatui::DefaultTerminal,
    options: &TopOptions,
    stop: &AtomicBool,
) -> Result<(), CliError> {
    let mut rings = Rings::new(options.source.clone());
    let mut view = ViewState::default();
    let interval_s = options.interval.as_secs_f64();
    let mut interval_start = Instant::now();
    let mut next_poll = interval_start;
    let mut next_rescan = interval_start + RESCAN_PERIOD;
    let mut dirty = true;
    while !view.quit && !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        if now >= next_poll {
            rings.poll();
            next_poll = now + POLL_PERIOD;
        }
        if now >= next_rescan {
            rings.rescan();
            next_rescan = now + RESCAN_PERIOD;
        }
        // Paused: the shown figures stay; the running interval keeps counting
        // (bounded) and is closed, over its whole length, once resumed.
        if !view.paused && now >= interval_start + options.interval {
            rings.close_interval(now.duration_since(interval_start).as_secs_f64());
            interval_start = now;
            dirty = true;
        }
        if dirty {
            terminal
                .draw(|f| render::draw(f, &rings, &view, interval_s))
                .map_err(CliError::Output)?;
            dirty = false;
        }
        let wake = if view.paused {
            next_poll
        } else {
            next_poll.min(interval_start + options.interval)
        };
        let wait = wake.saturating_duration_since(Instant::now());
        if event::poll(wait).map_err(CliError::Output)? {
            if let TermEvent::Key(key) = event::read().map_err(CliError::Output)? {
                view.key(key, rings.rings.len());
                dirty = true;
            } else {
                dirty = true; // resize
            }
        }
    }
    Ok(())
}
