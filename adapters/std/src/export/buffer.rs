//! The `buffer` exporter: the shared-memory ring file `DIR/<agent>` that NIXL's
//! version-1 readers and telering's readers open (telering-shm's [`ShmWriter`]).
//!
//! The ring has `NIXL_TELEMETRY_BUFFER_SIZE` slots. Events the ring refuses when it
//! is full are counted by the writer; losses upstream of it (lanes, staging) arrive
//! through [`Exporter::count_dropped`] and go into the trailer's `dropped_staging`.
//! The writer reports both in-band with one `agent_telemetry_events_dropped` event
//! as soon as there is room, so this exporter leaves out the report event the flush
//! appends to the batch: the loss is reported once, not twice. The trailer records
//! which clock stamped the events.

use super::{ExportError, Exporter, ExporterContext};
use crate::clock::ClockSource;
use std::path::Path;
use telering_core::Event;
use telering_core::builtin::AGENT_TELEMETRY_EVENTS_DROPPED;
use telering_shm::{ClockId, ShmWriter, WriterOptions};

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
/// exporter.export(&[Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), 64)]).unwrap();
/// exporter.shutdown().unwrap();
/// let info = telering_shm::stat(&dir.path().join("agent-7")).unwrap();
/// assert_eq!(info.fill, 1);
/// ```
#[derive(Debug)]
pub struct BufferExporter {
    writer: Option<ShmWriter>,
    /// `count_dropped` was called for the batch about to come, which therefore ends
    /// with the flush's drop report.
    report_pending: bool,
    /// Losses passed in through `count_dropped`, to tell them from the ring's own.
    upstream_dropped: u64,
    /// The ring's own losses when the writer was closed.
    dropped_at_close: u64,
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
    pub fn open(context: &ExporterContext) -> Result<BufferExporter, ExportError> {
        let dir = context.require_dir(NAME)?;
        let mut options = WriterOptions::new(dir, context.agent_name.clone());
        options.capacity = context.buffer_size;
        options.clock = shm_clock_id(context.clock);
        options.layout = context.ring_layout;
        let writer = ShmWriter::create(options).map_err(|e| ExportError::failed(NAME, e))?;
        log::debug!(
            "telemetry buffer exporter writes {}",
            writer.path().display()
        );
        Ok(BufferExporter {
            writer: Some(writer),
            report_pending: false,
            upstream_dropped: 0,
            dropped_at_close: 0,
        })
    }

    /// The [`ExporterFactory`](super::ExporterFactory) registered as `buffer`.
    pub fn factory(context: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
        Ok(Box::new(BufferExporter::open(context)?))
    }

    /// The ring file's path (`None` after shutdown).
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

    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        let mut events = batch;
        if std::mem::take(&mut self.report_pending) {
            if let Some((last, rest)) = batch.split_last() {
                if last.name() == Ok(AGENT_TELEMETRY_EVENTS_DROPPED.name.as_str()) {
                    events = rest;
                }
            }
        }
        // Events the ring refuses are counted by the writer (trailer + in-band report).
        self.writer()?.write_batch(events);
        Ok(())
    }

    fn count_dropped(&mut self, events: u64) {
        if let Some(writer) = self.writer.as_mut() {
            writer.count_dropped(events);
            self.upstream_dropped = self.upstream_dropped.saturating_add(events);
            self.report_pending = true;
        }
    }

    fn events_dropped(&self) -> u64 {
        self.writer.as_ref().map_or(0, |w| {
            w.events_dropped().saturating_sub(self.upstream_dropped)
        })
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        self.writer()?
            .flush()
            .map_err(|e| ExportError::failed(NAME, e))
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        self.dropped_at_close = self.events_dropped();
        match self.writer.take() {
            Some(writer) => writer.close().map_err(|e| ExportError::failed(NAME, e)),
            None => Ok(()),
        }
    }
}
