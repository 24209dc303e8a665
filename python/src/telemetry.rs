//! `telering.Telemetry`: recording from Python over telering-std's `Telemetry`.
//!
//! # Threads and closing
//!
//! The Rust `Telemetry` is `Send + Sync` and records through one lock-free lane per
//! OS thread, so Python threads record at once without a Python-level lock. It sits
//! in an `RwLock<Option<Arc<..>>>`: every call takes the read lock for the few
//! nanoseconds it records (never across a GIL release), and `close()` takes it out
//! under the write lock, with the GIL released while it waits. Calls that block —
//! `flush()` and `close()`, which joins the flush thread after its last export —
//! run on a clone of the `Arc` with the GIL released; `close()` waits until it holds
//! the last reference, so when it returns every event recorded before it began is
//! exported or counted as dropped, and the ring file is closed.

use crate::args;
use crate::checks;
use crate::errors::{closed, config_error, config_error_saying, export_error};
use crate::logs;
use crate::options;
use crate::recorded::recorded;
use crate::stats::{self, FinalStats};
use crate::xfer::{PyBackendTelemetry, PyXferHandle, PyXferTelemetry};
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::types::{PyDict, PyType};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;
use telering_std::config::Mode;
use telering_std::{Recorded, Telemetry, TelemetryBuilder};

/// Telemetry for one agent: records NIXL's built-in events, custom events,
/// per-transfer and backend telemetry, and exports them every run interval.
#[pyclass(frozen, name = "Telemetry", module = "telering")]
#[derive(Debug)]
pub(crate) struct PyTelemetry {
    inner: RwLock<Option<Arc<Telemetry>>>,
    /// Set by `close()`; backend handles check it.
    closed: Arc<AtomicBool>,
    /// The statistics after `close()`'s last export, for `stats()` and
    /// `exporter_stats()` afterwards.
    final_stats: Mutex<Option<FinalStats>>,
    agent_name: String,
    mode: Mode,
    dir: Option<PathBuf>,
    buffer_size: u32,
    run_interval: Duration,
    enabled_metrics: String,
    clock: &'static str,
}

impl PyTelemetry {
    /// Builds the telemetry `builder` describes; `options` are the keyword options it
    /// was given, which its errors name.
    fn build(
        py: Python<'_>,
        builder: TelemetryBuilder,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyTelemetry> {
        logs::refresh_level(py);
        let unbuilt = builder.clone();
        let built = py.detach(|| builder.build());
        // The configuration's warnings are in the log before the constructor returns.
        logs::deliver(py);
        let in_terms = |e: telering_std::config::ConfigError| {
            let message = options::in_keyword_terms(e.to_string(), options);
            config_error_saying(py, e, message)
        };
        let telemetry = built.map_err(in_terms)?;
        let config = telemetry.config().clone();
        if !matches!(config.mode, Mode::Export { .. }) {
            checks::unused_options(&unbuilt, options)?.map_err(in_terms)?;
        }
        Ok(PyTelemetry {
            inner: RwLock::new(Some(Arc::new(telemetry))),
            closed: Arc::new(AtomicBool::new(false)),
            final_stats: Mutex::new(None),
            agent_name: config.agent_name,
            mode: config.mode,
            dir: config.dir,
            buffer_size: config.buffer_size,
            run_interval: config.run_interval,
            enabled_metrics: config.enabled_metrics,
            clock: config.clock.name(),
        })
    }

    fn what(&self) -> String {
        format!("telemetry for agent {:?}", self.agent_name)
    }

    /// Runs `f` on the open telemetry, under the read lock.
    #[inline]
    fn with<T>(&self, f: impl FnOnce(&Telemetry) -> T) -> PyResult<T> {
        let guard = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        match guard.as_deref() {
            Some(t) => Ok(f(t)),
            None => Err(closed(&self.what())),
        }
    }

    /// A reference to the open telemetry, for calls that release the GIL.
    fn shared(&self) -> PyResult<Arc<Telemetry>> {
        let guard = self.inner.read().unwrap_or_else(PoisonError::into_inner);
        guard.clone().ok_or_else(|| closed(&self.what()))
    }

    #[inline]
    fn record_with(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Telemetry) -> Recorded,
    ) -> PyResult<Py<PyAny>> {
        let r = self.with(f)?;
        recorded(py, r)
    }

    pub(crate) fn closed_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.closed)
    }

    pub(crate) fn agent(&self) -> &str {
        &self.agent_name
    }
}

/// Closes the last reference to a telemetry: its last flush and the exporter's
/// shutdown happen here, and its final statistics are returned. Waits out a
/// `flush()` still running on another thread.
fn close_last(mut last: Arc<Telemetry>) -> FinalStats {
    loop {
        match Arc::try_unwrap(last) {
            Ok(telemetry) => {
                let (telemetry, exporters) = telemetry.close_with_exporter_stats();
                break FinalStats {
                    telemetry,
                    exporters,
                };
            }
            Err(shared) => {
                last = shared;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

impl Drop for PyTelemetry {
    /// A telemetry never closed is closed when Python frees it, with the GIL
    /// released: its flush thread and exporter may need the GIL to finish (a Python
    /// thread they wait for, a log record) while the last flush is joined.
    fn drop(&mut self) {
        let taken = self
            .inner
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(last) = taken {
            self.closed.store(true, Ordering::Release);
            Python::attach(|py| {
                py.detach(move || {
                    close_last(last);
                });
                logs::deliver(py);
            });
        }
    }
}

#[pymethods]
impl PyTelemetry {
    /// Telemetry configured by keyword options (the builder's defaults otherwise).
    #[new]
    #[pyo3(signature = (agent_name, **options))]
    fn new(
        py: Python<'_>,
        agent_name: String,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let builder = TelemetryBuilder::new(agent_name).registry(options::registry());
        let builder = options::apply(builder, options)?;
        PyTelemetry::build(py, builder, options)
    }

    /// Telemetry configured by the `NIXL_TELEMETRY_*` variables of the process
    /// environment (or of `env`, a mapping), with keyword options applied on top.
    #[classmethod]
    #[pyo3(signature = (agent_name, env = None, **options))]
    fn from_env(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        agent_name: String,
        env: Option<&Bound<'_, PyAny>>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let env = match env {
            Some(env) => options::env_from_mapping(env)?,
            None => options::process_env(),
        };
        let builder = TelemetryBuilder::new(agent_name)
            .registry(options::registry())
            .apply_env(&env)
            .map_err(|e| config_error(py, e))?;
        let builder = options::apply(builder, options)?;
        PyTelemetry::build(py, builder, options)
    }

    /// Records `agent_tx_bytes`: bytes sent.
    fn update_tx_bytes(&self, py: Python<'_>, bytes: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let v = args::to_u64(bytes, "bytes")?;
        self.record_with(py, |t| t.update_tx_bytes(v))
    }

    /// Records `agent_rx_bytes`: bytes received.
    fn update_rx_bytes(&self, py: Python<'_>, bytes: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let v = args::to_u64(bytes, "bytes")?;
        self.record_with(py, |t| t.update_rx_bytes(v))
    }

    /// Records `agent_tx_requests_num`: send requests.
    fn update_tx_requests_num(
        &self,
        py: Python<'_>,
        requests: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let v = args::to_u64(requests, "requests")?;
        self.record_with(py, |t| t.update_tx_requests_num(v))
    }

    /// Records `agent_rx_requests_num`: receive requests.
    fn update_rx_requests_num(
        &self,
        py: Python<'_>,
        requests: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let v = args::to_u64(requests, "requests")?;
        self.record_with(py, |t| t.update_rx_requests_num(v))
    }

    /// Records `agent_memory_registered`: bytes registered.
    fn update_memory_registered(
        &self,
        py: Python<'_>,
        bytes: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let v = args::to_u64(bytes, "bytes")?;
        self.record_with(py, |t| t.update_memory_registered(v))
    }

    /// Records `agent_memory_deregistered`: bytes deregistered.
    fn update_memory_deregistered(
        &self,
        py: Python<'_>,
        bytes: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let v = args::to_u64(bytes, "bytes")?;
        self.record_with(py, |t| t.update_memory_deregistered(v))
    }

    /// Records one occurrence of an error status (`"NIXL_ERR_BACKEND"`, or a
    /// `telering.ErrorStatus`): an `ERROR` event named by the status, value 1.
    fn update_error_count(&self, py: Python<'_>, status: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let status = args::error_status(status)?;
        self.record_with(py, |t| t.update_error_count(status))
    }

    /// Records one completed transfer, all or none: bytes and one request (`tx` for
    /// a write, `rx` for a read), `agent_xfer_time` and `agent_xfer_post_time`, all
    /// with one timestamp. Times are in microseconds.
    fn add_xfer_stats(
        &self,
        py: Python<'_>,
        xfer_time_us: &Bound<'_, PyAny>,
        is_write: bool,
        bytes: &Bound<'_, PyAny>,
        post_time_us: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let xfer = args::micros(xfer_time_us, "xfer_time_us")?;
        let bytes = args::to_u64(bytes, "bytes")?;
        let post = args::micros(post_time_us, "post_time_us")?;
        self.record_with(py, |t| t.add_xfer_stats(xfer, is_write, bytes, post))
    }

    /// Interns a route and returns its id (an `int`): `operation` `"read"` or
    /// `"write"`, `backend` (`"UCX"`, `"GDS"`, …), `local_mem` and `remote_mem`
    /// (`"DRAM"`, `"VRAM"`, `"BLK"`, `"OBJ"`, `"FILE"`, or NIXL's `"VRAM_SEG"`, …),
    /// `peer` the peer agent's name. Beyond the bound (`TELERING_ROUTES_MAX`) the id
    /// is the `other` route's; a route named as the `other` route itself (backend and
    /// peer `"other"`, both memory types `"DRAM"`) is given that id. Names are any
    /// text without NUL. Call it once per route, not per transfer.
    #[pyo3(signature = (operation, backend, local_mem, remote_mem, peer = ""))]
    fn route(
        &self,
        operation: &str,
        backend: &str,
        local_mem: &str,
        remote_mem: &str,
        peer: &str,
    ) -> PyResult<u16> {
        let route = crate::routes::route(operation, backend, local_mem, remote_mem, peer)?;
        self.with(|t| t.route(&route))?
            .map(|id| id.raw())
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
    }

    /// Records one completed transfer on `route` (an id this telemetry's `route`
    /// returned; any other number is a `ValueError`), as
    /// `add_xfer_stats` with the route's operation, covering `descriptors`
    /// descriptors. Times are in microseconds.
    #[pyo3(signature = (route, xfer_time_us, bytes, post_time_us, descriptors = None))]
    fn add_route_xfer_stats(
        &self,
        py: Python<'_>,
        route: u16,
        xfer_time_us: &Bound<'_, PyAny>,
        bytes: &Bound<'_, PyAny>,
        post_time_us: &Bound<'_, PyAny>,
        descriptors: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let xfer = args::micros(xfer_time_us, "xfer_time_us")?;
        let bytes = args::to_u64(bytes, "bytes")?;
        let post = args::micros(post_time_us, "post_time_us")?;
        let descriptors = match descriptors {
            Some(n) => args::to_u64(n, "descriptors")?,
            None => 1,
        };
        let r = self.with(|t| {
            route_id(t, route).map(|id| t.add_route_xfer_stats(id, xfer, bytes, post, descriptors))
        })??;
        recorded(py, r)
    }

    /// Records one occurrence of an error status on `route` (the same event as
    /// `update_error_count`, counted for the route too).
    fn update_route_error_count(
        &self,
        py: Python<'_>,
        route: u16,
        status: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let status = args::error_status(status)?;
        let r =
            self.with(|t| route_id(t, route).map(|id| t.update_route_error_count(id, status)))??;
        recorded(py, r)
    }

    /// The route's totals so far (what the flushes drained; `flush()` first for the
    /// latest): a dict of `bytes`, `transfers`, `descriptors`, `xfer_time_us`
    /// (sum), `post_time_us` (sum) and `errors` (status name → count).
    fn route_totals<'py>(
        &self,
        py: Python<'py>,
        route: u16,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let stats = self
            .with(|t| route_id(t, route).map(|id| t.route_totals(id)))??
            .unwrap_or_default();
        crate::routes::totals_dict(py, &stats)
    }

    /// Records a custom event: `category` a `telering.Category` (or its number or
    /// name), `name` 1 to 31 UTF-8 bytes without NUL or control character, `value`
    /// an unsigned 64-bit integer. The allowlist applies to the name.
    fn record(
        &self,
        py: Python<'_>,
        category: &Bound<'_, PyAny>,
        name: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyAny>> {
        let category = args::category(category)?;
        let name = args::event_name(name)?;
        let value = args::to_u64(value, "value")?;
        self.record_with(py, |t| t.record_event(category, &name, value))
    }

    /// Starts a transfer's telemetry: `is_write` for bytes sent, `False` for bytes
    /// received.
    #[pyo3(signature = (is_write, total_bytes, descriptor_count = None))]
    fn start_xfer(
        &self,
        is_write: bool,
        total_bytes: &Bound<'_, PyAny>,
        descriptor_count: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyXferHandle> {
        let bytes = args::to_u64(total_bytes, "total_bytes")?;
        let descriptors = match descriptor_count {
            Some(n) => args::to_u64(n, "descriptor_count")?,
            None => 1,
        };
        let handle = self.with(|t| t.start_xfer(is_write, bytes, descriptors))?;
        Ok(PyXferHandle::new(handle))
    }

    /// Marks the transfer posted (only the first call counts).
    fn xfer_posted(&self, py: Python<'_>, xfer: &Bound<'_, PyXferHandle>) -> PyResult<()> {
        let mut handle = xfer.get().lock(py);
        self.with(|t| t.xfer_posted(&mut handle))?
            .map_err(crate::errors::xfer_error)
    }

    /// Marks the transfer complete and records it once through `add_xfer_stats`.
    fn xfer_completed(
        &self,
        py: Python<'_>,
        xfer: &Bound<'_, PyXferHandle>,
    ) -> PyResult<Py<PyAny>> {
        let mut handle = xfer.get().lock(py);
        let r = self
            .with(|t| t.xfer_completed(&mut handle))?
            .map_err(crate::errors::xfer_error)?;
        drop(handle);
        recorded(py, r)
    }

    /// The transfer's telemetry with NIXL's field names (`startTime`,
    /// `postDuration`, `xferDuration`, `totalBytes`, `descCount`; times in µs).
    /// Raises `NoTelemetryError` when capture is not enabled.
    fn get_xfer_telemetry(
        &self,
        py: Python<'_>,
        xfer: &Bound<'_, PyXferHandle>,
    ) -> PyResult<PyXferTelemetry> {
        let handle = xfer.get().lock(py);
        let t = self.with(|t| t.xfer_telemetry(&handle))?;
        t.map(PyXferTelemetry::from)
            .map_err(crate::errors::xfer_error)
    }

    /// The telemetry handle of a transfer backend (`"UCX"`): its events are
    /// exported in category `BACKEND`. The same name gives the same buffer. The name
    /// is 1 to 64 bytes without control characters; another raises `ValueError`.
    fn backend(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyBackendTelemetry> {
        checks::backend_name(name)?;
        let this = slf.get();
        let inner = this.with(|t| t.backend(name))?;
        Ok(PyBackendTelemetry::new(
            inner,
            this.closed_flag(),
            this.agent().to_owned(),
        ))
    }

    /// Flushes now: drains every thread's events to the exporter and makes it
    /// flush its output. The GIL is released meanwhile.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        let t = self.shared()?;
        logs::refresh_level(py);
        let flushed = py.detach(|| t.flush());
        logs::deliver(py);
        flushed.map_err(|e| export_error(py, e))
    }

    /// Flushes every event recorded so far, shuts the exporter down (the ring file
    /// is marked cleanly closed) and releases the telemetry. Idempotent; every other
    /// call raises `ClosedError` afterwards.
    fn close(&self, py: Python<'_>) {
        let taken = py.detach(|| {
            self.inner
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
        });
        let Some(last) = taken else {
            return;
        };
        self.closed.store(true, Ordering::Release);
        logs::refresh_level(py);
        let stats = py.detach(move || close_last(last));
        *self
            .final_stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(stats);
        // What the last export logged (a collector that refused it) is in the log
        // when `close()` returns.
        logs::deliver(py);
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _ty: &Bound<'_, PyAny>,
        _value: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> bool {
        self.close(py);
        false
    }

    /// The counters of Rust's `TelemetryStats` and C's `telering_stats`, same names
    /// and meanings (see the type stubs). After `close()`, the final ones: what the
    /// last export could not deliver is counted.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = match self.shared() {
            Ok(t) => py.detach(|| t.stats()),
            Err(closed) => {
                let last = self
                    .final_stats
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                last.as_ref().ok_or(closed)?.telemetry
            }
        };
        logs::deliver(py);
        stats::telemetry_dict(py, &s)
    }

    /// Each exporter's deliveries and losses, one dict per name of the exporter list
    /// (`exporter="buffer,otlp"`), so one that fails shows beside one that delivers.
    /// After `close()`, the final ones.
    fn exporter_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let each = match self.shared() {
            Ok(t) => py.detach(|| t.exporter_stats()),
            Err(closed) => {
                let last = self
                    .final_stats
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                last.as_ref().ok_or(closed)?.exporters.clone()
            }
        };
        logs::deliver(py);
        stats::exporters_list(py, &each)
    }

    /// The agent's name.
    #[getter]
    fn agent_name(&self) -> &str {
        &self.agent_name
    }

    /// `"disabled"`, `"capture"` (per-transfer and backend telemetry in process,
    /// nothing exported) or `"export"`.
    #[getter]
    fn mode(&self) -> &'static str {
        match self.mode {
            Mode::Disabled => "disabled",
            Mode::Capture => "capture",
            Mode::Export { .. } => "export",
        }
    }

    /// The exporter's name (`"buffer"`, `"csv"`, `"nop"`, `"prometheus"`,
    /// `"prometheus_mp"`, `"otlp"`), or `None`.
    #[getter]
    fn exporter(&self) -> Option<&str> {
        match &self.mode {
            Mode::Export { exporter } => Some(exporter),
            _ => None,
        }
    }

    /// The telemetry directory, if set.
    #[getter]
    fn dir(&self) -> Option<PathBuf> {
        self.dir.clone()
    }

    /// The ring file the `buffer` exporter writes (`dir/agent_name`), or `None`.
    #[getter]
    fn ring_path(&self) -> Option<PathBuf> {
        match (&self.mode, &self.dir) {
            (Mode::Export { exporter }, Some(dir))
                if telering_std::parse::list(exporter).any(|e| e == "buffer") =>
            {
                Some(dir.join(&self.agent_name))
            }
            _ => None,
        }
    }

    /// Events in the exporter's cyclic buffer.
    #[getter]
    fn buffer_size(&self) -> u32 {
        self.buffer_size
    }

    /// Seconds between flushes.
    #[getter]
    fn run_interval(&self) -> f64 {
        self.run_interval.as_secs_f64()
    }

    /// The allowlist patterns (`""`: everything).
    #[getter]
    fn enabled_metrics(&self) -> &str {
        &self.enabled_metrics
    }

    /// The clock stamping events (`"tsc"`, `"realtime"`, `"realtime-coarse"`; `"auto"`
    /// picks the CPU counter where it is reliable).
    #[getter]
    fn clock(&self) -> &'static str {
        self.clock
    }

    /// Whether per-transfer and backend telemetry are captured (any mode but
    /// disabled).
    #[getter]
    fn captures(&self) -> bool {
        self.mode != Mode::Disabled
    }

    /// Whether events are recorded for export.
    #[getter]
    fn exports(&self) -> bool {
        matches!(self.mode, Mode::Export { .. })
    }

    fn __repr__(&self) -> String {
        let exporter = self
            .exporter()
            .map_or("None".to_string(), |e| format!("{e:?}"));
        let closed = if self.closed() { "True" } else { "False" };
        format!(
            "Telemetry({:?}, mode={:?}, exporter={exporter}, closed={closed})",
            self.agent_name,
            self.mode(),
        )
    }
}

use crate::routes::route_id;
