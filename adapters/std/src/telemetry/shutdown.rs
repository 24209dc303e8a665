//! Shutting a [`Telemetry`] down: the last flush, the exporter's shutdown, and the
//! release of its lanes and backend buffers.

use super::Telemetry;
use crate::flush::{TelemetryStats, lock};

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
    /// let dir = tempfile::tempdir().unwrap();
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop,csv").dir(dir.path()).build().unwrap();
    /// t.update_tx_bytes(64);
    /// let (stats, each) = t.close_with_exporter_stats();
    /// assert_eq!(stats.events_recorded, 1);
    /// assert!(each.iter().all(|e| e.events_delivered == 1) && each.len() == 2);
    /// ```
    pub fn close_with_exporter_stats(mut self) -> (TelemetryStats, Vec<crate::ExporterStats>) {
        self.stop_flushing();
        (self.stats(), self.exporter_stats())
    }

    /// Stops the flush thread after its last flush and the exporter's shutdown.
    fn stop_flushing(&mut self) {
        // Before the last flush: a recorder's event after this point is refused and
        // counted, every one before it is drained by that flush.
        self.shared
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.shared.signal.stop();
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
