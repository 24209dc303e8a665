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
use crate::env::EnvSource;
use std::error::Error;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
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
    /// without one) returns `false`; recording then reads no clock at all and every
    /// event reaches [`export`](Self::export) with timestamp 0. Asked once, when the
    /// telemetry is built.
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
    /// assert_eq!(ring.events_dropped(), 2);
    /// ```
    fn events_dropped(&self) -> u64 {
        0
    }

    /// How many events at the end of the batch last passed to
    /// [`export`](Self::export) this exporter lost itself (a full ring takes a batch's
    /// head and refuses its tail). They are counted in
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
    /// assert_eq!(ring.dropped_from_last_export(), 2); // the batch's last two
    /// ```
    fn dropped_from_last_export(&self) -> usize {
        0
    }

    /// Where the exported events can be looked at, when this exporter serves them at
    /// an address of its own: a URL such as `http://127.0.0.1:9090/metrics`, reported
    /// only once it is actually served there. `None` otherwise — also when the
    /// endpoint could not start — so a program never shows an address that is not
    /// this exporter's.
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// assert_eq!(NopExporter::default().endpoint(), None);
    /// ```
    fn endpoint(&self) -> Option<String> {
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
    /// The file this exporter would write cannot be named after the agent (too long
    /// once the exporter's suffix is added, or not one file name).
    TargetName {
        /// The exporter's name.
        exporter: String,
        /// The file name it would write.
        name: String,
        /// Why it cannot.
        reason: &'static str,
    },
    /// No exporter is registered under the name asked for.
    UnknownExporter {
        /// The name asked for.
        name: String,
        /// The registered names.
        available: Vec<String>,
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
    ///
    /// ```
    /// use telering_std::ExportError;
    /// let e = ExportError::io("csv", "/tmp/x.csv", std::io::ErrorKind::PermissionDenied.into());
    /// assert!(e.to_string().starts_with("exporter `csv`: /tmp/x.csv: "));
    /// ```
    pub fn io(exporter: &str, path: impl Into<PathBuf>, source: std::io::Error) -> ExportError {
        ExportError::Io {
            exporter: exporter.to_string(),
            path: path.into(),
            source,
        }
    }

    /// Any other failure.
    ///
    /// ```
    /// use telering_std::ExportError;
    /// let e = ExportError::failed("otlp", "connection refused");
    /// assert_eq!(e.to_string(), "exporter `otlp`: connection refused");
    /// ```
    pub fn failed(exporter: &str, source: impl Into<Box<dyn Error + Send + Sync>>) -> ExportError {
        ExportError::Failed {
            exporter: exporter.to_string(),
            source: source.into(),
        }
    }

    /// The exporter the error comes from.
    ///
    /// ```
    /// use telering_std::ExportError;
    /// assert_eq!(ExportError::failed("otlp", "x").exporter(), "otlp");
    /// ```
    pub fn exporter(&self) -> &str {
        match self {
            ExportError::MissingDir { exporter }
            | ExportError::Io { exporter, .. }
            | ExportError::ForeignFile { exporter, .. }
            | ExportError::Config { exporter, .. }
            | ExportError::TargetName { exporter, .. }
            | ExportError::Failed { exporter, .. } => exporter,
            ExportError::UnknownExporter { name, .. } => name,
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
            ExportError::TargetName {
                exporter,
                name,
                reason,
            } => write!(
                f,
                "exporter `{exporter}` cannot write the file {name:?}: {reason}; choose a shorter agent name"
            ),
            ExportError::UnknownExporter { name, available } => write!(
                f,
                "`{name}` is not a known exporter; use one of: {}",
                available.join(", ")
            ),
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
            buffer_size: crate::env::DEFAULT_BUFFER_SIZE,
            run_interval: crate::env::DEFAULT_RUN_INTERVAL,
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

/// Makes an exporter from the configuration. Called once per build, on the thread
/// that builds the [`Telemetry`](crate::Telemetry). A factory may capture state (a
/// channel, a shared counter, settings of its own), so a program or a test hands its
/// exporter what it needs without global variables; plain `fn`s work too.
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
/// use telering_std::export::{ExporterContext, ExporterRegistry, NopExporter};
/// let made = Arc::new(AtomicU32::new(0));
/// let counter = Arc::clone(&made);
/// let mut registry = ExporterRegistry::with_builtins();
/// registry.register("counted", move |ctx: &ExporterContext| {
///     counter.fetch_add(1, Ordering::Relaxed);
///     NopExporter::factory(ctx)
/// });
/// registry.create("counted", &ExporterContext::new("a")).unwrap();
/// assert_eq!(made.load(Ordering::Relaxed), 1);
/// ```
pub type ExporterFactory =
    Arc<dyn Fn(&ExporterContext) -> Result<Box<dyn Exporter>, ExportError> + Send + Sync>;

/// Exporter factories by name, matched ignoring ASCII case, and which of them writes
/// `NIXL_TELEMETRY_DIR` when no exporter is named (the `buffer` exporter, by its own
/// [`BufferExporter::register`]).
#[derive(Clone)]
pub struct ExporterRegistry {
    /// Lower-case name and factory, sorted by name.
    entries: Vec<(String, ExporterFactory)>,
    /// The exporter used when only a directory is configured.
    dir_default: Option<String>,
}

impl fmt::Debug for ExporterRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExporterRegistry")
            .field("names", &self.names())
            .field("dir_default", &self.dir_default)
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
    ///
    /// ```
    /// let registry = telering_std::ExporterRegistry::empty();
    /// assert!(registry.names().is_empty() && registry.dir_default().is_none());
    /// ```
    pub fn empty() -> ExporterRegistry {
        ExporterRegistry {
            entries: Vec::new(),
            dir_default: None,
        }
    }

    /// A registry with `buffer` (also the directory's default), `csv` and `nop`, each
    /// registered by its own `register`.
    ///
    /// ```
    /// let registry = telering_std::ExporterRegistry::with_builtins();
    /// assert_eq!(registry.names(), ["buffer", "csv", "nop"]);
    /// assert_eq!(registry.dir_default(), Some("buffer"));
    /// ```
    pub fn with_builtins() -> ExporterRegistry {
        let mut r = ExporterRegistry::empty();
        BufferExporter::register(&mut r);
        CsvExporter::register(&mut r);
        NopExporter::register(&mut r);
        r
    }

    /// Makes the exporter registered as `name` the one used when
    /// `NIXL_TELEMETRY_DIR` is set and no exporter is named (NIXL's rule picks the
    /// ring file, so [`BufferExporter::register`] calls this).
    ///
    /// ```
    /// let mut registry = telering_std::ExporterRegistry::with_builtins();
    /// registry.set_dir_default("CSV");
    /// assert_eq!(registry.dir_default(), Some("csv"));
    /// ```
    pub fn set_dir_default(&mut self, name: &str) {
        self.dir_default = Some(name.trim().to_ascii_lowercase());
    }

    /// The exporter used when only `NIXL_TELEMETRY_DIR` is set, if any.
    ///
    /// ```
    /// assert_eq!(telering_std::ExporterRegistry::with_builtins().dir_default(), Some("buffer"));
    /// ```
    pub fn dir_default(&self) -> Option<&str> {
        self.dir_default.as_deref()
    }

    /// Registers `factory` under `name` (stored in lower case), replacing an earlier
    /// factory of the same name.
    ///
    /// ```
    /// use telering_std::export::{ExporterRegistry, NopExporter};
    /// let mut registry = ExporterRegistry::empty();
    /// registry.register(" Quiet ", NopExporter::factory);
    /// assert_eq!(registry.names(), ["quiet"]);
    /// ```
    pub fn register<F>(&mut self, name: &str, factory: F)
    where
        F: Fn(&ExporterContext) -> Result<Box<dyn Exporter>, ExportError> + Send + Sync + 'static,
    {
        self.register_factory(name, Arc::new(factory));
    }

    /// [`register`](Self::register) for a factory already shared
    /// ([`ExporterFactory`]), for example one taken from another registry.
    ///
    /// ```
    /// use telering_std::ExporterRegistry;
    /// let builtins = ExporterRegistry::with_builtins();
    /// let mut registry = ExporterRegistry::empty();
    /// registry.register_factory("csv", builtins.get("csv").unwrap());
    /// assert!(registry.contains("CSV"));
    /// ```
    pub fn register_factory(&mut self, name: &str, factory: ExporterFactory) {
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
    ///
    /// ```
    /// assert_eq!(telering_std::ExporterRegistry::with_builtins().names(), ["buffer", "csv", "nop"]);
    /// ```
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The factory registered under `name`, ignoring ASCII case and surrounding
    /// whitespace.
    ///
    /// ```
    /// let registry = telering_std::ExporterRegistry::with_builtins();
    /// assert!(registry.get(" Nop ").is_some() && registry.get("otlp").is_none());
    /// ```
    pub fn get(&self, name: &str) -> Option<ExporterFactory> {
        let name = name.trim();
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, f)| Arc::clone(f))
    }

    /// Whether `name` is registered.
    ///
    /// ```
    /// assert!(telering_std::ExporterRegistry::with_builtins().contains("BUFFER"));
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Makes the exporter registered under `name`. An unknown name is
    /// [`ExportError::UnknownExporter`], listing the registered names; a factory's
    /// failure is its own error. (Configuration turns these into
    /// [`ConfigError`](crate::ConfigError)s that name the variable.)
    ///
    /// ```
    /// use telering_std::export::{ExportError, ExporterContext, ExporterRegistry};
    /// let registry = ExporterRegistry::with_builtins();
    /// let ctx = ExporterContext::new("a");
    /// assert_eq!(registry.create("NOP", &ctx).unwrap().name(), "nop");
    /// let e = registry.create("otlp", &ctx).unwrap_err();
    /// assert!(matches!(e, ExportError::UnknownExporter { .. }));
    /// assert_eq!(e.to_string(), "`otlp` is not a known exporter; use one of: buffer, csv, nop");
    /// ```
    pub fn create(
        &self,
        name: &str,
        context: &ExporterContext,
    ) -> Result<Box<dyn Exporter>, ExportError> {
        let factory = self.get(name).ok_or_else(|| ExportError::UnknownExporter {
            name: name.trim().to_string(),
            available: self.names(),
        })?;
        factory(context)
    }
}
