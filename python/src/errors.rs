//! How telering's Rust errors become Python exceptions.
//!
//! Every exception carries the Rust error's `Display` text unchanged, so it names the
//! file, field or variable at fault and what to do about it. The exception type
//! follows what a Python programmer would catch:
//!
//! | Rust error | Python exception |
//! |---|---|
//! | a system call failed ([`ShmError::Io`], I/O inside a [`ConfigError`] or [`ExportError`]) | the `OSError` subclass for its `errno` (`FileNotFoundError`, `PermissionError`, `IsADirectoryError`, …), with `errno` and `filename` set |
//! | a ring file that is not a valid ring (header, trailer, stamps, a corrupt event, a truncated file) | [`FormatError`] (a `ValueError`) |
//! | a bad name, value or configuration ([`NameError`], [`ConfigError`], [`ShmError::InvalidOption`]) | `ValueError` |
//! | per-transfer telemetry without capture ([`XferError::NoTelemetry`]) | [`NoTelemetryError`] (a `RuntimeError`, as NIXL's `nixlNoTelemetryError`) |
//! | anything else (a second writer, a thread that could not start) | `RuntimeError` |

use pyo3::exceptions::{
    PyFileExistsError, PyFileNotFoundError, PyInterruptedError, PyIsADirectoryError,
    PyNotADirectoryError, PyOSError, PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use std::error::Error;
use std::io;
use telering_core::NameError;
use telering_core::event::NAME_MAX_LEN;
use telering_shm::ShmError;
use telering_std::{ConfigError, ExportError, XferError};

pyo3::create_exception!(
    telering,
    FormatError,
    PyValueError,
    "The file is not a telemetry ring that telering can read (a bad header, trailer or \
slot, or a truncated file). The message names the file and the field at fault. The file \
was not modified."
);

pyo3::create_exception!(
    telering,
    NoTelemetryError,
    PyRuntimeError,
    "There is no telemetry for the transfer: capture is not enabled (NIXL_TELEMETRY_ENABLE \
or capture_telemetry=True). NIXL's Python API raises nixlNoTelemetryError in the same case."
);

pyo3::create_exception!(
    telering,
    ClosedError,
    PyValueError,
    "The object was closed: a closed Telemetry, reader or backend handle raises this on every \
use (a ValueError, like a closed Python file)."
);

/// The `OSError` subclass for an I/O error, carrying `message` as its text and the
/// error's `errno` as an attribute. (`filename` is not set: `OSError.__str__` would
/// then replace the message with `[Errno n] strerror: filename`; the message names
/// the file already.)
pub(crate) fn os_error(py: Python<'_>, source: &io::Error, message: String) -> PyErr {
    let err = match source.kind() {
        io::ErrorKind::NotFound => PyFileNotFoundError::new_err(message),
        io::ErrorKind::PermissionDenied => PyPermissionError::new_err(message),
        io::ErrorKind::AlreadyExists => PyFileExistsError::new_err(message),
        io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(message),
        io::ErrorKind::NotADirectory => PyNotADirectoryError::new_err(message),
        io::ErrorKind::Interrupted => PyInterruptedError::new_err(message),
        _ => PyOSError::new_err(message),
    };
    let value = err.value(py);
    // For programs that look at it; a failure to set it leaves the exception as it
    // is, message intact.
    if let Some(code) = source.raw_os_error() {
        let _ = value.setattr("errno", code);
    }
    err
}

/// A ring file error.
pub(crate) fn shm_error(py: Python<'_>, e: ShmError) -> PyErr {
    let message = e.to_string();
    match &e {
        ShmError::Io { source, .. } => os_error(py, source, message),
        ShmError::NotRegularFile { kind, .. } if *kind == "directory" => {
            let source = io::Error::from(io::ErrorKind::IsADirectory);
            let err = os_error(py, &source, message);
            let _ = err.value(py).setattr("errno", 21); // EISDIR
            err
        }
        ShmError::InvalidAgentName { .. } | ShmError::InvalidOption { .. } => {
            PyValueError::new_err(message)
        }
        ShmError::WriterAlreadyRunning { .. } | ShmError::DrainerRunning { .. } => {
            PyRuntimeError::new_err(message)
        }
        // Every other variant, present and future, says the file is not a ring this
        // version can read.
        _ => FormatError::new_err(message),
    }
}

/// The first I/O error in an error's source chain.
fn io_cause<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a io::Error> {
    let mut next: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(err) = next {
        if let Some(shm) = err.downcast_ref::<ShmError>() {
            if let ShmError::Io { source, .. } = shm {
                return Some(source);
            }
            return None;
        }
        if let Some(io) = err.downcast_ref::<io::Error>() {
            return Some(io);
        }
        next = err.source();
    }
    None
}

/// Whether an exporter error is a ring file error of the kind [`shm_error`] maps to
/// something other than `OSError`.
fn shm_cause<'a>(e: &'a (dyn Error + 'static)) -> Option<&'a ShmError> {
    let mut next: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(err) = next {
        if let Some(shm) = err.downcast_ref::<ShmError>() {
            return Some(shm);
        }
        next = err.source();
    }
    None
}

/// An exporter error, as raised by `flush()`.
pub(crate) fn export_error(py: Python<'_>, e: ExportError) -> PyErr {
    let message = e.to_string();
    match &e {
        ExportError::Io { source, .. } => os_error(py, source, message),
        ExportError::MissingDir { .. } | ExportError::Config { .. } => {
            PyValueError::new_err(message)
        }
        ExportError::ForeignFile { .. } => FormatError::new_err(message),
        _ => classify_cause(py, &e, message),
    }
}

/// Maps by the root cause of an error whose own variant does not decide.
fn classify_cause(py: Python<'_>, e: &(dyn Error + 'static), message: String) -> PyErr {
    if let Some(source) = io_cause(e) {
        return os_error(py, source, message);
    }
    match shm_cause(e) {
        Some(ShmError::InvalidAgentName { .. } | ShmError::InvalidOption { .. }) => {
            PyValueError::new_err(message)
        }
        Some(ShmError::WriterAlreadyRunning { .. }) | None => PyRuntimeError::new_err(message),
        Some(_) => FormatError::new_err(message),
    }
}

/// A configuration error, as raised by the `Telemetry` constructors.
pub(crate) fn config_error(py: Python<'_>, e: ConfigError) -> PyErr {
    let message = e.to_string();
    config_error_saying(py, e, message)
}

/// A configuration error with `message` (the error's text in the caller's terms).
pub(crate) fn config_error_saying(py: Python<'_>, e: ConfigError, message: String) -> PyErr {
    match &e {
        ConfigError::DirUnusable { source, .. } => os_error(py, source, message),
        ConfigError::FlushThread { .. } => PyRuntimeError::new_err(message),
        ConfigError::ExporterStart { source, .. } => match source {
            ExportError::MissingDir { .. } | ExportError::Config { .. } => {
                PyValueError::new_err(message)
            }
            ExportError::ForeignFile { .. } => FormatError::new_err(message),
            ExportError::Io { source, .. } => os_error(py, source, message),
            other => classify_cause(py, other, message),
        },
        _ => PyValueError::new_err(message),
    }
}

/// A bad event name, said in Python's terms (the Rust error's text suggests Rust
/// calls).
pub(crate) fn name_error(name: &str, e: NameError) -> PyErr {
    let why = match e {
        NameError::Empty => format!("event name is empty; use 1 to {NAME_MAX_LEN} bytes of UTF-8"),
        NameError::TooLong { len } => format!(
            "event name is {len} bytes long; at most {NAME_MAX_LEN} bytes fit (shorten it, e.g. \
             name.encode()[:{NAME_MAX_LEN}].decode(\"utf-8\", \"ignore\"))"
        ),
        NameError::ContainsNul { at } => {
            format!("event name contains a NUL byte at offset {at}; remove it")
        }
        NameError::ControlCharacter { .. } => format!("{e}; remove it"),
        other => other.to_string(),
    };
    PyValueError::new_err(format!(
        "\"{}\": {why}",
        telering_core::text::Escaped::new(name)
    ))
}

/// Per-transfer telemetry without capture (`NoTelemetryError`), or a transfer handle
/// of another `Telemetry` (`ValueError`).
pub(crate) fn xfer_error(e: XferError) -> PyErr {
    match e {
        XferError::OtherTelemetry => PyValueError::new_err(e.to_string()),
        _ => NoTelemetryError::new_err(e.to_string()),
    }
}

/// A use of a closed object; `what` names it (`telemetry for agent "a"`).
pub(crate) fn closed(what: &str) -> PyErr {
    ClosedError::new_err(format!("{what} is closed"))
}
