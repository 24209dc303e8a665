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

use pyo3::basic::CompareOp;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use telering_core::{Category, Event};

/// One telemetry event: timestamp_us, category, event_name (bytes) and value.
#[pyclass(frozen, name = "Event", module = "telering")]
#[derive(Clone, Copy, Debug)]
pub(crate) struct PyEvent {
    event: Event,
    has_timestamp: bool,
}

impl PyEvent {
    pub(crate) fn new(event: Event, has_timestamp: bool) -> PyEvent {
        PyEvent {
            event,
            has_timestamp,
        }
    }

    /// The name's bytes, up to the first NUL.
    fn name_bytes(&self) -> &[u8] {
        let field = self.event.name_field();
        let len = field.iter().position(|&b| b == 0).unwrap_or(field.len());
        &field[..len]
    }
}

#[pymethods]
impl PyEvent {
    /// Microseconds since the Unix epoch; 0 when the ring generation has no
    /// timestamps (see `has_timestamp`).
    #[getter]
    fn timestamp_us(&self) -> u64 {
        self.event.timestamp_us()
    }

    /// Whether the event carries a timestamp (ring generations 2 to 4 do not).
    #[getter]
    fn has_timestamp(&self) -> bool {
        self.has_timestamp
    }

    /// The category number; compare with `telering.Category` members.
    #[getter]
    fn category(&self) -> i32 {
        self.event.raw_category()
    }

    /// The category's short name (`TRANSFER`), or `UNKNOWN(n)` for a number outside
    /// NIXL's eight.
    #[getter]
    fn category_name(&self) -> String {
        match Category::try_from(self.event.raw_category()) {
            Ok(c) => c.short_name().to_string(),
            Err(_) => format!("UNKNOWN({})", self.event.raw_category()),
        }
    }

    /// The name as bytes, without the NUL padding of the 32-byte field.
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
        self.event.value()
    }

    /// The event as a dict with the keys `timestamp_us`, `category`, `event` (the
    /// name as text) and `value` — the fields of `telering read --json`.
    fn as_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        if self.has_timestamp {
            d.set_item("timestamp_us", self.event.timestamp_us())?;
        } else {
            d.set_item("timestamp_us", py.None())?;
        }
        d.set_item("category", self.category_name())?;
        d.set_item("event", self.name())?;
        d.set_item("value", self.event.value())?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "Event(timestamp_us={}, category={}, event_name={:?}, value={})",
            self.event.timestamp_us(),
            self.category_name(),
            self.name(),
            self.event.value()
        )
    }

    fn __richcmp__(&self, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<Py<PyAny>> {
        let py = other.py();
        let Ok(other) = other.cast::<PyEvent>() else {
            return Ok(py.NotImplemented());
        };
        let other = other.get();
        let same = self.event == other.event && self.has_timestamp == other.has_timestamp;
        match op {
            CompareOp::Eq => Ok(same.into_pyobject(py)?.to_owned().into_any().unbind()),
            CompareOp::Ne => Ok((!same).into_pyobject(py)?.to_owned().into_any().unbind()),
            _ => Ok(py.NotImplemented()),
        }
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.event.hash(&mut h);
        h.finish()
    }
}
