//! [`Recorded`]: what one recording call did, with every reason for not recording
//! told apart.

use telering_core::Recorded as CoreRecorded;

/// What happened to one recorded event (or, for a transfer, its events).
///
/// Only [`Written`](Recorded::Written) reaches an exporter;
/// [`Dropped`](Recorded::Dropped) is a loss, counted and reported in-band. The other
/// outcomes record nothing on purpose and are not losses.
///
/// ```
/// use telering_core::Category;
/// use telering_std::{Recorded, Telemetry};
/// let off = Telemetry::disabled("a");
/// assert_eq!(off.update_tx_bytes(1), Recorded::Disabled);
/// let capture = Telemetry::builder("b").capture_telemetry(true).build().unwrap();
/// assert_eq!(capture.update_tx_bytes(1), Recorded::CaptureOnly);
/// let on = Telemetry::builder("c").enabled(true).exporter("nop").enabled_metrics("agent_tx_*").build().unwrap();
/// assert_eq!(on.update_tx_bytes(1), Recorded::Written);
/// assert_eq!(on.update_rx_bytes(1), Recorded::Filtered);
/// assert!(Recorded::Written.is_written() && !Recorded::Filtered.is_written());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Recorded {
    /// Written into the recording thread's lane (or the backend's buffer); the next
    /// flush exports it.
    Written,
    /// The lane (or backend buffer) was full, or the event went through a
    /// [`Recorder`](crate::Recorder) whose telemetry was closed
    /// ([`Recorder::is_closed`](crate::Recorder::is_closed)): counted as dropped
    /// (and, while the telemetry runs, reported in the stream as
    /// `agent_telemetry_events_dropped`).
    Dropped,
    /// Not recorded: the allowlist (`NIXL_TELEMETRY_ENABLED_METRICS`) excludes the
    /// name (for a transfer: all four of its events).
    Filtered,
    /// Not recorded: telemetry is disabled ([`Mode::Disabled`](crate::Mode::Disabled)).
    Disabled,
    /// Not recorded for export: telemetry only captures per-transfer and backend
    /// telemetry in process ([`Mode::Capture`](crate::Mode::Capture)); a transfer's
    /// own telemetry was still kept.
    CaptureOnly,
    /// Not recorded again: the transfer was already completed, and a transfer is
    /// recorded once.
    AlreadyCompleted,
}

impl Recorded {
    /// Whether the event was written (the one outcome an exporter sees).
    ///
    /// ```
    /// assert!(telering_std::Recorded::Written.is_written());
    /// assert!(!telering_std::Recorded::Dropped.is_written());
    /// ```
    #[inline]
    pub const fn is_written(self) -> bool {
        matches!(self, Recorded::Written)
    }

    /// Whether the event was lost (a full lane or buffer): the one outcome that is a
    /// loss, counted in [`TelemetryStats::events_dropped`](crate::TelemetryStats::events_dropped).
    ///
    /// ```
    /// assert!(telering_std::Recorded::Dropped.is_dropped());
    /// assert!(!telering_std::Recorded::Filtered.is_dropped());
    /// ```
    #[inline]
    pub const fn is_dropped(self) -> bool {
        matches!(self, Recorded::Dropped)
    }
}

impl From<CoreRecorded> for Recorded {
    /// telering-core's [`Recorder`](telering_core::Recorder) outcome, which has only
    /// the allowlist as a reason not to record.
    ///
    /// ```
    /// use telering_std::Recorded;
    /// assert_eq!(Recorded::from(telering_core::Recorded::Filtered), Recorded::Filtered);
    /// ```
    fn from(r: CoreRecorded) -> Recorded {
        match r {
            CoreRecorded::Written => Recorded::Written,
            CoreRecorded::Filtered => Recorded::Filtered,
            CoreRecorded::Dropped => Recorded::Dropped,
        }
    }
}
