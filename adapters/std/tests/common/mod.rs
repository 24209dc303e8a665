//! A collecting exporter for the integration tests: a real exporter registered
//! through the public registry, which keeps what it receives per agent name.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use telering_core::Event;
use telering_std::Telemetry;
use telering_std::export::{
    ExportError, Exporter, ExporterContext, ExporterFactory, ExporterRegistry,
};

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

type Sink = Arc<Mutex<Collected>>;

fn sinks() -> &'static Mutex<BTreeMap<String, Sink>> {
    static SINKS: OnceLock<Mutex<BTreeMap<String, Sink>>> = OnceLock::new();
    SINKS.get_or_init(Default::default)
}

/// The sink of `agent` (made on first use).
pub fn sink(agent: &str) -> Sink {
    sinks()
        .lock()
        .unwrap()
        .entry(agent.to_string())
        .or_default()
        .clone()
}

pub const DROP_REPORT: &str = "agent_telemetry_events_dropped";

#[derive(Debug)]
struct Collecting {
    sink: Sink,
}

impl Exporter for Collecting {
    fn name(&self) -> &str {
        "collect"
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

fn collect(ctx: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
    Ok(Box::new(Collecting {
        sink: sink(&ctx.agent_name),
    }))
}

/// The built-in exporters plus `collect`.
pub fn registry() -> ExporterRegistry {
    let mut r = ExporterRegistry::with_builtins();
    r.register("collect", collect);
    r
}

/// A telemetry of `agent` whose only exporter is the one `factory` makes, registered
/// as `name`, flushed only when asked (the run interval is an hour).
pub fn telemetry_exporting_to(agent: &str, name: &str, factory: ExporterFactory) -> Telemetry {
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
