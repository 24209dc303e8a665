//! Checks of arguments that the Rust builder would take without a word: a flag that
//! is not a `bool` (any non-empty string is truthy, so `enabled="off"` would turn
//! telemetry on), an exporter or directory given while telemetry is disabled (the
//! builder only looks at them when it exports), and a backend name that is empty or
//! long. Each raises naming the argument; nothing is created on disk.

use crate::args;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict};
use std::path::Path;
use telering_core::text::{Escaped, first_unsafe_char};
use telering_std::TelemetryBuilder;

/// Longest backend name, in bytes (NIXL's are short: `UCX`, `GDS`, `POSIX`).
pub(crate) const MAX_BACKEND_NAME_BYTES: usize = 64;

/// `enabled`, `capture_telemetry`, `early_flush`: `True` or `False` only.
pub(crate) fn flag(value: &Bound<'_, PyAny>, key: &str) -> PyResult<bool> {
    match value.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{key} must be True or False, not {} {}",
            args::type_name(value),
            args::repr(value)
        ))),
    }
}

/// A backend name: 1 to [`MAX_BACKEND_NAME_BYTES`] bytes, no control character.
pub(crate) fn backend_name(name: &str) -> PyResult<()> {
    let shown = name
        .char_indices()
        .map(|(at, c)| at + c.len_utf8())
        .take_while(|end| *end <= 80)
        .last()
        .unwrap_or(0);
    let more = if shown < name.len() { "…" } else { "" };
    let refuse = |why: String| {
        Err(PyValueError::new_err(format!(
            "backend name \"{}{more}\" {why}",
            Escaped::new(&name[..shown])
        )))
    };
    if name.is_empty() {
        return refuse("is empty; name the backend, e.g. \"UCX\"".into());
    }
    if name.len() > MAX_BACKEND_NAME_BYTES {
        return refuse(format!(
            "is {} bytes long; at most {MAX_BACKEND_NAME_BYTES}",
            name.len()
        ));
    }
    if let Some((at, c)) = first_unsafe_char(name) {
        return refuse(format!(
            "has the control character {} at byte {at}",
            c.escape_unicode()
        ));
    }
    Ok(())
}

/// For telemetry that does not export: the `exporter` and `dir` keyword options, if
/// given, must be what an exporting telemetry would accept, so that turning
/// telemetry on later does not reveal a typo. The exporter names are checked as
/// building would; the directory is not created, only checked to be creatable.
pub(crate) fn unused_options(
    builder: &TelemetryBuilder,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Result<(), telering_std::config::ConfigError>> {
    let Some(options) = options else {
        return Ok(Ok(()));
    };
    let given = |key| matches!(options.get_item(key), Ok(Some(v)) if !v.is_none());
    if given("exporter") {
        if let Err(e) = builder.clone().enabled(true).resolve() {
            return Ok(Err(e));
        }
    }
    if given("dir") {
        if let Some(value) = options.get_item("dir")? {
            let dir: std::path::PathBuf = value.extract()?;
            creatable_dir(&dir).map_err(|why| {
                PyValueError::new_err(format!(
                    "dir={} {why}",
                    Escaped::new(&dir.to_string_lossy())
                ))
            })?;
        }
    }
    Ok(Ok(()))
}

/// Kernel file systems whose directories take no new entries (`statfs` `f_type`).
const PSEUDO_FILE_SYSTEMS: [(u64, &str); 2] = [(0x9fa0, "proc"), (0x6265_6572, "sysfs")];

/// Whether `dir` is a directory, or could be created as one: its nearest existing
/// ancestor is a writable directory on a writable file system.
fn creatable_dir(dir: &Path) -> Result<(), String> {
    if let Ok(meta) = std::fs::metadata(dir) {
        return match meta.is_dir() {
            true => Ok(()),
            false => Err("is not a directory".into()),
        };
    }
    if std::fs::symlink_metadata(dir).is_ok() {
        return Err("is a symbolic link to nothing (a dangling link)".into());
    }
    let Some(existing) = dir.ancestors().skip(1).find(|a| {
        let a = if a.as_os_str().is_empty() {
            Path::new(".")
        } else {
            a
        };
        std::fs::symlink_metadata(a).is_ok()
    }) else {
        return Err("has no existing parent".into());
    };
    let existing = if existing.as_os_str().is_empty() {
        Path::new(".")
    } else {
        existing
    };
    let shown = existing.display();
    if !std::fs::metadata(existing).is_ok_and(|m| m.is_dir()) {
        return Err(format!("is below {shown}, which is not a directory"));
    }
    if let Ok(fs) = rustix::fs::statfs(existing) {
        let kind = fs.f_type as u64;
        if let Some((_, name)) = PSEUDO_FILE_SYSTEMS.iter().find(|(magic, _)| *magic == kind) {
            return Err(format!(
                "cannot be created: {shown} is on the kernel's {name} file system"
            ));
        }
    }
    if rustix::fs::statvfs(existing)
        .is_ok_and(|v| v.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY))
    {
        return Err(format!(
            "cannot be created: {shown} is on a read-only file system"
        ));
    }
    if rustix::fs::access(existing, rustix::fs::Access::WRITE_OK).is_err() {
        return Err(format!("cannot be created: {shown} is not writable"));
    }
    Ok(())
}
