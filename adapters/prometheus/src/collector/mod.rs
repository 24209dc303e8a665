//! The node collector: every agent ring in a directory, served on one endpoint.
//!
//! On a node that runs many agent processes, one Prometheus port per process collides
//! and makes scrape configuration follow process churn. [`NodeCollector`] instead reads
//! every ring file in `NIXL_TELEMETRY_DIR` (as written by telering-shm, or by NIXL
//! itself) and keeps one [`MetricModel`] in which each file is an agent named after the
//! file. [`run_collector`] serves it on one `/metrics`.
//!
//! # Lifecycle of an agent
//!
//! - **Appears**: a directory scan (every [`CollectorOptions::rescan_interval`]) finds a
//!   new regular file whose name does not start with `.` (writers build files under
//!   dot-names and rename them into place); it is opened as an
//!   [`ObserverReader`](telering_shm::ObserverReader) from its oldest event
//!   ([`ReadMode::Observe`], the default: read-only, any number of collectors and tools
//!   at once) or as the one [`DrainingReader`](telering_shm::DrainingReader)
//!   ([`ReadMode::Drain`]: advances the ring's read position so that a `DropNewest`
//!   writer never fills up; use it only when nothing else drains the ring).
//! - **Lives**: each poll (every [`CollectorOptions::poll_interval`]) reads what was
//!   published; liveness is checked at each directory scan (a restart: see "Ring
//!   generations"). Counters only grow. Events an observer missed because the writer
//!   lapped it are counted in
//!   `agent_telemetry_events_missed_total`; undecodable slots in
//!   `agent_telemetry_events_unexported_total`.
//! - **Dies**: a file with a telering trailer is dead when no process holds its writer
//!   lock any more, the writer closed it cleanly, or its heartbeat is older than
//!   [`CollectorOptions::stale_after`]; any file is dead once it is removed. Its series
//!   stay (final values) for [`CollectorOptions::ttl`] after the writer was last seen
//!   at work, then are dropped, and the file is no longer followed until its writer
//!   does something again: the trailer's writer pid, published or dropped count,
//!   heartbeat or clean-close flag moves (a short run under the same name, which may
//!   start and end between two polls, or a stopped process that continued). It is
//!   then a new series start. A file without a trailer (written by NIXL's own writer,
//!   which takes no lock) is taken as alive while it exists.
//!
//! # Losses
//!
//! The writer's own losses are read from its ring's trailer at every poll (see
//! [`Losses`] for the causes): a ring that nothing drains fills up and its writer
//! refuses every later event, which the collector counts in
//! `agent_telemetry_events_dropped_total` as it happens, although no event can be read
//! and no in-band report can be written until a slot is free. In-band
//! `agent_telemetry_events_dropped` reports of a ring with a trailer are read, but
//! are neither delivered events nor added to the losses again. [`NodeCollector::status`] gives each agent's
//! losses by cause and its [`ExportState`]: `dropping` while it lost events within
//! [`CollectorOptions::dropping_for`], never `ok`.
//!
//! # File descriptors
//!
//! Each followed ring holds one descriptor. [`run_collector`] (and `telering serve`)
//! first raise the soft open-file limit to the hard one ([`raise_fd_limit`]); rings past
//! what the limit leaves room for (beside the endpoint's connections) are not followed,
//! are counted in [`NodeStatus::rings_not_followed`] and logged, and are tried again at
//! every scan.
//!
//! # Ring generations
//!
//! Every NIXL ring generation is read (versions 1 to 4, see
//! [`telering_shm::Generation`]). A ring without telering's trailer — any file NIXL's
//! own writer made — carries no slot stamps, so an observer cannot follow it: in
//! [`ReadMode::Observe`] such a file is reported once in the log and not followed;
//! in [`ReadMode::Drain`] the collector is its draining reader. Generations 2 to 4
//! name events by type number; their error types (`agent_err_<status>`) count in
//! `agent_errors_total{status}` like telering's `NIXL_ERR_<STATUS>` events.
//! - **Restarts**: a writer that restarts under the same name either reuses the ring
//!   in place (same size and layout) or replaces the file with a new ring, into which
//!   it carries the old ring's unread events (another size or layout). Either way the
//!   agent's series go on, so every counter only grows: the reader reads the replaced
//!   file to its end, then takes up the new one past the carried events (which it
//!   read in the old file), and counts each event once. The new writer's trailer
//!   counts the unread events it could not carry (a smaller ring) as lost (cause
//!   `staging`, "replaced"); those the collector had read before it switched are not
//!   charged, since it delivered them. The route totals go on likewise (see the
//!   `routes` module).
//!
//! # Exporter health
//!
//! The collector is the agents' exporter, so every agent it follows also has two
//! series that say how that export goes (the in-process and multi-process exporters,
//! which are the agent's own export, have neither):
//!
//! - `agent_telemetry_events_delivered_total` (counter): events the collector read from
//!   the agent's ring and exported, i.e. what reached this endpoint. It equals
//!   [`AgentStatus::events_read`] for the current series, less the slots counted in
//!   `agent_telemetry_events_unexported_total` and the in-band loss reports (no
//!   recorded events, see `docs/LOSS.md`). Beside it, the events that did not
//!   arrive are `agent_telemetry_events_dropped_total` (the writer's own losses) +
//!   `agent_telemetry_events_missed_total` + `agent_telemetry_events_unexported_total`.
//! - `agent_telemetry_exporter_failing` (gauge): 1 while the agent's ring writer is gone
//!   without a clean close — its lock was released by a crash, or its heartbeat is
//!   older than [`CollectorOptions::stale_after`] — or while the collector's reads of
//!   the ring keep failing; 0 otherwise, including after a clean close. A file without
//!   a trailer (NIXL's own writer) has no close or heartbeat to judge, so only failing
//!   reads set it. Liveness is probed at the rescan cadence, read failures at every
//!   poll; the gauge stays until the agent's series are dropped after the TTL.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use telering_core::Event;
use telering_core::builtin::error_status_of_type_name;
use telering_shm::{RingFileInfo, ShmError, TrailerInfo};

use crate::http::MetricsServer;
use crate::model::{MetricModel, SharedModel};

mod fd_limit;
mod log_text;
mod losses;
mod options;
mod poll;
mod reader;
mod routes;
mod scan;
pub use fd_limit::raise_fd_limit;
pub use losses::{AgentLoss, ExportState, Losses, NodeStatus, SharedStatus};
use losses::{RecentLoss, WriterCounters};
pub use options::{CollectorError, CollectorOptions, ReadMode};
use reader::Reader;

/// Whether a followed agent is alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The writer is running (or, without a trailer, the file exists).
    Alive,
    /// The writer is gone; the series are dropped `ttl` after `since` (the last time
    /// it wrote anything the collector saw).
    Dead {
        /// When the collector noticed, or last saw it write.
        since: Instant,
    },
}

/// What the collector knows about one agent, for tools and tests.
#[derive(Clone, Debug)]
pub struct AgentStatus {
    /// The agent name (the file name).
    pub name: String,
    /// Alive or dead.
    pub liveness: Liveness,
    /// Events read from the ring so far (all incarnations).
    pub events_read: u64,
    /// The file's state at the last liveness probe.
    pub info: Option<RingFileInfo>,
    /// What the current series lost, by cause, and the export state.
    pub loss: AgentLoss,
}

/// An event of a ring generation that stores type numbers (NIXL versions 2 to 4) as
/// telering names it: the error types `agent_err_<status>` become the error event of
/// their status (`NIXL_ERR_<STATUS>`), which the model counts in `agent_errors_total`.
fn telering_event(event: Event) -> Event {
    match event.name().ok().and_then(error_status_of_type_name) {
        Some(status) => {
            let e = status.event();
            Event::new(event.timestamp_us(), e.category, e.name, event.value())
        }
        None => event,
    }
}

type FileKey = (u64, u64);

/// What a trailer says that changes whenever its writer does anything: an expired ring
/// whose fingerprint moved has a writer again.
type Fingerprint = (u32, u64, u64, u64, u64, bool);

fn fingerprint(t: &TrailerInfo) -> Fingerprint {
    (
        t.writer_pid,
        t.published,
        t.events_dropped(),
        t.dropped_unrepresentable,
        t.heartbeat_us,
        t.clean_close,
    )
}

struct Followed {
    path: PathBuf,
    key: FileKey,
    reader: Reader,
    lost_counted: u64,
    liveness: Liveness,
    events_read: u64,
    info: Option<RingFileInfo>,
    /// Whether the writer went away without a clean close (crash or stale heartbeat),
    /// as of the last liveness probe.
    writer_failed: bool,
    /// The kind of the last read error, while reads keep failing: a ring that fails
    /// the same way at every poll (truncated, re-created as a ring this reader cannot
    /// follow) is warned about once.
    read_error: Option<std::mem::Discriminant<ShmError>>,
    /// The trailer's loss counters as last charged to this series.
    writer: WriterCounters,
    /// Everything this series lost, by cause.
    losses: Losses,
    recent: RecentLoss,
    /// The trailer's fingerprint at the last poll, to notice a writer at work.
    fingerprint: Option<Fingerprint>,
    /// The agent's route file as last read.
    route_file: routes::RouteFileSeen,
    /// [`Reader::replaced_already_read`] as last seen.
    replaced_seen: u64,
    /// Of those, the events not yet taken off the trailer's staging losses.
    replaced_pending: u64,
}

/// A file whose series expired, with what is needed to take it up again.
struct Expired {
    key: FileKey,
    /// The reader that had followed it, while there is room for it (see
    /// [`NodeCollector::expired`]).
    reader: Option<Reader>,
    /// The trailer's counters as charged, for a writer that goes on where it stopped.
    writer: WriterCounters,
    /// The trailer's fingerprint when the series expired.
    fingerprint: Option<Fingerprint>,
}

/// Events read from one ring per poll at most, so one busy agent cannot starve the
/// others (the rest is read at the next poll).
const MAX_EVENTS_PER_POLL: usize = 1 << 16;
const BATCH: usize = 1024;

/// Follows every ring file in a directory and keeps their metrics in one model.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("telering-doc-collector-{}", std::process::id()));
/// use telering_core::{builtin, Category, Event};
/// use telering_prometheus::collector::{CollectorOptions, NodeCollector};
/// use telering_shm::{ShmWriter, WriterOptions};
///
/// let mut writer = ShmWriter::create(WriterOptions::new(&dir, "agent-7"))?;
/// writer.write_batch(&[Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 512)]);
///
/// let mut collector = NodeCollector::new(CollectorOptions::new(&dir)).unwrap();
/// collector.poll();
/// assert_eq!(collector.model().lock().counter("agent-7", "agent_tx_bytes"), Some(512));
/// # writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), telering_shm::ShmError>(())
/// ```
pub struct NodeCollector {
    options: CollectorOptions,
    model: SharedModel,
    status: SharedStatus,
    followed: HashMap<String, Followed>,
    /// Files whose series expired, by name, with the file they were and, while there
    /// is room under `max_agents` and the descriptor budget, the reader that had
    /// followed them. A writer restarting into the same file (the ring is reused in
    /// place) continues from where that reader stopped, so the previous run's events
    /// are not read again. A new file under the same name is a new agent. An entry is
    /// forgotten once its file is removed, and a kept reader is closed when a ring
    /// that has none needs its descriptor.
    expired: HashMap<String, Expired>,
    /// Files that are not rings (or unreadable), with their size then, so each is
    /// reported once; a file that changes size in place (NIXL's writer creates, then
    /// sizes its ring) is looked at again.
    ignored: HashMap<String, (FileKey, u64)>,
    /// Files whose names are not UTF-8 (so cannot be agent names), reported once each.
    non_utf8: std::collections::HashSet<std::ffi::OsString>,
    /// Entries that are not regular files (symbolic links, directories…), reported
    /// once each, by name.
    not_files: std::collections::HashSet<String>,
    /// Ring files the last scan could not follow (out of descriptors, past
    /// `max_agents`, drained by another reader), so that a change of their number is
    /// logged once.
    not_followed: usize,
    last_scan: Option<Instant>,
    /// Whether the directory could not be read at the last scan, so that a vanished
    /// directory is reported once, not at every scan.
    dir_unreadable: bool,
    scratch: Vec<Event>,
}

impl fmt::Debug for NodeCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeCollector")
            .field("dir", &self.options.dir)
            .field("mode", &self.options.mode)
            .field("agents", &self.followed.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl NodeCollector {
    /// A collector over `options.dir`, which must be a readable directory.
    pub fn new(options: CollectorOptions) -> Result<NodeCollector, CollectorError> {
        std::fs::read_dir(&options.dir).map_err(|source| CollectorError::Dir {
            path: options.dir.clone(),
            source,
        })?;
        let model =
            MetricModel::new(options.hostname.clone(), options.buckets.clone()).into_shared();
        Ok(NodeCollector {
            options,
            model,
            status: SharedStatus::default(),
            followed: HashMap::new(),
            expired: HashMap::new(),
            ignored: HashMap::new(),
            non_utf8: std::collections::HashSet::new(),
            not_files: std::collections::HashSet::new(),
            not_followed: 0,
            last_scan: None,
            dir_unreadable: false,
            scratch: Vec::with_capacity(BATCH),
        })
    }

    /// The shared model (serve it with [`MetricsServer`]).
    pub fn model(&self) -> SharedModel {
        self.model.clone()
    }

    /// Each agent's losses by cause and export state, and the ring files not followed,
    /// as of the last poll (for pages answered on other threads).
    pub fn status(&self) -> SharedStatus {
        self.status.clone()
    }

    /// Ring files the last directory scan found but could not follow: the process is
    /// out of file descriptors, `max_agents` are followed already, or (in
    /// [`ReadMode::Drain`]) another draining reader holds them.
    pub fn rings_not_followed(&self) -> usize {
        self.not_followed
    }

    /// Scans the directory if a scan is due, reads every followed ring, updates
    /// liveness and drops expired agents.
    pub fn poll(&mut self) {
        let due = self
            .last_scan
            .is_none_or(|t| t.elapsed() >= self.options.rescan_interval);
        if due {
            self.scan();
        }
        let names: Vec<String> = self.followed.keys().cloned().collect();
        for name in names {
            self.poll_agent(&name, due);
        }
        self.publish_status();
    }

    /// Publishes every agent's losses and state for [`NodeCollector::status`].
    fn publish_status(&mut self) {
        let window = self.options.dropping_for;
        let mut status = self.status.lock();
        status.rings_not_followed = self.not_followed;
        status
            .agents
            .retain(|name, _| self.followed.contains_key(name));
        for (name, agent) in &mut self.followed {
            let loss = agent.loss(window);
            match status.agents.get_mut(name) {
                Some(slot) => *slot = loss,
                None => {
                    status.agents.insert(name.clone(), loss);
                }
            }
        }
    }

    /// The agents being followed.
    pub fn agents(&self) -> Vec<AgentStatus> {
        let status = self.status.lock();
        let mut out: Vec<AgentStatus> = self
            .followed
            .iter()
            .map(|(name, a)| AgentStatus {
                name: name.clone(),
                liveness: a.liveness,
                events_read: a.events_read,
                info: a.info.clone(),
                loss: status.agents.get(name).cloned().unwrap_or(AgentLoss {
                    losses: a.losses,
                    state: ExportState::Ok,
                    dropping: Vec::new(),
                }),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

impl Followed {
    fn new(path: PathBuf, key: FileKey, reader: Reader, writer: WriterCounters) -> Followed {
        Followed {
            path,
            key,
            reader,
            lost_counted: 0,
            liveness: Liveness::Alive,
            events_read: 0,
            info: None,
            writer_failed: false,
            read_error: None,
            writer,
            losses: Losses::default(),
            recent: RecentLoss::default(),
            fingerprint: None,
            route_file: routes::RouteFileSeen::default(),
            replaced_seen: 0,
            replaced_pending: 0,
        }
    }

    /// The agent's losses and state now.
    fn loss(&mut self, window: Duration) -> AgentLoss {
        let failing = self.writer_failed || self.read_error.is_some();
        let recent = self.recent.within(window).map(<[_]>::to_vec);
        let (state, dropping) = match (failing, recent) {
            (true, _) => (ExportState::Failing, Vec::new()),
            (false, Some(causes)) => (ExportState::Dropping, causes),
            (false, None) => (ExportState::Ok, Vec::new()),
        };
        AgentLoss {
            losses: self.losses,
            state,
            dropping,
        }
    }
}

/// Starts `name`'s series from zero, with the exporter-health families.
fn start_series(model: &mut MetricModel, name: &str) {
    model.restart_agent(name);
    model.set_exporter_failing(name, false);
}

fn writer_alive(info: &RingFileInfo, stale_after: Duration) -> bool {
    let Some(trailer) = &info.trailer else {
        return true;
    };
    if !info.writer_alive || trailer.clean_close {
        return false;
    }
    let now_us = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    now_us.saturating_sub(trailer.heartbeat_us) <= stale_after.as_micros() as u64
}

/// Runs a collector over `options.dir` and serves it on `options.addr` until `shutdown`
/// becomes true. Calls `on_listening` once with the bound address (with the real port
/// when port 0 was asked for) as soon as the endpoint accepts scrapes. Prints nothing;
/// progress goes to the `log` crate.
///
/// ```no_run
/// use std::sync::atomic::AtomicBool;
/// use telering_prometheus::collector::{run_collector, CollectorOptions};
/// static STOP: AtomicBool = AtomicBool::new(false);
/// run_collector(CollectorOptions::new("/dev/shm/telemetry").port(9400), &STOP, |addr| {
///     println!("serving http://{addr}/metrics");
/// })?;
/// # Ok::<(), telering_prometheus::collector::CollectorError>(())
/// ```
pub fn run_collector(
    options: CollectorOptions,
    shutdown: &AtomicBool,
    on_listening: impl FnOnce(SocketAddr),
) -> Result<(), CollectorError> {
    let poll_interval = options.poll_interval;
    let addr = options.addr;
    let limits = options.limits.clone();
    raise_fd_limit();
    let mut collector = NodeCollector::new(options)?;
    collector.poll();
    let server = MetricsServer::start(addr, collector.model(), limits)?;
    on_listening(server.local_addr());
    while !shutdown.load(Ordering::SeqCst) {
        std::thread::sleep(poll_interval);
        collector.poll();
    }
    server.shutdown();
    Ok(())
}
