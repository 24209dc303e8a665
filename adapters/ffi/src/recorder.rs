//! `telering_recorder_t`: the recording calls bound to the thread that made the
//! recorder, each a direct push into that thread's lane (telering-std's `Recorder`),
//! with no thread-local lookup.
//!
//! A recorder belongs to its thread: make it on the thread that records
//! (`telering_recorder_create`), record through it there, destroy it there. It
//! shares the thread's lane with the thread's calls through the `telering_t`, so
//! their events keep one order and one count. A call from another thread is a
//! programming error: debug builds of the library refuse it
//! (`TELERING_ERR_INVALID_HANDLE`, naming both threads); release builds do not check,
//! and the behaviour is undefined.
//!
//! A recorder keeps what it records into alive, but not the telemetry's flush: once
//! its `telering_t` is destroyed, each of its recording calls answers
//! `TELERING_CLOSED` (the event is not written and is counted as dropped), never
//! `TELERING_OK` for an event nothing would ever export.

use crate::handle::{self, RECORDER, TELEMETRY, XFER};
use crate::names::{event_name, event_name_len};
use crate::record::status_of;
use crate::status::{Failure, Status, guard, telering_status_t, write_out};
use crate::telemetry::telering_t;
use std::ffi::c_char;
use std::thread::ThreadId;
use telering_core::builtin::ErrorStatus;
use telering_std::{Recorded, Recorder, Telemetry, XferError, XferHandle};

/// A thread's recorder for one `telering_t`. Opaque; made by
/// `telering_recorder_create`, freed by `telering_recorder_destroy`, both on the
/// thread that records through it.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct telering_recorder_t {
    _opaque: [u8; 0],
}

/// A recorder and the thread it belongs to.
#[derive(Debug)]
struct Bound {
    recorder: Recorder,
    /// Checked in debug builds only: reading the current thread's id costs more
    /// than the push it guards.
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    owner: ThreadId,
}

impl Bound {
    /// Refuses a call from a thread other than the owner (debug builds).
    #[inline(always)]
    fn on_its_thread(&self, function: &str) -> Result<(), Failure> {
        #[cfg(debug_assertions)]
        {
            let here = std::thread::current().id();
            if here != self.owner {
                return Err(Failure::new(
                    Status::TELERING_ERR_INVALID_HANDLE,
                    format!(
                        "{function}: argument `recorder` belongs to thread {:?} and was used from thread {here:?}; a telering_recorder_t is bound to the thread that created it",
                        self.owner
                    ),
                ));
            }
        }
        let _ = function;
        Ok(())
    }
}

/// The status of `recorded`, recorded through `r`: `TELERING_CLOSED` for an event
/// its destroyed telemetry refused (checked on the dropping path only).
#[inline(always)]
fn outcome(r: &Recorder, recorded: Recorded) -> telering_status_t {
    match recorded {
        Recorded::Dropped if r.is_closed() => Status::TELERING_CLOSED,
        other => status_of(other),
    }
}

/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t`.
#[inline(always)]
unsafe fn recorder<'a>(
    recorder: *const telering_recorder_t,
    function: &str,
) -> Result<&'a Recorder, Failure> {
    // SAFETY: forwarded; a recorder is only ever used by its own thread, so shared
    // access from this call is all there is.
    let bound: &Bound = unsafe { handle::get(recorder, RECORDER, function, "recorder") }?;
    bound.on_its_thread(function)?;
    Ok(&bound.recorder)
}

/// Makes a recorder for the calling thread and stores it in `*out`: the thread's
/// lane for `telemetry` (registered now if the thread has none), shared with the
/// thread's calls through `telemetry`. Make it once per thread, outside the loop that
/// records; destroy it before `telemetry`.
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`;
/// `*out` is NULL on failure.
/// Thread safety: callable from any thread; the recorder is bound to the calling
/// thread (see `telering_recorder_update_tx_bytes`).
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `out` is NULL or valid for writing a
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_create(
    telemetry: *const telering_t,
    out: *mut *mut telering_recorder_t,
) -> telering_status_t {
    const F: &str = "telering_recorder_create";
    guard(F, || {
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, std::ptr::null_mut(), F, "out") }?;
        // SAFETY: the caller's contract.
        let t: &Telemetry = unsafe { handle::get(telemetry, TELEMETRY, F, "telemetry") }?;
        let bound = Bound {
            recorder: t.recorder(),
            owner: std::thread::current().id(),
        };
        let handle = handle::into_handle(RECORDER, bound);
        // SAFETY: `out` is non-NULL (checked) and valid for writes.
        unsafe { out.write(handle) };
        Ok(Status::TELERING_OK)
    })
}

/// `telering_update_tx_bytes` through the thread's recorder: `agent_tx_bytes`, bytes sent.
///
/// Returns `TELERING_OK` (written), `TELERING_FILTERED` (export off or the
/// allowlist excludes it), `TELERING_DROPPED` (the lane was full; counted),
/// `TELERING_CLOSED` (the recorder's `telering_t` was destroyed: not written, counted),
/// `TELERING_ERR_INVALID_HANDLE` (also, in debug builds, a call from another thread
/// than the recorder's) or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: only on the thread that created `recorder`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_update_tx_bytes(
    recorder: *const telering_recorder_t,
    bytes: u64,
) -> telering_status_t {
    const F: &str = "telering_recorder_update_tx_bytes";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        Ok(outcome(r, r.update_tx_bytes(bytes)))
    })
}

/// `telering_update_rx_bytes` through the thread's recorder: `agent_rx_bytes`, bytes received.
///
/// Returns as `telering_recorder_update_tx_bytes`.
/// Thread safety: only on the thread that created `recorder`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_update_rx_bytes(
    recorder: *const telering_recorder_t,
    bytes: u64,
) -> telering_status_t {
    const F: &str = "telering_recorder_update_rx_bytes";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        Ok(outcome(r, r.update_rx_bytes(bytes)))
    })
}

/// `telering_update_tx_requests_num` through the thread's recorder.
///
/// Returns as `telering_recorder_update_tx_bytes`.
/// Thread safety: only on the thread that created `recorder`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_update_tx_requests_num(
    recorder: *const telering_recorder_t,
    requests: u64,
) -> telering_status_t {
    const F: &str = "telering_recorder_update_tx_requests_num";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        Ok(outcome(r, r.update_tx_requests_num(requests)))
    })
}

/// `telering_update_rx_requests_num` through the thread's recorder.
///
/// Returns as `telering_recorder_update_tx_bytes`.
/// Thread safety: only on the thread that created `recorder`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_update_rx_requests_num(
    recorder: *const telering_recorder_t,
    requests: u64,
) -> telering_status_t {
    const F: &str = "telering_recorder_update_rx_requests_num";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        Ok(outcome(r, r.update_rx_requests_num(requests)))
    })
}

/// `telering_update_memory_registered` through the thread's recorder.
///
/// Returns as `telering_recorder_update_tx_bytes`.
/// Thread safety: only on the thread that created `recorder`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_update_memory_registered(
    recorder: *const telering_recorder_t,
    bytes: u64,
) -> telering_status_t {
    const F: &str = "telering_recorder_update_memory_registered";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        Ok(outcome(r, r.update_memory_registered(bytes)))
    })
}

/// `telering_update_memory_deregistered` through the thread's recorder.
///
/// Returns as `telering_recorder_update_tx_bytes`.
/// Thread safety: only on the thread that created `recorder`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_update_memory_deregistered(
    recorder: *const telering_recorder_t,
    bytes: u64,
) -> telering_status_t {
    const F: &str = "telering_recorder_update_memory_deregistered";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        Ok(outcome(r, r.update_memory_deregistered(bytes)))
    })
}

/// `telering_update_error_count` through the thread's recorder: one occurrence of
/// the NIXL error status `nixl_status` (-1 to -12).
///
/// Returns as `telering_recorder_update_tx_bytes`, and
/// `TELERING_ERR_INVALID_ARGUMENT` for a status out of range.
/// Thread safety: only on the thread that created `recorder`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_update_error_count(
    recorder: *const telering_recorder_t,
    nixl_status: i32,
) -> telering_status_t {
    const F: &str = "telering_recorder_update_error_count";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        let index = usize::try_from(-(nixl_status as i64) - 1).ok();
        let status = index
            .and_then(|i| ErrorStatus::ALL.get(i).copied())
            .ok_or_else(|| {
                Failure::new(
                    Status::TELERING_ERR_INVALID_ARGUMENT,
                    format!("{F}: argument `nixl_status` is {nixl_status}; NIXL error statuses are -1 (NIXL_ERR_NOT_POSTED) to -12 (NIXL_ERR_NO_TELEMETRY)"),
                )
            })?;
        Ok(outcome(r, r.update_error_count(status)))
    })
}

/// `telering_add_xfer_stats` through the thread's recorder: one completed transfer's
/// four events, all or none.
///
/// Returns as `telering_recorder_update_tx_bytes`.
/// Thread safety: only on the thread that created `recorder`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_add_xfer_stats(
    recorder: *const telering_recorder_t,
    xfer_time_us: u64,
    is_write: i32,
    bytes: u64,
    post_time_us: u64,
) -> telering_status_t {
    const F: &str = "telering_recorder_add_xfer_stats";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        Ok(outcome(
            r,
            r.add_xfer_stats_us(xfer_time_us, is_write != 0, bytes, post_time_us),
        ))
    })
}

/// `telering_record` through the thread's recorder: a custom event `name` = `value`
/// in `category`.
///
/// Returns as `telering_record`, and `TELERING_ERR_INVALID_HANDLE` in debug builds
/// for a call from another thread than the recorder's.
/// Thread safety: only on the thread that created `recorder`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread; `name`
/// is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_record(
    recorder: *const telering_recorder_t,
    category: i32,
    name: *const c_char,
    value: u64,
) -> telering_status_t {
    const F: &str = "telering_recorder_record";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        let category = crate::names::category(category, F)?;
        // SAFETY: the caller's contract for `name`.
        let name = unsafe { event_name(name, F) }?;
        Ok(outcome(r, r.record_event(category, &name, value)))
    })
}

/// `telering_recorder_record` with a name given as `name_len` bytes at `name`.
///
/// Returns as `telering_recorder_record`.
/// Thread safety: only on the thread that created `recorder`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread; `name`
/// is NULL or valid for reading `name_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_record_len(
    recorder: *const telering_recorder_t,
    category: i32,
    name: *const c_char,
    name_len: usize,
    value: u64,
) -> telering_status_t {
    const F: &str = "telering_recorder_record_len";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        let category = crate::names::category(category, F)?;
        // SAFETY: the caller's contract for `name`.
        let name = unsafe { event_name_len(name, name_len, F) }?;
        Ok(outcome(r, r.record_event(category, &name, value)))
    })
}

/// `telering_xfer_completed` through the thread's recorder: marks `xfer` (started
/// with `telering_xfer_start` on the recorder's `telering_t`) complete and records
/// it once into the thread's lane.
///
/// Returns as `telering_xfer_completed`.
/// Thread safety: only on the thread that created `recorder`; one thread at a time
/// per `xfer`.
///
/// # Safety
///
/// `recorder` is NULL or a live `telering_recorder_t` of the calling thread; `xfer`
/// is NULL or a live `telering_xfer_t` used by this call only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_xfer_completed(
    recorder: *const telering_recorder_t,
    xfer: *mut crate::xfer::telering_xfer_t,
) -> telering_status_t {
    const F: &str = "telering_recorder_xfer_completed";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r = unsafe { self::recorder(recorder, F) }?;
        // SAFETY: the caller's contract.
        let x: &mut XferHandle = unsafe { handle::get_mut(xfer, XFER, F, "xfer") }?;
        let recorded = r.xfer_completed(x).map_err(|e| xfer_error(F, e))?;
        Ok(outcome(r, recorded))
    })
}

fn xfer_error(function: &str, e: XferError) -> Failure {
    let status = match e {
        XferError::OtherTelemetry => Status::TELERING_ERR_INVALID_ARGUMENT,
        _ => Status::TELERING_ERR_NO_TELEMETRY,
    };
    Failure::new(status, format!("{function}: {e}"))
}

/// Frees a recorder. NULL does nothing. Events it recorded stay in the thread's lane
/// for the next flush.
///
/// Returns `TELERING_OK`, or `TELERING_ERR_INVALID_HANDLE` when it was already
/// destroyed, is another type of handle, or (debug builds) belongs to another thread
/// (it is then left alive).
/// Thread safety: only on the thread that created `recorder`; no other call may use
/// it at the same time or afterwards.
///
/// # Safety
///
/// `recorder` is NULL, a live `telering_recorder_t` of the calling thread, or one
/// already destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_recorder_destroy(
    recorder: *mut telering_recorder_t,
) -> telering_status_t {
    const F: &str = "telering_recorder_destroy";
    guard(F, || {
        if handle::is_live(recorder) {
            // SAFETY: a live handle (its memory is not freed); the thread is checked
            // before it is destroyed.
            unsafe { self::recorder(recorder, F) }?;
        }
        // SAFETY: the caller's contract.
        let _: Option<Bound> = unsafe { handle::destroy(recorder, RECORDER, F) }?;
        Ok(Status::TELERING_OK)
    })
}
