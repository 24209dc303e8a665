//! The [`Telemetry`] handle: recording, statistics, shutdown. Building it is in
//! `build`, the flush it runs in `flush`, the built-in tables and the allowlist filter
//! in `builtins`.

use crate::Recorded;
use crate::backend::{BackendShared, BackendTelemetry};
use crate::builtins::{Filter, NIXL_TYPE_INDEX, idx};
use crate::clock::ClockSource;
use crate::clock::stamp::StampKind;
use crate::config::{Mode, ResolvedConfig};
use crate::export::ExportError;
use crate::flush::{Shared, TelemetryStats, lock};
use crate::lane;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use telering_core::builtin::ErrorStatus;
use telering_core::{Category, EventName, NameError};

/// Events one transfer records: bytes, requests, transfer time, post time.
const XFER_PARTS: usize = 4;

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
    pub(crate) flusher: Option<JoinHandle<()>>,
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
    /// The configuration in effect.
    ///
    /// ```
    /// let telemetry = telering_std::Telemetry::builder("a").buffer_size(256).build().unwrap();
    /// assert_eq!(telemetry.config().buffer_size, 256);
    /// ```
    pub fn config(&self) -> &ResolvedConfig {
        &self.shared.config
    }

    /// The agent's name.
    ///
    /// ```
    /// assert_eq!(telering_std::Telemetry::disabled("agent-9").agent_name(), "agent-9");
    /// ```
    pub fn agent_name(&self) -> &str {
        &self.shared.config.agent_name
    }

    /// What the telemetry does: disabled, capture in process, or export.
    ///
    /// ```
    /// use telering_std::{Mode, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.mode(), &Mode::Export { exporter: "nop".into() });
    /// ```
    pub fn mode(&self) -> &Mode {
        &self.shared.config.mode
    }

    /// Whether per-transfer and backend telemetry are captured (any mode but
    /// [`Mode::Disabled`]).
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// assert!(Telemetry::builder("a").capture_telemetry(true).build().unwrap().captures());
    /// assert!(!Telemetry::disabled("b").captures());
    /// ```
    pub fn captures(&self) -> bool {
        self.shared.captures
    }

    /// Whether events are recorded for export.
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// assert!(Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap().exports());
    /// assert!(!Telemetry::builder("b").capture_telemetry(true).build().unwrap().exports());
    /// ```
    pub fn exports(&self) -> bool {
        self.shared.filter.on
    }

    /// Counters for a progress line. Takes the lane list's lock briefly (never taken
    /// by recording).
    ///
    /// ```
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// t.update_rx_bytes(10);
    /// t.flush().unwrap();
    /// let stats = t.stats();
    /// assert_eq!((stats.events_recorded, stats.events_exported, stats.events_dropped), (1, 1, 0));
    /// ```
    pub fn stats(&self) -> TelemetryStats {
        self.shared.stats()
    }

    /// Where the exporter puts the events ([`Exporter::endpoint`](crate::Exporter::endpoint)): the `prometheus`
    /// exporter's `http://127.0.0.1:9090/metrics`, the `buffer` exporter's ring file
    /// path, the `csv` exporter's file; `None` when it has none, could not start its
    /// endpoint, or has shut down.
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

    /// Each exporter's deliveries and losses: one entry per name of
    /// `NIXL_TELEMETRY_EXPORTER` (a list runs each on its own, see
    /// [`crate::fanout`]); none without an exporter. A single exporter's entry is the
    /// telemetry's own counters.
    ///
    /// ```
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop,nop").build().unwrap();
    /// t.update_rx_bytes(10);
    /// drop(t.flush());
    /// let stats = t.exporter_stats();
    /// assert_eq!(stats.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["nop", "nop"]);
    /// ```
    pub fn exporter_stats(&self) -> Vec<crate::ExporterStats> {
        if let Some(roster) = &self.shared.roster {
            return roster.stats();
        }
        let stats = self.stats();
        let state = lock(&self.shared.export);
        let Some(state) = state.as_ref() else {
            return Vec::new();
        };
        let fanned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            state.exporter.exporter_stats()
        }));
        match fanned {
            Ok(Some(each)) => each,
            _ => {
                let mut one = crate::ExporterStats::named(state.exporter.name());
                one.events_delivered = stats.events_exported;
                one.events_dropped = self
                    .shared
                    .export_failed
                    .load(std::sync::atomic::Ordering::Relaxed);
                one.export_errors = stats.export_errors;
                one.exporter_dropped = stats.exporter_dropped;
                one.events_lost_after_delivery = self
                    .shared
                    .lost_after_delivery
                    .load(std::sync::atomic::Ordering::Relaxed);
                one.events_not_in_layout = stats.events_not_in_layout;
                one.events_undelivered = stats.events_undelivered;
                one.exporter_failing = stats.exporter_failing;
                one.endpoint = state.exporter.endpoint();
                vec![one]
            }
        }
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

    /// Events the exporter's output cannot hold and left out, per event name:
    /// custom and backend events in a ring file of `TELERING_RING_LAYOUT=v4`
    /// ([`TelemetryStats::events_not_in_layout`](crate::TelemetryStats::events_not_in_layout)).
    /// They are neither delivered nor counted in [`dropped_by_name`](Self::dropped_by_name).
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let t = telering_std::Telemetry::builder("a").enabled(true).dir(dir.path())
    ///     .ring_layout(telering_shm::RingLayout::V4).build().unwrap();
    /// t.update_tx_bytes(64);
    /// t.custom_event(telering_core::Category::Custom, "queue_depth").unwrap().record(3);
    /// t.flush().unwrap();
    /// assert_eq!(t.not_in_layout_by_name().get("queue_depth"), Some(&1));
    /// assert_eq!((t.stats().events_exported, t.stats().events_not_in_layout), (1, 1));
    /// assert!(t.dropped_by_name().is_empty());
    /// ```
    pub fn not_in_layout_by_name(&self) -> BTreeMap<String, u64> {
        lock(&self.shared.not_in_layout_by_name)
            .iter()
            .map(|(name, n)| (name.as_str().to_string(), *n))
            .collect()
    }

    /// Flushes now, on this thread, and makes the exporter flush its output (an
    /// `msync`, an `fsync`); the flush thread keeps its schedule.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("csv").dir(dir.path()).build().unwrap();
    /// t.update_tx_bytes(5);
    /// t.flush().unwrap(); // on this thread, now
    /// let csv = std::fs::read_to_string(dir.path().join("a.csv")).unwrap();
    /// assert!(csv.ends_with(",TRANSFER,agent_tx_bytes,5\r\n"));
    /// ```
    pub fn flush(&self) -> Result<(), ExportError> {
        self.shared.flush_now(true)
    }

    /// Pushes event `id` (see [`crate::names`]) stamped `now` with `value` into this
    /// thread's lane. Always inlined, as `record_builtin` is: outlined, the pair cost a
    /// call and five register saves per event (−14 instructions per event under
    /// callgrind).
    #[inline(always)]
    pub(crate) fn push_record(&self, id: u16, now: u64, value: u64) -> Recorded {
        let shared = &*self.shared;
        let pushed = lane::with_lane(
            shared.id,
            || shared.register_lane(),
            #[inline(always)]
            |l| l.push(id, now, value),
        );
        shared.outcome(pushed, 1)
    }

    #[inline(always)]
    fn record_builtin(&self, index: usize, value: u64) -> Recorded {
        if !self.shared.filter.builtin[index] {
            return self.shared.filter.refusal();
        }
        // A built-in's id is its index (see `names`).
        let now = self.shared.stamper.stamp();
        self.push_record(index as u16, now, value)
    }

    /// Records NIXL's event type number `type_number` ([`nixl_type_name`]: 0
    /// `agent_tx_bytes` … 20 `agent_telemetry_events_dropped`) with `value`, stamped
    /// now, as NIXL's telemetry hands its events to an exporter; `None` (nothing
    /// recorded) for a number no NIXL release defines. An
    /// `agent_telemetry_events_dropped` recorded so reaches the exporter as a loss
    /// report, like the telemetry's own.
    ///
    /// [`nixl_type_name`]: telering_core::builtin::nixl_type_name
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.record_nixl_type(0, 4096), Some(Recorded::Written)); // agent_tx_bytes
    /// assert_eq!(t.record_nixl_type(10, 1), Some(Recorded::Written)); // agent_err_backend
    /// assert_eq!(t.record_nixl_type(21, 1), None);
    /// assert_eq!(t.stats().events_recorded, 2);
    /// ```
    #[inline]
    pub fn record_nixl_type(&self, type_number: u32, value: u64) -> Option<Recorded> {
        let index = *NIXL_TYPE_INDEX.get(type_number as usize)?;
        Some(self.record_builtin(index, value))
    }

    /// Records `agent_tx_bytes`: bytes sent.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_tx_bytes").build().unwrap();
    /// assert_eq!(t.update_tx_bytes(4096), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_tx_bytes(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::TX_BYTES, bytes)
    }

    /// Records `agent_rx_bytes`: bytes received.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_rx_bytes").build().unwrap();
    /// assert_eq!(t.update_rx_bytes(4096), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_rx_bytes(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::RX_BYTES, bytes)
    }

    /// Records `agent_tx_requests_num`: send requests.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_tx_requests_num").build().unwrap();
    /// assert_eq!(t.update_tx_requests_num(2), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_tx_requests_num(&self, requests: u64) -> Recorded {
        self.record_builtin(idx::TX_REQUESTS_NUM, requests)
    }

    /// Records `agent_rx_requests_num`: receive requests.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_rx_requests_num").build().unwrap();
    /// assert_eq!(t.update_rx_requests_num(2), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_rx_requests_num(&self, requests: u64) -> Recorded {
        self.record_builtin(idx::RX_REQUESTS_NUM, requests)
    }

    /// Records `agent_memory_registered`: bytes registered.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_memory_registered").build().unwrap();
    /// assert_eq!(t.update_memory_registered(1048576), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_memory_registered(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::MEMORY_REGISTERED, bytes)
    }

    /// Records `agent_memory_deregistered`: bytes deregistered.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_memory_deregistered").build().unwrap();
    /// assert_eq!(t.update_memory_deregistered(1048576), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_memory_deregistered(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::MEMORY_DEREGISTERED, bytes)
    }

    /// Records one occurrence of `status`: an `ERROR` event named by the status
    /// (`NIXL_ERR_BACKEND`, …) with value 1.
    ///
    /// ```
    /// use telering_core::builtin::ErrorStatus;
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("NIXL_ERR_BACKEND").build().unwrap();
    /// assert_eq!(t.update_error_count(ErrorStatus::Backend), Recorded::Written);
    /// assert_eq!(t.update_error_count(ErrorStatus::Canceled), Recorded::Filtered);
    /// ```
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
    /// use telering_std::Recorded;
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

    /// [`add_xfer_stats`](Self::add_xfer_stats) with both times already in
    /// microseconds, as NIXL's `addXferStats` takes them (`std::chrono::microseconds`)
    /// and as the C and Python APIs receive them: no conversion from `Duration`.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(telemetry.add_xfer_stats_us(120, true, 4096, 4), Recorded::Written);
    /// assert_eq!(telemetry.stats().events_recorded, 4);
    /// ```
    #[inline]
    pub fn add_xfer_stats_us(
        &self,
        xfer_time_us: u64,
        is_write: bool,
        bytes: u64,
        post_time_us: u64,
    ) -> Recorded {
        self.record_xfer(None, is_write, bytes, xfer_time_us, post_time_us)
    }

    /// The four events of one transfer with their values in microseconds, stamped at
    /// duration tick `completed` (`None`: read the stamp now).
    #[inline(always)]
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
        // The common case, every part allowed: each record is made straight into its
        // lane slot, the part chosen by `xfer_part`'s `match` on constants.
        let now = self.xfer_stamp(completed);
        let shared = &*self.shared;
        let part = move |i: usize| {
            let (index, value) = xfer_part(i, is_write, bytes, xfer_us, post_us);
            (index as u16, value)
        };
        let pushed = lane::with_lane(
            shared.id,
            || shared.register_lane(),
            #[inline(always)]
            |l| l.push_all_with(XFER_PARTS, now, part),
        );
        shared.outcome(pushed, XFER_PARTS as u64)
    }

    /// The stamp of a transfer's events: the tick `completed` was read at (the
    /// counter), else the stamp now (0 when no sink needs timestamps).
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
            return filter.refusal();
        }
        let shared = &*self.shared;
        let now = self.xfer_stamp(completed);
        let mut allowed = [(0u16, 0u64); 4];
        let n = allowed_parts(parts, filter, &mut allowed, |i, value| (i as u16, value));
        let pushed = lane::with_lane(
            shared.id,
            || shared.register_lane(),
            |l| l.push_all_with(n, now, |i| allowed[i]),
        );
        shared.outcome(pushed, n as u64)
    }

    /// Records a custom event. The name (1 to 31 bytes, no NUL) is checked; the
    /// allowlist applies to it as to built-in names.
    ///
    /// ```
    /// use telering_core::Category;
    /// use telering_std::Recorded;
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
    /// `const` made with [`event_name!`](telering_core::event_name)).
    ///
    /// ```
    /// use telering_core::{event_name, Category, EventName};
    /// use telering_std::{Recorded, Telemetry};
    /// const QUEUE_DEPTH: EventName = event_name!("queue_depth");
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.record_event(Category::Custom, &QUEUE_DEPTH, 3), Recorded::Written);
    /// ```
    #[inline]
    pub fn record_event(&self, category: Category, name: &EventName, value: u64) -> Recorded {
        if !self.shared.filter.allows(name) {
            return self.shared.filter.refusal();
        }
        let now = self.shared.stamper.stamp();
        let shared = &*self.shared;
        let pushed = lane::with_lane(
            shared.id,
            || shared.register_lane(),
            |l| {
                // The thread's cache first; a name new to this thread takes the
                // table's lock once (see `names`). No id left: counted, no lane push.
                let id = match l.names.get(&(*name, category)) {
                    Some(&id) => id,
                    None => {
                        let id = shared.names.intern(name, category)?;
                        l.names.insert((*name, category), id);
                        id
                    }
                };
                Some(l.push(id, now, value))
            },
        );
        shared.outcome(pushed.flatten(), 1)
    }

    /// A handle for a transfer backend named `backend` to report its own events,
    /// exported in category `BACKEND` at each flush.
    /// Asking again for the same name returns a handle to the same buffer.
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// let t = Telemetry::builder("a").capture_telemetry(true).build().unwrap();
    /// t.backend("UCX").add_telemetry_event("ucx_eps", 2).unwrap();
    /// // The same name is the same buffer.
    /// assert_eq!(t.backend("UCX").pending_events().len(), 1);
    /// assert!(t.backend("GDS").pending_events().is_empty());
    /// ```
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
    ///
    /// ```
    /// use telering_std::{ClockSource, Telemetry};
    /// let t = Telemetry::builder("a").clock(ClockSource::RealtimeCoarse).build().unwrap();
    /// assert_eq!(t.clock(), ClockSource::RealtimeCoarse);
    /// ```
    pub fn clock(&self) -> ClockSource {
        self.shared.config.clock
    }
}

/// Writes the parts the allowlist lets through, in order, into `out` as `make` makes
/// them; returns how many.
fn allowed_parts<T>(
    parts: [(usize, u64); 4],
    filter: &Filter,
    out: &mut [T; 4],
    make: impl Fn(usize, u64) -> T,
) -> usize {
    let mut n = 0;
    for (i, value) in parts {
        if filter.builtin[i] {
            out[n] = make(i, value);
            n += 1;
        }
    }
    n
}

/// Part `i` (0 to 3) of a transfer's events, as (built-in index, value). A `match` on
/// constants, not a table lookup: once the four writes are unrolled, each event's
/// template and value are known where it is written (no bounds checks, no staging).
#[inline(always)]
fn xfer_part(i: usize, is_write: bool, bytes: u64, xfer_us: u64, post_us: u64) -> (usize, u64) {
    match (i, is_write) {
        (0, true) => (idx::TX_BYTES, bytes),
        (0, false) => (idx::RX_BYTES, bytes),
        (1, true) => (idx::TX_REQUESTS_NUM, 1),
        (1, false) => (idx::RX_REQUESTS_NUM, 1),
        (2, _) => (idx::XFER_TIME, xfer_us),
        _ => (idx::XFER_POST_TIME, post_us),
    }
}

impl Telemetry {
    /// Shuts down as dropping does (a last flush, the exporter's flush and shutdown:
    /// an OTLP exporter's last push) and returns the statistics after it: what the
    /// last push delivered and, in `events_undelivered`, what it could not.
    ///
    /// ```
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// t.update_tx_bytes(64);
    /// let stats = t.close();
    /// assert_eq!((stats.events_recorded, stats.events_exported), (1, 1));
    /// ```
    pub fn close(mut self) -> TelemetryStats {
        self.stop_flushing();
        self.stats()
    }

    /// As [`close`](Self::close), with each exporter's statistics after the
    /// shutdown ([`exporter_stats`](Self::exporter_stats)): what each one's last push
    /// delivered.
    ///
    /// ```
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop,nop").build().unwrap();
    /// t.update_tx_bytes(64);
    /// let (stats, each) = t.close_with_exporter_stats();
    /// assert_eq!(stats.events_recorded, 1);
    /// assert!(each.iter().all(|e| e.name == "nop" && e.events_delivered == 1));
    /// ```
    pub fn close_with_exporter_stats(mut self) -> (TelemetryStats, Vec<crate::ExporterStats>) {
        self.stop_flushing();
        (self.stats(), self.exporter_stats())
    }

    /// Stops the flush thread after its last flush and the exporter's shutdown.
    fn stop_flushing(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(handle) = self.flusher.take() {
            if handle.join().is_err() {
                log::error!("telemetry flush thread panicked; flushing from the dropping thread");
                self.shared.finish();
            }
        }
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.stop_flushing();
        // Lanes are released: each thread frees its end when it next registers a lane
        // or exits.
        lock(&self.shared.lanes).clear();
        // Backend handles may outlive the telemetry; they learn nothing drains them.
        for backend in lock(&self.shared.backends).iter() {
            backend.close();
        }
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
    fn durations_convert_to_whole_microseconds() {
        assert_eq!(micros(Duration::from_nanos(1_999)), 1);
        assert_eq!(micros(Duration::from_secs(2)), 2_000_000);
        assert_eq!(micros(Duration::MAX), u64::MAX);
    }
}
