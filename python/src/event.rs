//! `telering.Event`: one event read from a ring or a backend buffer.
//!
//! Its attributes are those of the telemetry guide's reader: `timestamp_us`,
//! `category` (an `int`, so that a foreign file's unknown category still reads),
//! `event_name` (`bytes` without the NUL padding, as a `ctypes` `c_char` array field
//! gives it) and `value`; plus `name` (text) and `category_name`.
//!
//! Ring generations whose slots carry no timestamp read with `timestamp_us == 0` and
//! `has_timestamp == False`: the guide's loop formats `timestamp_us` as a number, so
//! it stays one.
//!
//! An event a foreign writer stored that does not validate (an empty name, category
//! 8 — NIXL's `NIXL_TELEMETRY_MAX` —, a name cut inside a UTF-8 character, an unknown
//! type number) is returned as found with `lenient == True`: `event_name` holds the
//! stored bytes, `category` the stored `int` (outside `telering.Category`, and
//! `category_name` says `UNKNOWN(8)`).

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use telering_core::event::NAME_FIELD_SIZE;
use telering_core::{Category, Event};
use telering_shm::RingRecord;

/// One telemetry event: timestamp_us, category, event_name (bytes) and value.
///
/// The fields as read, not a validated `telering_core::Event`, so that what a
/// foreign writer put in a slot can be shown as it is.
#[pyclass(frozen, name = "Event", module = "telering")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct PyEvent {
    timestamp_us: Option<u64>,
    category: i32,
    name: [u8; NAME_FIELD_SIZE],
    value: u64,
    lenient: bool,
}

impl PyEvent {
    pub(crate) fn new(event: Event, has_timestamp: bool) -> PyEvent {
        PyEvent {
            timestamp_us: has_timestamp.then_some(event.timestamp_us()),
            category: event.raw_category(),
            name: *event.name_field(),
            value: event.value(),
            lenient: false,
        }
    }

    /// The event of a record read from a ring file of any generation, validated or
    /// not.
    pub(crate) fn from_record(record: &RingRecord) -> PyEvent {
        PyEvent {
            timestamp_us: record.timestamp_us,
            category: record.category,
            name: record.name,
            value: record.value,
            lenient: !record.problems().is_empty(),
        }
    }

    /// The name's bytes, up to the first NUL.
    fn name_bytes(&self) -> &[u8] {
        let len = self
            .name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(self.name.len());
        &self.name[..len]
    }
}

#[pymethods]
impl PyEvent {
    /// Microseconds since the Unix epoch; 0 when the ring generation has no
    /// timestamps (see `has_timestamp`).
    #[getter]
    fn timestamp_us(&self) -> u64 {
        self.timestamp_us.unwrap_or(0)
    }

    /// Whether the event carries a timestamp (ring generations 2 to 4 do not).
    #[getter]
    fn has_timestamp(&self) -> bool {
        self.timestamp_us.is_some()
    }

    /// Whether the event does not validate as a telering event and is returned as a
    /// foreign writer stored it (see the module docs); never for events telering
    /// wrote.
    #[getter]
    pub(crate) fn lenient(&self) -> bool {
        self.lenient
    }

    /// The category number; compare with `telering.Category` members. With
    /// `lenient`, it may lie outside them (NIXL's writer stores 8).
    #[getter]
    fn category(&self) -> i32 {
        self.category
    }

    /// The category's short name (`TRANSFER`), or `UNKNOWN(n)` for a number outside
    /// NIXL's eight.
    #[getter]
    fn category_name(&self) -> String {
        match Category::try_from(self.category) {
            Ok(c) => c.short_name().to_string(),
            Err(_) => format!("UNKNOWN({})", self.category),
        }
    }

    /// The name as bytes, without the NUL padding of the 32-byte field; with
    /// `lenient`, as stored (possibly empty, or not UTF-8).
    #[getter]
    fn event_name<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.name_bytes())
    }

    /// The name as text (invalid UTF-8 shows as U+FFFD).
    #[getter]
    fn name(&self) -> String {
        String::from_utf8_lossy(self.name_bytes()).into_owned()
    }

    /// The value: bytes, a count or microseconds, depending on the event.
    #[getter]
    fn value(&self) -> u64 {
        self.value
    }

    /// The event as a dict with the keys `timestamp_us`, `category`, `event` (the
    /// name as text) and `value` — the fields of `telering read --json`.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("timestamp_us", self.timestamp_us)?;
        d.set_item("category", self.category_name())?;
        d.set_item("event", self.name())?;
        d.set_item("value", self.value)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Event(timestamp_us={}, category={}, event_name={:?}, value={})",
            self.timestamp_us(),
            self.category_name(),
            self.name(),
            self.value
        )
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<PyEvent>() else {
            return Ok(py.NotImplemented());
        };
        let same = self == other.get();
        match op {
            CompareOp::Eq => Ok(same.into_pyobject(py)?.to_owned().into_any().unbind()),
            CompareOp::Ne => Ok((!same).into_pyobject(py)?.to_owned().into_any().unbind()),
            _ => Ok(py.NotImplemented()),
        }
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        h.finish()
    }
}
