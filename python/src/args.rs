//! Checking arguments from Python: integers, categories, names, statuses, durations.
//!
//! A number out of range is a `ValueError` naming the argument and the range (PyO3's
//! own conversion would raise `OverflowError`), a wrong type stays a `TypeError`.

use crate::errors::name_error;
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyString};
use std::time::Duration;
use telering_core::builtin::ErrorStatus;
use telering_core::{Category, EventName};

/// An unsigned 64-bit integer argument.
#[inline]
pub(crate) fn to_u64(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    match obj.extract::<u64>() {
        Ok(v) => Ok(v),
        Err(e) => Err(out_of_range(obj, e, what, "0 to 2**64 - 1")),
    }
}

fn out_of_range(obj: &Bound<'_, PyAny>, e: PyErr, what: &str, range: &str) -> PyErr {
    if e.is_instance_of::<PyOverflowError>(obj.py()) {
        PyValueError::new_err(format!(
            "{what}={} is out of range; use an integer from {range}",
            repr(obj)
        ))
    } else {
        e
    }
}

/// `repr(obj)`, or a placeholder if `__repr__` itself fails.
pub(crate) fn repr(obj: &Bound<'_, PyAny>) -> String {
    obj.repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<object>".into())
}

/// A category: a `telering.Category` member, its number, or its name (`"TRANSFER"`
/// or `"NIXL_TELEMETRY_TRANSFER"`, any case).
#[inline]
pub(crate) fn category(obj: &Bound<'_, PyAny>) -> PyResult<Category> {
    if obj.is_instance_of::<PyInt>() {
        let raw = obj.extract::<i64>().ok();
        return raw
            .and_then(|n| i32::try_from(n).ok())
            .and_then(|n| Category::try_from(n).ok())
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "category {} is not one of NIXL's categories 0 to 7 (telering.Category)",
                    repr(obj)
                ))
            });
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let name = s.to_cow()?;
        return Category::from_name(&name).ok_or_else(|| {
            PyValueError::new_err(format!(
                "category {name:?} is not one of NIXL's categories: {}",
                Category::ALL.map(|c| c.short_name()).join(", ")
            ))
        });
    }
    Err(PyTypeError::new_err(format!(
        "category must be a telering.Category, an int or a name, not {}",
        type_name(obj)
    )))
}

/// An event name: a `str` of 1 to 31 UTF-8 bytes without NUL or control character.
#[inline]
pub(crate) fn event_name(obj: &Bound<'_, PyAny>) -> PyResult<EventName> {
    let s = obj.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!("event name must be a str, not {}", type_name(obj)))
    })?;
    let name = s.to_cow()?;
    EventName::new(&name).map_err(|e| name_error(&name, e))
}

/// An error status: `"NIXL_ERR_BACKEND"`, `"backend"` or a `telering.ErrorStatus`
/// member (a `str`).
pub(crate) fn error_status(obj: &Bound<'_, PyAny>) -> PyResult<ErrorStatus> {
    let s = obj.cast::<PyString>().map_err(|_| {
        PyTypeError::new_err(format!(
            "status must be a telering.ErrorStatus or its name, not {}",
            type_name(obj)
        ))
    })?;
    let name = s.to_cow()?;
    ErrorStatus::from_name(&name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "status {name:?} is not a NIXL error status; use one of: {}",
            ErrorStatus::ALL.map(|s| s.as_str()).join(", ")
        ))
    })
}

/// A duration in seconds (`int` or `float`) or a `datetime.timedelta`.
pub(crate) fn duration(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Duration> {
    let seconds = if obj.hasattr("total_seconds")? {
        // A `datetime.timedelta` (the datetime C API is not part of the stable ABI).
        obj.call_method0("total_seconds")?.extract::<f64>()?
    } else if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyInt>() {
        obj.extract::<f64>()?
    } else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be seconds (int or float) or a datetime.timedelta, not {}",
            type_name(obj)
        )));
    };
    Duration::try_from_secs_f64(seconds).map_err(|_| {
        PyValueError::new_err(format!(
            "{what}={} is not a usable duration; use a positive number of seconds",
            repr(obj)
        ))
    })
}

/// A whole number of microseconds.
pub(crate) fn micros(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Duration> {
    to_u64(obj, what).map(Duration::from_micros)
}

/// The name of an object's type, for messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}
