//! Telemetry of a transfer backend: events the backend reports about itself.
//!
//! A backend gets a [`BackendTelemetry`] from [`Telemetry::backend`] and calls
//! [`add_telemetry_event`](BackendTelemetry::add_telemetry_event). Its events wait in
//! a per-backend buffer (a mutex-guarded vector of at most
//! `NIXL_TELEMETRY_BUFFER_SIZE` events, as in NIXL: backends report rarely, so this
//! lock is not on any hot path) until the next flush exports them in category
//! `BACKEND`. Events that find the buffer full are counted and reported as dropped.
//! With capture only ([`Mode::Capture`](crate::config::Mode::Capture)) they stay in
//! the buffer for [`pending_events`](BackendTelemetry::pending_events).
//!
//! [`Telemetry::backend`]: crate::Telemetry::backend

use crate::Recorded;
use crate::builtins::Filter;
use crate::clock::ClockSource;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use telering_core::{Category, Event, EventName, NameError};

pub(crate) struct BackendShared {
    backend: String,
    capture: bool,
    filter: Filter,
    clock: ClockSource,
    capacity: usize,
    pending: Mutex<Vec<Event>>,
    added: AtomicU64,
    dropped: AtomicU64,
    /// Drops already passed to a flush; only the flush (under the export lock)
    /// updates it.
    reported_dropped: AtomicU64,
    /// The telemetry was dropped: nothing drains this buffer any more.
    closed: AtomicBool,
}

impl BackendShared {
    pub(crate) fn new(
        backend: &str,
        capture: bool,
        filter: Filter,
        clock: ClockSource,
        capacity: usize,
    ) -> BackendShared {
        BackendShared {
            backend: backend.to_string(),
            capture,
            filter,
            clock,
            capacity,
            pending: Mutex::new(Vec::new()),
            added: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            reported_dropped: AtomicU64::new(0),
            closed: AtomicBool::new(false),
        }
    }

    /// Marks the buffer as no longer drained: its telemetry was dropped.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    pub(crate) fn name(&self) -> &str {
        &self.backend
    }

    /// Moves the pending events into `out`; returns the drops not reported before.
    pub(crate) fn drain_into(&self, out: &mut Vec<Event>) -> u64 {
        {
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            out.extend_from_slice(&pending);
            pending.clear();
        }
        let dropped = self.dropped.load(Ordering::Relaxed);
        let before = self.reported_dropped.swap(dropped, Ordering::Relaxed);
        dropped - before
    }

    /// (events buffered so far, events dropped so far).
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.added.load(Ordering::Relaxed),
            self.dropped.load(Ordering::Relaxed),
        )
    }
}

/// A backend's telemetry handle; cheap to clone, `Send + Sync`.
///
/// ```
/// use telering_std::Telemetry;
/// let telemetry = Telemetry::builder("agent").capture_telemetry(true).build().unwrap();
/// let ucx = telemetry.backend("UCX");
/// ucx.add_telemetry_event("ucx_rndv_count", 3).unwrap();
/// let events = ucx.get_telemetry_events();
/// assert_eq!(events.len(), 1);
/// assert_eq!(events[0].name(), Ok("ucx_rndv_count"));
/// assert_eq!(events[0].category(), Ok(telering_core::Category::Backend));
/// ```
#[derive(Clone)]
pub struct BackendTelemetry {
    shared: Arc<BackendShared>,
}

impl fmt::Debug for BackendTelemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (added, dropped) = self.shared.counts();
        f.debug_struct("BackendTelemetry")
            .field("backend", &self.shared.backend)
            .field("added", &added)
            .field("dropped", &dropped)
            .finish()
    }
}

impl BackendTelemetry {
    pub(crate) fn from_shared(shared: Arc<BackendShared>) -> BackendTelemetry {
        BackendTelemetry { shared }
    }

    /// The backend's name.
    ///
    /// ```
    /// let t = telering_std::Telemetry::disabled("a");
    /// assert_eq!(t.backend("UCX").backend(), "UCX");
    /// ```
    pub fn backend(&self) -> &str {
        &self.shared.backend
    }

    /// Whether the telemetry this handle came from was dropped: events added now are
    /// never exported (the C API refuses them with `TELERING_ERR_INVALID_HANDLE`).
    ///
    /// ```
    /// let t = telering_std::Telemetry::disabled("a");
    /// let ucx = t.backend("UCX");
    /// assert!(!ucx.is_closed());
    /// drop(t);
    /// assert!(ucx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Records a backend event `name` = `value` (category `BACKEND`, timestamped now).
    /// The name (1 to 31 bytes, no NUL or control character) is checked and the
    /// allowlist applies. Once an exporting telemetry is dropped
    /// ([`is_closed`](Self::is_closed)), nothing will export the event: it is
    /// [`Recorded::Dropped`] and counted.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").capture_telemetry(true).enabled_metrics("ucx_*").build().unwrap();
    /// let ucx = t.backend("UCX");
    /// assert_eq!(ucx.add_telemetry_event("ucx_rndv", 1), Ok(Recorded::Written));
    /// assert_eq!(ucx.add_telemetry_event("other", 1), Ok(Recorded::Filtered));
    /// assert!(ucx.add_telemetry_event("", 1).is_err());
    /// let off = Telemetry::disabled("b");
    /// assert_eq!(off.backend("UCX").add_telemetry_event("ucx_rndv", 1), Ok(Recorded::Disabled));
    /// ```
    pub fn add_telemetry_event(&self, name: &str, value: u64) -> Result<Recorded, NameError> {
        let name = EventName::new(name)?;
        let s = &*self.shared;
        if !s.capture {
            return Ok(Recorded::Disabled);
        }
        if !s.filter.matches(&name) {
            return Ok(Recorded::Filtered);
        }
        if s.filter.on && s.closed.load(Ordering::Acquire) {
            // Its telemetry exported, and is gone: no flush will take the event.
            s.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(Recorded::Dropped);
        }
        let event = Event::new(s.clock.now_us(), Category::Backend, name, value);
        let mut pending = s.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if pending.len() >= s.capacity {
            s.dropped.fetch_add(1, Ordering::Relaxed);
            return Ok(Recorded::Dropped);
        }
        pending.push(event);
        s.added.fetch_add(1, Ordering::Relaxed);
        Ok(Recorded::Written)
    }

    /// The events recorded and not yet exported, oldest first (a copy).
    ///
    /// ```
    /// let t = telering_std::Telemetry::builder("a").capture_telemetry(true).build().unwrap();
    /// let ucx = t.backend("UCX");
    /// ucx.add_telemetry_event("ucx_a", 1).unwrap();
    /// ucx.add_telemetry_event("ucx_b", 2).unwrap();
    /// let values: Vec<u64> = ucx.pending_events().iter().map(|e| e.value()).collect();
    /// assert_eq!(values, [1, 2]);
    /// ```
    pub fn pending_events(&self) -> Vec<Event> {
        self.shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// NIXL's name (`getTelemetryEvents`) for [`pending_events`](Self::pending_events),
    /// kept for parity with NIXL's backend API.
    ///
    /// ```
    /// let t = telering_std::Telemetry::builder("a").capture_telemetry(true).build().unwrap();
    /// let ucx = t.backend("UCX");
    /// ucx.add_telemetry_event("ucx_a", 1).unwrap();
    /// assert_eq!(ucx.get_telemetry_events(), ucx.pending_events());
    /// ```
    #[inline]
    pub fn get_telemetry_events(&self) -> Vec<Event> {
        self.pending_events()
    }

    /// Events this backend lost to a full buffer.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").capture_telemetry(true).buffer_size(2).build().unwrap();
    /// let ucx = t.backend("UCX");
    /// for v in 0..3 {
    ///     ucx.add_telemetry_event("ucx_x", v).unwrap();
    /// }
    /// assert_eq!(ucx.events_dropped(), 1);
    /// ```
    pub fn events_dropped(&self) -> u64 {
        self.shared.counts().1
    }
}
