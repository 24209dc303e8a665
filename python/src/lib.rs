//! `telering._native`: the extension module behind the `telering` Python package.
//!
//! It binds the public APIs of telering-std (recording: `Telemetry`, per-transfer
//! and backend telemetry) and telering-shm (reading: the draining reader and the
//! observer), so Python records and reads with the same code, and reads every ring
//! generation, that the Rust readers do. The pure-Python part of the package
//! (`python/pysrc/telering/`) adds the enums (`Category`, `ErrorStatus`, `Recorded`) and
//! the NumPy and pandas functions.
//!
//! Built with the CPython stable ABI (abi3) for CPython 3.9 and later: one wheel
//! serves every version. Module map:
//!
//! - [`telemetry`], [`options`], [`xfer`], [`recorded`]: recording;
//! - [`reader`], [`records`], [`ring_classes`], [`follow`], [`arrays`], [`event`]: reading;
//! - [`args`], [`errors`]: argument checks and exception mapping;
//! - [`logs`]: Rust log records to Python's `logging`.

#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
#![forbid(unsafe_code)]

mod args;
mod arrays;
mod checks;
mod errors;
mod event;
mod follow;
mod logs;
mod options;
mod reader;
mod recorded;
mod records;
mod ring_classes;
mod routes;
mod stats;
mod telemetry;
mod xfer;

use pyo3::prelude::*;
use std::path::PathBuf;

/// What a ring file holds, without changing it: capacity, fill, version, whether
/// its writer is alive, and telering's trailer (writer pid, exact loss counters,
/// heartbeat, clock, clean close) or `None` for a file without one.
#[pyfunction]
fn stat<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let info = py
        .detach(|| telering_shm::stat(&path))
        .map_err(|e| errors::shm_error(py, e))?;
    reader::info_dict(py, &info)
}

/// The extension module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    logs::install(py)?;
    m.add_function(wrap_pyfunction!(logs::logs_at_exit, m)?)?;
    m.add_class::<telemetry::PyTelemetry>()?;
    m.add_class::<xfer::PyXferHandle>()?;
    m.add_class::<xfer::PyXferTelemetry>()?;
    m.add_class::<xfer::PyBackendTelemetry>()?;
    m.add_class::<event::PyEvent>()?;
    m.add_class::<ring_classes::PySharedRingBuffer>()?;
    m.add_class::<ring_classes::PyObserver>()?;
    m.add_class::<follow::Follow>()?;
    m.add_function(wrap_pyfunction!(stat, m)?)?;
    m.add("FormatError", py.get_type::<errors::FormatError>())?;
    m.add(
        "NoTelemetryError",
        py.get_type::<errors::NoTelemetryError>(),
    )?;
    m.add("ClosedError", py.get_type::<errors::ClosedError>())?;
    m.add(
        "CorruptEventWarning",
        py.get_type::<reader::CorruptEventWarning>(),
    )?;
    m.add("EVENT_SIZE", telering_core::EVENT_SIZE)?;
    m.add("NAME_MAX_LEN", telering_core::event::NAME_MAX_LEN)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
