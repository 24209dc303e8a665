//! Several exporters at once: `NIXL_TELEMETRY_EXPORTER=buffer,prometheus,otlp`.
//!
//! NIXL runs one exporter per agent. A [`FanOut`] is the one exporter the flush sees,
//! and hands every batch to each of its exporters, each on its own thread behind its
//! own bounded queue of [`QUEUE_BATCHES`] batches, so that:
//!
//! - **a slow exporter delays no other**: the flush only queues; when an exporter's
//!   queue is full, the batch is counted as lost *for that exporter* and the others
//!   get it all the same;
//! - **a failing exporter loses no other's events**: its failed exports (and a panic,
//!   after which it is not called again) are its own losses;
//! - **each exporter's losses are reported to it on their own**: every exporter gets,
//!   through [`Exporter::add_dropped`] and, unless it reports losses itself, one
//!   in-band `agent_telemetry_events_dropped` event, the losses upstream of the
//!   fan-out (full lanes, as for a single exporter) plus its own.
//!
//! [`ExporterStats`] counts each exporter's deliveries and losses
//! ([`Telemetry::exporter_stats`](crate::Telemetry::exporter_stats)). A single name is
//! not a fan-out: it behaves exactly as before.
//!
//! # The telemetry's own counters with a list
//!
//! [`Telemetry::stats`](crate::Telemetry::stats) (and C's `telering_stats`, Python's
//! `stats()`) then tell the story of the list's *weakest member*, so that they never
//! say more was delivered than every exporter delivered ([`aggregate`]):
//!
//! - `events_exported`, `events_not_in_layout` and `events_undelivered` are those of
//!   the exporter that delivered fewest events (the first such in the list),
//!   `exporter_dropped` is every loss of that exporter's own (inside it, failed
//!   exports, batches that found its queue full), and `events_dropped` the losses
//!   upstream of the fan-out (at record time); so `events_exported ==
//!   events_recorded` only when every exporter delivered everything, and the
//!   five-way sum of [`TelemetryStats`](crate::TelemetryStats) still holds;
//! - `export_errors` is every exporter's failed attempts added up;
//! - `exporter_failing` is whether any exporter is failing.
//!
//! Events waiting in an exporter's queue count as its `events_undelivered` until its
//! thread has exported them.

use crate::export::{Delivery, ExportError, Exporter, ExporterContext, ExporterRegistry};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use telering_core::Event;
use telering_core::drop_report::DropReport;

/// Batches each exporter of a fan-out may have waiting before the next one is
/// counted as lost for it (at the default 100 ms run interval, 1.6 s of backlog).
pub const QUEUE_BATCHES: usize = 16;

/// One exporter's deliveries and losses, counted as
/// [`TelemetryStats`](crate::TelemetryStats) counts the telemetry's.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ExporterStats {
    /// The exporter's name (`buffer`, `prometheus`, …).
    pub name: String,
    /// Events it delivered (drop reports not included): written to its file, pushed
    /// to a collector that answered 2xx (`otlp`), folded into the metrics it serves
    /// (`prometheus`); see [`TelemetryStats`](crate::TelemetryStats).
    pub events_delivered: u64,
    /// Events it lost on its own: batches that found its queue full, failed exports.
    pub events_dropped: u64,
    /// Failed attempts: exports of it that failed, pushes not delivered.
    pub export_errors: u64,
    /// Events it lost inside, as it reports ([`Exporter::events_dropped`]).
    pub exporter_dropped: u64,
    /// Of `exporter_dropped`, events lost after they were delivered: written into a
    /// ring file another program then unlinked
    /// ([`Exporter::events_lost_after_delivery`]).
    pub events_lost_after_delivery: u64,
    /// Events its output cannot hold and left out (a `v4` ring file's custom events).
    pub events_not_in_layout: u64,
    /// Events an aggregating exporter (`otlp`, `prometheus`) took but has not
    /// delivered yet.
    pub events_undelivered: u64,
    /// Whether it is failing now: its last export failed (a write the disk
    /// refused), its last push was not delivered, or its endpoint could not start.
    pub exporter_failing: bool,
    /// Where it puts the events ([`Exporter::endpoint`]): its file, the URL it serves
    /// or pushes to.
    pub endpoint: Option<String>,
}

impl ExporterStats {
    /// Counters of the exporter `name`, all zero.
    ///
    /// ```
    /// let s = telering_std::fanout::ExporterStats::named("csv");
    /// assert_eq!((s.name.as_str(), s.events_delivered), ("csv", 0));
    /// ```
    pub fn named(name: impl Into<String>) -> ExporterStats {
        ExporterStats {
            name: name.into(),
            ..ExporterStats::default()
        }
    }
}

/// Counters one exporter's thread and the fan-out share.
#[derive(Debug, Default)]
struct Counters {
    delivered: AtomicU64,
    dropped: AtomicU64,
    errors: AtomicU64,
    exporter_dropped: AtomicU64,
    /// Of `exporter_dropped`, events lost after `delivered` counted them.
    lost_after_delivery: AtomicU64,
    not_in_layout: AtomicU64,
    /// Events handed to its queue that its thread has not exported yet.
    queued: AtomicU64,
    /// Every loss that belongs in this exporter's reports: upstream and its own.
    lost_total: AtomicU64,
    /// Its last export failed (a full disk, a panic): failing until one succeeds.
    failing: AtomicBool,
    /// Its endpoint as of its last flush (a server may start, or stop, later).
    endpoint: Mutex<Option<String>>,
}

impl Counters {
    fn endpoint(&self) -> Option<String> {
        self.endpoint
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

enum Job {
    Batch(Arc<[Event]>),
    Flush,
    /// Route totals and slow transfers ([`Exporter::export_routes`]).
    Routes(Arc<crate::route::RouteReport>),
}

/// What the statistics read of one exporter of the list.
#[derive(Debug)]
struct Member {
    name: String,
    counters: Arc<Counters>,
    /// The exporter's own delivery counters, when it delivers after `export` returns.
    delivery: Option<Arc<Delivery>>,
}

/// The counters of a fan-out's exporters, readable without the flush's lock (the
/// telemetry keeps one from [`create`] for its statistics).
#[derive(Clone, Debug)]
pub(crate) struct Roster(Arc<[Member]>);

impl Roster {
    /// Each exporter's counters, in the order of the list.
    pub(crate) fn stats(&self) -> Vec<ExporterStats> {
        self.0.iter().map(Member::stats).collect()
    }
}

impl Member {
    fn stats(&self) -> ExporterStats {
        let c = &self.counters;
        let mut stats = ExporterStats {
            name: self.name.clone(),
            events_delivered: c
                .delivered
                .load(Ordering::Acquire)
                .saturating_sub(c.lost_after_delivery.load(Ordering::Acquire)),
            events_dropped: c.dropped.load(Ordering::Acquire),
            export_errors: c.errors.load(Ordering::Acquire),
            exporter_dropped: c.exporter_dropped.load(Ordering::Acquire),
            events_lost_after_delivery: c.lost_after_delivery.load(Ordering::Acquire),
            events_not_in_layout: c.not_in_layout.load(Ordering::Acquire),
            events_undelivered: 0,
            exporter_failing: c.failing.load(Ordering::Acquire),
            endpoint: c.endpoint(),
        };
        if let Some(d) = &self.delivery {
            let delivered = d.delivered();
            stats.events_delivered = delivered;
            stats.events_undelivered = d.accepted().saturating_sub(delivered);
            stats.export_errors += d.failures();
            stats.exporter_failing |= d.failing();
        }
        stats.events_undelivered += c.queued.load(Ordering::Acquire);
        stats
    }
}

/// The telemetry's own counters of a list, from each exporter's (see the
/// [module docs](self#the-telemetrys-own-counters-with-a-list)); `None` for an
/// empty list.
///
/// ```
/// use telering_std::fanout::{aggregate, ExporterStats};
/// let mut ok = ExporterStats::named("buffer");
/// ok.events_delivered = 10;
/// let mut down = ExporterStats::named("otlp");
/// (down.events_undelivered, down.export_errors, down.exporter_failing) = (10, 3, true);
/// let all = aggregate(&[ok, down.clone()]).unwrap();
/// assert_eq!(all.weakest, down);
/// assert_eq!((all.export_errors, all.exporter_failing), (3, true));
/// ```
pub fn aggregate(members: &[ExporterStats]) -> Option<Aggregate> {
    let weakest = members.iter().min_by_key(|m| m.events_delivered)?.clone();
    Some(Aggregate {
        weakest,
        export_errors: members.iter().map(|m| m.export_errors).sum(),
        exporter_failing: members.iter().any(|m| m.exporter_failing),
    })
}

/// What [`aggregate`] makes of a list's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Aggregate {
    /// The exporter that delivered fewest events, the first such in the list: its
    /// deliveries and losses are the telemetry's.
    pub weakest: ExporterStats,
    /// Every exporter's failed attempts, added up.
    pub export_errors: u64,
    /// Whether any exporter is failing.
    pub exporter_failing: bool,
}

#[derive(Debug)]
struct Lane {
    queue: Option<SyncSender<Job>>,
    counters: Arc<Counters>,
    thread: Option<JoinHandle<()>>,
}

/// The exporters named in one list, fed from one flush (see the [module docs](self)).
#[derive(Debug)]
pub struct FanOut {
    /// The names joined, as `NIXL_TELEMETRY_EXPORTER` lists them.
    name: String,
    lanes: Vec<Lane>,
    roster: Roster,
    needs_timestamps: bool,
    shut_down: bool,
}

/// The exporter or exporters `names` names: one name is that exporter itself, a
/// comma-separated list ([`crate::parse::list`]) is a [`FanOut`] of them.
///
/// ```
/// use telering_std::export::{ExporterContext, ExporterRegistry};
/// let registry = ExporterRegistry::with_builtins();
/// let ctx = ExporterContext::new("a");
/// assert_eq!(telering_std::fanout::create(&registry, "nop", &ctx).unwrap().name(), "nop");
/// assert_eq!(telering_std::fanout::create(&registry, "nop, NOP", &ctx).unwrap().name(), "nop,nop");
/// ```
pub fn create(
    registry: &ExporterRegistry,
    names: &str,
    context: &ExporterContext,
) -> Result<Box<dyn Exporter>, ExportError> {
    create_with_roster(registry, names, context).map(|(exporter, _)| exporter)
}

/// Checks the settings of every exporter `names` names
/// ([`ExporterRegistry::check`]) before any is opened; the first that fails, with
/// its name. A name no exporter is registered under is a plug-in's, whose library
/// configuration found already; loading it is opening it.
///
/// ```
/// use telering_std::export::{ExporterContext, ExporterRegistry};
/// let registry = ExporterRegistry::with_builtins();
/// let ctx = ExporterContext::new("a"); // no directory
/// let (name, e) = telering_std::fanout::check_all(&registry, "nop,csv", &ctx).unwrap_err();
/// assert_eq!(name, "csv");
/// assert!(e.to_string().contains("NIXL_TELEMETRY_DIR"));
/// ```
pub fn check_all<'a>(
    registry: &ExporterRegistry,
    names: &'a str,
    context: &ExporterContext,
) -> Result<(), (&'a str, ExportError)> {
    for name in crate::parse::list(names).filter(|n| registry.contains(n)) {
        registry.check(name, context).map_err(|e| (name, e))?;
    }
    Ok(())
}

/// [`create`], and for a list the [`Roster`] of its exporters' counters.
pub(crate) fn create_with_roster(
    registry: &ExporterRegistry,
    names: &str,
    context: &ExporterContext,
) -> Result<(Box<dyn Exporter>, Option<Roster>), ExportError> {
    let list: Vec<&str> = crate::parse::list(names).collect();
    // A built-in name, else a plug-in from `NIXL_PLUGIN_DIR` ([`crate::plugin`]).
    let one = |name: &str| match registry.contains(name) {
        true => registry.create(name, context),
        false => {
            crate::plugin::create(name, context).unwrap_or_else(|| registry.create(name, context))
        }
    };
    match list.as_slice() {
        [name] => Ok((one(name)?, None)),
        _ => {
            // Exporters that create or replace files open last: one that fails to
            // start (a port in use) has then cost no file its contents.
            let mut opened: Vec<Option<Box<dyn Exporter>>> = Vec::new();
            opened.resize_with(list.len(), || None);
            for writes_files in [false, true] {
                for (i, name) in list.iter().enumerate() {
                    if registry.writes_files(name) == writes_files {
                        opened[i] = Some(one(name)?);
                    }
                }
            }
            let exporters = opened.into_iter().flatten().collect();
            let fan_out = FanOut::new(exporters)?;
            let roster = fan_out.roster.clone();
            Ok((Box::new(fan_out), Some(roster)))
        }
    }
}

impl FanOut {
    /// Starts one thread per exporter.
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// use telering_std::fanout::FanOut;
    /// let mut f = FanOut::new(vec![Box::new(NopExporter::default()), Box::new(NopExporter::default())]).unwrap();
    /// assert_eq!(f.name(), "nop,nop");
    /// f.shutdown().unwrap();
    /// ```
    pub fn new(exporters: Vec<Box<dyn Exporter>>) -> Result<FanOut, ExportError> {
        let needs_timestamps = exporters.iter().any(|e| e.needs_timestamps());
        let mut lanes = Vec::with_capacity(exporters.len());
        let mut members = Vec::with_capacity(exporters.len());
        for exporter in exporters {
            let name = exporter.name().to_string();
            let counters = Arc::new(Counters {
                endpoint: Mutex::new(exporter.endpoint()),
                ..Counters::default()
            });
            members.push(Member {
                name: name.clone(),
                counters: counters.clone(),
                delivery: exporter.delivery(),
            });
            let (queue, jobs) = mpsc::sync_channel(QUEUE_BATCHES);
            let worker = Worker {
                exporter,
                counters: counters.clone(),
                report: DropReport::new(0),
                passed: 0,
                broken: false,
            };
            let thread = std::thread::Builder::new()
                .name(format!("telering-x-{name}"))
                .spawn(move || worker.run(jobs))
                .map_err(|e| ExportError::failed(&name, e))?;
            lanes.push(Lane {
                queue: Some(queue),
                counters,
                thread: Some(thread),
            });
        }
        Ok(FanOut {
            name: members
                .iter()
                .map(|m| m.name.as_str())
                .collect::<Vec<_>>()
                .join(","),
            lanes,
            roster: Roster(members.into()),
            needs_timestamps,
            shut_down: false,
        })
    }

    /// Each exporter's counters, in the order of the list.
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// let mut f = telering_std::fanout::FanOut::new(vec![Box::new(NopExporter::default())]).unwrap();
    /// f.shutdown().unwrap();
    /// assert_eq!(f.stats()[0].name, "nop");
    /// ```
    pub fn stats(&self) -> Vec<ExporterStats> {
        self.roster.stats()
    }
}

impl Exporter for FanOut {
    fn name(&self) -> &str {
        &self.name
    }

    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        // Empty batches too: some exporters take each export as a heartbeat.
        let events: Arc<[Event]> = batch.into();
        let n = batch.len() as u64;
        for lane in &self.lanes {
            // Counted before the send: its thread takes it off once exported.
            lane.counters.queued.fetch_add(n, Ordering::AcqRel);
            let sent = match &lane.queue {
                Some(queue) => queue.try_send(Job::Batch(events.clone())),
                None => Err(TrySendError::Disconnected(Job::Flush)),
            };
            if sent.is_err() {
                // Full (the exporter is slow) or gone: this exporter's loss alone.
                lane.counters.dropped.fetch_add(n, Ordering::AcqRel);
                crate::flush::add_saturating(&lane.counters.lost_total, n);
                lane.counters.queued.fetch_sub(n, Ordering::AcqRel);
            }
        }
        Ok(())
    }

    fn add_dropped(&mut self, events: u64) {
        for lane in &self.lanes {
            crate::flush::add_saturating(&lane.counters.lost_total, events);
        }
    }

    fn reports_drops_in_band(&self) -> bool {
        // Each exporter's thread makes its own reports.
        true
    }

    fn needs_timestamps(&self) -> bool {
        self.needs_timestamps
    }

    fn exporter_stats(&self) -> Option<Vec<ExporterStats>> {
        Some(self.stats())
    }

    fn events_dropped(&self) -> u64 {
        self.lanes
            .iter()
            .map(|l| l.counters.exporter_dropped.load(Ordering::Acquire))
            .sum()
    }

    fn endpoint(&self) -> Option<String> {
        let all: Vec<String> = self
            .roster
            .0
            .iter()
            .filter_map(|m| m.counters.endpoint())
            .collect();
        (!all.is_empty()).then(|| all.join(" "))
    }

    fn export_routes(&mut self, report: &crate::route::RouteReport) -> Result<(), ExportError> {
        let report = Arc::new(report.clone());
        for lane in &self.lanes {
            if let Some(queue) = &lane.queue {
                // Totals are cumulative: a report a full queue refuses is made again
                // at the next flush.
                let _ = queue.try_send(Job::Routes(Arc::clone(&report)));
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        for lane in &self.lanes {
            if let Some(queue) = &lane.queue {
                // A full queue will be worked through anyway.
                let _ = queue.try_send(Job::Flush);
            }
        }
        Ok(())
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        if std::mem::replace(&mut self.shut_down, true) {
            return Ok(());
        }
        // Closing a queue lets its thread export what waits in it, then shut down.
        for lane in &mut self.lanes {
            lane.queue = None;
        }
        for lane in &mut self.lanes {
            if let Some(thread) = lane.thread.take() {
                let _ = thread.join();
            }
        }
        Ok(())
    }
}

impl Drop for FanOut {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// One exporter's thread.
struct Worker {
    exporter: Box<dyn Exporter>,
    counters: Arc<Counters>,
    report: DropReport,
    /// Of `lost_total`, what was passed to [`Exporter::add_dropped`].
    passed: u64,
    /// It panicked: not called again, later batches are its losses.
    broken: bool,
}

impl Worker {
    fn run(mut self, jobs: Receiver<Job>) {
        let mut batch = Vec::new();
        for job in jobs {
            match job {
                Job::Batch(events) => self.export(&events, &mut batch),
                Job::Flush => {
                    let _ = self.call("flush", |e| e.flush());
                    if !self.broken {
                        let endpoint = self.exporter.endpoint();
                        *self
                            .counters
                            .endpoint
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner) = endpoint;
                    }
                }
                Job::Routes(report) => {
                    let _ = self.call("export_routes", |e| e.export_routes(&report));
                }
            }
        }
        if self.call("shutdown", |e| e.shutdown()).is_ok() {
            // What it lost while closing (a ring file found unlinked at the last check).
            let c = &self.counters;
            c.exporter_dropped
                .store(self.exporter.events_dropped(), Ordering::Release);
            c.lost_after_delivery.store(
                self.exporter.events_lost_after_delivery(),
                Ordering::Release,
            );
        }
    }

    fn export(&mut self, events: &[Event], batch: &mut Vec<Event>) {
        let n = events.len() as u64;
        let lost_total = self.counters.lost_total.load(Ordering::Acquire);
        if lost_total > self.passed {
            let new = lost_total - self.passed;
            self.passed = lost_total;
            let _ = self.call("add_dropped", |e| {
                e.add_dropped(new);
                Ok(())
            });
        }
        batch.clear();
        batch.extend_from_slice(events);
        let mut report = None;
        if !self.exporter.reports_drops_in_band() {
            let wall = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as u64);
            let now = events.last().map_or(0, Event::timestamp_us).max(wall);
            report = self.report.due(lost_total, u64::MAX, false, now);
            batch.extend(report);
        }
        match self.call("export", |e| e.export(batch)) {
            Ok(()) => {
                self.counters.failing.store(false, Ordering::Release);
                // Left out as not in its layout, or refused at the batch's end (a full
                // ring): not delivered.
                let skipped = self.exporter.not_in_layout_from_last_export().len() as u64;
                let refused = self.exporter.dropped_from_last_export() as u64;
                self.counters
                    .delivered
                    .fetch_add(n.saturating_sub(skipped + refused), Ordering::AcqRel);
                self.counters
                    .not_in_layout
                    .fetch_add(skipped, Ordering::AcqRel);
                if let Some(report) = &report {
                    self.report.written(report);
                }
                let inside = self.exporter.events_dropped();
                self.counters
                    .exporter_dropped
                    .store(inside, Ordering::Release);
                let after = self.exporter.events_lost_after_delivery();
                self.counters
                    .lost_after_delivery
                    .store(after, Ordering::Release);
            }
            Err(e) => {
                log::warn!(
                    "telemetry exporter `{}`: {n} events lost: {e}",
                    self.exporter.name()
                );
                self.counters.failing.store(true, Ordering::Release);
                self.counters.errors.fetch_add(1, Ordering::AcqRel);
                self.counters.dropped.fetch_add(n, Ordering::AcqRel);
                self.counters.lost_total.fetch_add(n, Ordering::AcqRel);
            }
        }
        // Counted where it ended above first, so the sum never dips.
        self.counters.queued.fetch_sub(n, Ordering::AcqRel);
    }

    /// Runs `f` unless the exporter panicked before; a panic marks it broken.
    fn call(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut dyn Exporter) -> Result<(), ExportError>,
    ) -> Result<(), ExportError> {
        if self.broken {
            return Err(ExportError::failed(
                self.exporter.name(),
                "the exporter panicked earlier",
            ));
        }
        let exporter = &mut *self.exporter;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(exporter))) {
            Ok(result) => result,
            Err(_) => {
                self.broken = true;
                Err(ExportError::failed(
                    self.exporter.name(),
                    format!("panicked in {what}"),
                ))
            }
        }
    }
}
