//! Telemetry of a transfer backend: events the backend reports about itself.
//!
//! A backend gets a [`BackendTelemetry`] from [`Telemetry::backend`] and calls
//! [`add_telemetry_event`](BackendTelemetry::add_telemetry_event). Its events wait in
//! a per-backend buffer (a mutex-guarded vector of at most
//! `NIXL_TELEMETRY_BUFFER_SIZE` events, as in NIXL: backends report rarely, so this
//! lock is not on any hot path) until the next flush exports them in category
//! `BACKEND`. Events that find the buffer full are counted and reported as dropped.
//! With capture only ([`Mode::Capture`](crate::config::Mode::Capture)) they stay in
//! the buffer for [`get_telemetry_events`](BackendTelemetry::get_telemetry_events).
//!
//! [`Telemetry::backend`]: crate::Telemetry::backend

use crate::Recorded;
use crate::builtins::Filter;
use crate::clock::ClockSource;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
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
        }
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
    pub fn backend(&self) -> &str {
        &self.shared.backend
    }

    /// Records a backend event `name` = `value` (category `BACKEND`, timestamped now).
    /// The name (1 to 31 bytes, no NUL) is checked and the allowlist applies.
    pub fn add_telemetry_event(&self, name: &str, value: u64) -> Result<Recorded, NameError> {
        let name = EventName::new(name)?;
        let s = &*self.shared;
        if !s.capture {
            return Ok(Recorded::Disabled);
        }
        if !s.filter.matches(&name) {
            return Ok(Recorded::Filtered);
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

    /// The events recorded and not yet exported, oldest first.
    pub fn get_telemetry_events(&self) -> Vec<Event> {
        self.shared
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Events this backend lost to a full buffer.
    pub fn events_dropped(&self) -> u64 {
        self.shared.counts().1
    }
}
