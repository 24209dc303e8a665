//! A flush that panics (a bug in telering's own code between the drain and the
//! export: the route tally, the conversion of stamps, an exporter's loss counters
//! read outside [`ExportState::call`](super::ExportState)) must not lose what it took
//! from the lanes without a count. The flush keeps the count of events it took for
//! good ([`InFlight`]); the guard catches the panic, counts those events as lost by
//! the export (`exporter_dropped`, per name, and in the next in-band drop report),
//! says the exporter is failing until an export succeeds, and puts back the losses
//! found and not yet handed on, so `recorded = delivered + lost` holds after it too.
//! The flush thread lives on and the next flush runs as usual.
//!
//! A lane whose drain the panic interrupted keeps its records (its read position is
//! stored only when the drain ends), so its events are not counted here: the next
//! flush takes them again.

use super::{ExportState, Shared, add_saturating};
use crate::export::ExportError;
use std::sync::atomic::Ordering;

/// What the flush in progress holds that nothing counted yet.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    /// Events at the start of `batch` taken for good from lanes and backends.
    pub(crate) taken: usize,
    /// Losses found (full lanes, backend buffers, earlier failures) not yet added to
    /// the exporter's reports.
    pub(crate) lost: u64,
}

impl Shared {
    /// [`flush_into`](Shared::flush_into), its panic counted rather than unwound:
    /// then an error saying so (for a caller's `flush`; the flush thread logs it).
    pub(crate) fn flush_guarded(&self, state: &mut ExportState) -> Result<(), ExportError> {
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.flush_into(state)));
        let Err(payload) = result else {
            return Ok(());
        };
        let why = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_owned());
        let events = self.count_flush_panic(state);
        let why = format!(
            "the flush panicked ({}); the {events} events it had taken are counted as lost",
            telering_core::text::Escaped::new(&why)
        );
        log::error!("telemetry: {why}");
        Err(ExportError::failed(state.exporter.name(), why))
    }

    /// Counts the flush's events as lost; answers how many.
    #[cold]
    fn count_flush_panic(&self, state: &mut ExportState) -> u64 {
        let in_flight = std::mem::take(&mut state.in_flight);
        let events = in_flight.taken as u64;
        self.export_failing.store(true, Ordering::Relaxed);
        self.export_errors.fetch_add(1, Ordering::Relaxed);
        add_saturating(&self.export_failed, events);
        // The batch's events and the losses found are reported in-band next time.
        add_saturating(&self.unreported, events.saturating_add(in_flight.lost));
        if let Some(taken) = state.batch.get(..in_flight.taken) {
            self.count_by_name(taken);
        }
        state.batch.clear();
        self.flushes.fetch_add(1, Ordering::Relaxed);
        events
    }
}
