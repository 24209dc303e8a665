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
mod nop;

pub use self::buffer::BufferExporter;
pub use self::csv::{CSV_HEADER, CsvExporter};
pub use self::nop::NopExporter;

use crate::clock::ClockSource;
use crate::config::{ConfigError, EnvSource};
use std::error::Error;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;
use telering_core::Event;

/// A sink for flushed events. See the module docs for the order of calls.
pub trait Exporter: Send {
    /// The name the exporter is registered under, such as `csv`.
    fn name(&self) -> &str;

    /// Exports one batch: every event of one flush, in timestamp order.
    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError>;

    /// Adds `events` lost upstream since the previous flush to this exporter's loss
    /// count. Each loss arrives here exactly once. Unless
    /// [`reports_drops_in_band`](Self::reports_drops_in_band) says otherwise, the
    /// losses also arrive in-band, as the batch's last event,
    /// `agent_telemetry_events_dropped`.
    ///
    /// The default forwards to the older name, [`count_dropped`](Self::count_dropped),
    /// so exporters written against it keep working.
    fn add_dropped(&mut self, events: u64) {
        #[allow(deprecated)]
        self.count_dropped(events);
    }

    /// The former name of [`add_dropped`](Self::add_dropped): it adds, it does not
    /// count. Called only through `add_dropped`'s default.
    #[deprecated(note = "implement `add_dropped`; this name read like a getter")]
    fn count_dropped(&mut self, events: u64) {
        let _ = events;
    }

    /// Whether this exporter writes the in-band `agent_telemetry_events_dropped`
    /// reports itself (from the counts given to [`add_dropped`](Self::add_dropped)
    /// and its own losses). When `true`, the flush appends no report event to the
    /// batch, so every loss is reported once. The default is `false`. Asked once,
    /// when the telemetry is built.
    fn reports_drops_in_band(&self) -> bool {
        false
    }

    /// Whether the events this exporter writes carry a timestamp (the default). An
    /// exporter whose output has no timestamp field (a ring layout of 16-byte events
    /// without one) returns `false`; recording then reads no clock at all and every
    /// event reaches [`export`](Self::export) with timestamp 0. Asked once, when the
    /// telemetry is built.
    fn needs_timestamps(&self) -> bool {
        true
    }

    /// Events this exporter lost itself (for example to a full ring), for
    /// [`TelemetryStats::exporter_dropped`](crate::TelemetryStats::exporter_dropped).
    fn events_dropped(&self) -> u64 {
        0
    }

    /// How many events at the end of the batch last passed to
    /// [`export`](Self::export) this exporter lost itself (a full ring takes a batch's
    /// head and refuses its tail). They are counted in
    /// [`events_dropped`](Self::events_dropped) too; this says which they were, for
    /// [`Telemetry::dropped_by_name`](crate::Telemetry::dropped_by_name). The default
    /// is 0.
    fn dropped_from_last_export(&self) -> usize {
        0
    }

    /// Where the exported events can be looked at, when this exporter serves them at
    /// an address of its own: a URL such as `http://127.0.0.1:9090/metrics`, reported
    /// only once it is actually served there. `None` otherwise — also when the
    /// endpoint could not start — so a program never shows an address that is not
    /// this exporter's.
    fn endpoint(&self) -> Option<String> {
        None
    }

    /// Makes everything exported so far durable or visible (sync a file, …).
    fn flush(&mut self) -> Result<(), ExportError>;

    /// Flushes and releases resources; called once, last.
    fn shutdown(&mut self) -> Result<(), ExportError>;
}

impl fmt::Debug for dyn Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}

/// Why an exporter could not start or could not export.
#[derive(Debug)]
#[non_exhaustive]
pub enum ExportError {
    /// The exporter writes files but no directory was configured.
    MissingDir {
        /// The exporter's name.
        exporter: String,
    },
    /// A file operation failed.
    Io {
        /// The exporter's name.
        exporter: String,
        /// The file or directory at fault.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// An existing file is not one this exporter wrote; it is left untouched.
    ForeignFile {
        /// The exporter's name.
        exporter: String,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An exporter-specific variable holds a value the exporter cannot use.
    Config {
        /// The exporter's name.
        exporter: String,
        /// The variable, such as `NIXL_TELEMETRY_PROMETHEUS_PORT`.
        variable: String,
        /// Its value.
        value: String,
        /// What is wrong and what to use instead.
        message: String,
    },
    /// Anything else, with the underlying error.
    Failed {
        /// The exporter's name.
        exporter: String,
        /// The cause.
        source: Box<dyn Error + Send + Sync>,
    },
}

impl ExportError {
    /// A failed file operation on `path`.
    pub fn io(exporter: &str, path: impl Into<PathBuf>, source: std::io::Error) -> ExportError {
        ExportError::Io {
            exporter: exporter.to_string(),
            path: path.into(),
            source,
        }
    }

    /// Any other failure.
    pub fn failed(exporter: &str, source: impl Into<Box<dyn Error + Send + Sync>>) -> ExportError {
        ExportError::Failed {
            exporter: exporter.to_string(),
            source: source.into(),
        }
    }

    /// The exporter the error comes from.
    pub fn exporter(&self) -> &str {
        match self {
            ExportError::MissingDir { exporter }
            | ExportError::Io { exporter, .. }
            | ExportError::ForeignFile { exporter, .. }
            | ExportError::Config { exporter, .. }
            | ExportError::Failed { exporter, .. } => exporter,
        }
    }
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::MissingDir { exporter } => write!(
                f,
                "exporter `{exporter}` writes files but NIXL_TELEMETRY_DIR is not set; set it to a writable directory"
            ),
            ExportError::Io {
                exporter,
                path,
                source,
            } => write!(f, "exporter `{exporter}`: {}: {source}", path.display()),
            ExportError::ForeignFile {
                exporter,
                path,
                reason,
            } => write!(
                f,
                "exporter `{exporter}`: {} {reason}; it was left untouched (move it away or choose another NIXL_TELEMETRY_DIR)",
                path.display()
            ),
            ExportError::Config {
                exporter,
                variable,
                value,
                message,
            } => write!(f, "{variable}={value}: {message} (exporter `{exporter}`)"),
            ExportError::Failed { exporter, source } => {
                write!(f, "exporter `{exporter}`: {source}")
            }
        }
    }
}

impl Error for ExportError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            ExportError::Io { source, .. } => Some(source),
            ExportError::Failed { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}

/// What a factory knows when it makes an exporter: the resolved configuration.
#[derive(Clone, Debug)]
pub struct ExporterContext {
    /// The agent's name; file exporters name their file after it.
    pub agent_name: String,
    /// `NIXL_TELEMETRY_DIR`, already created, if set.
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
    pub fn new(agent_name: impl Into<String>) -> ExporterContext {
        ExporterContext {
            agent_name: agent_name.into(),
            dir: None,
            buffer_size: crate::config::DEFAULT_BUFFER_SIZE,
            run_interval: crate::config::DEFAULT_RUN_INTERVAL,
            env: EnvSource::empty(),
            clock: ClockSource::Realtime,
            ring_layout: telering_shm::RingLayout::V1,
        }
    }

    /// The directory, or [`ExportError::MissingDir`] for `exporter`.
    pub fn require_dir(&self, exporter: &str) -> Result<&std::path::Path, ExportError> {
        self.dir.as_deref().ok_or_else(|| ExportError::MissingDir {
            exporter: exporter.to_string(),
        })
    }
}

/// Makes an exporter from the configuration. Called once, on the thread that builds
/// the [`Telemetry`](crate::Telemetry).
pub type ExporterFactory = fn(&ExporterContext) -> Result<Box<dyn Exporter>, ExportError>;

/// Exporter factories by name, matched ignoring ASCII case.
#[derive(Clone)]
pub struct ExporterRegistry {
    /// Lower-case name and factory, sorted by name.
    entries: Vec<(String, ExporterFactory)>,
}

impl fmt::Debug for ExporterRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExporterRegistry")
            .field("names", &self.names())
            .finish()
    }
}

impl Default for ExporterRegistry {
    fn default() -> Self {
        ExporterRegistry::with_builtins()
    }
}

impl ExporterRegistry {
    /// A registry without any exporter.
    pub fn empty() -> ExporterRegistry {
        ExporterRegistry {
            entries: Vec::new(),
        }
    }

    /// A registry with `buffer`, `csv` and `nop`.
    pub fn with_builtins() -> ExporterRegistry {
        let mut r = ExporterRegistry::empty();
        r.register("buffer", BufferExporter::factory);
        r.register("csv", CsvExporter::factory);
        r.register("nop", NopExporter::factory);
        r
    }

    /// Registers `factory` under `name` (stored in lower case), replacing an earlier
    /// factory of the same name.
    pub fn register(&mut self, name: &str, factory: ExporterFactory) {
        let name = name.trim().to_ascii_lowercase();
        match self
            .entries
            .binary_search_by(|(n, _)| n.as_str().cmp(&name))
        {
            Ok(i) => self.entries[i].1 = factory,
            Err(i) => self.entries.insert(i, (name, factory)),
        }
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The factory registered under `name`, ignoring ASCII case and surrounding
    /// whitespace.
    pub fn get(&self, name: &str) -> Option<ExporterFactory> {
        let name = name.trim();
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, f)| *f)
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Makes the exporter registered under `name`. An unknown name is
    /// [`ConfigError::UnknownExporter`], listing the registered names; a factory
    /// failure is [`ConfigError::ExporterStart`].
    pub fn create(
        &self,
        name: &str,
        context: &ExporterContext,
    ) -> Result<Box<dyn Exporter>, ConfigError> {
        let factory = self.get(name).ok_or_else(|| ConfigError::UnknownExporter {
            name: name.to_string(),
            available: self.names(),
        })?;
        factory(context).map_err(|source| ConfigError::ExporterStart {
            exporter: name.trim().to_ascii_lowercase(),
            source,
        })
    }
}
