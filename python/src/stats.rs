//! A telemetry's statistics as Python sees them: `stats()`'s dict, with the names of
//! Rust's `TelemetryStats` and C's `telering_stats`, and `exporter_stats()`'s list
//! of one dict per exporter, with the names of Rust's `ExporterStats`.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use telering_std::{ExporterStats, TelemetryStats};

/// The statistics `close()` leaves, for `stats()` and `exporter_stats()` afterwards.
#[derive(Debug)]
pub(crate) struct FinalStats {
    pub(crate) telemetry: TelemetryStats,
    pub(crate) exporters: Vec<ExporterStats>,
}

/// `stats()`'s dict.
pub(crate) fn telemetry_dict<'py>(
    py: Python<'py>,
    s: &TelemetryStats,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("events_recorded", s.events_recorded)?;
    d.set_item("events_dropped", s.events_dropped)?;
    d.set_item("events_exported", s.events_exported)?;
    d.set_item("exporter_dropped", s.exporter_dropped)?;
    d.set_item("events_not_in_layout", s.events_not_in_layout)?;
    d.set_item("events_undelivered", s.events_undelivered)?;
    d.set_item("flushes", s.flushes)?;
    d.set_item("export_errors", s.export_errors)?;
    d.set_item("exporter_failing", s.exporter_failing)?;
    d.set_item("lanes", s.lanes)?;
    Ok(d)
}

/// `exporter_stats()`'s list: one dict per exporter, in the order they were named.
pub(crate) fn exporters_list<'py>(
    py: Python<'py>,
    each: &[ExporterStats],
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for s in each {
        let d = PyDict::new(py);
        d.set_item("name", &s.name)?;
        d.set_item("endpoint", s.endpoint.as_deref())?;
        d.set_item("events_delivered", s.events_delivered)?;
        d.set_item("events_dropped", s.events_dropped)?;
        d.set_item("exporter_dropped", s.exporter_dropped)?;
        d.set_item("events_lost_after_delivery", s.events_lost_after_delivery)?;
        d.set_item("events_not_in_layout", s.events_not_in_layout)?;
        d.set_item("events_undelivered", s.events_undelivered)?;
        d.set_item("export_errors", s.export_errors)?;
        d.set_item("exporter_failing", s.exporter_failing)?;
        list.append(d)?;
    }
    Ok(list)
}
