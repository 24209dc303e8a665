//! The [`Telemetry`] handle: what it is and its configuration. Its jobs are one module
//! each: recording (`recording`), statistics and on-demand flushes (`stats`), and
//! shutdown (`shutdown`); the thread-bound [`Recorder`](crate::Recorder) is in
//! `crate::recorder`. Building it is in `build`, the flush it runs in `flush`, the
//! built-in tables and the allowlist filter in `builtins`.

mod recording;
mod shutdown;
mod stats;

use crate::backend::{BackendShared, BackendTelemetry};
use crate::clock::ClockSource;
use crate::clock::stamp::StampKind;
use crate::config::{Mode, ResolvedConfig};
use crate::flush::{Shared, lock};
use std::fmt;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// An agent's telemetry: records events from any number of threads and flushes them
/// to one exporter. `Send + Sync`; share it by reference or in an `Arc`.
///
/// Build it with [`Telemetry::builder`] or [`Telemetry::from_env`]. Recording takes no
/// lock and allocates nothing once a thread has recorded its first event (which sets
/// up the thread's lane). Dropping it flushes everything and shuts the exporter down.
///
/// ```
/// use std::time::Duration;
/// use telering_std::Telemetry;
/// use telering_core::builtin::ErrorStatus;
///
/// let dir = tempfile::tempdir().unwrap();
/// let telemetry = Telemetry::builder("agent-3")
///     .enabled(true)
///     .exporter("csv")
///     .dir(dir.path())
///     .build()
///     .unwrap();
/// std::thread::scope(|s| {
///     for t in 0..4u64 {
///         let telemetry = &telemetry;
///         s.spawn(move || {
///             telemetry.update_tx_bytes(1000 + t);
///             telemetry.add_xfer_stats(Duration::from_micros(40), true, 4096, Duration::from_micros(3));
///         });
///     }
/// });
/// telemetry.update_error_count(ErrorStatus::Backend);
/// let stats = telemetry.stats();
/// assert_eq!((stats.events_recorded, stats.events_dropped), (21, 0));
/// drop(telemetry);
/// let csv = std::fs::read_to_string(dir.path().join("agent-3.csv")).unwrap();
/// assert_eq!(csv.lines().count(), 1 + 21);
/// ```
pub struct Telemetry {
    pub(crate) shared: Arc<Shared>,
    pub(crate) flusher: Option<JoinHandle<()>>,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry")
            .field("agent_name", &self.shared.config.agent_name)
            .field("mode", &self.shared.config.mode)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Telemetry {
    /// The configuration in effect.
    ///
    /// ```
    /// let telemetry = telering_std::Telemetry::builder("a").buffer_size(256).build().unwrap();
    /// assert_eq!(telemetry.config().buffer_size, 256);
    /// ```
    pub fn config(&self) -> &ResolvedConfig {
        &self.shared.config
    }

    /// The agent's name.
    ///
    /// ```
    /// assert_eq!(telering_std::Telemetry::disabled("agent-9").agent_name(), "agent-9");
    /// ```
    pub fn agent_name(&self) -> &str {
        &self.shared.config.agent_name
    }

    /// What the telemetry does: disabled, capture in process, or export.
    ///
    /// ```
    /// use telering_std::{Mode, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.mode(), &Mode::Export { exporter: "nop".into() });
    /// ```
    pub fn mode(&self) -> &Mode {
        &self.shared.config.mode
    }

    /// Whether per-transfer and backend telemetry are captured (any mode but
    /// [`Mode::Disabled`]).
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// assert!(Telemetry::builder("a").capture_telemetry(true).build().unwrap().captures());
    /// assert!(!Telemetry::disabled("b").captures());
    /// ```
    pub fn captures(&self) -> bool {
        self.shared.captures
    }

    /// Whether events are recorded for export.
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// assert!(Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap().exports());
    /// assert!(!Telemetry::builder("b").capture_telemetry(true).build().unwrap().exports());
    /// ```
    pub fn exports(&self) -> bool {
        self.shared.filter.on
    }

    /// A handle for a transfer backend named `backend` to report its own events,
    /// exported in category `BACKEND` at each flush.
    /// Asking again for the same name returns a handle to the same buffer.
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// let t = Telemetry::builder("a").capture_telemetry(true).build().unwrap();
    /// t.backend("UCX").add_telemetry_event("ucx_eps", 2).unwrap();
    /// // The same name is the same buffer.
    /// assert_eq!(t.backend("UCX").pending_events().len(), 1);
    /// assert!(t.backend("GDS").pending_events().is_empty());
    /// ```
    pub fn backend(&self, backend: &str) -> BackendTelemetry {
        let mut backends = lock(&self.shared.backends);
        if let Some(existing) = backends.iter().find(|b| b.name() == backend) {
            return BackendTelemetry::from_shared(Arc::clone(existing));
        }
        let shared = Arc::new(BackendShared::new(
            backend,
            self.captures(),
            self.shared.filter.clone(),
            self.shared.config.clock,
            self.shared.config.buffer_size as usize,
        ));
        backends.push(Arc::clone(&shared));
        BackendTelemetry::from_shared(shared)
    }

    /// Whether recording stamps events: `false` when no sink needs timestamps (the
    /// `buffer` exporter writing the version-4 ring layout, whose slots have none),
    /// and then recording reads no clock at all.
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert!(telemetry.stamps_events());
    /// ```
    pub fn stamps_events(&self) -> bool {
        self.shared.stamper.kind() != StampKind::Off
    }

    /// The clock stamping events, resolved ([`ClockSource::Tsc`],
    /// [`ClockSource::Realtime`] or [`ClockSource::RealtimeCoarse`]).
    ///
    /// ```
    /// use telering_std::{ClockSource, Telemetry};
    /// let t = Telemetry::builder("a").clock(ClockSource::RealtimeCoarse).build().unwrap();
    /// assert_eq!(t.clock(), ClockSource::RealtimeCoarse);
    /// ```
    pub fn clock(&self) -> ClockSource {
        self.shared.config.clock
    }
}

#[inline]
pub(crate) fn micros(d: Duration) -> u64 {
    // Whole seconds times 10⁶ plus the sub-second micros (a multiply by a constant),
    // in u64 arithmetic that saturates, instead of `as_micros`' u128 (−7 instructions).
    d.as_secs()
        .saturating_mul(1_000_000)
        .saturating_add(u64::from(d.subsec_micros()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_convert_to_whole_microseconds() {
        assert_eq!(micros(Duration::from_nanos(1_999)), 1);
        assert_eq!(micros(Duration::from_secs(2)), 2_000_000);
        assert_eq!(micros(Duration::MAX), u64::MAX);
    }
}
