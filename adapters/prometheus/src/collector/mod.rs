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
//!   dot-names and rename them into place); it is opened as an [`ObserverReader`]
//!   from its oldest event ([`ReadMode::Observe`], the default: read-only, any number
//!   of collectors and tools at once) or as the one [`DrainingReader`]
//!   ([`ReadMode::Drain`]: advances the ring's read position so that a `DropNewest`
//!   writer never fills up; use it only when nothing else drains the ring).
//! - **Lives**: each poll (every [`CollectorOptions::poll_interval`]) reads what was
//!   published; restarts and liveness are checked at each directory scan. Counters only grow. Events an
//!   observer missed because the writer lapped it are counted in
//!   `agent_telemetry_events_missed_total`; undecodable slots in
//!   `agent_telemetry_events_unexported_total`.
//! - **Dies**: a file with a telering trailer is dead when no process holds its writer
//!   lock any more, the writer closed it cleanly, or its heartbeat is older than
//!   [`CollectorOptions::stale_after`]; any file is dead once it is removed. Its series
//!   stay (final values) for [`CollectorOptions::ttl`], then are dropped, and the file
//!   is no longer followed (unless its writer beats again: then it is a new series
//!   start). A file without a trailer (written by NIXL's own writer,
//!   which takes no lock) is taken as alive while it exists.
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
//! - **Restarts**: when the path names a different file than the one being followed
//!   (a new writer replaced it), the agent's series start again from zero — Prometheus
//!   reads that as a counter reset, as for any restarted process.
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
//!   `agent_telemetry_events_unexported_total`. Beside it, the events that did not
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
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use telering_core::builtin::error_status_of_type_name;
use telering_core::{Event, ObserverStart};
use telering_shm::{DrainingReader, Generation, ObserverReader, RingFileInfo, ShmError};

use crate::http::MetricsServer;
use crate::model::{MetricModel, SharedModel};

mod options;
pub use options::{CollectorError, CollectorOptions, ReadMode};

/// Whether a followed agent is alive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The writer is running (or, without a trailer, the file exists).
    Alive,
    /// The writer is gone; the series are dropped `ttl` after `since`.
    Dead {
        /// When the collector noticed.
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
    /// The file's state at the last poll.
    pub info: Option<RingFileInfo>,
}

enum Reader {
    Observe(ObserverReader),
    Drain(DrainingReader),
}

impl Reader {
    fn open(path: &Path, mode: ReadMode) -> Result<Reader, ShmError> {
        Ok(match mode {
            ReadMode::Observe => {
                Reader::Observe(ObserverReader::open(path, ObserverStart::Oldest)?)
            }
            ReadMode::Drain => Reader::Drain(DrainingReader::open(path)?),
        })
    }

    fn read_batch(
        &mut self,
        max: usize,
        each: impl FnMut(Result<Event, ShmError>),
    ) -> Result<usize, ShmError> {
        match self {
            Reader::Observe(r) => r.read_batch(max, each),
            Reader::Drain(r) => r.read_batch(max, each),
        }
    }

    /// Events lost to this reader (overwritten before it read them).
    fn lost(&self) -> u64 {
        match self {
            Reader::Observe(r) => r.events_missed(),
            Reader::Drain(r) => r.events_lost(),
        }
    }

    fn info(&self) -> RingFileInfo {
        match self {
            Reader::Observe(r) => r.info(),
            Reader::Drain(r) => r.info(),
        }
    }

    fn generation(&self) -> Generation {
        match self {
            Reader::Observe(r) => r.generation(),
            Reader::Drain(r) => r.generation(),
        }
    }
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
    followed: HashMap<String, Followed>,
    /// Files whose series expired, by name, with the file they were and, while there
    /// is room under `max_agents`, the reader that had followed them. A writer
    /// restarting into the same file (the ring is reused in place) continues from
    /// where that reader stopped, so the previous run's events are not read again. A
    /// new file under
    /// the same name is a new agent.
    expired: HashMap<String, (FileKey, Option<Reader>)>,
    /// Files that are not rings (or unreadable), so each is reported once.
    ignored: HashMap<String, FileKey>,
    /// Files whose names are not UTF-8 (so cannot be agent names), reported once each.
    non_utf8: std::collections::HashSet<std::ffi::OsString>,
    /// Entries that are not regular files (symbolic links, directories…), reported
    /// once each, by name.
    not_files: std::collections::HashSet<String>,
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
            followed: HashMap::new(),
            expired: HashMap::new(),
            ignored: HashMap::new(),
            non_utf8: std::collections::HashSet::new(),
            not_files: std::collections::HashSet::new(),
            last_scan: None,
            dir_unreadable: false,
            scratch: Vec::with_capacity(BATCH),
        })
    }

    /// The shared model (serve it with [`MetricsServer`]).
    pub fn model(&self) -> SharedModel {
        self.model.clone()
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
    }

    /// Looks for new ring files now.
    pub fn scan(&mut self) {
        self.last_scan = Some(Instant::now());
        let entries = match std::fs::read_dir(&self.options.dir) {
            Ok(entries) => {
                if std::mem::take(&mut self.dir_unreadable) {
                    log::info!(
                        "the ring directory {} is readable again",
                        self.options.dir.display()
                    );
                }
                entries
            }
            Err(e) => {
                if !std::mem::replace(&mut self.dir_unreadable, true) {
                    log::warn!(
                        "cannot read the ring directory {}: {e}",
                        self.options.dir.display()
                    );
                }
                return;
            }
        };
        for entry in entries.flatten() {
            let name = match entry.file_name().into_string() {
                Ok(name) => name,
                Err(raw) => {
                    if self.non_utf8.insert(raw) {
                        log::warn!(
                            "{}: skipped, the file name is not UTF-8, so it is no agent's ring file",
                            entry.path().display()
                        );
                    }
                    continue;
                }
            };
            if name.starts_with('.') || self.followed.contains_key(&name) {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let kind = meta.file_type();
            if !kind.is_file() {
                if self.not_files.insert(name) {
                    let what = if kind.is_symlink() {
                        "a symbolic link: rings are read only at the path their writer made, never through a link"
                    } else if kind.is_dir() {
                        "a directory"
                    } else {
                        "not a regular file (a FIFO, socket or device)"
                    };
                    log::warn!("{}: skipped: {what}", path.display());
                }
                continue;
            }
            let key = (meta.dev(), meta.ino());
            if self.ignored.get(&name) == Some(&key) {
                continue;
            }
            // An expired file stays expired unless its writer shows signs of life again
            // (a process that was stopped for longer than the TTL, then continued).
            let expired_here = self.expired.get(&name).is_some_and(|(k, _)| *k == key);
            if expired_here && !self.revived(&path) {
                continue;
            }
            if self.followed.len() >= self.options.max_agents {
                log::warn!(
                    "not following {}: already following {} agents (CollectorOptions::max_agents)",
                    path.display(),
                    self.followed.len()
                );
                continue;
            }
            self.follow(name, path, key);
        }
    }

    fn revived(&self, path: &Path) -> bool {
        telering_shm::stat(path).is_ok_and(|info| {
            info.trailer.is_some() && writer_alive(&info, self.options.stale_after)
        })
    }

    fn follow(&mut self, name: String, path: PathBuf, key: FileKey) {
        let kept = match self.expired.remove(&name) {
            Some((k, Some(reader))) if k == key => Some(reader),
            _ => None,
        };
        let opened = match kept {
            Some(reader) => Ok(reader),
            None => Reader::open(&path, self.options.mode),
        };
        match opened {
            Ok(reader) => {
                log::info!("following agent {name} ({})", path.display());
                self.expired.remove(&name);
                self.ignored.remove(&name);
                start_series(&mut self.model.lock(), &name);
                self.followed.insert(
                    name,
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
                    },
                );
            }
            Err(e @ ShmError::NoSlotStamps { .. }) => {
                log::warn!(
                    "not following {}: {e}; if nothing else drains it, serve it as its draining reader (ReadMode::Drain, `telering serve --drain`)",
                    path.display()
                );
                self.ignored.insert(name, key);
            }
            Err(e) => {
                log::warn!("not following {}: {e}", path.display());
                self.ignored.insert(name, key);
            }
        }
    }

    /// Reads one agent's ring; with `check`, also looks for a restart and probes
    /// liveness (a `stat` and a lock probe, so only at the rescan cadence).
    fn poll_agent(&mut self, name: &str, check: bool) {
        let Some(agent) = self.followed.get_mut(name) else {
            return;
        };
        // A different file under the name: the agent restarted.
        let current = if check {
            std::fs::metadata(&agent.path)
                .ok()
                .map(|m| (m.dev(), m.ino()))
        } else {
            Some(agent.key)
        };
        if let Some(key) = current {
            if key != agent.key {
                match Reader::open(&agent.path, self.options.mode) {
                    Ok(reader) => {
                        log::info!("agent {name} restarted; its series start again");
                        agent.reader = reader;
                        agent.key = key;
                        agent.lost_counted = 0;
                        agent.liveness = Liveness::Alive;
                        agent.writer_failed = false;
                        agent.read_error = None;
                        start_series(&mut self.model.lock(), name);
                    }
                    Err(e) => log::debug!("{}: not a readable ring yet: {e}", agent.path.display()),
                }
            }
        }
        // Read what was published.
        let mut unexported = 0u64;
        let mut total = 0usize;
        while total < MAX_EVENTS_PER_POLL {
            self.scratch.clear();
            let scratch = &mut self.scratch;
            let typed = !agent.reader.generation().has_names();
            let read = agent.reader.read_batch(BATCH, |r| match r {
                Ok(e) if typed => scratch.push(telering_event(e)),
                Ok(e) => scratch.push(e),
                Err(e) => {
                    log::debug!("{e}");
                    unexported += 1;
                }
            });
            let n = match read {
                Ok(n) => {
                    if agent.read_error.take().is_some() {
                        log::info!("agent {name}: {} reads again", agent.path.display());
                    }
                    n
                }
                Err(e) => {
                    let kind = std::mem::discriminant(&e);
                    if agent.read_error.replace(kind) == Some(kind) {
                        log::debug!("reading agent {name}: {e}");
                    } else {
                        log::warn!("reading agent {name}: {e}");
                    }
                    0
                }
            };
            if !self.scratch.is_empty() {
                self.model.lock().ingest_delivered(name, &self.scratch);
            }
            total += n;
            if n < BATCH {
                break;
            }
        }
        agent.events_read += total as u64;
        let lost = agent.reader.lost();
        let mut model = self.model.lock();
        if lost > agent.lost_counted {
            model.count_missed(name, lost - agent.lost_counted);
            agent.lost_counted = lost;
        }
        if unexported > 0 {
            model.count_unexported(name, unexported);
        }
        // Liveness, at the rescan cadence.
        let probed = check.then(|| {
            let info = agent.reader.info();
            let alive = current.is_some() && writer_alive(&info, self.options.stale_after);
            // Gone without a clean close: a released lock or a stale heartbeat. A
            // removed file whose trailer says closed was closed cleanly; one without a
            // trailer gives no verdict.
            agent.writer_failed = !alive && info.trailer.as_ref().is_some_and(|t| !t.clean_close);
            (info, alive)
        });
        model.set_exporter_failing(name, agent.writer_failed || agent.read_error.is_some());
        drop(model);
        let Some((info, alive)) = probed else {
            return;
        };
        agent.info = Some(info);
        match (agent.liveness, alive) {
            (Liveness::Alive, false) => {
                log::info!(
                    "agent {name}: writer gone; its series are dropped in {:?}",
                    self.options.ttl
                );
                agent.liveness = Liveness::Dead {
                    since: Instant::now(),
                };
            }
            (Liveness::Dead { .. }, true) => agent.liveness = Liveness::Alive,
            (Liveness::Dead { since }, false) if since.elapsed() >= self.options.ttl => {
                log::info!("agent {name}: series dropped");
                let key = agent.key;
                let kept_readers = self.expired.values().filter(|(_, r)| r.is_some()).count();
                let room = self.followed.len() + kept_readers <= self.options.max_agents;
                if let Some(agent) = self.followed.remove(name) {
                    if current.is_some() {
                        let reader = room.then_some(agent.reader);
                        self.expired.insert(name.to_owned(), (key, reader));
                    }
                }
                self.model.lock().remove_agent(name);
            }
            _ => {}
        }
    }

    /// The agents being followed.
    pub fn agents(&self) -> Vec<AgentStatus> {
        let mut out: Vec<AgentStatus> = self
            .followed
            .iter()
            .map(|(name, a)| AgentStatus {
                name: name.clone(),
                liveness: a.liveness,
                events_read: a.events_read,
                info: a.info.clone(),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
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
