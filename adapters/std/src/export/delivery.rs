//! [`Delivery`]: what an exporter that delivers on its own schedule has delivered.
//!
//! Most exporters deliver inside [`Exporter::export`](super::Exporter::export): the
//! ring file and the CSV file hold an event once `export` returns `Ok`. Aggregating
//! exporters do not: `otlp` folds events into cumulative metrics that a push thread
//! sends later, and `prometheus` serves them to whoever scrapes its endpoint. Such an
//! exporter hands the flush one shared [`Delivery`]
//! ([`Exporter::delivery`](super::Exporter::delivery)) and keeps it up to date; the
//! statistics then take `events_exported`, `events_undelivered`, part of
//! `export_errors` and `exporter_failing` from it.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use telering_core::{Event, builtin};

/// Delivery counters an exporter shares with the statistics. Lock-free: the exporter
/// updates them from any thread, [`Telemetry::stats`](crate::Telemetry::stats) reads
/// them.
///
/// ```
/// use telering_core::{event_name, Category, Event};
/// use telering_std::export::Delivery;
/// let delivery = Delivery::default();
/// let tx = Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), 64);
/// delivery.accept(&[tx; 3]);
/// let pushed = delivery.accepted(); // read while the state is encoded
/// delivery.fail();                  // the collector answered 500
/// assert_eq!((delivery.delivered(), delivery.failures(), delivery.failing()), (0, 1, true));
/// delivery.delivered_up_to(pushed); // a later push of that state got a 2xx
/// assert_eq!((delivery.delivered(), delivery.failing()), (3, false));
/// ```
#[derive(Debug, Default)]
pub struct Delivery {
    accepted: AtomicU64,
    delivered: AtomicU64,
    failures: AtomicU64,
    failing: AtomicBool,
}

impl Delivery {
    /// Counts the events of `batch` (its `agent_telemetry_events_dropped` report left
    /// out) as accepted: folded into what the exporter will deliver.
    pub fn accept(&self, batch: &[Event]) {
        let report = builtin::AGENT_TELEMETRY_EVENTS_DROPPED.name.field();
        let events = batch.iter().filter(|e| e.name_field() != report).count();
        self.accepted.fetch_add(events as u64, Ordering::AcqRel);
    }

    /// Events accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Acquire)
    }

    /// Records a successful delivery of everything accepted up to the count `accepted`
    /// (as read by [`accepted`](Self::accepted) when the delivered state was taken);
    /// the exporter is no longer failing.
    pub fn delivered_up_to(&self, accepted: u64) {
        self.delivered.fetch_max(accepted, Ordering::AcqRel);
        self.failing.store(false, Ordering::Release);
    }

    /// Events delivered.
    pub fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Acquire)
    }

    /// Records one failed attempt (a refused push, an unreachable collector, a
    /// timeout, an endpoint that could not start); the exporter is failing until the
    /// next delivery.
    pub fn fail(&self) {
        self.failures.fetch_add(1, Ordering::AcqRel);
        self.failing.store(true, Ordering::Release);
    }

    /// Failed attempts so far.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Acquire)
    }

    /// Whether the last attempt failed (or the endpoint never started).
    pub fn failing(&self) -> bool {
        self.failing.load(Ordering::Acquire)
    }
}
