//! The [`Telemetry`] handle: recording, the flush thread, statistics, shutdown.
//!
//! # Flushing
//!
//! With an exporter ([`Mode::Export`]) a thread named `telering-flush` wakes every
//! run interval and:
//!
//! 1. drains every lane (and removes the lanes of threads that exited, after their
//!    last drain) and every backend's pending events;
//!    Counter stamps are converted to microseconds as each lane is drained, with
//!    the line through the previous flush's anchor and this one's
//!    ([`crate::clock::timebase`]); no lane's timestamps ever go backwards;
//! 2. sorts the drained events by timestamp (a stable sort: events of one thread with
//!    equal timestamps keep their order);
//! 3. if events were lost upstream since the previous flush — a full lane, a full
//!    backend buffer, a thread that recorded while exiting, a failed export — tells
//!    the exporter, once per loss ([`Exporter::add_dropped`]);
//! 4. unless the exporter reports losses in-band itself
//!    ([`Exporter::reports_drops_in_band`]), appends one
//!    `agent_telemetry_events_dropped` event counting every loss not yet in a report
//!    the exporter took ([`telering_core::drop_report`]);
//! 5. hands the batch to [`Exporter::export`]. If that fails, the batch's events are
//!    counted as dropped, passed to `add_dropped` with the next flush, and its drop
//!    report is made again, with them added.
//!
//! Dropping the [`Telemetry`] wakes the thread, which flushes one last time, then
//! calls [`Exporter::flush`] and [`Exporter::shutdown`]; the drop returns when that
//! is done. Every event recorded before the drop began is exported or counted.

use crate::backend::{BackendShared, BackendTelemetry};
use crate::clock::ClockSource;
use crate::clock::stamp::{StampKind, Stamper};
use crate::clock::timebase::{Conversion, MonotoneStream, Timebase};
use crate::config::{ConfigError, Mode, ResolvedConfig, TelemetryBuilder};
use crate::export::{ExportError, Exporter, ExporterContext};
use crate::lane::{self, LaneConsumer, LaneProducer};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use telering_core::allowlist::fnmatch;
use telering_core::builtin::{self, BuiltinEvent, ErrorStatus};
use telering_core::drop_report::DropReport;
use telering_core::{Allowlist, Category, Event, EventName, NameError, Recorded, event_name};

/// Index of each built-in event in [`BUILTINS`].
pub(crate) mod idx {
    pub const MEMORY_REGISTERED: usize = 0;
    pub const MEMORY_DEREGISTERED: usize = 1;
    pub const TX_BYTES: usize = 2;
    pub const RX_BYTES: usize = 3;
    pub const TX_REQUESTS_NUM: usize = 4;
    pub const RX_REQUESTS_NUM: usize = 5;
    pub const XFER_TIME: usize = 6;
    pub const XFER_POST_TIME: usize = 7;
    #[cfg(test)]
    pub const EVENTS_DROPPED: usize = 8;
    pub const FIRST_ERROR: usize = 9;
}

const BUILTIN_COUNT: usize = 21;

/// Every built-in event, error events last in [`ErrorStatus::ALL`] order.
const BUILTINS: [BuiltinEvent; BUILTIN_COUNT] = {
    let mut all = [builtin::AGENT_TX_BYTES; BUILTIN_COUNT];
    let mut i = 0;
    while i < builtin::BUILTIN_EVENTS.len() {
        all[i] = builtin::BUILTIN_EVENTS[i];
        i += 1;
    }
    let mut s = 0;
    while s < ErrorStatus::ALL.len() {
        all[idx::FIRST_ERROR + s] = ErrorStatus::ALL[s].event();
        s += 1;
    }
    all
};

/// Every built-in event as a ready event with timestamp and value 0. Recording copies
/// one and sets those two fields with whole-word stores, which the ring's 8-byte
/// loads then read back through store forwarding; building the event field by field
/// (narrower stores) was slower: 28.4 → 26.2 ns per `add_xfer_stats` with the fast
/// clock on the 2-core benchmark machine.
const TEMPLATES: [Event; BUILTIN_COUNT] = {
    let mut all = [Event::new(0, Category::Custom, event_name!("-"), 0); BUILTIN_COUNT];
    let mut i = 0;
    while i < BUILTIN_COUNT {
        all[i] = Event::new(0, BUILTINS[i].category, BUILTINS[i].name, 0);
        i += 1;
    }
    all
};

/// The built-in event `index` stamped `now` with `value`.
#[inline(always)]
fn builtin_event(index: usize, now: u64, value: u64) -> Event {
    let mut e = TEMPLATES[index];
    e.set_timestamp_us(now);
    e.set_value(value);
    e
}

const _: () = {
    assert!(builtin::BUILTIN_EVENTS.len() == idx::FIRST_ERROR);
    assert!(idx::FIRST_ERROR + ErrorStatus::ALL.len() == BUILTIN_COUNT);
};

/// Which events get recorded: the allowlist, pre-evaluated for the built-in events so
/// that a disabled built-in metric costs one load and a branch.
#[derive(Clone, Debug)]
pub(crate) struct Filter {
    on: bool,
    allow_all: bool,
    /// The trimmed, non-empty patterns, split once.
    patterns: Vec<String>,
    builtin: [bool; BUILTIN_COUNT],
    /// Whether all four events of a read (`[0]`) / write (`[1]`) transfer pass.
    xfer_all: [bool; 2],
}

impl Filter {
    pub(crate) fn new(on: bool, patterns: &str) -> Filter {
        let list = Allowlist::new(patterns);
        let mut builtin = [false; BUILTIN_COUNT];
        for (allowed, event) in builtin.iter_mut().zip(BUILTINS.iter()) {
            *allowed = on && list.allows(event.name.as_str());
        }
        let all = |ids: [usize; 4]| ids.iter().all(|&i| builtin[i]);
        let timing = [idx::XFER_TIME, idx::XFER_POST_TIME];
        Filter {
            on,
            allow_all: list.allows_everything(),
            patterns: list.patterns().map(str::to_string).collect(),
            xfer_all: [
                all([idx::RX_BYTES, idx::RX_REQUESTS_NUM, timing[0], timing[1]]),
                all([idx::TX_BYTES, idx::TX_REQUESTS_NUM, timing[0], timing[1]]),
            ],
            builtin,
        }
    }

    /// Whether events are recorded and the allowlist lets `name` through.
    #[inline]
    pub(crate) fn allows(&self, name: &EventName) -> bool {
        self.on && self.matches(name)
    }

    /// Whether the allowlist lets `name` through.
    #[inline]
    pub(crate) fn matches(&self, name: &EventName) -> bool {
        self.allow_all || self.patterns.iter().any(|p| fnmatch(p, name.as_str()))
    }
}

/// Counters for a live progress line, read with [`Telemetry::stats`].
///
/// Once the recording threads have finished and a flush has run,
/// `events_recorded == events_exported + events_dropped` (plus, in
/// [`Mode::Capture`], backend events still pending).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TelemetryStats {
    /// Events recorded (passed the allowlist): written to a lane or a backend buffer,
    /// or dropped on the way.
    pub events_recorded: u64,
    /// Events lost before the exporter: full lanes, full backend buffers, recording
    /// from an exiting thread, failed exports.
    pub events_dropped: u64,
    /// Events handed to the exporter successfully (drop reports not included).
    pub events_exported: u64,
    /// Events the exporter itself lost (a full shared-memory ring), as it reports.
    pub exporter_dropped: u64,
    /// Flushes done.
    pub flushes: u64,
    /// Exports that failed.
    pub export_errors: u64,
    /// Lanes currently registered (recording threads that have not exited).
    pub lanes: usize,
}

struct ExportState {
    exporter: Box<dyn Exporter>,
    batch: Vec<Event>,
    shut_down: bool,
    /// The exporter panicked: it is not called again, and every later batch is
    /// counted as dropped (the lanes keep being drained so recording goes on).
    broken: bool,
    /// The exporter reports losses in-band itself
    /// ([`Exporter::reports_drops_in_band`]); the flush appends no report.
    reports_drops_itself: bool,
    /// Every loss so far that belongs in an in-band report: upstream losses and
    /// failed exports.
    lost_total: u64,
    /// What of `lost_total` has reached the exporter in a report that it took.
    reports: DropReport,
}

impl ExportState {
    /// Runs `f` on the exporter unless it broke before; a panic inside marks it broken
    /// and becomes an error, so a faulty exporter never takes the agent down.
    fn call(
        &mut self,
        what: &str,
        f: impl FnOnce(&mut dyn Exporter) -> Result<(), ExportError>,
    ) -> Result<(), ExportError> {
        let name = self.exporter.name().to_string();
        if self.broken {
            return Err(ExportError::failed(&name, "the exporter panicked earlier"));
        }
        let exporter = &mut *self.exporter;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(exporter))) {
            Ok(result) => result,
            Err(_) => {
                self.broken = true;
                log::error!(
                    "telemetry exporter `{name}` panicked in {what}; it is not called again and later events are counted as dropped"
                );
                Err(ExportError::failed(&name, format!("panicked in {what}")))
            }
        }
    }
}

pub(crate) struct Shared {
    id: u64,
    pub(crate) config: ResolvedConfig,
    pub(crate) filter: Filter,
    /// What recording reads.
    pub(crate) stamper: Stamper,
    /// Whether per-transfer telemetry is captured (any mode but disabled).
    pub(crate) captures: bool,
    /// Anchors for converting counter stamps; taken by the flush and by per-transfer
    /// queries, never by recording.
    pub(crate) timebase: Mutex<Timebase>,
    /// Each lane with the guard that keeps its timestamps from going backwards.
    lanes: Mutex<Vec<(LaneConsumer, MonotoneStream)>>,
    backends: Mutex<Vec<Arc<BackendShared>>>,
    export: Mutex<Option<ExportState>>,
    stop: Mutex<bool>,
    wake: Condvar,
    /// Counters of lanes removed after their thread exited.
    retired_written: AtomicU64,
    retired_dropped: AtomicU64,
    /// Events that found no lane (recorded while the thread was exiting).
    laneless_dropped: AtomicU64,
    /// Events lost to failed exports.
    export_failed: AtomicU64,
    /// Losses not yet passed to [`Exporter::add_dropped`] (laneless, failed exports).
    unreported: AtomicU64,
    exported: AtomicU64,
    exporter_dropped: AtomicU64,
    /// Events lost after recording (failed exports, the exporter's own losses), per
    /// name; touched only by flushes that lost events.
    dropped_by_name: Mutex<HashMap<EventName, u64>>,
    flushes: AtomicU64,
    export_errors: AtomicU64,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves consistent data behind (every
    // update is a push, a removal or a counter), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Shared {
    fn new(
        config: ResolvedConfig,
        exporter: Option<Box<dyn Exporter>>,
        counter_trusted: bool,
    ) -> Shared {
        let filter = Filter::new(
            matches!(config.mode, Mode::Export { .. }),
            &config.enabled_metrics,
        );
        let stamps = exporter.as_ref().is_none_or(|e| e.needs_timestamps());
        let stamper = Stamper::new(config.clock, stamps, counter_trusted);
        let timebase = Mutex::new(Timebase::new(stamper.ticks().clone()));
        Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            filter,
            stamper,
            captures: config.mode != Mode::Disabled,
            timebase,
            lanes: Mutex::new(Vec::new()),
            backends: Mutex::new(Vec::new()),
            export: Mutex::new(exporter.map(|exporter| ExportState {
                reports_drops_itself: exporter.reports_drops_in_band(),
                exporter,
                batch: Vec::with_capacity(config.lane_capacity as usize),
                shut_down: false,
                broken: false,
                lost_total: 0,
                reports: DropReport::new(0),
            })),
            config,
            stop: Mutex::new(false),
            wake: Condvar::new(),
            retired_written: AtomicU64::new(0),
            retired_dropped: AtomicU64::new(0),
            laneless_dropped: AtomicU64::new(0),
            export_failed: AtomicU64::new(0),
            unreported: AtomicU64::new(0),
            exported: AtomicU64::new(0),
            exporter_dropped: AtomicU64::new(0),
            dropped_by_name: Mutex::new(HashMap::new()),
            flushes: AtomicU64::new(0),
            export_errors: AtomicU64::new(0),
        }
    }

    fn register_lane(&self) -> Option<LaneProducer> {
        let Some((producer, consumer)) = lane::new_lane(self.config.lane_capacity) else {
            log::error!(
                "telemetry lane of {} events could not be made; events of this thread are counted as dropped",
                self.config.lane_capacity
            );
            return None;
        };
        lock(&self.lanes).push((consumer, MonotoneStream::default()));
        Some(producer)
    }

    #[cold]
    fn count_laneless(&self, events: u64) {
        self.laneless_dropped.fetch_add(events, Ordering::Relaxed);
        self.unreported.fetch_add(events, Ordering::Relaxed);
    }

    /// One flush: drain, merge, report losses, export.
    fn flush_into(&self, state: &mut ExportState) {
        let mut batch = std::mem::take(&mut state.batch);
        batch.clear();
        let mut lost = self.unreported.swap(0, Ordering::AcqRel);
        let conversion = match self.stamper.kind() {
            StampKind::Counter => Conversion::Counter(lock(&self.timebase).reanchor()),
            StampKind::Realtime | StampKind::Coarse => Conversion::Identity,
            StampKind::Off => Conversion::Off,
        };
        {
            let mut lanes = lock(&self.lanes);
            lanes.retain_mut(|(lane, stream)| {
                let gone = lane.producer_gone();
                let first = batch.len();
                lane.drain(&mut batch);
                if conversion != Conversion::Off {
                    for event in &mut batch[first..] {
                        let us = conversion.micros(event.timestamp_us());
                        event.set_timestamp_us(stream.pass(us));
                    }
                }
                lost += lane.take_new_drops();
                if gone {
                    // Drained after the producer was gone: the lane is empty for good.
                    self.retired_written
                        .fetch_add(lane.written(), Ordering::Relaxed);
                    self.retired_dropped
                        .fetch_add(lane.dropped(), Ordering::Relaxed);
                }
                !gone
            });
        }
        for backend in lock(&self.backends).iter() {
            lost += backend.drain_into(&mut batch);
        }
        batch.sort_by_key(Event::timestamp_us);
        let events = batch.len() as u64;
        if lost > 0 {
            // Each loss reaches the exporter's count once, in the flush that found it.
            // A panic here is caught and reported by the export below.
            let _ = state.call("add_dropped", |e| {
                e.add_dropped(lost);
                Ok(())
            });
            state.lost_total = state.lost_total.saturating_add(lost);
        }
        // The in-band report covers every loss not yet in a report the exporter took
        // (a report inside a failed batch is made again, with the later losses added).
        let mut report = None;
        if !state.reports_drops_itself && state.reports.unreported(state.lost_total) > 0 {
            let now = batch
                .last()
                .map_or(0, Event::timestamp_us)
                .max(self.config.clock.now_us());
            report = state.reports.due(state.lost_total, u64::MAX, false, now);
            batch.extend(report);
        }
        let was_broken = state.broken;
        let result = state.call("export", |e| e.export(&batch));
        state.batch = batch;
        match result {
            Ok(()) => {
                self.exported.fetch_add(events, Ordering::Relaxed);
                if let Some(report) = &report {
                    state.reports.written(report);
                }
                if !state.broken {
                    let refused = state.exporter.dropped_from_last_export();
                    let first = state.batch.len().saturating_sub(refused);
                    self.count_by_name(&state.batch[first..]);
                }
            }
            Err(e) => {
                if was_broken {
                    log::debug!("telemetry: {events} events counted as dropped: {e}");
                } else {
                    log::warn!(
                        "telemetry export of {events} events failed; they are counted as dropped: {e}"
                    );
                }
                self.export_errors.fetch_add(1, Ordering::Relaxed);
                self.export_failed.fetch_add(events, Ordering::Relaxed);
                // Only the batch's own events are new losses; `lost` was counted above.
                self.unreported.fetch_add(events, Ordering::Relaxed);
                self.count_by_name(&state.batch);
            }
        }
        if !state.broken {
            self.exporter_dropped
                .store(state.exporter.events_dropped(), Ordering::Relaxed);
        }
        self.flushes.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `events` (drop reports left out) to the per-name losses.
    #[cold]
    fn count_by_name(&self, events: &[Event]) {
        if events.is_empty() {
            return;
        }
        let report = &builtin::AGENT_TELEMETRY_EVENTS_DROPPED.name;
        let mut by_name = lock(&self.dropped_by_name);
        for event in events.iter().filter(|e| e.name_field() != report.field()) {
            if let Ok(name) = event.event_name() {
                *by_name.entry(name).or_default() += 1;
            }
        }
    }

    fn flush_now(&self, sync: bool) -> Result<(), ExportError> {
        let mut guard = lock(&self.export);
        match guard.as_mut() {
            Some(state) if !state.shut_down => {
                self.flush_into(state);
                if sync {
                    state.call("flush", |e| e.flush())?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn finish(&self) {
        let mut guard = lock(&self.export);
        if let Some(state) = guard.as_mut() {
            if state.shut_down {
                return;
            }
            self.flush_into(state);
            if !state.broken {
                if let Err(e) = state.call("flush", |e| e.flush()) {
                    log::warn!("telemetry exporter flush at shutdown failed: {e}");
                }
                if let Err(e) = state.call("shutdown", |e| e.shutdown()) {
                    log::warn!("telemetry exporter shutdown failed: {e}");
                }
            }
            if !state.broken {
                self.exporter_dropped
                    .store(state.exporter.events_dropped(), Ordering::Relaxed);
            }
            state.shut_down = true;
        }
    }

    /// Sleeps until `deadline` or a stop request; returns whether to stop.
    fn wait(&self, deadline: Instant) -> bool {
        let mut stop = lock(&self.stop);
        loop {
            if *stop {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stop = self
                .wake
                .wait_timeout(stop, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn stats(&self) -> TelemetryStats {
        let (mut recorded, mut dropped, lanes) = {
            let lanes = lock(&self.lanes);
            let mut recorded = self.retired_written.load(Ordering::Relaxed)
                + self.retired_dropped.load(Ordering::Relaxed);
            let mut dropped = self.retired_dropped.load(Ordering::Relaxed);
            for (lane, _) in lanes.iter() {
                recorded += lane.written() + lane.dropped();
                dropped += lane.dropped();
            }
            (recorded, dropped, lanes.len())
        };
        for backend in lock(&self.backends).iter() {
            let (added, lost) = backend.counts();
            recorded += added + lost;
            dropped += lost;
        }
        let laneless = self.laneless_dropped.load(Ordering::Relaxed);
        recorded += laneless;
        dropped += laneless + self.export_failed.load(Ordering::Relaxed);
        TelemetryStats {
            events_recorded: recorded,
            events_dropped: dropped,
            events_exported: self.exported.load(Ordering::Relaxed),
            exporter_dropped: self.exporter_dropped.load(Ordering::Relaxed),
            flushes: self.flushes.load(Ordering::Relaxed),
            export_errors: self.export_errors.load(Ordering::Relaxed),
            lanes,
        }
    }
}

fn flush_loop(shared: Arc<Shared>) {
    let interval = shared.config.run_interval;
    let mut deadline = Instant::now() + interval;
    while !shared.wait(deadline) {
        // Errors are logged and counted inside; only `sync` flushes return them.
        let _ = shared.flush_now(false);
        deadline += interval;
        let now = Instant::now();
        if deadline < now {
            // A slow export: start the next interval now rather than catch up.
            deadline = now + interval;
        }
    }
    shared.finish();
}

/// An agent's telemetry: records events from any number of threads and flushes them
/// to one exporter. `Send + Sync`; share it by reference or in an `Arc`.
///
/// Build it with [`Telemetry::builder`] or [`Telemetry::from_env`]. Recording takes no
/// lock and allocates nothing once a thread has recorded its first event (which sets
/// up the thread's lane). Dropping it flushes everything and shuts the exporter down.
///
/// ```
/// use std::time::Duration;
/// use telering_std::Telemetry;
/// use telering_core::builtin::ErrorStatus;
///
/// let dir = tempfile::tempdir().unwrap();
/// let telemetry = Telemetry::builder("agent-3")
///     .enabled(true)
///     .exporter("csv")
///     .dir(dir.path())
///     .build()
///     .unwrap();
/// std::thread::scope(|s| {
///     for t in 0..4u64 {
///         let telemetry = &telemetry;
///         s.spawn(move || {
///             telemetry.update_tx_bytes(1000 + t);
///             telemetry.add_xfer_stats(Duration::from_micros(40), true, 4096, Duration::from_micros(3));
///         });
///     }
/// });
/// telemetry.update_error_count(ErrorStatus::Backend);
/// let stats = telemetry.stats();
/// assert_eq!((stats.events_recorded, stats.events_dropped), (21, 0));
/// drop(telemetry);
/// let csv = std::fs::read_to_string(dir.path().join("agent-3.csv")).unwrap();
/// assert_eq!(csv.lines().count(), 1 + 21);
/// ```
pub struct Telemetry {
    pub(crate) shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry")
            .field("agent_name", &self.shared.config.agent_name)
            .field("mode", &self.shared.config.mode)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Telemetry {
    /// A builder with the defaults (see [`TelemetryBuilder::new`]).
    pub fn builder(agent_name: impl Into<String>) -> TelemetryBuilder {
        TelemetryBuilder::new(agent_name)
    }

    /// Telemetry configured from the process's `NIXL_TELEMETRY_*` variables.
    pub fn from_env(agent_name: impl Into<String>) -> Result<Telemetry, ConfigError> {
        TelemetryBuilder::from_env(agent_name, &crate::EnvSource::from_process())?.build()
    }

    /// Telemetry that records nothing: what a program runs with when it chooses to
    /// go on after a [`ConfigError`].
    pub fn disabled(agent_name: impl Into<String>) -> Telemetry {
        let config = ResolvedConfig {
            agent_name: agent_name.into(),
            mode: Mode::Disabled,
            enabled_metrics: String::new(),
            buffer_size: crate::config::DEFAULT_BUFFER_SIZE,
            lane_capacity: crate::config::DEFAULT_BUFFER_SIZE,
            run_interval: crate::config::DEFAULT_RUN_INTERVAL,
            dir: None,
            clock: ClockSource::Realtime,
            ring_layout: telering_shm::RingLayout::V1,
        };
        Telemetry {
            shared: Arc::new(Shared::new(config, None, false)),
            flusher: None,
        }
    }

    pub(crate) fn from_builder(builder: TelemetryBuilder) -> Result<Telemetry, ConfigError> {
        let config = builder.resolve()?;
        for warning in builder.warnings() {
            log::warn!("{warning}");
        }
        let exporter = match &config.mode {
            Mode::Export { exporter } => {
                if let Some(dir) = &config.dir {
                    crate::dir::prepare(dir)?;
                }
                let context = ExporterContext {
                    agent_name: config.agent_name.clone(),
                    dir: config.dir.clone(),
                    buffer_size: config.buffer_size,
                    run_interval: config.run_interval,
                    env: builder.env.clone(),
                    clock: config.clock,
                    ring_layout: config.ring_layout,
                };
                Some(builder.registry.create(exporter, &context)?)
            }
            Mode::Disabled | Mode::Capture => None,
        };
        let has_exporter = exporter.is_some();
        let (asked, probe) = builder.clock_choice();
        let counter_trusted = probe.counter_reliable().is_ok();
        let shared = Arc::new(Shared::new(config, exporter, counter_trusted));
        if shared.config.mode != Mode::Disabled {
            log::info!(
                "telemetry for agent {}: {}",
                shared.config.agent_name,
                crate::clock::describe(
                    asked,
                    shared.config.clock,
                    &probe,
                    shared.stamper.kind() != StampKind::Off
                )
            );
        }
        let flusher = if has_exporter {
            let for_thread = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name("telering-flush".into())
                .spawn(move || flush_loop(for_thread))
                .map_err(|source| ConfigError::FlushThread { source })?;
            Some(handle)
        } else {
            None
        };
        log::debug!(
            "telemetry for agent {} runs in mode {:?}",
            shared.config.agent_name,
            shared.config.mode
        );
        Ok(Telemetry { shared, flusher })
    }

    /// The configuration in effect.
    pub fn config(&self) -> &ResolvedConfig {
        &self.shared.config
    }

    /// The agent's name.
    pub fn agent_name(&self) -> &str {
        &self.shared.config.agent_name
    }

    /// What the telemetry does: disabled, capture in process, or export.
    pub fn mode(&self) -> &Mode {
        &self.shared.config.mode
    }

    /// Whether per-transfer and backend telemetry are captured (any mode but
    /// [`Mode::Disabled`]).
    pub fn captures(&self) -> bool {
        self.shared.captures
    }

    /// Whether events are recorded for export.
    pub fn exports(&self) -> bool {
        self.shared.filter.on
    }

    /// Counters for a progress line. Takes the lane list's lock briefly (never taken
    /// by recording).
    pub fn stats(&self) -> TelemetryStats {
        self.shared.stats()
    }

    /// Where the exporter serves the events, if it serves them at an address of its
    /// own ([`Exporter::endpoint`]), such as the `prometheus` exporter's
    /// `http://127.0.0.1:9090/metrics`; `None` when it does not, or could not start
    /// its endpoint.
    ///
    /// ```
    /// let telemetry = telering_std::Telemetry::builder("agent").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(telemetry.exporter_endpoint(), None);
    /// ```
    pub fn exporter_endpoint(&self) -> Option<String> {
        let state = lock(&self.shared.export);
        state
            .as_ref()
            .filter(|s| !s.broken && !s.shut_down)
            .and_then(|s| {
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.exporter.endpoint()))
                    .ok()
                    .flatten()
            })
    }

    /// Events lost after they were recorded — in exports that failed, or by the
    /// exporter itself (a full ring) — per event name, for a per-name loss summary.
    /// Losses at record time are the [`Recorded::Dropped`] outcomes the caller saw.
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::disabled("agent");
    /// assert!(telemetry.dropped_by_name().is_empty());
    /// ```
    pub fn dropped_by_name(&self) -> BTreeMap<String, u64> {
        lock(&self.shared.dropped_by_name)
            .iter()
            .map(|(name, n)| (name.as_str().to_string(), *n))
            .collect()
    }

    /// Flushes now, on this thread, and makes the exporter flush its output (an
    /// `msync`, an `fsync`); the flush thread keeps its schedule.
    pub fn flush(&self) -> Result<(), ExportError> {
        self.shared.flush_now(true)
    }

    // Always inlined, as `record_builtin` is: outlined, the pair cost a call and five
    // register saves per event (−14 instructions per event under callgrind).
    #[inline(always)]
    pub(crate) fn push(&self, event: &Event) -> Recorded {
        let shared = &*self.shared;
        match lane::with_lane(shared.id, || shared.register_lane(), |l| l.push(event)) {
            Some(true) => Recorded::Written,
            Some(false) => Recorded::Dropped,
            None => {
                shared.count_laneless(1);
                Recorded::Dropped
            }
        }
    }

    #[inline(always)]
    fn record_builtin(&self, index: usize, value: u64) -> Recorded {
        if !self.shared.filter.builtin[index] {
            return Recorded::Filtered;
        }
        let now = self.shared.stamper.stamp();
        self.push(&builtin_event(index, now, value))
    }

    /// Records `agent_tx_bytes`: bytes sent.
    #[inline]
    pub fn update_tx_bytes(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::TX_BYTES, bytes)
    }

    /// Records `agent_rx_bytes`: bytes received.
    #[inline]
    pub fn update_rx_bytes(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::RX_BYTES, bytes)
    }

    /// Records `agent_tx_requests_num`: send requests.
    #[inline]
    pub fn update_tx_requests_num(&self, requests: u64) -> Recorded {
        self.record_builtin(idx::TX_REQUESTS_NUM, requests)
    }

    /// Records `agent_rx_requests_num`: receive requests.
    #[inline]
    pub fn update_rx_requests_num(&self, requests: u64) -> Recorded {
        self.record_builtin(idx::RX_REQUESTS_NUM, requests)
    }

    /// Records `agent_memory_registered`: bytes registered.
    #[inline]
    pub fn update_memory_registered(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::MEMORY_REGISTERED, bytes)
    }

    /// Records `agent_memory_deregistered`: bytes deregistered.
    #[inline]
    pub fn update_memory_deregistered(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::MEMORY_DEREGISTERED, bytes)
    }

    /// Records one occurrence of `status`: an `ERROR` event named by the status
    /// (`NIXL_ERR_BACKEND`, …) with value 1.
    #[inline]
    pub fn update_error_count(&self, status: ErrorStatus) -> Recorded {
        self.record_builtin(idx::FIRST_ERROR + status as usize, 1)
    }

    /// Records one completed transfer, all or none: `agent_tx_bytes` (or
    /// `agent_rx_bytes` for a read), `agent_tx_requests_num` (or `rx`) = 1,
    /// `agent_xfer_time` and `agent_xfer_post_time` in microseconds, with one
    /// timestamp. Events the allowlist excludes are left out; if the lane lacks room
    /// for the rest, all of them are counted as dropped.
    ///
    /// ```
    /// use std::time::Duration;
    /// use telering_core::Recorded;
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = telemetry.add_xfer_stats(Duration::from_micros(120), false, 1 << 20, Duration::from_micros(4));
    /// assert_eq!(r, Recorded::Written);
    /// assert_eq!(telemetry.stats().events_recorded, 4);
    /// ```
    #[inline]
    pub fn add_xfer_stats(
        &self,
        xfer_time: Duration,
        is_write: bool,
        bytes: u64,
        post_time: Duration,
    ) -> Recorded {
        self.record_xfer(None, is_write, bytes, micros(xfer_time), micros(post_time))
    }

    /// The four events of one transfer with their values in microseconds, stamped at
    /// duration tick `completed` (`None`: read the stamp now).
    #[inline]
    pub(crate) fn record_xfer(
        &self,
        completed: Option<u64>,
        is_write: bool,
        bytes: u64,
        xfer_us: u64,
        post_us: u64,
    ) -> Recorded {
        let (bytes_idx, requests_idx) = if is_write {
            (idx::TX_BYTES, idx::TX_REQUESTS_NUM)
        } else {
            (idx::RX_BYTES, idx::RX_REQUESTS_NUM)
        };
        if !self.shared.filter.xfer_all[is_write as usize] {
            let parts = [
                (bytes_idx, bytes),
                (requests_idx, 1),
                (idx::XFER_TIME, xfer_us),
                (idx::XFER_POST_TIME, post_us),
            ];
            return self.record_xfer_filtered(completed, parts);
        }
        // The common case, every part allowed: each event is made from its template
        // straight into its lane slot (a staging array cost a 56-byte build and copy
        // per event).
        let now = self.xfer_stamp(completed);
        let parts = [
            (bytes_idx, bytes),
            (requests_idx, 1),
            (idx::XFER_TIME, xfer_us),
            (idx::XFER_POST_TIME, post_us),
        ];
        let shared = &*self.shared;
        let make = |i: usize| builtin_event(parts[i].0, now, parts[i].1);
        let pushed = lane::with_lane(
            shared.id,
            || shared.register_lane(),
            |l| l.push_all_with(parts.len(), make),
        );
        match pushed {
            Some(true) => Recorded::Written,
            Some(false) => Recorded::Dropped,
            None => {
                shared.count_laneless(parts.len() as u64);
                Recorded::Dropped
            }
        }
    }

    #[inline(always)]
    fn xfer_stamp(&self, completed: Option<u64>) -> u64 {
        let stamper = &self.shared.stamper;
        match completed {
            Some(tick) => stamper.stamp_at(tick),
            None => stamper.stamp(),
        }
    }

    /// [`record_xfer`](Self::record_xfer) when the allowlist leaves some parts out.
    #[cold]
    #[inline(never)]
    fn record_xfer_filtered(&self, completed: Option<u64>, parts: [(usize, u64); 4]) -> Recorded {
        let filter = &self.shared.filter;
        if !parts.iter().any(|&(i, _)| filter.builtin[i]) {
            return Recorded::Filtered;
        }
        let now = self.xfer_stamp(completed);
        const BLANK: Event = Event::new(0, Category::Custom, event_name!("-"), 0);
        let mut events = [BLANK; 4];
        let mut n = 0;
        for (i, value) in parts {
            if filter.builtin[i] {
                events[n] = builtin_event(i, now, value);
                n += 1;
            }
        }
        self.push_all(&events[..n])
    }

    #[inline]
    fn push_all(&self, events: &[Event]) -> Recorded {
        let shared = &*self.shared;
        match lane::with_lane(shared.id, || shared.register_lane(), |l| l.push_all(events)) {
            Some(true) => Recorded::Written,
            Some(false) => Recorded::Dropped,
            None => {
                shared.count_laneless(events.len() as u64);
                Recorded::Dropped
            }
        }
    }

    /// Records a custom event. The name (1 to 31 bytes, no NUL) is checked; the
    /// allowlist applies to it as to built-in names.
    ///
    /// ```
    /// use telering_core::{Category, Recorded};
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::builder("a")
    ///     .enabled(true)
    ///     .exporter("nop")
    ///     .enabled_metrics("queue_*")
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(telemetry.record(Category::Custom, "queue_depth", 17), Ok(Recorded::Written));
    /// assert_eq!(telemetry.record(Category::Custom, "other", 1), Ok(Recorded::Filtered));
    /// assert!(telemetry.record(Category::Custom, "", 1).is_err());
    /// ```
    #[inline]
    pub fn record(
        &self,
        category: Category,
        name: &str,
        value: u64,
    ) -> Result<Recorded, NameError> {
        let name = EventName::new(name)?;
        Ok(self.record_event(category, &name, value))
    }

    /// Records a custom event with a name checked beforehand (for example a
    /// `const` made with [`event_name!`]).
    #[inline]
    pub fn record_event(&self, category: Category, name: &EventName, value: u64) -> Recorded {
        if !self.shared.filter.allows(name) {
            return Recorded::Filtered;
        }
        let now = self.shared.stamper.stamp();
        self.push(&Event::new(now, category, *name, value))
    }

    /// A handle for a transfer backend named `backend` to report its own events,
    /// exported in category `BACKEND` at each flush.
    /// Asking again for the same name returns a handle to the same buffer.
    pub fn backend(&self, backend: &str) -> BackendTelemetry {
        let mut backends = lock(&self.shared.backends);
        if let Some(existing) = backends.iter().find(|b| b.name() == backend) {
            return BackendTelemetry::from_shared(Arc::clone(existing));
        }
        let shared = Arc::new(BackendShared::new(
            backend,
            self.captures(),
            self.shared.filter.clone(),
            self.shared.config.clock,
            self.shared.config.buffer_size as usize,
        ));
        backends.push(Arc::clone(&shared));
        BackendTelemetry::from_shared(shared)
    }

    /// Whether recording stamps events: `false` when no sink needs timestamps (the
    /// `buffer` exporter writing the version-4 ring layout, whose slots have none),
    /// and then recording reads no clock at all.
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert!(telemetry.stamps_events());
    /// ```
    pub fn stamps_events(&self) -> bool {
        self.shared.stamper.kind() != StampKind::Off
    }

    /// The clock stamping events, resolved ([`ClockSource::Tsc`],
    /// [`ClockSource::Realtime`] or [`ClockSource::RealtimeCoarse`]).
    pub fn clock(&self) -> ClockSource {
        self.shared.config.clock
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(handle) = self.flusher.take() {
            if handle.join().is_err() {
                log::error!("telemetry flush thread panicked; flushing from the dropping thread");
                self.shared.finish();
            }
        }
        // Lanes are released: each thread frees its end when it next registers a lane
        // or exits.
        lock(&self.shared.lanes).clear();
    }
}

#[inline]
pub(crate) fn micros(d: Duration) -> u64 {
    // Whole seconds times 10⁶ plus the sub-second micros (a multiply by a constant),
    // in u64 arithmetic that saturates, instead of `as_micros`' u128 (−7 instructions).
    d.as_secs()
        .saturating_mul(1_000_000)
        .saturating_add(u64::from(d.subsec_micros()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_table_lists_every_builtin_event_at_its_index() {
        assert_eq!(BUILTINS[idx::TX_BYTES], builtin::AGENT_TX_BYTES);
        assert_eq!(BUILTINS[idx::XFER_POST_TIME], builtin::AGENT_XFER_POST_TIME);
        assert_eq!(
            BUILTINS[idx::EVENTS_DROPPED],
            builtin::AGENT_TELEMETRY_EVENTS_DROPPED
        );
        for s in ErrorStatus::ALL {
            assert_eq!(BUILTINS[idx::FIRST_ERROR + s as usize], s.event());
        }
        let names: Vec<_> = BUILTINS.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, builtin::all_builtin_names().collect::<Vec<_>>());
    }

    #[test]
    fn the_filter_evaluates_the_allowlist_for_builtins_once() {
        let f = Filter::new(true, "agent_tx_*, NIXL_ERR_BACKEND");
        assert!(f.builtin[idx::TX_BYTES] && f.builtin[idx::TX_REQUESTS_NUM]);
        assert!(!f.builtin[idx::RX_BYTES]);
        assert!(f.builtin[idx::FIRST_ERROR + ErrorStatus::Backend as usize]);
        assert!(!f.builtin[idx::FIRST_ERROR + ErrorStatus::Unknown as usize]);
        let off = Filter::new(false, "");
        assert!(off.builtin.iter().all(|b| !b));
        assert!(!off.allows(&event_name!("x")));
    }

    #[test]
    fn durations_convert_to_whole_microseconds() {
        assert_eq!(micros(Duration::from_nanos(1_999)), 1);
        assert_eq!(micros(Duration::from_secs(2)), 2_000_000);
        assert_eq!(micros(Duration::MAX), u64::MAX);
    }
}
