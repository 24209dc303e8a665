//! Per-transfer telemetry (`XferHandle`, `XferTelemetry`) and backend telemetry
//! (`BackendTelemetry`).

use crate::args;
use crate::errors::{closed, name_error};
use crate::event::PyEvent;
use crate::recorded::recorded;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyString;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use telering_std::{BackendTelemetry, XferHandle, XferTelemetry};

/// The telemetry part of one transfer, from `Telemetry.start_xfer`.
#[pyclass(frozen, name = "XferHandle", module = "telering")]
#[derive(Debug)]
pub(crate) struct PyXferHandle {
    inner: Mutex<XferHandle>,
}

impl PyXferHandle {
    pub(crate) fn new(handle: XferHandle) -> PyXferHandle {
        PyXferHandle {
            inner: Mutex::new(handle),
        }
    }

    pub(crate) fn lock(&self, py: Python<'_>) -> MutexGuard<'_, XferHandle> {
        self.inner
            .lock_py_attached(py)
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl PyXferHandle {
    /// Whether the transfer sends bytes (`tx`).
    #[getter]
    fn is_write(&self, py: Python<'_>) -> bool {
        self.lock(py).is_write()
    }

    /// Whether `Telemetry.xfer_completed` was called for it.
    #[getter]
    fn is_completed(&self, py: Python<'_>) -> bool {
        self.lock(py).is_completed()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let h = self.lock(py);
        format!(
            "XferHandle(is_write={}, is_completed={})",
            if h.is_write() { "True" } else { "False" },
            if h.is_completed() { "True" } else { "False" }
        )
    }
}

/// One transfer's telemetry, with the field names of NIXL's Python API. Times are
/// whole microseconds; `startTime` counts from the Unix epoch.
#[pyclass(frozen, name = "XferTelemetry", module = "telering")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PyXferTelemetry {
    /// When the transfer started, µs since the Unix epoch.
    #[pyo3(get, name = "startTime")]
    start_time: u64,
    /// How long posting it took, µs.
    #[pyo3(get, name = "postDuration")]
    post_duration: u64,
    /// How long it took from start to completion, µs (0 until completed).
    #[pyo3(get, name = "xferDuration")]
    xfer_duration: u64,
    /// Bytes it moves.
    #[pyo3(get, name = "totalBytes")]
    total_bytes: u64,
    /// Descriptors it covers.
    #[pyo3(get, name = "descCount")]
    desc_count: u64,
}

impl From<XferTelemetry> for PyXferTelemetry {
    fn from(t: XferTelemetry) -> Self {
        let us = |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        PyXferTelemetry {
            start_time: t.start_time_us,
            post_duration: us(t.post_duration),
            xfer_duration: us(t.xfer_duration),
            total_bytes: t.total_bytes,
            desc_count: t.descriptor_count,
        }
    }
}

#[pymethods]
impl PyXferTelemetry {
    fn __repr__(&self) -> String {
        format!(
            "XferTelemetry(startTime={}, postDuration={}, xferDuration={}, totalBytes={}, descCount={})",
            self.start_time,
            self.post_duration,
            self.xfer_duration,
            self.total_bytes,
            self.desc_count
        )
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyXferTelemetry>()
            .is_ok_and(|o| *o.get() == *self)
    }
}

/// A transfer backend's telemetry: events the backend reports about itself,
/// exported in category `BACKEND` at each flush (kept in process for
/// `get_telemetry_events()` when only capturing).
#[pyclass(frozen, name = "BackendTelemetry", module = "telering")]
#[derive(Debug)]
pub(crate) struct PyBackendTelemetry {
    inner: BackendTelemetry,
    telemetry_closed: Arc<AtomicBool>,
    agent_name: String,
}

impl PyBackendTelemetry {
    /// The backend telemetry of the `Telemetry` whose closed flag is
    /// `telemetry_closed` (set by its `close()`), for agent `agent_name`.
    pub(crate) fn new(
        inner: BackendTelemetry,
        telemetry_closed: Arc<AtomicBool>,
        agent_name: String,
    ) -> PyBackendTelemetry {
        PyBackendTelemetry {
            inner,
            telemetry_closed,
            agent_name,
        }
    }

    fn check_open(&self) -> PyResult<()> {
        if self.telemetry_closed.load(Ordering::Acquire) {
            return Err(closed(&format!(
                "backend {:?} of the telemetry for agent {:?}",
                self.inner.backend(),
                self.agent_name
            )));
        }
        Ok(())
    }
}

#[pymethods]
impl PyBackendTelemetry {
    /// The backend's name.
    #[getter]
    fn backend(&self) -> &str {
        self.inner.backend()
    }

    /// Records a backend event `name` = `value` (category `BACKEND`, timestamped
    /// now). The name is checked and the allowlist applies.
    fn add_telemetry_event(
        &self,
        py: Python<'_>,
        name: &Bound<'_, PyString>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        self.check_open()?;
        let name = name.to_cow()?;
        let value = args::to_u64(value, "value")?;
        let r = self
            .inner
            .add_telemetry_event(&name, value)
            .map_err(|e| name_error(&name, e))?;
        recorded(py, r)
    }

    /// The events recorded and not yet exported, oldest first.
    fn get_telemetry_events(&self) -> PyResult<Vec<PyEvent>> {
        self.check_open()?;
        Ok(self
            .inner
            .get_telemetry_events()
            .into_iter()
            .map(|e| PyEvent::new(e, true))
            .collect())
    }

    /// Events this backend lost to a full buffer.
    #[getter]
    fn events_dropped(&self) -> u64 {
        self.inner.events_dropped()
    }

    fn __repr__(&self) -> String {
        format!("BackendTelemetry({:?})", self.inner.backend())
    }
}
