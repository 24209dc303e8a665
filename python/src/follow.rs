//! `follow()`: a blocking iterator over a reader.
//!
//! Each `next()` polls the reader; when it is empty, the thread sleeps for the poll
//! interval with the GIL released (other Python threads run meanwhile), then runs
//! pending signal handlers, so Ctrl-C raises `KeyboardInterrupt` within one interval.
//! With a `timeout`, `next()` ends the iteration once that long has passed without
//! an event. Events are taken one at a time, so a loop that breaks early leaves every
//! event it did not see in the ring.

use crate::event::PyEvent;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::time::{Duration, Instant};

/// The reader a [`Follow`] polls (the reader classes of `ring_classes`).
pub(crate) trait Source: Send + Sync + std::fmt::Debug {
    /// The next event, or `None` when the reader has none now.
    fn pop(&self, py: Python<'_>) -> PyResult<Option<PyEvent>>;
}

/// The iterator returned by `follow()`: yields events as they arrive, sleeping
/// without the GIL while there are none.
#[pyclass(frozen, name = "Follow", module = "telering")]
#[derive(Debug)]
pub(crate) struct Follow {
    source: Box<dyn Source>,
    interval: Duration,
    timeout: Option<Duration>,
}

impl Follow {
    pub(crate) fn new(
        source: Box<dyn Source>,
        interval: f64,
        timeout: Option<f64>,
    ) -> PyResult<Follow> {
        let interval = Duration::try_from_secs_f64(interval)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "interval={interval} is not a positive number of seconds; use e.g. 0.01"
                ))
            })?;
        let timeout = timeout
            .map(|t| {
                Duration::try_from_secs_f64(t).map_err(|_| {
                    PyValueError::new_err(format!(
                        "timeout={t} is not a number of seconds from 0 up; use None to wait forever"
                    ))
                })
            })
            .transpose()?;
        Ok(Follow {
            source,
            interval,
            timeout,
        })
    }

    fn poll(&self, py: Python<'_>) -> PyResult<Option<PyEvent>> {
        self.source.pop(py)
    }
}

#[pymethods]
impl Follow {
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyEvent>> {
        let deadline = self.timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(event) = self.poll(py)? {
                return Ok(Some(event));
            }
            let pause = match deadline {
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return Ok(None);
                    }
                    self.interval.min(deadline - now)
                }
                None => self.interval,
            };
            py.detach(|| std::thread::sleep(pause));
            py.check_signals()?;
        }
    }

    /// The poll interval, seconds.
    #[getter]
    fn interval(&self) -> f64 {
        self.interval.as_secs_f64()
    }

    /// How long `next()` waits for an event before the iteration ends, seconds
    /// (`None`: forever).
    #[getter]
    fn timeout(&self) -> Option<f64> {
        self.timeout.map(|t| t.as_secs_f64())
    }
}
