//! Lifecycle: creating an agent's telemetry (from the environment or from options),
//! flushing, counters, and shutting down.

use crate::handle::{self, TELEMETRY};
use crate::status::{
    Failure, Outcome, Status, guard, optional_text, telering_status_t, text, write_out,
};
use std::ffi::c_char;
use std::time::Duration;
use telering_std::{
    ClockSource, ConfigError, EnvSource, Telemetry, TelemetryBuilder, TelemetryStats,
};

/// An agent's telemetry: recording from any number of threads, flushed to one
/// exporter. Opaque; made by `telering_create` or `telering_create_from_env`, ended
/// by `telering_destroy`.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct telering_t {
    _opaque: [u8; 0],
}

/// Which clock stamps events (telering-std's `ClockSource`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum telering_clock_t {
    /// The CPU's time-stamp counter where it is trusted, else `CLOCK_REALTIME`. The
    /// default.
    TELERING_CLOCK_AUTO = 0,
    /// `CLOCK_REALTIME`: microsecond-exact.
    TELERING_CLOCK_REALTIME = 1,
    /// `CLOCK_REALTIME_COARSE`: cheapest to read, resolution of the kernel tick.
    TELERING_CLOCK_REALTIME_COARSE = 2,
    /// The CPU's time-stamp counter, converted to wall time at flush.
    TELERING_CLOCK_TSC = 3,
}

/// Options for `telering_create`, one field per `NIXL_TELEMETRY_*` variable. Fill it
/// with `telering_options_init` first, then change the fields you need: a zero or NULL
/// field means the default.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug)]
pub struct telering_options_t {
    /// `sizeof(telering_options_t)`, set by `telering_options_init`; lets the library
    /// tell which version of the struct the program was compiled with.
    pub struct_size: u32,
    /// `NIXL_TELEMETRY_ENABLE`: nonzero exports events.
    pub enabled: u8,
    /// The agent configuration's `capture_telemetry`: nonzero captures per-transfer and
    /// backend telemetry even when exporting is off.
    pub capture_telemetry: u8,
    /// A `telering_clock_t`.
    pub clock: u8,
    /// Nonzero: the flush runs only at its interval, at `telering_flush` and at the
    /// end; a thread whose lane is half full does not wake it early (Rust's
    /// `TelemetryBuilder::early_flush(false)`). Zero: it does.
    pub flush_on_schedule: u8,
    /// `NIXL_TELEMETRY_BUFFER_SIZE`: events in the exporter's ring, a power of two
    /// from 2 to 2^20; 0 for 4096.
    pub buffer_size: u32,
    /// Events each recording thread's lane holds; 0 for `buffer_size`.
    pub lane_capacity: u32,
    /// `NIXL_TELEMETRY_RUN_INTERVAL` in milliseconds, 1 to 86 400 000; 0 for 100.
    pub run_interval_ms: u64,
    /// `NIXL_TELEMETRY_ENABLED_METRICS`: comma-separated `fnmatch` patterns; NULL or
    /// empty records every name.
    pub enabled_metrics: *const c_char,
    /// `NIXL_TELEMETRY_EXPORTER`: `buffer`, `csv`, `prometheus`, `prometheus_mp`,
    /// `otlp`, `nop`, or several separated by commas, each once (any case) and none
    /// empty (`buffer,,csv` is refused); NULL or empty for none (then `dir` set means
    /// `buffer`).
    pub exporter: *const c_char,
    /// `NIXL_TELEMETRY_DIR`; NULL or empty for none.
    pub dir: *const c_char,
}

const OPTIONS_SIZE: u32 = std::mem::size_of::<telering_options_t>() as u32;

/// The counters of a telemetry, for a progress line (see `telering_stats`); the
/// fields and meanings of Rust's `TelemetryStats` and Python's `stats()`.
///
/// Every recorded event ends in exactly one count: once recording threads are done
/// and a flush has run, `events_recorded == events_exported + events_dropped +
/// exporter_dropped + events_not_in_layout + events_undelivered`. Delivered means:
/// written to the file (`buffer`, `csv`); in a push the collector answered with a 2xx
/// status (`otlp`); folded into the metrics the endpoint serves (`prometheus`). With a
/// list of exporters these are the counts of the exporter that delivered fewest, with
/// every exporter's `export_errors` added up and `exporter_failing` set if any is.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default)]
pub struct telering_stats_t {
    /// Events recorded (passed the allowlist), written or dropped on the way.
    pub events_recorded: u64,
    /// Events lost at record time, before any exporter had them (the
    /// `TELERING_DROPPED` and `TELERING_CLOSED` answers): full lanes or backend buffers.
    pub events_dropped: u64,
    /// Events the exporter delivered (see above for what delivered means).
    pub events_exported: u64,
    /// Events the exporter lost after it was handed them: failed exports (a CSV write
    /// the disk refused), refused by a full shared-memory ring, written into a ring
    /// file another program then unlinked, or (a list) a full queue of one exporter.
    pub exporter_dropped: u64,
    /// Flushes done.
    pub flushes: u64,
    /// Failed attempts: exports that failed (a CSV write), OTLP pushes refused (4xx,
    /// 5xx), unreachable or unanswered in time, an endpoint that could not start.
    pub export_errors: u64,
    /// Recording threads with a lane.
    pub lanes: u64,
    /// Events the exporter's output cannot hold and left out, neither delivered nor
    /// lost: custom and backend events in a ring file of `TELERING_RING_LAYOUT=v4`.
    pub events_not_in_layout: u64,
    /// Events an aggregating exporter (`otlp`, `prometheus`) took but has not
    /// delivered: a collector down, refusing or not answering, a metrics port that
    /// could not be bound. Always 0 for the file exporters.
    pub events_undelivered: u64,
    /// 1 when the exporter is failing now (its last export failed, its last push was
    /// not delivered, or its endpoint could not start), else 0; 0 again once one
    /// succeeds.
    pub exporter_failing: u32,
}

/// An optional string option: empty or blank means unset, as for the variables.
fn set_option(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|t| !t.is_empty())
}

fn config_failure(function: &str, e: ConfigError) -> Failure {
    Failure::new(Status::TELERING_ERR_CONFIG, format!("{function}: {e}"))
}

fn with_prometheus(mut builder: TelemetryBuilder) -> TelemetryBuilder {
    telering_prometheus::register(builder.registry_mut());
    // `otlp` too: C and C++ agents push to OpenTelemetry collectors like Rust ones.
    telering_otlp::register(builder.registry_mut());
    builder
}

fn publish(telemetry: Telemetry, out: *mut *mut telering_t, function: &str) -> Outcome {
    let handle: *mut telering_t = handle::into_handle(TELEMETRY, telemetry);
    // SAFETY: `out` was checked non-NULL by the caller of `publish`, and is valid for
    // a write of a pointer (the API's contract).
    unsafe { out.write(handle) };
    let _ = function;
    Ok(Status::TELERING_OK)
}

/// Fills `options` with the defaults: disabled, no capture, every name allowed,
/// 4096 events, 100 ms, no exporter, no directory, the default clock
/// (`TELERING_CLOCK_AUTO`).
///
/// Returns `TELERING_OK`, or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `options` is NULL or valid for writing a `telering_options_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_options_init(
    options: *mut telering_options_t,
) -> telering_status_t {
    guard("telering_options_init", || {
        let defaults = telering_options_t {
            struct_size: OPTIONS_SIZE,
            enabled: 0,
            capture_telemetry: 0,
            clock: telering_clock_t::TELERING_CLOCK_AUTO as u8,
            flush_on_schedule: 0,
            buffer_size: 0,
            lane_capacity: 0,
            run_interval_ms: 0,
            enabled_metrics: std::ptr::null(),
            exporter: std::ptr::null(),
            dir: std::ptr::null(),
        };
        // SAFETY: the caller's contract for `options`.
        unsafe { write_out(options, defaults, "telering_options_init", "options") }?;
        Ok(Status::TELERING_OK)
    })
}

/// Creates the telemetry of agent `agent_name` from the process's `NIXL_TELEMETRY_*`
/// variables (as NIXL does), and stores it in `*out`. The ring file, when there is
/// one, is `$NIXL_TELEMETRY_DIR/<agent_name>`. Exporter-specific variables
/// (`NIXL_TELEMETRY_PROMETHEUS_*`) are read by the exporter.
///
/// Returns `TELERING_OK`; `TELERING_ERR_CONFIG` naming the variable and value at fault
/// (`NIXL_TELEMETRY_BUFFER_SIZE=1000 is not a power of two; use 512 or 1024`), or the
/// exporter that could not start; `TELERING_ERR_NULL_POINTER`;
/// `TELERING_ERR_INVALID_ARGUMENT` for an agent name that is not UTF-8. `*out` is
/// set to NULL on failure.
/// Thread safety: callable from any thread; reads the environment.
///
/// # Safety
///
/// `agent_name` is NULL or a NUL-terminated string; `out` is NULL or valid for
/// writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_create_from_env(
    agent_name: *const c_char,
    out: *mut *mut telering_t,
) -> telering_status_t {
    const F: &str = "telering_create_from_env";
    guard(F, || {
        crate::logging::install();
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, std::ptr::null_mut(), F, "out") }?;
        // SAFETY: the caller's contract for `agent_name`.
        let agent = unsafe { text(agent_name, F, "agent_name") }?;
        let builder = TelemetryBuilder::from_env(agent, &EnvSource::from_process())
            .map_err(|e| config_failure(F, e))?;
        let telemetry = with_prometheus(builder)
            .build()
            .map_err(|e| config_failure(F, e))?;
        publish(telemetry, out, F)
    })
}

/// Creates the telemetry of agent `agent_name` from `options` (the environment's
/// `NIXL_TELEMETRY_*` variables are not read, except exporter-specific ones such as
/// `NIXL_TELEMETRY_PROMETHEUS_PORT`), and stores it in `*out`.
///
/// Returns `TELERING_OK`; `TELERING_ERR_CONFIG` naming the option at fault (by its
/// variable's name); `TELERING_ERR_INVALID_ARGUMENT` when `options` was not filled by
/// `telering_options_init` (wrong `struct_size`), for an unknown clock, or for a
/// string that is not UTF-8; `TELERING_ERR_NULL_POINTER`. `*out` is set to NULL on
/// failure.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `agent_name` is NULL or a NUL-terminated string; `options` is NULL or points to a
/// `telering_options_t` whose string fields are NULL or NUL-terminated; `out` is NULL
/// or valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_create(
    agent_name: *const c_char,
    options: *const telering_options_t,
    out: *mut *mut telering_t,
) -> telering_status_t {
    const F: &str = "telering_create";
    guard(F, || {
        crate::logging::install();
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, std::ptr::null_mut(), F, "out") }?;
        // SAFETY: the caller's contract for `agent_name`.
        let agent = unsafe { text(agent_name, F, "agent_name") }?;
        if options.is_null() {
            return Err(Failure::null(F, "options"));
        }
        // SAFETY: non-NULL, and points to a `telering_options_t` (the contract).
        let o = unsafe { options.read() };
        if o.struct_size != OPTIONS_SIZE {
            return Err(Failure::new(
                Status::TELERING_ERR_INVALID_ARGUMENT,
                format!(
                    "{F}: options.struct_size is {}, not {OPTIONS_SIZE}; fill the options with telering_options_init first",
                    o.struct_size
                ),
            ));
        }
        let clock = match o.clock {
            0 => ClockSource::Auto,
            1 => ClockSource::Realtime,
            2 => ClockSource::RealtimeCoarse,
            3 => ClockSource::Tsc,
            other => {
                return Err(Failure::new(
                    Status::TELERING_ERR_INVALID_ARGUMENT,
                    format!(
                        "{F}: options.clock is {other}; use TELERING_CLOCK_AUTO (0), TELERING_CLOCK_REALTIME (1), TELERING_CLOCK_REALTIME_COARSE (2) or TELERING_CLOCK_TSC (3)"
                    ),
                ));
            }
        };
        let mut builder = Telemetry::builder(agent)
            .env(EnvSource::from_process())
            .enabled(o.enabled != 0)
            .capture_telemetry(o.capture_telemetry != 0)
            .early_flush(o.flush_on_schedule == 0)
            .clock(clock);
        if o.buffer_size != 0 {
            builder = builder.buffer_size(o.buffer_size);
        }
        if o.lane_capacity != 0 {
            builder = builder.lane_capacity(o.lane_capacity);
        }
        if o.run_interval_ms != 0 {
            builder = builder.run_interval(Duration::from_millis(o.run_interval_ms));
        }
        // SAFETY: the contract for the options' string fields (NULL or NUL-terminated).
        let metrics = unsafe { optional_text(o.enabled_metrics, F, "options.enabled_metrics") }?;
        if let Some(m) = metrics {
            builder = builder.enabled_metrics(m);
        }
        // SAFETY: as above.
        // Empty or blank strings mean unset, as for the variables.
        if let Some(e) = set_option(unsafe { optional_text(o.exporter, F, "options.exporter") }?) {
            builder = builder.exporter(e);
        }
        // SAFETY: as above.
        if let Some(d) = set_option(unsafe { optional_text(o.dir, F, "options.dir") }?) {
            builder = builder.dir(d);
        }
        let telemetry = with_prometheus(builder)
            .build()
            .map_err(|e| config_failure(F, e))?;
        publish(telemetry, out, F)
    })
}

/// Exports everything recorded so far now, on this thread, and makes the exporter
/// flush its output (`msync`, `fsync`). The periodic flush keeps its schedule.
///
/// Returns `TELERING_OK`; `TELERING_ERR_EXPORT` naming the exporter and what failed
/// (the batch is counted as dropped); `TELERING_ERR_INVALID_HANDLE`;
/// `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any thread, concurrently with recording.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_flush(telemetry: *const telering_t) -> telering_status_t {
    const F: &str = "telering_flush";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t: &Telemetry = unsafe { handle::get(telemetry, TELEMETRY, F, "telemetry") }?;
        t.flush()
            .map_err(|e| Failure::new(Status::TELERING_ERR_EXPORT, format!("{F}: {e}")))?;
        Ok(Status::TELERING_OK)
    })
}

/// Copies the telemetry's counters into `*stats`.
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any thread (takes a lock recording never takes).
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `stats` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_stats(
    telemetry: *const telering_t,
    stats: *mut telering_stats_t,
) -> telering_status_t {
    const F: &str = "telering_stats";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t: &Telemetry = unsafe { handle::get(telemetry, TELEMETRY, F, "telemetry") }?;
        // SAFETY: the caller's contract for `stats`.
        unsafe { write_out(stats, c_stats(&t.stats()), F, "stats") }?;
        Ok(Status::TELERING_OK)
    })
}

/// The C form of the statistics.
fn c_stats(s: &TelemetryStats) -> telering_stats_t {
    telering_stats_t {
        events_recorded: s.events_recorded,
        events_dropped: s.events_dropped,
        events_exported: s.events_exported,
        exporter_dropped: s.exporter_dropped,
        flushes: s.flushes,
        export_errors: s.export_errors,
        lanes: s.lanes as u64,
        events_not_in_layout: s.events_not_in_layout,
        events_undelivered: s.events_undelivered,
        exporter_failing: u32::from(s.exporter_failing),
    }
}

/// Whether events are exported (1) or not (0): recording with the export off returns
/// `TELERING_FILTERED` without doing anything. `*exports` receives the answer.
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `exports` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_exports(
    telemetry: *const telering_t,
    exports: *mut i32,
) -> telering_status_t {
    const F: &str = "telering_exports";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t: &Telemetry = unsafe { handle::get(telemetry, TELEMETRY, F, "telemetry") }?;
        // SAFETY: the caller's contract for `exports`.
        unsafe { write_out(exports, i32::from(t.exports()), F, "exports") }?;
        Ok(Status::TELERING_OK)
    })
}

/// `telering_destroy` that also stores, when `stats` is not NULL, the statistics after
/// the shutdown in `*stats`: what the exporter's last export delivered (an OTLP
/// exporter's last push, bounded by `TELERING_OTLP_SHUTDOWN_TIMEOUT`, default 2 s)
/// and, in `events_undelivered`, what it could not. `telering_stats` cannot see
/// those: they happen as the handle is freed.
///
/// Returns `TELERING_OK`; `TELERING_ERR_INVALID_HANDLE` when `telemetry` was already
/// destroyed or is not a `telering_t` (detected without touching it; `*stats` is
/// then left as it was); `TELERING_ERR_NULL_POINTER` when `telemetry` is NULL.
/// Thread safety: as `telering_destroy`.
///
/// ```c
/// telering_stats_t final_stats;
/// telering_close(t, &final_stats);
/// if (final_stats.events_undelivered > 0) { /* the collector never got them */ }
/// ```
///
/// # Safety
///
/// `telemetry` is NULL, a live `telering_t`, or one already destroyed (detected);
/// `stats` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_close(
    telemetry: *mut telering_t,
    stats: *mut telering_stats_t,
) -> telering_status_t {
    const F: &str = "telering_close";
    guard(F, || {
        if telemetry.is_null() {
            return Err(Failure::null(F, "telemetry"));
        }
        // SAFETY: the caller's contract; closing flushes and shuts the exporter down.
        let t: Option<Telemetry> = unsafe { handle::destroy(telemetry, TELEMETRY, F) }?;
        if let Some(t) = t {
            let last = c_stats(&t.close());
            if !stats.is_null() {
                // SAFETY: `stats` is non-NULL and, by the caller's contract, valid for
                // writing.
                unsafe { stats.write(last) };
            }
        }
        Ok(Status::TELERING_OK)
    })
}

/// Shuts the telemetry down: stops the flush thread, exports everything still
/// recorded, closes the exporter (a ring file is marked cleanly closed), and frees
/// the handle. Event, transfer and backend handles made from it must not be used
/// with it afterwards (destroy them too). NULL does nothing. `telering_close` does the
/// same and hands back the statistics after the shutdown.
///
/// Returns `TELERING_OK`; `TELERING_ERR_INVALID_HANDLE` when `telemetry` was already
/// destroyed or is not a `telering_t` (detected without touching it).
/// Thread safety: no other call may use `telemetry` while, or after, it is
/// destroyed; recording threads must have stopped using it.
///
/// # Safety
///
/// `telemetry` is NULL, a live `telering_t`, or one already destroyed (detected).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_destroy(telemetry: *mut telering_t) -> telering_status_t {
    const F: &str = "telering_destroy";
    guard(F, || {
        // SAFETY: the caller's contract; dropping the telemetry flushes and closes.
        let t: Option<Telemetry> = unsafe { handle::destroy(telemetry, TELEMETRY, F) }?;
        drop(t);
        Ok(Status::TELERING_OK)
    })
}
