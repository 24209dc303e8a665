//! The readers: `SharedRingBuffer` (the draining reader) and `Observer` (read-only),
//! over telering-shm's `DrainingReader` and `ObserverReader`.
//!
//! Both hold their Rust reader in a mutex, so any number of Python threads may share
//! one; the lock is taken without holding the GIL while waiting
//! (`lock_py_attached`), and the calls that can take long — `follow()`'s sleeps and
//! the bulk copy of `to_numpy()` — run with the GIL released. `close()` drops the
//! Rust reader (unmapping the file); every later call raises `telering.ClosedError`.
//!
//! Every slot is returned as it is found, as `telering read` shows it, whatever the
//! ring's generation: NIXL's own writer stores events telering's strict decoder
//! refuses (an empty name, category 8, a name cut inside a UTF-8 character, a type
//! number no release defines). Such an event comes back with `lenient == True`, its
//! name bytes as stored and its category as the stored `int`; the reader counts it in
//! `corrupt_events` and warns with `telering.CorruptEventWarning` once per kind of
//! problem, naming the file and slot. No event is skipped and none raises.

use crate::arrays;
use crate::errors::{closed, shm_error};
use crate::event::PyEvent;
use crate::records::{Lenient, RingReader};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use telering_shm::{DrainingReader, ObserverReader, RecordProblem, RingFileInfo};

pyo3::create_exception!(
    telering,
    CorruptEventWarning,
    pyo3::exceptions::PyUserWarning,
    "A reader returned an event that does not validate (as a foreign writer stored it); \
issued once per kind of problem per reader, naming the file and slot. The reader counts \
such events in `corrupt_events`."
);

/// A Rust reader shared by Python threads, and what is known about its file.
#[derive(Debug)]
pub(crate) struct Shared<R> {
    pub(crate) path: PathBuf,
    reader: Mutex<Option<R>>,
    /// Fixed per file: the capacity, the header version.
    pub(crate) capacity: u64,
    pub(crate) version: i32,
    corrupt_events: AtomicU64,
    /// The kinds of problem already warned about.
    warned: Mutex<Vec<RecordProblem>>,
    /// `"ring reader for PATH"`, for the closed error.
    what: String,
}

impl<R: RingReader> Shared<R> {
    pub(crate) fn new(path: PathBuf, reader: R, kind: &str) -> Shared<R> {
        let info = reader.file_info();
        Shared {
            what: format!("{kind} of {}", path.display()),
            path,
            capacity: info.capacity,
            version: info.version,
            reader: Mutex::new(Some(reader)),
            corrupt_events: AtomicU64::new(0),
            warned: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, Option<R>> {
        // A panic inside a read leaves the reader as consistent as its own state
        // allows; go on with it.
        self.reader
            .lock_py_attached(py)
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the open reader.
    pub(crate) fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut R) -> PyResult<T>,
    ) -> PyResult<T> {
        let mut guard = self.lock(py);
        match guard.as_mut() {
            Some(reader) => f(reader),
            None => Err(closed(&self.what)),
        }
    }

    pub(crate) fn close(&self, py: Python<'_>) {
        let reader = self.lock(py).take();
        drop(reader);
    }

    pub(crate) fn is_closed(&self, py: Python<'_>) -> bool {
        self.lock(py).is_none()
    }

    /// The next event, `None` when there is none.
    pub(crate) fn pop(&self, py: Python<'_>) -> PyResult<Option<PyEvent>> {
        let next = self.with(py, |r| r.next_record().map_err(|e| shm_error(py, e)))?;
        let mut lenient = Lenient::default();
        let event = next.map(|r| lenient.event(&r));
        self.report(py, lenient)?;
        Ok(event)
    }

    /// Up to `max` events as objects.
    pub(crate) fn read_batch(&self, py: Python<'_>, max: usize) -> PyResult<Vec<PyEvent>> {
        let mut events = Vec::new();
        let mut lenient = Lenient::default();
        self.with(py, |r| {
            r.batch(max, &mut |record| events.push(lenient.event(&record)))
                .map_err(|e| shm_error(py, e))
        })?;
        self.report(py, lenient)?;
        Ok(events)
    }

    /// Up to `max` events (default: those waiting now, for a draining reader; one
    /// ring's worth, for an observer) as the bytes of a NumPy structured array, and
    /// how many there are.
    pub(crate) fn read_raw<'py>(
        &self,
        py: Python<'py>,
        max: Option<usize>,
        waiting_known: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        // NumPy first: without it, nothing is taken from the ring.
        arrays::require_numpy(py)?;
        let mut lenient = Lenient::default();
        let raw = self.with(py, |r| {
            let limit = if waiting_known {
                let fill = r.file_info().fill as usize;
                max.map_or(fill, |m| m.min(fill))
            } else {
                max.unwrap_or(self.capacity as usize)
            };
            arrays::read_into_bytearray(py, r, limit, waiting_known, &mut lenient)
        })?;
        self.report(py, lenient)?;
        arrays::to_numpy(py, raw)
    }

    /// Counts the events of a read that do not validate, and warns once per reader
    /// about each kind of problem.
    fn report(&self, py: Python<'_>, lenient: Lenient) -> PyResult<()> {
        if lenient.count == 0 {
            return Ok(());
        }
        self.corrupt_events
            .fetch_add(lenient.count, Ordering::Relaxed);
        let fresh: Vec<String> = {
            let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
            lenient
                .first
                .into_iter()
                .filter(|(problem, _)| {
                    let new = !warned.contains(problem);
                    if new {
                        warned.push(*problem);
                    }
                    new
                })
                .map(|(_, text)| text)
                .collect()
        };
        for text in fresh {
            let message = format!(
                "{}: {text}; returned as it is (`lenient` is True), and further events like it are counted in `corrupt_events`",
                self.path.display()
            );
            PyErr::warn(
                py,
                &py.get_type::<CorruptEventWarning>(),
                &std::ffi::CString::new(message).unwrap_or_default(),
                1,
            )?;
        }
        Ok(())
    }

    pub(crate) fn corrupt_events(&self) -> u64 {
        self.corrupt_events.load(Ordering::Relaxed)
    }

    /// Events waiting for the draining reader.
    pub(crate) fn fill(&self, py: Python<'_>) -> PyResult<u64> {
        self.with(py, |r| Ok(r.file_info().fill))
    }

    pub(crate) fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let info = self.with(py, |r| Ok(r.file_info()))?;
        info_dict(py, &info)
    }
}

/// What `stat()` and `info()` return.
pub(crate) fn info_dict<'py>(py: Python<'py>, info: &RingFileInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", &info.path)?;
    d.set_item("capacity", info.capacity)?;
    d.set_item("fill", info.fill)?;
    d.set_item("version", info.version)?;
    d.set_item("writer_alive", info.writer_alive)?;
    match &info.trailer {
        Some(t) => {
            let td = PyDict::new(py);
            td.set_item("writer_pid", t.writer_pid)?;
            td.set_item("published", t.published)?;
            td.set_item("dropped_ring_full", t.dropped_ring_full)?;
            td.set_item("dropped_staging", t.dropped_staging)?;
            td.set_item("events_dropped", t.events_dropped())?;
            td.set_item("heartbeat_us", t.heartbeat_us)?;
            td.set_item("clock", format!("{:?}", t.clock).to_lowercase())?;
            td.set_item("clean_close", t.clean_close)?;
            td.set_item("policy", format!("{:?}", t.policy))?;
            d.set_item("trailer", td)?;
        }
        None => d.set_item("trailer", py.None())?,
    }
    Ok(d)
}

/// Opens a draining reader, checking the version the caller expects.
pub(crate) fn open_draining(
    py: Python<'_>,
    path: &Path,
    version: Option<i32>,
) -> PyResult<DrainingReader> {
    let reader = py
        .detach(|| DrainingReader::open(path))
        .map_err(|e| shm_error(py, e))?;
    check_version(&reader.info(), version)?;
    Ok(reader)
}

/// Opens an observer.
pub(crate) fn open_observer(
    py: Python<'_>,
    path: &Path,
    start: telering_core::ObserverStart,
) -> PyResult<ObserverReader> {
    py.detach(|| ObserverReader::open(path, start))
        .map_err(|e| shm_error(py, e))
}

fn check_version(info: &RingFileInfo, version: Option<i32>) -> PyResult<()> {
    match version {
        Some(expected) if expected != info.version => {
            Err(crate::errors::FormatError::new_err(format!(
                "{}: field `version` is {}, expected {expected}; the file was left untouched (pass version=None to read any generation telering reads)",
                info.path.display(),
                info.version
            )))
        }
        _ => Ok(()),
    }
}
