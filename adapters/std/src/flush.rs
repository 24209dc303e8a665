//! The flush: draining the lanes and backends, merging, loss accounting and the
//! export, with the exporter isolated so that a failing or panicking one never takes
//! the agent down.
//!
//! With an exporter ([`Mode::Export`]) a thread named `telering-flush` wakes every
//! run interval and:
//!
//! 1. drains every lane (and removes the lanes of threads that exited, after their
//!    last drain) and every backend's pending events;
//!    each lane's 16-byte records are expanded into events (names from the
//!    [`NameTable`](crate::names::NameTable), stamps restored whole: see
//!    [`crate::lane`]). Counter stamps are converted to microseconds as each lane is
//!    drained, with the line through the previous flush's anchor and this one's
//!    ([`crate::clock::timebase`]); no lane's timestamps ever go backwards. When no
//!    sink needs timestamps, stamps (and timestamps) are 0;
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

mod guard;

use crate::Recorded;
use crate::backend::BackendShared;
use crate::builtins::Filter;
use crate::clock::stamp::{StampKind, Stamper};
use crate::clock::timebase::{Conversion, MonotoneStream, Timebase};
use crate::config::{Mode, ResolvedConfig};
use crate::export::{Delivery, ExportError, Exporter};
use crate::fanout::Roster;
use crate::lane::{self, FlushSignal, LaneConsumer, LaneProducer, Woken};
use crate::names::NameTable;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;
use telering_core::builtin;
use telering_core::drop_report::DropReport;
use telering_core::{Event, EventName};

/// Counters for a live progress line, read with [`Telemetry::stats`](crate::Telemetry::stats).
///
/// Every recorded event ends in exactly one of five counts: once the recording
/// threads have finished and a flush has run,
/// `events_recorded == events_exported + events_dropped + exporter_dropped +
/// events_not_in_layout + events_undelivered` (plus, in [`Mode::Capture`], backend
/// events still pending).
///
/// *Delivered* means: for the `buffer` and `csv` exporters, written to the file; for
/// `otlp`, included in a push the collector answered with a 2xx status (pushes carry
/// the cumulative state, so one 2xx delivers every event folded in before it was
/// encoded); for `prometheus`, folded into the metrics its endpoint serves (a scrape
/// is not awaited: the exporter cannot know who reads).
///
/// With a list of exporters (`NIXL_TELEMETRY_EXPORTER=buffer,otlp`) the deliveries and
/// losses are those of the exporter that delivered fewest, `export_errors` adds up
/// every exporter's and `exporter_failing` is whether any is failing (see
/// [`crate::fanout`]); each exporter's own are in
/// [`Telemetry::exporter_stats`](crate::Telemetry::exporter_stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TelemetryStats {
    /// Events recorded (passed the allowlist): written to a lane or a backend buffer,
    /// or dropped on the way.
    pub events_recorded: u64,
    /// Events lost at record time, before any exporter had them (the
    /// [`Recorded::Dropped`](crate::Recorded::Dropped) outcomes): full lanes, full
    /// backend buffers, recording from an exiting thread or through a
    /// [`Recorder`](crate::Recorder) of a closed telemetry; and the losses of the
    /// program feeding the telemetry, as it reported them
    /// ([`Telemetry::add_dropped_upstream`](crate::Telemetry::add_dropped_upstream)).
    pub events_dropped: u64,
    /// Events the exporter delivered (drop reports not included); see *delivered*
    /// above.
    pub events_exported: u64,
    /// Events the exporter lost after it was handed them: exports that failed (a
    /// CSV write the disk refused, an exporter that panicked, a flush that panicked
    /// after taking them from the lanes), refused by a full
    /// shared-memory ring, written into a ring file that another program then
    /// unlinked (counted delivered until the writer noticed, at its next check), and
    /// with a list, batches that found the exporter's queue full.
    pub exporter_dropped: u64,
    /// Events the exporter's output cannot hold and left out, neither delivered nor
    /// lost: custom and backend events in a ring file of `TELERING_RING_LAYOUT=v4`.
    pub events_not_in_layout: u64,
    /// Events an aggregating exporter (`otlp`, `prometheus`) took but has not
    /// delivered: an OTLP collector that is down, refuses or never answers, a metrics
    /// port that could not be bound. Always 0 for the file exporters.
    pub events_undelivered: u64,
    /// Flushes done.
    pub flushes: u64,
    /// Failed attempts: exports that failed (a CSV write, …), OTLP pushes the collector
    /// refused (4xx, 5xx), could not be reached for or did not answer in time, an
    /// endpoint that could not start.
    pub export_errors: u64,
    /// Whether the exporter is failing now: its last export failed (a write the
    /// disk refused), its last push was not delivered, or its endpoint could not
    /// start. It recovers with the next export (or push) that succeeds.
    pub exporter_failing: bool,
    /// Lanes currently registered (recording threads that have not exited).
    pub lanes: usize,
}

pub(crate) struct ExportState {
    pub(crate) exporter: Box<dyn Exporter>,
    pub(crate) batch: Vec<Event>,
    pub(crate) shut_down: bool,
    /// The exporter panicked: it is not called again, and every later batch is
    /// counted as dropped (the lanes keep being drained so recording goes on).
    pub(crate) broken: bool,
    /// The exporter reports losses in-band itself
    /// ([`Exporter::reports_drops_in_band`]); the flush appends no report.
    pub(crate) reports_drops_itself: bool,
    /// Every loss so far that belongs in an in-band report: upstream losses and
    /// failed exports.
    pub(crate) lost_total: u64,
    /// What of `lost_total` has reached the exporter in a report that it took.
    pub(crate) reports: DropReport,
    /// The flush in progress: events of `batch` taken for good from the lanes and
    /// backends (a lane whose drain did not finish keeps its records) and not yet
    /// counted delivered or lost, and losses found not yet added to `lost_total`.
    /// What a panic of the flush counts as lost ([`guard`]).
    pub(crate) in_flight: guard::InFlight,
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
    pub(crate) id: u64,
    pub(crate) config: ResolvedConfig,
    pub(crate) filter: Filter,
    /// The telemetry was closed (dropped): a [`Recorder`](crate::Recorder) that
    /// outlives it refuses its events (counted) rather than writing them into a lane
    /// no flush drains. The recording paths test it through `gates`.
    pub(crate) closed: std::sync::atomic::AtomicBool,
    /// `filter`'s answers, cleared at the close: what recording tests first.
    pub(crate) gates: crate::gates::Gates,
    /// What recording reads.
    pub(crate) stamper: Stamper,
    /// Whether per-transfer telemetry is captured (any mode but disabled).
    pub(crate) captures: bool,
    /// Anchors for converting counter stamps; taken by the flush and by per-transfer
    /// queries, never by recording.
    pub(crate) timebase: Mutex<Timebase>,
    /// Each lane with the guard that keeps its timestamps from going backwards.
    pub(crate) lanes: Mutex<Vec<(LaneConsumer, MonotoneStream)>>,
    /// What the lanes' record ids stand for.
    pub(crate) names: NameTable,
    pub(crate) backends: Mutex<Vec<Arc<BackendShared>>>,
    pub(crate) export: Mutex<Option<ExportState>>,
    /// What the flush thread sleeps on: its stop request and the lanes' early
    /// wake-ups.
    pub(crate) signal: Arc<FlushSignal>,
    /// Counters of lanes removed after their thread exited.
    pub(crate) retired_written: AtomicU64,
    pub(crate) retired_dropped: AtomicU64,
    /// Events that found no lane (recorded while the thread was exiting, or re-entering
    /// a recording call) or no name id (the `NameTable` full).
    pub(crate) laneless_dropped: AtomicU64,
    /// Events the program feeding the telemetry lost before handing them over, as it
    /// reported them ([`Telemetry::add_dropped_upstream`](crate::Telemetry::add_dropped_upstream)).
    pub(crate) upstream_dropped: AtomicU64,
    /// Events lost to failed exports: the exporter's losses.
    pub(crate) export_failed: AtomicU64,
    /// The last export failed; cleared by the next that succeeds.
    pub(crate) export_failing: std::sync::atomic::AtomicBool,
    /// Losses not yet passed to [`Exporter::add_dropped`] (laneless, failed exports).
    pub(crate) unreported: AtomicU64,
    pub(crate) exported: AtomicU64,
    pub(crate) exporter_dropped: AtomicU64,
    /// Of `exporter_dropped`, events lost after `exported` counted them (see
    /// [`Exporter::events_lost_after_delivery`]).
    pub(crate) lost_after_delivery: AtomicU64,
    /// Events lost after recording (failed exports, the exporter's own losses), per
    /// name; touched only by flushes that lost events.
    pub(crate) dropped_by_name: Mutex<HashMap<EventName, u64>>,
    /// Events the exporter's output cannot hold (see [`TelemetryStats`]), in total and
    /// per name.
    pub(crate) not_in_layout: AtomicU64,
    pub(crate) not_in_layout_by_name: Mutex<HashMap<EventName, u64>>,
    /// The exporter's own delivery counters, when it delivers after `export` returns.
    pub(crate) delivery: Option<Arc<Delivery>>,
    /// Each exporter's counters, when `NIXL_TELEMETRY_EXPORTER` is a list.
    pub(crate) roster: Option<Roster>,
    pub(crate) flushes: AtomicU64,
    pub(crate) export_errors: AtomicU64,
    /// The interned routes ([`crate::route`]).
    pub(crate) routes: crate::route::RouteTable,
    /// Their totals and the last interval's slow transfers, kept by the flush.
    pub(crate) route_tally: Mutex<crate::route::tally::Tally>,
    pub(crate) route_slow: Mutex<Vec<crate::route::SlowXfer>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves consistent data behind (every
    // update is a push, a removal or a counter), so a poisoned lock is still usable.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Shared {
    pub(crate) fn new(
        config: ResolvedConfig,
        exporter: Option<Box<dyn Exporter>>,
        roster: Option<Roster>,
        counter_trusted: bool,
    ) -> Shared {
        let filter = Filter::new(&config.mode, &config.enabled_metrics);
        let gates = crate::gates::Gates::new(&filter);
        let stamps = exporter.as_ref().is_none_or(|e| e.needs_timestamps());
        let stamper = Stamper::new(config.clock, stamps, counter_trusted);
        let timebase = Mutex::new(Timebase::new(stamper.ticks().clone()));
        let delivery = exporter.as_ref().and_then(|e| e.delivery());
        let route_limits = config.routes;
        Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            filter,
            closed: std::sync::atomic::AtomicBool::new(false),
            gates,
            stamper,
            captures: config.mode != Mode::Disabled,
            timebase,
            lanes: Mutex::new(Vec::new()),
            names: NameTable::new(),
            backends: Mutex::new(Vec::new()),
            export: Mutex::new(exporter.map(|exporter| ExportState {
                reports_drops_itself: exporter.reports_drops_in_band(),
                exporter,
                batch: Vec::with_capacity(config.lane_capacity as usize),
                shut_down: false,
                broken: false,
                in_flight: guard::InFlight::default(),
                lost_total: 0,
                reports: DropReport::new(0),
            })),
            config,
            signal: Arc::default(),
            retired_written: AtomicU64::new(0),
            retired_dropped: AtomicU64::new(0),
            laneless_dropped: AtomicU64::new(0),
            upstream_dropped: AtomicU64::new(0),
            export_failed: AtomicU64::new(0),
            export_failing: std::sync::atomic::AtomicBool::new(false),
            unreported: AtomicU64::new(0),
            exported: AtomicU64::new(0),
            exporter_dropped: AtomicU64::new(0),
            lost_after_delivery: AtomicU64::new(0),
            dropped_by_name: Mutex::new(HashMap::new()),
            not_in_layout: AtomicU64::new(0),
            not_in_layout_by_name: Mutex::new(HashMap::new()),
            delivery,
            roster,
            flushes: AtomicU64::new(0),
            export_errors: AtomicU64::new(0),
            routes: crate::route::RouteTable::new(route_limits),
            route_tally: Mutex::new(crate::route::tally::Tally::new(route_limits.slow_kept)),
            route_slow: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn register_lane(&self) -> Option<LaneProducer> {
        let (producer, consumer) = self.new_lane()?;
        lock(&self.lanes).push((consumer, MonotoneStream::default()));
        Some(producer)
    }

    /// The lane of a recorder whose telemetry does not export (it never pushes), or
    /// whose lane of the configured capacity could not be made (then its pushes find
    /// it full and are counted): a lane of two slots, registered with the flush when
    /// the telemetry exports, so that what it counts is seen.
    pub(crate) fn idle_lane(&self) -> lane::SharedLane {
        let made = lane::new_lane_waking(2, None).map(|(producer, consumer)| {
            if self.filter.on {
                lock(&self.lanes).push((consumer, MonotoneStream::default()));
            }
            producer
        });
        match made {
            Some(producer) => std::rc::Rc::new(std::cell::RefCell::new(producer)),
            // The core accepts every power of two from 2 up (its own tests).
            None => unreachable!("a lane of 2 slots is always accepted"),
        }
    }

    /// A lane of the configured capacity, or `None` (logged) if it cannot be made.
    /// With an exporter (and [`ResolvedConfig::early_flush`]) its producer wakes the
    /// flush thread at its high-water mark.
    fn new_lane(&self) -> Option<(LaneProducer, LaneConsumer)> {
        let wakes = self.config.early_flush && matches!(self.config.mode, Mode::Export { .. });
        let signal = wakes.then(|| Arc::clone(&self.signal));
        let made = lane::new_lane_waking(self.config.lane_capacity, signal);
        if made.is_none() {
            log::error!(
                "telemetry lane of {} events could not be made; events of this thread are counted as dropped",
                self.config.lane_capacity
            );
        }
        made
    }

    /// After a drain: the lane's drops not reported before, and, if its producer was
    /// gone before that drain (it is empty for good), its counters moved to the
    /// retired ones.
    fn settle(&self, lane: &mut LaneConsumer, gone: bool) -> u64 {
        let new_drops = lane.take_new_drops();
        if gone {
            self.retired_written
                .fetch_add(lane.written(), Ordering::Relaxed);
            self.retired_dropped
                .fetch_add(lane.dropped(), Ordering::Relaxed);
        }
        new_drops
    }

    /// What a lane push of `events` events reports: written, dropped (counted by the
    /// lane), or `None`: no lane (counted here).
    #[inline(always)]
    pub(crate) fn outcome(&self, pushed: Option<bool>, events: u64) -> Recorded {
        match pushed {
            Some(true) => Recorded::Written,
            Some(false) => Recorded::Dropped,
            None => {
                self.count_laneless(events);
                Recorded::Dropped
            }
        }
    }

    #[cold]
    pub(crate) fn count_laneless(&self, events: u64) {
        add_saturating(&self.laneless_dropped, events);
        add_saturating(&self.unreported, events);
    }

    /// One flush: drain, merge, report losses, export. Drained events stay in
    /// `state` (`batch`, counted in `in_flight`) until counted delivered or lost, so
    /// that a panic on the way ([`Shared::flush_guarded`]) can count them.
    fn flush_into(&self, state: &mut ExportState) {
        state.batch.clear();
        state.in_flight = guard::InFlight::default();
        state.in_flight.lost = self.unreported.swap(0, Ordering::AcqRel);
        let conversion = match self.stamper.kind() {
            StampKind::Counter => Conversion::Counter(lock(&self.timebase).reanchor()),
            StampKind::Realtime | StampKind::Coarse => Conversion::Identity,
            StampKind::Off => Conversion::Off,
        };
        {
            let names = self.names.read();
            let mut lanes = lock(&self.lanes);
            let mut routes = lock(&self.route_tally);
            let (batch, in_flight) = (&mut state.batch, &mut state.in_flight);
            lanes.retain_mut(|(lane, stream)| {
                let gone = lane.producer_gone();
                let first = batch.len();
                lane.drain_routed(names.names(), &mut routes, batch);
                // The lane's records are consumed: its events are the flush's now.
                in_flight.taken = batch.len();
                if conversion != Conversion::Off {
                    for event in &mut batch[first..] {
                        let us = conversion.micros(event.timestamp_us());
                        event.set_timestamp_us(stream.pass(us));
                    }
                }
                in_flight.lost = in_flight.lost.saturating_add(self.settle(lane, gone));
                !gone
            });
        }
        let route_report = self.take_route_interval(|stamp| conversion.micros(stamp));
        for backend in lock(&self.backends).iter() {
            let lost = backend.drain_into(&mut state.batch);
            state.in_flight.taken = state.batch.len();
            state.in_flight.lost = state.in_flight.lost.saturating_add(lost);
        }
        state.batch.sort_by_key(Event::timestamp_us);
        let mut batch = std::mem::take(&mut state.batch);
        let events = batch.len() as u64;
        let lost = std::mem::take(&mut state.in_flight.lost);
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
                self.export_failing.store(false, Ordering::Relaxed);
                if let Some(report) = &report {
                    state.reports.written(report);
                }
                let skipped = state.exporter.not_in_layout_from_last_export();
                let refused = state.exporter.dropped_from_last_export();
                if !skipped.is_empty() || refused > 0 {
                    self.charge_exporter_losses(&state.batch, skipped, refused);
                }
                let delivered = events.saturating_sub((skipped.len() + refused) as u64);
                self.exported.fetch_add(delivered, Ordering::Relaxed);
            }
            Err(e) => {
                if was_broken {
                    log::debug!("telemetry: {events} events counted as dropped: {e}");
                } else {
                    log::warn!(
                        "telemetry export of {events} events failed; they are counted as dropped: {e}"
                    );
                }
                self.export_failing.store(true, Ordering::Relaxed);
                self.export_errors.fetch_add(1, Ordering::Relaxed);
                add_saturating(&self.export_failed, events);
                // Only the batch's own events are new losses; `lost` was counted above.
                add_saturating(&self.unreported, events);
                self.count_by_name(&state.batch);
            }
        }
        // Counted delivered or lost: no longer the flush's to count.
        state.in_flight.taken = 0;
        if let Some(report) = &route_report {
            if let Err(e) = state.call("export_routes", |e| e.export_routes(report)) {
                log::debug!("telemetry: route export failed: {e}");
            }
        }
        if !state.broken {
            self.store_exporter_losses(&*state.exporter);
        }
        self.flushes.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes the exporter's own loss counts (after an export or at shutdown).
    fn store_exporter_losses(&self, exporter: &dyn Exporter) {
        self.exporter_dropped
            .store(exporter.events_dropped(), Ordering::Relaxed);
        self.lost_after_delivery
            .store(exporter.events_lost_after_delivery(), Ordering::Relaxed);
    }

    /// Charges the events of an exported `batch` that the exporter left out to their
    /// own names: those at the positions `skipped` as not in its layout, and the last
    /// `refused` of the others as lost by it.
    #[cold]
    fn charge_exporter_losses(&self, batch: &[Event], skipped: &[usize], refused: usize) {
        if !skipped.is_empty() {
            self.not_in_layout
                .fetch_add(skipped.len() as u64, Ordering::Relaxed);
            let mut by_name = lock(&self.not_in_layout_by_name);
            for event in skipped.iter().filter_map(|&i| batch.get(i)) {
                if let Ok(name) = event.event_name() {
                    *by_name.entry(name).or_default() += 1;
                }
            }
        }
        if refused > 0 {
            // The refused tail, walking back over the positions left out (ascending).
            let mut left_out = skipped.iter().rev().peekable();
            let mut tail = Vec::with_capacity(refused);
            for (i, event) in batch.iter().enumerate().rev() {
                if tail.len() == refused {
                    break;
                }
                if left_out.next_if_eq(&&i).is_none() {
                    tail.push(*event);
                }
            }
            self.count_by_name(&tail);
        }
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

    pub(crate) fn flush_now(&self, sync: bool) -> Result<(), ExportError> {
        let mut guard = lock(&self.export);
        match guard.as_mut() {
            Some(state) if !state.shut_down => {
                self.flush_guarded(state)?;
                if sync {
                    state.call("flush", |e| e.flush())?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn finish(&self) {
        let mut guard = lock(&self.export);
        if let Some(state) = guard.as_mut() {
            if state.shut_down {
                return;
            }
            // A panic is counted and logged inside; the exporter still shuts down.
            let _ = self.flush_guarded(state);
            if !state.broken {
                if let Err(e) = state.call("flush", |e| e.flush()) {
                    log::warn!("telemetry exporter flush at shutdown failed: {e}");
                }
                if let Err(e) = state.call("shutdown", |e| e.shutdown()) {
                    log::warn!("telemetry exporter shutdown failed: {e}");
                }
            }
            if !state.broken {
                self.store_exporter_losses(&*state.exporter);
            }
            state.shut_down = true;
        }
    }

    pub(crate) fn stats(&self) -> TelemetryStats {
        let (mut recorded, mut dropped, lanes) = {
            let lanes = lock(&self.lanes);
            let mut recorded = self.retired_written.load(Ordering::Relaxed)
                + self.retired_dropped.load(Ordering::Relaxed);
            let mut dropped = self.retired_dropped.load(Ordering::Relaxed);
            for (written, lost) in lanes.iter().map(|(lane, _)| lane.counts()) {
                recorded += written + lost;
                dropped += lost;
            }
            (recorded, dropped, lanes.len())
        };
        for backend in lock(&self.backends).iter() {
            let (added, lost) = backend.counts();
            recorded += added + lost;
            dropped += lost;
        }
        // Counts a feeding program reports can be as large as it likes (NIXL's loss
        // reports): every sum saturates rather than wraps.
        let laneless = self
            .laneless_dropped
            .load(Ordering::Relaxed)
            .saturating_add(self.upstream_dropped.load(Ordering::Relaxed));
        recorded = recorded.saturating_add(laneless);
        dropped = dropped.saturating_add(laneless);
        // Failed exports are the exporter's losses, not the recording's.
        let export_failed = self.export_failed.load(Ordering::Relaxed);
        let failing = self.export_failing.load(Ordering::Relaxed);
        let export_errors = self.export_errors.load(Ordering::Relaxed);
        let list = self.roster.as_ref().map(Roster::stats);
        if let Some(all) = list.as_deref().and_then(crate::fanout::aggregate) {
            // A list: its weakest member's story (see `crate::fanout`).
            let weakest = all.weakest;
            return TelemetryStats {
                events_recorded: recorded,
                events_dropped: dropped,
                events_exported: weakest.events_delivered,
                exporter_dropped: weakest
                    .exporter_dropped
                    .saturating_add(weakest.events_dropped)
                    .saturating_add(export_failed),
                events_not_in_layout: weakest.events_not_in_layout,
                events_undelivered: weakest.events_undelivered,
                flushes: self.flushes.load(Ordering::Relaxed),
                export_errors: export_errors + all.export_errors,
                exporter_failing: all.exporter_failing || failing,
                lanes,
            };
        }
        let (exported, undelivered, export_errors, failing) = match &self.delivery {
            Some(d) => {
                let delivered = d.delivered();
                let undelivered = d.accepted().saturating_sub(delivered);
                (
                    delivered,
                    undelivered,
                    export_errors + d.failures(),
                    d.failing() || failing,
                )
            }
            None => (
                self.exported
                    .load(Ordering::Relaxed)
                    .saturating_sub(self.lost_after_delivery.load(Ordering::Relaxed)),
                0,
                export_errors,
                failing,
            ),
        };
        TelemetryStats {
            events_recorded: recorded,
            events_dropped: dropped,
            events_exported: exported,
            exporter_dropped: self
                .exporter_dropped
                .load(Ordering::Relaxed)
                .saturating_add(export_failed),
            events_not_in_layout: self.not_in_layout.load(Ordering::Relaxed),
            events_undelivered: undelivered,
            flushes: self.flushes.load(Ordering::Relaxed),
            export_errors,
            exporter_failing: failing,
            lanes,
        }
    }
}

/// Adds `n` to a loss counter, stopping at `u64::MAX`: a count reported by another
/// program (NIXL's loss reports) may be absurd, and a wrapped counter would say that
/// almost nothing was lost.
pub(crate) fn add_saturating(counter: &AtomicU64, n: u64) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
        Some(c.saturating_add(n))
    });
}

pub(crate) fn flush_loop(shared: Arc<Shared>) {
    let interval = shared.config.run_interval;
    let mut deadline = Instant::now() + interval;
    loop {
        let woken = shared.signal.wait_until(deadline);
        if woken == Woken::Stop {
            break;
        }
        // Errors are logged and counted inside; only `sync` flushes return them.
        let _ = shared.flush_now(false);
        if woken == Woken::Early {
            // A lane past its mark: flushed now, the schedule kept.
            continue;
        }
        deadline += interval;
        let now = Instant::now();
        if deadline < now {
            // A slow export: start the next interval now rather than catch up.
            deadline = now + interval;
        }
    }
    shared.finish();
}
