//! Rust log records to Python's `logging`, under the logger `telering`.
//!
//! telering's crates log through the `log` facade: configuration warnings
//! (`NIXL_TELEMETRY_ENABLE=maybe`, an allowlist pattern that matches nothing),
//! exporter failures (an OTLP collector that refuses a push), the metrics endpoint's
//! troubles. [`pyo3_log`] hands each record to `logging`; the target becomes the
//! logger's name with the crate's `telering_` prefix turned into the `telering`
//! logger's child: a record of `telering_std::build` goes to `telering.std.build`,
//! so `logging.getLogger("telering")` configures them all.
//!
//! # Never waiting for the GIL where a record is made
//!
//! Records come from every thread: the flush thread, the OTLP push thread, the
//! metrics endpoint's threads, often while they hold telering's locks. Taking the GIL
//! there would deadlock against a Python thread that holds the GIL and waits for one
//! of those locks or threads (a `Telemetry` dropped without `close()` joins its flush
//! thread). So [`Bridge::log`] never takes the GIL: it formats the record into a
//! bounded queue, and the queue is emptied with the GIL held
//!
//! - by the Python call that led to the record, before it returns ([`deliver`]: the
//!   `Telemetry` constructors, `flush()`, `close()`, `stats()`), so a configuration
//!   warning is in the log when `Telemetry.from_env` returns;
//! - by the forwarder thread (`telering-log`) for the records of background threads,
//!   as soon as it gets the GIL;
//! - at interpreter exit, by the package's `atexit` hook ([`at_exit`]). Records made
//!   after it (a `Telemetry` dropped while the interpreter shuts down) go to stderr,
//!   one line each, prefixed `telering:`, as Python can no longer take them.
//!
//! Records are made only at the level the `telering` logger lets through
//! (`getEffectiveLevel()`, read again on every delivery), so a quiet logger costs
//! the recording threads nothing. A queue that overflows (Python starved of the GIL)
//! loses its newest records, and the next delivery logs how many, as a warning.

use log::{Level, LevelFilter, Log, Metadata, Record};
use pyo3::prelude::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, OnceLock, PoisonError};

/// Records waiting for Python; beyond this many, new ones are counted as lost.
const QUEUE_CAPACITY: usize = 4096;

/// A record taken out of its thread: what `logging` needs of it.
#[derive(Debug)]
struct Owned {
    level: Level,
    /// The Python logger's name, with `::` separators (pyo3-log turns them into dots).
    target: String,
    message: String,
    file: Option<&'static str>,
    line: Option<u32>,
}

#[derive(Debug, Default)]
struct Queue {
    records: VecDeque<Owned>,
    /// Records that did not fit since the last delivery.
    lost: u64,
}

/// The records waiting for Python, and the forwarder thread's wake-up.
static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    records: VecDeque::new(),
    lost: 0,
});
static WAKE: Condvar = Condvar::new();
/// pyo3-log's logger, made at import with the GIL held.
static BRIDGE: OnceLock<pyo3_log::Logger> = OnceLock::new();
/// Set at interpreter exit: records go to stderr from then on.
static PYTHON_GONE: AtomicBool = AtomicBool::new(false);
/// The process the forwarder thread runs in (0: none yet). A forked child has
/// none until its first record starts one.
static FORWARDER_PID: AtomicU32 = AtomicU32::new(0);

/// The `log` logger of the extension: queues each record for Python.
#[derive(Debug)]
struct Bridge;

impl Log for Bridge {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let owned = Owned {
            level: record.level(),
            target: python_target(record.target()),
            message: record.args().to_string(),
            file: record.file_static(),
            line: record.line(),
        };
        if PYTHON_GONE.load(Ordering::Acquire) {
            to_stderr(&owned);
            return;
        }
        ensure_forwarder();
        let mut queue = lock();
        if queue.records.len() < QUEUE_CAPACITY {
            queue.records.push_back(owned);
        } else {
            queue.lost += 1;
        }
        drop(queue);
        WAKE.notify_one();
    }

    fn flush(&self) {}
}

fn lock() -> std::sync::MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The Python logger for a Rust target: `telering_std::build` → `telering::std::build`,
/// anything else under `telering::`.
fn python_target(target: &str) -> String {
    if let Some(rest) = target.strip_prefix("telering_") {
        format!("telering::{rest}")
    } else if target == "telering" || target.starts_with("telering::") {
        target.to_string()
    } else {
        format!("telering::{target}")
    }
}

fn to_stderr(record: &Owned) {
    if record.level <= Level::Warn {
        eprintln!(
            "telering: {}: {}",
            record.level.as_str().to_lowercase(),
            record.message
        );
    }
}

/// Installs the bridge; called once, when the extension module is imported.
pub(crate) fn install(py: Python<'_>) -> PyResult<()> {
    let logger = pyo3_log::Logger::new(py, pyo3_log::Caching::Loggers)?.filter(LevelFilter::Trace);
    if BRIDGE.set(logger).is_ok() {
        // Another `log` logger in this extension would be a bug of ours; the records
        // would still reach it.
        let _ = log::set_logger(&Bridge);
    }
    refresh_level(py);
    Ok(())
}

/// Sets the level records are made at to what the `telering` logger lets through;
/// called before a Python call that may log, so a `logging` configuration made since
/// the last delivery applies.
pub(crate) fn refresh_level(py: Python<'_>) {
    let level = py
        .import("logging")
        .and_then(|logging| logging.call_method1("getLogger", ("telering",)))
        .and_then(|logger| logger.call_method0("getEffectiveLevel"))
        .and_then(|level| level.extract::<u32>());
    let filter = match level {
        Ok(0..=5) => LevelFilter::Trace,
        Ok(6..=10) => LevelFilter::Debug,
        Ok(11..=20) => LevelFilter::Info,
        Ok(21..=30) => LevelFilter::Warn,
        Ok(31..=50) => LevelFilter::Error,
        Ok(_) => LevelFilter::Off,
        // `logging` unusable: keep what reaches a default configuration.
        Err(_) => LevelFilter::Warn,
    };
    log::set_max_level(filter);
}

/// Hands every waiting record to `logging`. Called with the GIL held, by Python
/// calls that may have made records, before they return.
pub(crate) fn deliver(py: Python<'_>) {
    if PYTHON_GONE.load(Ordering::Acquire) {
        return;
    }
    let Some(bridge) = BRIDGE.get() else {
        return;
    };
    loop {
        // The queue's lock is never held while waiting for the GIL, nor while Python
        // runs (a handler may record telemetry, and so log).
        let (next, lost) = {
            let mut queue = lock();
            (queue.records.pop_front(), std::mem::take(&mut queue.lost))
        };
        if lost > 0 {
            let message =
                format!("{lost} telering log records were lost: Python did not take them in time");
            emit(py, bridge, &warning("telering", message));
        }
        let Some(record) = next else {
            break;
        };
        emit(py, bridge, &record);
    }
    refresh_level(py);
}

fn warning(target: &str, message: String) -> Owned {
    Owned {
        level: Level::Warn,
        target: target.to_string(),
        message,
        file: None,
        line: None,
    }
}

fn emit(py: Python<'_>, bridge: &pyo3_log::Logger, record: &Owned) {
    bridge.log(
        &Record::builder()
            .level(record.level)
            .target(&record.target)
            .args(format_args!("{}", record.message))
            .file_static(record.file)
            .line(record.line)
            .build(),
    );
    // pyo3-log leaves a failure of `logging` itself as the current exception; it
    // must not surface as the exception of an unrelated call.
    if let Some(err) = PyErr::take(py) {
        err.write_unraisable(py, None);
    }
}

/// Starts the forwarder thread in this process if it has none.
fn ensure_forwarder() {
    let pid = std::process::id();
    if FORWARDER_PID.load(Ordering::Acquire) == pid {
        return;
    }
    if FORWARDER_PID.swap(pid, Ordering::AcqRel) == pid {
        return;
    }
    let started = std::thread::Builder::new()
        .name("telering-log".into())
        .spawn(forward);
    if let Err(e) = started {
        // Without it, background records wait for the next Python call to deliver.
        FORWARDER_PID.store(0, Ordering::Release);
        eprintln!("telering: warn: cannot start the log forwarder thread: {e}");
    }
}

/// The forwarder thread: delivers records as they come, for as long as Python runs.
fn forward() {
    loop {
        {
            let mut queue = lock();
            while queue.records.is_empty() && queue.lost == 0 {
                queue = WAKE.wait(queue).unwrap_or_else(PoisonError::into_inner);
            }
        }
        if PYTHON_GONE.load(Ordering::Acquire) || Python::try_attach(deliver).is_none() {
            // Python is shutting down: what is left goes to stderr.
            PYTHON_GONE.store(true, Ordering::Release);
            let mut queue = lock();
            for record in queue.records.drain(..) {
                to_stderr(&record);
            }
            queue.lost = 0;
            return;
        }
    }
}

/// The package's `atexit` hook: delivers what waits, then sends later records to
/// stderr.
#[pyfunction(name = "_logs_at_exit")]
pub(crate) fn logs_at_exit(py: Python<'_>) {
    deliver(py);
    PYTHON_GONE.store(true, Ordering::Release);
    let mut queue = lock();
    for record in queue.records.drain(..) {
        to_stderr(&record);
    }
    drop(queue);
    WAKE.notify_one();
}
