//! A collecting exporter for the integration tests: a real exporter registered
//! through the public registry, which keeps what it receives per agent name.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use telering_core::Event;
use telering_std::Telemetry;
use telering_std::export::{ExportError, Exporter, ExporterContext, ExporterRegistry};

/// What one agent's exporter received.
#[derive(Debug, Default)]
pub struct Collected {
    /// Every event except drop reports, in arrival order.
    pub events: Vec<Event>,
    /// Values of the `agent_telemetry_events_dropped` events, one per flush that had one.
    pub drop_reports: Vec<u64>,
    /// The category of each drop report, as it arrived.
    pub drop_report_categories:
        Vec<Result<telering_core::Category, telering_core::UnknownCategory>>,
    /// Sum of `add_dropped` calls.
    pub add_dropped: u64,
    /// Events per batch (drop report included).
    pub batch_sizes: Vec<usize>,
    /// Batches whose timestamps were not in order.
    pub unordered_batches: usize,
    pub flushes: u32,
    pub shutdowns: u32,
    /// Keep only counts, not the events themselves (for the big stress runs).
    pub count_only: bool,
    pub events_seen: u64,
    /// Per recording thread (value >> 32): the sequence numbers seen (value & u32::MAX).
    pub seen: BTreeMap<u64, Vec<u32>>,
}

/// What one collecting exporter received, shared with the test that made it.
pub type Sink = Arc<Mutex<Collected>>;

pub const DROP_REPORT: &str = "agent_telemetry_events_dropped";

#[derive(Debug)]
struct Collecting {
    sink: Sink,
    /// `false` for `collect-untimed`, which declares that it needs no timestamps.
    timestamps: bool,
}

impl Exporter for Collecting {
    fn name(&self) -> &str {
        if self.timestamps {
            "collect"
        } else {
            "collect-untimed"
        }
    }

    fn needs_timestamps(&self) -> bool {
        self.timestamps
    }

    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        let mut c = self.sink.lock().unwrap();
        c.batch_sizes.push(batch.len());
        if batch
            .windows(2)
            .any(|w| w[0].timestamp_us() > w[1].timestamp_us())
        {
            c.unordered_batches += 1;
        }
        for e in batch {
            if e.name() == Ok(DROP_REPORT) {
                c.drop_reports.push(e.value());
                c.drop_report_categories.push(e.category());
                continue;
            }
            c.events_seen += 1;
            if c.count_only {
                c.seen
                    .entry(e.value() >> 32)
                    .or_default()
                    .push(e.value() as u32);
            } else {
                c.events.push(*e);
            }
        }
        Ok(())
    }

    fn add_dropped(&mut self, events: u64) {
        self.sink.lock().unwrap().add_dropped += events;
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        self.sink.lock().unwrap().flushes += 1;
        Ok(())
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        self.sink.lock().unwrap().shutdowns += 1;
        Ok(())
    }
}

/// The built-in exporters plus `collect` and `collect-untimed` (the same, declaring
/// that it needs no timestamps), whose factories hand every exporter they make the
/// returned sink (captured, so no global state is shared between tests).
pub fn registry() -> (ExporterRegistry, Sink) {
    let sink = Sink::default();
    let mut r = ExporterRegistry::with_builtins();
    for (name, timestamps) in [("collect", true), ("collect-untimed", false)] {
        let for_factory = Arc::clone(&sink);
        r.register(name, move |_: &ExporterContext| {
            let exporter: Box<dyn Exporter> = Box::new(Collecting {
                sink: Arc::clone(&for_factory),
                timestamps,
            });
            Ok(exporter)
        });
    }
    (r, sink)
}

/// A telemetry of `agent` whose only exporter is the one `factory` makes, registered
/// as `name`, flushed only when asked (the run interval is an hour).
pub fn telemetry_exporting_to<F>(agent: &str, name: &str, factory: F) -> Telemetry
where
    F: Fn(&ExporterContext) -> Result<Box<dyn Exporter>, ExportError> + Send + Sync + 'static,
{
    let mut registry = ExporterRegistry::empty();
    registry.register(name, factory);
    Telemetry::builder(agent)
        .registry(registry)
        .enabled(true)
        .exporter(name)
        .run_interval(std::time::Duration::from_secs(3600))
        .build()
        .unwrap()
}
