//! The `buffer` exporter: the shared-memory ring file `DIR/<agent>` that NIXL's
//! version-1 readers and telering's readers open (telering-shm's [`ShmWriter`]).
//!
//! The ring has `NIXL_TELEMETRY_BUFFER_SIZE` slots. Events the ring refuses when it
//! is full are counted by the writer; losses upstream of it (lanes, staging) arrive
//! through [`Exporter::add_dropped`] and go into the trailer's `dropped_staging`.
//! The writer reports both in-band with one `agent_telemetry_events_dropped` event
//! as soon as there is room, so this exporter declares
//! [`Exporter::reports_drops_in_band`] and the flush appends no report of its own:
//! every loss is reported once. The trailer records which clock stamped the events.
//!
//! Routes, which the ring's layout cannot carry, go to the agent's route file
//! `DIR/.routes/<agent>` ([`crate::route::file`]) after each flush that carried them:
//! the ring stays byte for byte what a route-less writer makes. The route file follows
//! the ring's fate: it stays after the agent ends, as the ring does, and a new run
//! that takes the ring over removes the previous run's route file first (its totals
//! start from zero).

use super::{ExportError, Exporter, ExporterContext};
use crate::clock::ClockSource;
use std::path::Path;
use telering_core::Event;
use telering_shm::{ClockId, RingLayout, ShmWriter, WriterOptions, v4_type_of};

const NAME: &str = "buffer";

/// Writes every batch into the shared-memory ring file `DIR/<agent>`.
///
/// ```
/// use telering_std::export::{BufferExporter, Exporter, ExporterContext};
/// use telering_core::{event_name, Category, Event};
/// let dir = tempfile::tempdir().unwrap();
/// let mut ctx = ExporterContext::new("agent-7");
/// ctx.dir = Some(dir.path().to_path_buf());
/// let mut exporter = BufferExporter::open(&ctx).unwrap();
/// // It reports the ring file it writes, for readers.
/// let ring = dir.path().join("agent-7");
/// assert_eq!(exporter.endpoint(), Some(ring.display().to_string()));
/// exporter.export(&[Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), 64)]).unwrap();
/// exporter.shutdown().unwrap();
/// assert_eq!(exporter.endpoint(), None);
/// let info = telering_shm::stat(&dir.path().join("agent-7")).unwrap();
/// assert_eq!(info.fill, 1);
/// ```
#[derive(Debug)]
pub struct BufferExporter {
    writer: Option<ShmWriter>,
    /// Events at the end of the last batch the ring refused (of those it can hold).
    last_refused: usize,
    /// Positions in the last batch of events the layout cannot hold (version 4 has no
    /// slot type for custom and backend events): left out, neither written nor lost.
    last_not_in_layout: Vec<usize>,
    /// Losses passed in through `add_dropped`, to tell them from the ring's own.
    upstream_dropped: u64,
    /// The ring's own losses when the writer was closed.
    dropped_at_close: u64,
    /// What the ring lost after delivery (an unlinked file) before it was closed.
    lost_after_delivery_at_close: u64,
    /// The ring's slot layout; version 4 has no timestamp field.
    layout: RingLayout,
    /// The route file's state (`None` until a flush carried routes).
    routes: RouteFileState,
}

/// What the `buffer` exporter keeps to write the route file.
#[derive(Debug, Default)]
struct RouteFileState {
    dir: std::path::PathBuf,
    agent: String,
    files: crate::route::file::RouteFileBuilder,
    /// Whether the last write failed (warned once per failing spell).
    failing: bool,
}
/// The trailer's identifier for a clock source.
pub(crate) fn shm_clock_id(clock: ClockSource) -> ClockId {
    match clock {
        ClockSource::Tsc => ClockId::Tsc,
        ClockSource::Realtime | ClockSource::Auto => ClockId::Realtime,
        ClockSource::RealtimeCoarse => ClockId::RealtimeCoarse,
    }
}

impl BufferExporter {
    /// Creates `DIR/<agent>` (or takes over a dead writer's ring: reused in place
    /// when its shape matches, replaced otherwise) with
    /// `NIXL_TELEMETRY_BUFFER_SIZE` slots, in the layout `TELERING_RING_LAYOUT`
    /// chose.
    ///
    /// ```
    /// use telering_std::export::{BufferExporter, ExportError, ExporterContext};
    /// assert!(matches!(BufferExporter::open(&ExporterContext::new("a")), Err(ExportError::MissingDir { .. })));
    /// ```
    pub fn open(context: &ExporterContext) -> Result<BufferExporter, ExportError> {
        let dir = context.require_dir(NAME)?;
        // The ring file is named after the agent, with no suffix.
        context.target_file(NAME, "")?;
        let mut options = WriterOptions::new(dir, context.agent_name.clone());
        options.capacity = context.buffer_size;
        options.clock = shm_clock_id(context.clock);
        options.layout = context.ring_layout;
        let writer = ShmWriter::create(options).map_err(|e| ExportError::failed(NAME, e))?;
        // The ring is this run's now: a previous run's route totals are not its.
        if let Err(e) = crate::route::file::remove(dir, &context.agent_name) {
            log::warn!(
                "telemetry buffer exporter cannot remove the previous run's route file: {e}"
            );
        }
        log::debug!(
            "telemetry buffer exporter writes {}",
            writer.path().display()
        );
        Ok(BufferExporter {
            writer: Some(writer),
            last_refused: 0,
            last_not_in_layout: Vec::new(),
            upstream_dropped: 0,
            dropped_at_close: 0,
            lost_after_delivery_at_close: 0,
            layout: context.ring_layout,
            routes: RouteFileState {
                dir: dir.to_path_buf(),
                agent: context.agent_name.clone(),
                ..RouteFileState::default()
            },
        })
    }

    /// Registers this exporter's factory as `buffer` in `registry`, as every exporter
    /// crate registers its own (`telering_prometheus::register`, …).
    /// It is also the exporter used when only `NIXL_TELEMETRY_DIR` is set.
    ///
    /// ```
    /// use telering_std::export::{ExporterRegistry, BufferExporter};
    /// let mut registry = ExporterRegistry::empty();
    /// BufferExporter::register(&mut registry);
    /// assert_eq!(registry.names(), ["buffer"]);
    /// ```
    pub fn register(registry: &mut super::ExporterRegistry) {
        registry.register_file_writer(NAME, BufferExporter::check, BufferExporter::factory);
        registry.set_dir_default(NAME);
    }

    /// The [`ExporterCheck`](super::ExporterCheck) of `buffer`: a directory is set
    /// and the agent's name can name the ring file. Touches no file.
    ///
    /// ```
    /// use telering_std::export::{BufferExporter, ExporterContext};
    /// let mut ctx = ExporterContext::new("a");
    /// assert!(BufferExporter::check(&ctx).unwrap_err().to_string().contains("NIXL_TELEMETRY_DIR"));
    /// ctx.dir = Some("/nonexistent/yet".into());
    /// assert!(BufferExporter::check(&ctx).is_ok());
    /// ```
    pub fn check(context: &ExporterContext) -> Result<(), ExportError> {
        context.target_file(NAME, "").map(drop)
    }

    /// The [`ExporterFactory`](super::ExporterFactory) registered as `buffer`.
    ///
    /// ```
    /// use telering_std::export::{BufferExporter, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// let exporter = BufferExporter::factory(&ctx).unwrap();
    /// assert!(exporter.reports_drops_in_band());
    /// ```
    pub fn factory(context: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
        Ok(Box::new(BufferExporter::open(context)?))
    }

    /// The ring file's path (`None` after shutdown).
    ///
    /// ```
    /// use telering_std::export::{BufferExporter, Exporter, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// let mut exporter = BufferExporter::open(&ctx).unwrap();
    /// assert_eq!(exporter.path(), Some(dir.path().join("a").as_path()));
    /// exporter.shutdown().unwrap();
    /// assert_eq!(exporter.path(), None);
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.writer.as_ref().map(ShmWriter::path)
    }

    fn writer(&mut self) -> Result<&mut ShmWriter, ExportError> {
        self.writer.as_mut().ok_or_else(|| {
            ExportError::failed(NAME, "the ring file was already closed by shutdown")
        })
    }
}

impl Exporter for BufferExporter {
    fn name(&self) -> &str {
        NAME
    }

    /// Version 4's 16-byte slots hold no timestamp, so with it recording reads no
    /// clock at all, as NIXL's own recording does.
    fn needs_timestamps(&self) -> bool {
        self.layout != RingLayout::V4
    }

    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        // Events the ring refuses are counted by the writer (trailer + in-band report).
        self.last_refused = 0;
        self.last_not_in_layout.clear();
        let written = self.writer()?.write_batch(batch);
        if self.layout == RingLayout::V4 {
            let skipped = batch
                .iter()
                .enumerate()
                .filter(|(_, e)| v4_type_of(e).is_none());
            self.last_not_in_layout.extend(skipped.map(|(i, _)| i));
        }
        let holdable = batch.len() - self.last_not_in_layout.len();
        self.last_refused = holdable.saturating_sub(written);
        Ok(())
    }

    fn add_dropped(&mut self, events: u64) {
        if let Some(writer) = self.writer.as_mut() {
            writer.add_dropped(events);
            self.upstream_dropped = self.upstream_dropped.saturating_add(events);
        }
    }

    fn reports_drops_in_band(&self) -> bool {
        true
    }

    fn dropped_from_last_export(&self) -> usize {
        self.last_refused
    }

    fn not_in_layout_from_last_export(&self) -> &[usize] {
        &self.last_not_in_layout
    }

    /// The ring file's path, for readers (`telering read PATH`).
    fn endpoint(&self) -> Option<String> {
        self.path().map(|p| p.display().to_string())
    }

    fn events_dropped(&self) -> u64 {
        // After shutdown, what the ring lost before it was closed.
        self.writer.as_ref().map_or(self.dropped_at_close, |w| {
            w.events_dropped().saturating_sub(self.upstream_dropped)
        })
    }

    fn events_lost_after_delivery(&self) -> u64 {
        self.writer.as_ref().map_or(
            self.lost_after_delivery_at_close,
            ShmWriter::events_lost_unlinked,
        )
    }

    /// Writes the route file `DIR/.routes/<agent>` (see the module docs).
    fn export_routes(&mut self, report: &crate::route::RouteReport) -> Result<(), ExportError> {
        if self.writer.is_none() {
            return Ok(());
        }
        self.routes.write(report)
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        self.writer()?
            .flush()
            .map_err(|e| ExportError::failed(NAME, e))
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        self.dropped_at_close = self.events_dropped();
        self.lost_after_delivery_at_close = self.events_lost_after_delivery();
        match self.writer.take() {
            Some(writer) => writer.close().map_err(|e| ExportError::failed(NAME, e)),
            None => Ok(()),
        }
    }
}

impl RouteFileState {
    fn write(&mut self, report: &crate::route::RouteReport) -> Result<(), ExportError> {
        let Some(file) = self.files.next(report) else {
            return Ok(());
        };
        match crate::route::file::write(&self.dir, &self.agent, &file.encode()) {
            Ok(()) => {
                self.files.written();
                if std::mem::take(&mut self.failing) {
                    log::info!("telemetry buffer exporter writes its route file again");
                }
                Ok(())
            }
            Err(e) => {
                if !std::mem::replace(&mut self.failing, true) {
                    log::warn!(
                        "telemetry buffer exporter cannot write its route file under {}: {e}; node readers show no routes for it until it can",
                        telering_core::text::Escaped::bytes(
                            self.dir.as_os_str().as_encoded_bytes()
                        )
                    );
                }
                Err(ExportError::failed(NAME, format!("route file: {e}")))
            }
        }
    }
}
