//! Routes from Python: the arguments of `Telemetry.route` checked, route ids checked,
//! a route's totals as a dict (the methods themselves are in `telemetry`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use telering_core::builtin::ErrorStatus;
use telering_std::Telemetry;
use telering_std::route::{MemoryType, Operation, Route, RouteId, RouteStats};

/// The route named by `Telemetry.route`'s arguments.
pub(crate) fn route(
    operation: &str,
    backend: &str,
    local_mem: &str,
    remote_mem: &str,
    peer: &str,
) -> PyResult<Route> {
    let op = match operation.to_ascii_lowercase().as_str() {
        "read" => Operation::Read,
        "write" => Operation::Write,
        _ => {
            return Err(PyValueError::new_err(format!(
                "operation {operation:?} is not a route operation; use \"read\" or \"write\""
            )));
        }
    };
    let mem = |v: &str, what: &str| {
        MemoryType::from_name(v).ok_or_else(|| {
            PyValueError::new_err(format!(
                "{what} {v:?} is not a memory type; use one of: DRAM, VRAM, BLK, OBJ, FILE"
            ))
        })
    };
    // A C caller cannot pass a NUL inside a name; nor can a Python one.
    for (what, name) in [("backend", backend), ("peer", peer)] {
        if let Some(at) = name.find('\0') {
            return Err(PyValueError::new_err(format!(
                "route {what} name contains a NUL byte at offset {at}; remove it"
            )));
        }
    }
    Ok(Route::new(
        op,
        backend,
        mem(local_mem, "local_mem")?,
        mem(remote_mem, "remote_mem")?,
        peer,
    ))
}

/// The route id `raw` if `t`'s `Telemetry.route` returned it, or a `ValueError`.
pub(crate) fn route_id(t: &Telemetry, raw: u16) -> PyResult<RouteId> {
    t.route_id(raw).ok_or_else(|| {
        PyValueError::new_err(format!(
            "route {raw} is no id this telemetry's Telemetry.route returned"
        ))
    })
}

/// `stats` as `Telemetry.route_totals` answers them.
pub(crate) fn totals_dict<'py>(
    py: Python<'py>,
    stats: &RouteStats,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("bytes", stats.bytes)?;
    d.set_item("transfers", stats.transfers)?;
    d.set_item("descriptors", stats.descriptors)?;
    d.set_item("xfer_time_us", stats.xfer_time.sum_us)?;
    d.set_item("post_time_us", stats.post_time.sum_us)?;
    let errors = PyDict::new(py);
    for (i, status) in ErrorStatus::ALL.iter().enumerate() {
        if stats.errors[i] > 0 {
            errors.set_item(status.as_str(), stats.errors[i])?;
        }
    }
    d.set_item("errors", errors)?;
    Ok(d)
}
