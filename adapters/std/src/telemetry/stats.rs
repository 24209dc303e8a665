//! What a [`Telemetry`] tells about itself — statistics, losses by name, the
//! exporter's endpoint — and flushing on demand.

use super::Telemetry;
use crate::export::ExportError;
use crate::flush::{TelemetryStats, lock};
use std::collections::BTreeMap;

impl Telemetry {
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
    /// let dir = tempfile::tempdir().unwrap();
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop,csv").dir(dir.path()).build().unwrap();
    /// t.update_rx_bytes(10);
    /// drop(t.flush());
    /// let stats = t.exporter_stats();
    /// assert_eq!(stats.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["nop", "csv"]);
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
                // The telemetry's `exporter_dropped` is both of these.
                one.events_dropped = self
                    .shared
                    .export_failed
                    .load(std::sync::atomic::Ordering::Relaxed);
                one.export_errors = stats.export_errors;
                one.exporter_dropped = stats.exporter_dropped - one.events_dropped;
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

    /// Counts `events` the program feeding this telemetry lost before handing them
    /// over, as it reports them (NIXL's `AGENT_TELEMETRY_EVENTS_DROPPED`: events its
    /// staging buffer refused). Recording such a report as one event would let a full
    /// lane or ring refuse it and lose the count with it; counted here, the losses are
    /// in [`TelemetryStats::events_recorded`](crate::TelemetryStats::events_recorded)
    /// and [`events_dropped`](crate::TelemetryStats::events_dropped), reach the
    /// exporter at the next flush as losses upstream of it
    /// ([`Exporter::add_dropped`](crate::Exporter::add_dropped): a ring file's
    /// `dropped_staging`, Prometheus's `agent_telemetry_events_dropped_total`) and go
    /// into the next in-band loss report, which is made again until it fits.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let t = telering_std::Telemetry::builder("a").enabled(true).dir(dir.path()).build().unwrap();
    /// t.add_dropped_upstream(1000);
    /// t.flush().unwrap();
    /// assert_eq!(t.dropped_upstream(), 1000);
    /// assert_eq!((t.stats().events_recorded, t.stats().events_dropped), (1000, 1000));
    /// let trailer = telering_shm::stat(&dir.path().join("a")).unwrap().trailer.unwrap();
    /// assert_eq!(trailer.dropped_staging, 1000);
    /// ```
    #[cold]
    pub fn add_dropped_upstream(&self, events: u64) {
        // Saturating: a feeding program's count may be absurd (u64::MAX).
        crate::flush::add_saturating(&self.shared.upstream_dropped, events);
        crate::flush::add_saturating(&self.shared.unreported, events);
    }

    /// The events counted by [`add_dropped_upstream`](Self::add_dropped_upstream) so
    /// far.
    ///
    /// ```
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// t.add_dropped_upstream(3);
    /// assert_eq!(t.dropped_upstream(), 3);
    /// ```
    pub fn dropped_upstream(&self) -> u64 {
        self.shared
            .upstream_dropped
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Events lost after they were recorded — in exports that failed, or by the
    /// exporter itself (a full ring) — per event name, for a per-name loss summary.
    /// Losses at record time are the [`Recorded::Dropped`](crate::Recorded::Dropped) outcomes the caller saw.
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

    /// Asks the flush thread to flush now, without waiting for it (as a lane at its
    /// high-water mark does); its schedule stays. For a caller that hands events over
    /// in batches and wants each batch delivered soon after its end, without running
    /// the exporters on its own thread as [`flush`](Self::flush) does. Nothing happens
    /// without a flush thread (no exporter) or after the telemetry was closed.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let dir = tempfile::tempdir().unwrap();
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("csv")
    ///     .dir(dir.path()).run_interval(Duration::from_secs(3600)).build().unwrap();
    /// t.update_tx_bytes(5);
    /// t.flush_soon();
    /// let deadline = Instant::now() + Duration::from_secs(30);
    /// while t.stats().events_exported < 1 {
    ///     assert!(Instant::now() < deadline, "not flushed within 30 s");
    ///     std::thread::sleep(Duration::from_millis(1));
    /// }
    /// ```
    pub fn flush_soon(&self) {
        if self.flusher.is_some() {
            self.shared.signal.wake_early();
        }
    }
}
