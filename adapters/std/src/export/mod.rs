//! Exporters: where flushed events go, and the registry that finds one by name.
//!
//! Exactly one exporter serves a [`Telemetry`](crate::Telemetry). The flush thread calls
//! it once per `NIXL_TELEMETRY_RUN_INTERVAL`:
//!
//! 1. [`Exporter::add_dropped`] with the events lost upstream since the previous
//!    flush (a full per-thread lane, a full backend staging buffer, a failed export),
//!    when there are any — each loss exactly once;
//! 2. [`Exporter::export`] with one batch in timestamp order — every event drained in
//!    this flush — which, while losses are unreported, ends with one
//!    `agent_telemetry_events_dropped` event (category `ERROR`) whose value is every
//!    loss not yet in a report this exporter took (a report inside a batch whose
//!    export failed is made again, with the batch's events added);
//!
//! and, when the [`Telemetry`](crate::Telemetry) is dropped, a last `export`, then
//! [`Exporter::flush`] and [`Exporter::shutdown`]. An exporter that reports losses
//! in-band itself (the `buffer` exporter: its ring writer reports them as soon as the
//! ring has room) says so with [`Exporter::reports_drops_in_band`], and its batches
//! carry no report event.
//!
//! Exporters are made by an [`ExporterFactory`] looked up by name, ignoring ASCII
//! case, in an [`ExporterRegistry`]. Built in: `buffer` (the shared-memory ring file,
//! [`BufferExporter`]), `csv` ([`CsvExporter`]) and `nop` ([`NopExporter`]). Other
//! crates add theirs (`telering-prometheus` registers `prometheus`):
//!
//! ```
//! use telering_std::export::{ExportError, Exporter, ExporterContext, ExporterRegistry};
//! use telering_core::Event;
//!
//! #[derive(Debug, Default)]
//! struct Counting { events: u64 }
//!
//! impl Exporter for Counting {
//!     fn name(&self) -> &str { "counting" }
//!     fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
//!         self.events += batch.len() as u64;
//!         Ok(())
//!     }
//!     fn flush(&mut self) -> Result<(), ExportError> { Ok(()) }
//!     fn shutdown(&mut self) -> Result<(), ExportError> { Ok(()) }
//! }
//!
//! fn counting(_ctx: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
//!     Ok(Box::new(Counting::default()))
//! }
//!
//! let mut registry = ExporterRegistry::with_builtins();
//! registry.register("Counting", counting);
//! assert_eq!(registry.names(), ["buffer", "counting", "csv", "nop"]);
//! let exporter = registry.create("COUNTING", &ExporterContext::new("agent-1")).unwrap();
//! assert_eq!(exporter.name(), "counting");
//! ```

mod buffer;
mod csv;
mod delivery;
mod error;
mod nop;
mod registry;

pub use self::buffer::BufferExporter;
pub use self::csv::{CSV_HEADER, CsvExporter};
pub use self::delivery::Delivery;
pub use self::error::ExportError;
pub use self::nop::NopExporter;
pub use self::registry::{ExporterCheck, ExporterFactory, ExporterRegistry};

use crate::clock::ClockSource;
use crate::config::EnvSource;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;
use telering_core::Event;

/// A sink for flushed events. See the module docs for the order of calls.
pub trait Exporter: Send {
    /// The name the exporter is registered under, such as `csv`.
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// assert_eq!(NopExporter::default().name(), "nop");
    /// ```
    fn name(&self) -> &str;

    /// Exports one batch: every event of one flush, in timestamp order.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// use telering_std::export::{Exporter, NopExporter};
    /// let mut nop = NopExporter::default();
    /// nop.export(&[Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), 64)]).unwrap();
    /// assert_eq!(nop.events(), 1);
    /// ```
    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError>;

    /// Adds `events` lost upstream since the previous flush to this exporter's loss
    /// count. Each loss arrives here exactly once. Unless
    /// [`reports_drops_in_band`](Self::reports_drops_in_band) says otherwise, the
    /// losses also arrive in-band, as the batch's last event,
    /// `agent_telemetry_events_dropped`.
    ///
    /// The default forwards to the older name, [`count_dropped`](Self::count_dropped),
    /// so exporters written against it keep working.
    ///
    /// ```
    /// use telering_std::export::{BufferExporter, Exporter, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// let mut ring = BufferExporter::open(&ctx).unwrap();
    /// ring.add_dropped(3); // lost upstream: reported in the ring file, not ring losses
    /// assert_eq!(ring.events_dropped(), 0);
    /// ring.shutdown().unwrap();
    /// ```
    fn add_dropped(&mut self, events: u64) {
        #[allow(deprecated)]
        self.count_dropped(events);
    }

    /// The former name of [`add_dropped`](Self::add_dropped): it adds, it does not
    /// count. Called only through `add_dropped`'s default.
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// let mut nop = NopExporter::default();
    /// #[allow(deprecated)]
    /// nop.count_dropped(2); // what `add_dropped` forwarded to before it was named so
    /// assert_eq!(nop.events_dropped(), 0);
    /// ```
    #[deprecated(note = "implement `add_dropped`; this name read like a getter")]
    fn count_dropped(&mut self, events: u64) {
        let _ = events;
    }

    /// Whether this exporter writes the in-band `agent_telemetry_events_dropped`
    /// reports itself (from the counts given to [`add_dropped`](Self::add_dropped)
    /// and its own losses). When `true`, the flush appends no report event to the
    /// batch, so every loss is reported once. The default is `false`. Asked once,
    /// when the telemetry is built.
    ///
    /// ```
    /// use telering_std::export::{BufferExporter, Exporter, ExporterContext, NopExporter};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// assert!(BufferExporter::open(&ctx).unwrap().reports_drops_in_band());
    /// assert!(!NopExporter::default().reports_drops_in_band());
    /// ```
    fn reports_drops_in_band(&self) -> bool {
        false
    }

    /// Whether the events this exporter writes carry a timestamp (the default). An
    /// exporter whose output has no timestamp field (a ring layout of 16-byte events
    /// without one) returns `false`; recording then reads no clock at all, and every
    /// event reaches [`export`](Self::export) with timestamp 0, each thread's events in
    /// the order it recorded them. Asked once, when the telemetry is built.
    ///
    /// ```
    /// use telering_shm::RingLayout;
    /// use telering_std::export::{BufferExporter, Exporter, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// ctx.ring_layout = RingLayout::V4; // slots without a timestamp field
    /// assert!(!BufferExporter::open(&ctx).unwrap().needs_timestamps());
    /// ```
    fn needs_timestamps(&self) -> bool {
        true
    }

    /// Events this exporter lost itself (for example to a full ring), for
    /// [`TelemetryStats::exporter_dropped`](crate::TelemetryStats::exporter_dropped).
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// use telering_std::export::{BufferExporter, Exporter, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// ctx.buffer_size = 4; // a ring of 4 slots holds 3 events
    /// let mut ring = BufferExporter::open(&ctx).unwrap();
    /// ring.export(&[Event::new(1, Category::Custom, event_name!("x"), 1); 5]).unwrap();
    /// // 2 written; the last slot takes the report of the 3 refused.
    /// assert_eq!(ring.events_dropped(), 3);
    /// ```
    fn events_dropped(&self) -> u64 {
        0
    }

    /// Of [`events_dropped`](Self::events_dropped), the events this exporter lost
    /// after an [`export`](Self::export) had delivered them: written into a ring file
    /// that another program then unlinked (NIXL's reader unlinks ring files of another
    /// version). The telemetry takes them back out of
    /// [`events_exported`](crate::TelemetryStats::events_exported). The default is 0.
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// assert_eq!(NopExporter::default().events_lost_after_delivery(), 0);
    /// ```
    fn events_lost_after_delivery(&self) -> u64 {
        0
    }

    /// How many events at the end of the batch last passed to
    /// [`export`](Self::export) this exporter lost itself (a full ring takes a batch's
    /// head and refuses its tail), not counting the events it left out as not in its
    /// layout ([`not_in_layout_from_last_export`](Self::not_in_layout_from_last_export)). They are counted in
    /// [`events_dropped`](Self::events_dropped) too; this says which they were, for
    /// [`Telemetry::dropped_by_name`](crate::Telemetry::dropped_by_name). The default
    /// is 0.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// use telering_std::export::{BufferExporter, Exporter, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// ctx.buffer_size = 4;
    /// let mut ring = BufferExporter::open(&ctx).unwrap();
    /// ring.export(&[Event::new(1, Category::Custom, event_name!("x"), 1); 5]).unwrap();
    /// // The batch's last three (the ring's last slot takes the report of them).
    /// assert_eq!(ring.dropped_from_last_export(), 3);
    /// ```
    fn dropped_from_last_export(&self) -> usize {
        0
    }

    /// The positions, in the batch last passed to [`export`](Self::export), of the
    /// events this exporter's output cannot hold and left out (a ring file of version
    /// 4 has no slot type for custom and backend events). They are neither delivered
    /// nor lost: [`TelemetryStats::events_not_in_layout`](crate::TelemetryStats::events_not_in_layout)
    /// counts them, per name in
    /// [`Telemetry::not_in_layout_by_name`](crate::Telemetry::not_in_layout_by_name).
    /// [`dropped_from_last_export`](Self::dropped_from_last_export) counts among the
    /// other events. The default is none.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// use telering_shm::RingLayout;
    /// use telering_std::export::{BufferExporter, Exporter, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// ctx.ring_layout = RingLayout::V4;
    /// let mut ring = BufferExporter::open(&ctx).unwrap();
    /// let tx = Event::new(0, Category::Transfer, event_name!("agent_tx_bytes"), 64);
    /// let custom = Event::new(0, Category::Custom, event_name!("queue_depth"), 3);
    /// ring.export(&[tx, custom, tx]).unwrap();
    /// assert_eq!(ring.not_in_layout_from_last_export(), &[1]);
    /// assert_eq!(ring.dropped_from_last_export(), 0);
    /// ```
    fn not_in_layout_from_last_export(&self) -> &[usize] {
        &[]
    }

    /// The shared delivery counters of an exporter that delivers after
    /// [`export`](Self::export) returns (an OTLP push thread, a metrics endpoint), or
    /// `None` (the default) when `export` returning `Ok` means delivered. Asked once,
    /// when the telemetry is built. See [`Delivery`].
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// assert!(NopExporter::default().delivery().is_none());
    /// ```
    fn delivery(&self) -> Option<std::sync::Arc<Delivery>> {
        None
    }

    /// Where the exported events can be looked at: the URL this exporter serves them
    /// at (such as `http://127.0.0.1:9090/metrics`, reported only once it is actually
    /// served there) or sends them to, or the path of the file it writes (the
    /// `buffer` exporter's ring file, the `csv` exporter's file). `None` otherwise —
    /// also when the endpoint could not start — so a program never shows an address
    /// that is not this exporter's.
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// assert_eq!(NopExporter::default().endpoint(), None);
    /// ```
    fn endpoint(&self) -> Option<String> {
        None
    }

    /// Each exporter's own counters, for an exporter that runs several
    /// ([`FanOut`](crate::fanout::FanOut)); `None` (the default) for one that is a
    /// single exporter, whose counters are the telemetry's.
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// assert_eq!(NopExporter::default().exporter_stats(), None);
    /// ```
    fn exporter_stats(&self) -> Option<Vec<crate::ExporterStats>> {
        None
    }

    /// Makes everything exported so far durable or visible (sync a file, …).
    ///
    /// ```
    /// use telering_std::export::{CsvExporter, Exporter, ExporterContext};
    /// use telering_core::{event_name, Category, Event};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// let mut csv = CsvExporter::open(&ctx).unwrap();
    /// csv.export(&[Event::new(1, Category::Custom, event_name!("x"), 7)]).unwrap();
    /// csv.flush().unwrap(); // now on disk
    /// assert!(std::fs::read_to_string(csv.path()).unwrap().ends_with(",CUSTOM,x,7\r\n"));
    /// ```
    fn flush(&mut self) -> Result<(), ExportError>;

    /// Takes every route's totals and the interval's slowest transfers
    /// ([`crate::route`]), after each flush's [`export`](Self::export) once any
    /// route was recorded. Totals are cumulative, so an exporter may take only the
    /// latest. The default ignores them: the route's events reach
    /// [`export`](Self::export) as built-in events in any case.
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// let mut nop = NopExporter::default();
    /// assert!(nop.export_routes(&telering_std::route::RouteReport::default()).is_ok());
    /// ```
    fn export_routes(&mut self, report: &crate::route::RouteReport) -> Result<(), ExportError> {
        let _ = report;
        Ok(())
    }

    /// Flushes and releases resources; called once, last.
    ///
    /// ```
    /// use telering_std::export::{BufferExporter, Exporter, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// let mut ring = BufferExporter::open(&ctx).unwrap();
    /// ring.shutdown().unwrap();
    /// assert!(ring.export(&[]).is_err()); // closed for good
    /// ```
    fn shutdown(&mut self) -> Result<(), ExportError>;
}

impl fmt::Debug for dyn Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// What a factory knows when it makes an exporter: the resolved configuration.
#[derive(Clone, Debug)]
pub struct ExporterContext {
    /// The agent's name; file exporters name their file after it.
    pub agent_name: String,
    /// `NIXL_TELEMETRY_DIR`, if set: already created when the factory runs, perhaps
    /// not yet when the [`ExporterCheck`] does.
    pub dir: Option<PathBuf>,
    /// `NIXL_TELEMETRY_BUFFER_SIZE`: events in the cyclic buffer.
    pub buffer_size: u32,
    /// `NIXL_TELEMETRY_RUN_INTERVAL`.
    pub run_interval: Duration,
    /// The environment the configuration was read from, for exporter-specific
    /// variables (`NIXL_TELEMETRY_PROMETHEUS_PORT`, …).
    pub env: EnvSource,
    /// The clock stamping the events, resolved (never [`ClockSource::Auto`]).
    pub clock: ClockSource,
    /// `TELERING_RING_LAYOUT`: the layout of the ring file (`buffer` exporter).
    pub ring_layout: telering_shm::RingLayout,
}

impl ExporterContext {
    /// A context with the defaults: no directory, 4096 events, 100 ms, an empty
    /// environment, [`ClockSource::Realtime`].
    ///
    /// ```
    /// use telering_std::export::ExporterContext;
    /// let ctx = ExporterContext::new("agent");
    /// assert_eq!((ctx.agent_name.as_str(), ctx.dir.as_ref(), ctx.buffer_size), ("agent", None, 4096));
    /// ```
    pub fn new(agent_name: impl Into<String>) -> ExporterContext {
        ExporterContext {
            agent_name: agent_name.into(),
            dir: None,
            buffer_size: crate::config::vars::DEFAULT_BUFFER_SIZE,
            run_interval: crate::config::vars::DEFAULT_RUN_INTERVAL,
            env: EnvSource::empty(),
            clock: ClockSource::Realtime,
            ring_layout: telering_shm::RingLayout::V1,
        }
    }

    /// The directory, or [`ExportError::MissingDir`] for `exporter`.
    ///
    /// ```
    /// use telering_std::export::{ExportError, ExporterContext};
    /// let mut ctx = ExporterContext::new("a");
    /// assert!(matches!(ctx.require_dir("csv"), Err(ExportError::MissingDir { .. })));
    /// ctx.dir = Some("/tmp".into());
    /// assert_eq!(ctx.require_dir("csv").unwrap(), std::path::Path::new("/tmp"));
    /// ```
    pub fn require_dir(&self, exporter: &str) -> Result<&std::path::Path, ExportError> {
        self.dir.as_deref().ok_or_else(|| ExportError::MissingDir {
            exporter: exporter.to_string(),
        })
    }

    /// The file `exporter` writes in the directory: the agent's name followed by
    /// `suffix` (`.csv`, or nothing for the ring file), checked to be one file name of
    /// at most 255 bytes ([`ExportError::TargetName`] otherwise). Each exporter names
    /// and checks its own file; configuration knows no exporter's naming rule.
    ///
    /// ```
    /// use telering_std::export::{ExportError, ExporterContext};
    /// let mut ctx = ExporterContext::new("agent-1");
    /// ctx.dir = Some("/tmp/t".into());
    /// assert_eq!(ctx.target_file("csv", ".csv").unwrap(), std::path::Path::new("/tmp/t/agent-1.csv"));
    /// ctx.agent_name = "n".repeat(252);
    /// assert!(matches!(ctx.target_file("csv", ".csv"), Err(ExportError::TargetName { .. })));
    /// assert!(ctx.target_file("buffer", "").is_ok());
    /// ```
    pub fn target_file(&self, exporter: &str, suffix: &str) -> Result<PathBuf, ExportError> {
        let dir = self.require_dir(exporter)?;
        let name = format!("{}{suffix}", self.agent_name);
        let reason = match telering_shm::validate_agent_name(&name) {
            Err(telering_shm::ShmError::InvalidAgentName { reason, .. }) => Some(reason),
            Err(_) => Some("it cannot name a file"),
            Ok(()) => None,
        };
        match reason {
            Some(reason) => Err(ExportError::TargetName {
                exporter: exporter.to_string(),
                name,
                reason,
            }),
            None => Ok(dir.join(name)),
        }
    }
}
