//! `telering.Recorded`: what happened to an event, as the Python enum's member
//! (shared by `Telemetry` and per-transfer and backend telemetry).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use telering_std::Recorded;

/// `telering.Recorded`'s members, looked up once.
static RECORDED: PyOnceLock<[Py<PyAny>; 6]> = PyOnceLock::new();

/// What happened to an event, as a `telering.Recorded` member.
#[inline]
pub(crate) fn recorded(py: Python<'_>, r: Recorded) -> PyResult<Py<PyAny>> {
    let members = RECORDED.get_or_try_init(py, || -> PyResult<_> {
        let class = py.import("telering._enums")?.getattr("Recorded")?;
        Ok([
            class.getattr("WRITTEN")?.unbind(),
            class.getattr("FILTERED")?.unbind(),
            class.getattr("DROPPED")?.unbind(),
            class.getattr("DISABLED")?.unbind(),
            class.getattr("CAPTURE_ONLY")?.unbind(),
            class.getattr("ALREADY_COMPLETED")?.unbind(),
        ])
    })?;
    let i = match r {
        Recorded::Written => 0,
        Recorded::Filtered => 1,
        Recorded::Dropped => 2,
        Recorded::Disabled => 3,
        Recorded::CaptureOnly => 4,
        Recorded::AlreadyCompleted => 5,
    };
    Ok(members[i].clone_ref(py))
}
