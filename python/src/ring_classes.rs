//! The Python classes `SharedRingBuffer` and `Observer`: thin method tables over
//! [`Shared`](crate::reader::Shared).

use crate::event::PyEvent;
use crate::follow::{Follow, Source};
use crate::reader::{Shared, open_draining, open_observer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use telering_core::ObserverStart;
use telering_shm::{DrainingReader, ObserverReader};

/// Default `follow()` poll interval, seconds: short enough that a follower lags a
/// writer by a few milliseconds, long enough that an idle follower costs nothing.
pub(crate) const DEFAULT_INTERVAL: f64 = 0.01;

/// Emits a reader class's `#[pymethods]` block: the methods given, then the ones
/// every reader class shares (counters, `info`, lifetime, context manager, iteration),
/// each delegating to the class's `shared` field.
macro_rules! reader_methods {
    ($class:ident, $python_name:literal, { $($methods:tt)* }) => {
        #[pymethods]
        impl $class {
            $($methods)*

            /// Up to `max` events, oldest first (fewer if fewer wait).
            #[pyo3(signature = (max = usize::MAX))]
            fn read_batch(&self, py: Python<'_>, max: usize) -> PyResult<Vec<PyEvent>> {
                self.shared.read_batch(py, max)
            }

            /// Events read that do not validate, returned as found (`Event.lenient`).
            #[getter]
            fn corrupt_events(&self) -> u64 {
                self.shared.corrupt_events()
            }

            /// Slots in the ring (it holds `capacity - 1` events).
            fn get_capacity(&self) -> u64 {
                self.shared.capacity
            }

            /// The header's `version`: the ring generation.
            fn get_version(&self) -> i32 {
                self.shared.version
            }

            /// Capacity, fill, version, writer liveness and the telering trailer
            /// (writer pid, exact loss counters, heartbeat, clock, clean close) of the
            /// file.
            fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                self.shared.info(py)
            }

            /// The file.
            #[getter]
            fn path(&self) -> PathBuf {
                self.shared.path.clone()
            }

            /// Whether `close()` was called.
            #[getter]
            fn closed(&self, py: Python<'_>) -> bool {
                self.shared.is_closed(py)
            }

            /// Unmaps the file. Idempotent; every other call raises `ClosedError`
            /// afterwards.
            fn close(&self, py: Python<'_>) {
                self.shared.close(py)
            }

            fn __enter__(slf: Py<Self>) -> Py<Self> {
                slf
            }

            fn __exit__(
                &self,
                py: Python<'_>,
                _ty: &Bound<'_, PyAny>,
                _value: &Bound<'_, PyAny>,
                _tb: &Bound<'_, PyAny>,
            ) -> bool {
                self.shared.close(py);
                false
            }

            /// Iterating yields the events not yet read, then stops (see `follow()`
            /// to wait for more).
            fn __iter__(slf: Py<Self>) -> Py<Self> {
                slf
            }

            fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyEvent>> {
                self.shared.pop(py)
            }

            fn __repr__(&self) -> String {
                format!(
                    concat!($python_name, "({:?}, version={}, capacity={})"),
                    self.shared.path, self.shared.version, self.shared.capacity
                )
            }
        }
    };
}

/// A ring file opened as its one draining reader: the telemetry guide's API.
///
/// `pop()` takes the oldest waiting event and advances the file's `read_pos`, as
/// NIXL's readers do, so the writer can reuse the slot. A file has one draining
/// reader: opening a second one (`telering read`, C's or another Python one, in this
/// process or another) raises `RuntimeError` naming the first one's pid, and takes
/// nothing. Use `Observer`, of which any number may run, to watch without consuming.
///
/// `version=None` reads every ring generation telering reads; an explicit version
/// raises `FormatError` (leaving the file untouched) when the file has another.
#[pyclass(frozen, name = "SharedRingBuffer", module = "telering")]
#[derive(Debug)]
pub(crate) struct PySharedRingBuffer {
    pub(crate) shared: Shared<DrainingReader>,
}

reader_methods!(PySharedRingBuffer, "SharedRingBuffer", {
    #[new]
    #[pyo3(signature = (path, version = None))]
    fn new(py: Python<'_>, path: PathBuf, version: Option<i32>) -> PyResult<Self> {
        let reader = open_draining(py, &path, version)?;
        Ok(PySharedRingBuffer {
            shared: Shared::new(path, reader, "draining reader"),
        })
    }

    /// The oldest waiting event, or `None` when the ring is empty.
    fn pop(&self, py: Python<'_>) -> PyResult<Option<PyEvent>> {
        self.shared.pop(py)
    }

    /// Every waiting event (at most `max`) as a NumPy structured array with the
    /// fields `timestamp_us`, `category`, `event_name` and `value`, in one bulk copy.
    #[pyo3(signature = (max = None))]
    fn to_numpy<'py>(&self, py: Python<'py>, max: Option<usize>) -> PyResult<Bound<'py, PyAny>> {
        self.shared.read_raw(py, max, true)
    }

    /// A blocking iterator over events as they arrive: it polls every `interval`
    /// seconds with the GIL released, and ends after `timeout` seconds without a new
    /// event (never, with `None`). Ctrl-C interrupts it.
    #[pyo3(signature = (interval = DEFAULT_INTERVAL, timeout = None))]
    fn follow(slf: Py<Self>, interval: f64, timeout: Option<f64>) -> PyResult<Follow> {
        Follow::new(Box::new(slf), interval, timeout)
    }

    /// Events waiting.
    fn size(&self, py: Python<'_>) -> PyResult<u64> {
        self.shared.fill(py)
    }

    /// Whether no event waits.
    fn empty(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.shared.fill(py)? == 0)
    }

    /// Whether the ring is full (the writer's next event would be dropped).
    fn full(&self, py: Python<'_>) -> PyResult<bool> {
        Ok(self.shared.fill(py)? + 1 == self.shared.capacity)
    }

    /// Events the writer overwrote before this reader took them (`OverwriteOldest`
    /// writers only).
    #[getter]
    fn events_lost(&self, py: Python<'_>) -> PyResult<u64> {
        self.shared.with(py, |r| Ok(r.events_lost()))
    }
});

/// A read-only follower of a ring file: it maps the file read-only, never writes
/// it, and any number may run beside the draining reader. When the writer laps it,
/// it counts exactly the events it missed (`events_missed`).
///
/// `start="oldest"` begins with the oldest event still in the ring, `"newest"` with
/// the next one written. Observers need a ring whose writer stamps its slots
/// (telering's); NIXL's own writer does not, and such a file raises `FormatError`.
#[pyclass(frozen, name = "Observer", module = "telering")]
#[derive(Debug)]
pub(crate) struct PyObserver {
    pub(crate) shared: Shared<ObserverReader>,
}

reader_methods!(PyObserver, "Observer", {
    #[new]
    #[pyo3(signature = (path, start = "oldest"))]
    fn new(py: Python<'_>, path: PathBuf, start: &str) -> PyResult<Self> {
        let start = match start.to_ascii_lowercase().as_str() {
            "oldest" => ObserverStart::Oldest,
            "newest" => ObserverStart::Newest,
            other => {
                return Err(PyValueError::new_err(format!(
                    "start={other:?}: use \"oldest\" (the oldest event still in the ring) or \"newest\" (the next one written)"
                )));
            }
        };
        let reader = open_observer(py, &path, start)?;
        Ok(PyObserver {
            shared: Shared::new(path, reader, "observer"),
        })
    }

    /// The next event, or `None` once the observer has caught up.
    fn poll(&self, py: Python<'_>) -> PyResult<Option<PyEvent>> {
        self.shared.pop(py)
    }

    /// The same as `poll()`, under the draining reader's name.
    fn pop(&self, py: Python<'_>) -> PyResult<Option<PyEvent>> {
        self.shared.pop(py)
    }

    /// The events not yet observed (at most `max`, by default one ring's worth) as a
    /// NumPy structured array.
    #[pyo3(signature = (max = None))]
    fn to_numpy<'py>(&self, py: Python<'py>, max: Option<usize>) -> PyResult<Bound<'py, PyAny>> {
        self.shared.read_raw(py, max, false)
    }

    /// A blocking iterator over events as they arrive (see
    /// `SharedRingBuffer.follow`).
    #[pyo3(signature = (interval = DEFAULT_INTERVAL, timeout = None))]
    fn follow(slf: Py<Self>, interval: f64, timeout: Option<f64>) -> PyResult<Follow> {
        Follow::new(Box::new(slf), interval, timeout)
    }

    /// Events the writer overwrote before this observer read them.
    #[getter]
    fn events_missed(&self, py: Python<'_>) -> PyResult<u64> {
        self.shared.with(py, |r| Ok(r.events_missed()))
    }
});

// `follow()`'s iterator polls either reader.
impl Source for Py<PySharedRingBuffer> {
    fn pop(&self, py: Python<'_>) -> PyResult<Option<PyEvent>> {
        self.get().shared.pop(py)
    }
}

impl Source for Py<PyObserver> {
    fn pop(&self, py: Python<'_>) -> PyResult<Option<PyEvent>> {
        self.get().shared.pop(py)
    }
}
