//! Per-transfer telemetry, as NIXL's transfer handles carry it: start, posted,
//! completed, then the five fields of `nixl_xfer_telem_t`.

use crate::handle::{self, TELEMETRY, XFER};
use crate::record::status_of;
use crate::status::{Failure, Status, guard, telering_status_t, write_out};
use crate::telemetry::telering_t;
use telering_std::{Telemetry, XferError, XferHandle};

/// One transfer's telemetry in progress. Opaque; made by `telering_xfer_start`, freed
/// by `telering_xfer_destroy`. One thread at a time per transfer.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct telering_xfer_t {
    _opaque: [u8; 0],
}

/// A transfer's telemetry: the five fields of NIXL's `nixl_xfer_telem_t`, in
/// microseconds and counts.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct telering_xfer_telemetry_t {
    /// `startTime`: when the transfer started, µs since the Unix epoch.
    pub start_time_us: u64,
    /// `postDuration`: how long posting took, µs.
    pub post_duration_us: u64,
    /// `xferDuration`: start to completion, µs (0 until completed).
    pub xfer_duration_us: u64,
    /// `totalBytes`: bytes the transfer moves.
    pub total_bytes: u64,
    /// `descCount`: descriptors it covers.
    pub desc_count: u64,
}

/// Starts a transfer's telemetry and stores its handle in `*out`: `is_write`
/// nonzero for bytes sent (tx), 0 for bytes received (rx). When capture is off the
/// handle still works, and `telering_xfer_get_telemetry` answers
/// `TELERING_ERR_NO_TELEMETRY`.
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`;
/// `*out` is NULL on failure.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `out` is NULL or valid for writing a
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_xfer_start(
    telemetry: *const telering_t,
    is_write: i32,
    total_bytes: u64,
    desc_count: u64,
    out: *mut *mut telering_xfer_t,
) -> telering_status_t {
    const F: &str = "telering_xfer_start";
    guard(F, || {
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, std::ptr::null_mut(), F, "out") }?;
        // SAFETY: the caller's contract.
        let t: &Telemetry = unsafe { handle::get(telemetry, TELEMETRY, F, "telemetry") }?;
        let xfer = t.start_xfer(is_write != 0, total_bytes, desc_count);
        let handle = handle::into_handle(XFER, xfer);
        // SAFETY: `out` is non-NULL (checked) and valid for writes.
        unsafe { out.write(handle) };
        Ok(Status::TELERING_OK)
    })
}

/// # Safety
///
/// Both are NULL or live handles of their types; `xfer` is used by this call only.
unsafe fn both<'a>(
    telemetry: *const telering_t,
    xfer: *mut telering_xfer_t,
    function: &str,
) -> Result<(&'a Telemetry, &'a mut XferHandle), Failure> {
    // SAFETY: forwarded.
    let t = unsafe { handle::get(telemetry, TELEMETRY, function, "telemetry") }?;
    // SAFETY: forwarded.
    let x = unsafe { handle::get_mut(xfer, XFER, function, "xfer") }?;
    Ok((t, x))
}

/// Marks the transfer posted: its post duration is the time since its start. Only
/// the first call counts.
///
/// Returns `TELERING_OK`, `TELERING_ERR_NO_TELEMETRY` when capture is off,
/// `TELERING_ERR_INVALID_ARGUMENT` when another `telering_t` started `xfer` (it is
/// left unchanged), `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: one thread at a time per `xfer`.
///
/// # Safety
///
/// `telemetry` and `xfer` are NULL or live handles, `xfer` from `telemetry`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_xfer_posted(
    telemetry: *const telering_t,
    xfer: *mut telering_xfer_t,
) -> telering_status_t {
    const F: &str = "telering_xfer_posted";
    guard(F, || {
        // SAFETY: the caller's contract.
        let (t, x) = unsafe { both(telemetry, xfer, F) }?;
        t.xfer_posted(x).map_err(|e| xfer_error(F, e))?;
        t.xfer_telemetry(x).map_err(|e| xfer_error(F, e))?;
        Ok(Status::TELERING_OK)
    })
}

/// Marks the transfer complete: its duration is the time since its start, and it is
/// recorded once, as `telering_add_xfer_stats` records. A second call records nothing
/// and returns `TELERING_FILTERED`.
///
/// Returns `TELERING_OK`, `TELERING_FILTERED`, `TELERING_DROPPED` (as for recording),
/// `TELERING_ERR_NO_TELEMETRY` when capture is off, `TELERING_ERR_INVALID_ARGUMENT`
/// when another `telering_t` started `xfer`, `TELERING_ERR_INVALID_HANDLE` or
/// `TELERING_ERR_NULL_POINTER`.
/// Thread safety: one thread at a time per `xfer`.
///
/// # Safety
///
/// As for `telering_xfer_posted`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_xfer_completed(
    telemetry: *const telering_t,
    xfer: *mut telering_xfer_t,
) -> telering_status_t {
    const F: &str = "telering_xfer_completed";
    guard(F, || {
        // SAFETY: the caller's contract.
        let (t, x) = unsafe { both(telemetry, xfer, F) }?;
        t.xfer_telemetry(x).map_err(|e| xfer_error(F, e))?;
        let recorded = t.xfer_completed(x).map_err(|e| xfer_error(F, e))?;
        Ok(status_of(recorded))
    })
}

/// Copies the transfer's telemetry so far into `*out`, as NIXL's
/// `getXferTelemetry`.
///
/// Returns `TELERING_OK`; `TELERING_ERR_NO_TELEMETRY` when capture is off
/// (`NIXL_TELEMETRY_ENABLE` unset and `capture_telemetry` 0), with `*out` zeroed;
/// `TELERING_ERR_INVALID_ARGUMENT` when another `telering_t` started `xfer`;
/// `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: one thread at a time per `xfer`.
///
/// # Safety
///
/// As for `telering_xfer_posted`; `out` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_xfer_get_telemetry(
    telemetry: *const telering_t,
    xfer: *mut telering_xfer_t,
    out: *mut telering_xfer_telemetry_t,
) -> telering_status_t {
    const F: &str = "telering_xfer_get_telemetry";
    guard(F, || {
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, telering_xfer_telemetry_t::default(), F, "out") }?;
        // SAFETY: the caller's contract.
        let (t, x) = unsafe { both(telemetry, xfer, F) }?;
        let got = t.xfer_telemetry(x).map_err(|e| xfer_error(F, e))?;
        let micros = |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let value = telering_xfer_telemetry_t {
            start_time_us: got.start_time_us,
            post_duration_us: micros(got.post_duration),
            xfer_duration_us: micros(got.xfer_duration),
            total_bytes: got.total_bytes,
            desc_count: got.descriptor_count,
        };
        // SAFETY: as above.
        unsafe { write_out(out, value, F, "out") }?;
        Ok(Status::TELERING_OK)
    })
}

/// Frees a transfer handle. NULL does nothing.
///
/// Returns `TELERING_OK`, or `TELERING_ERR_INVALID_HANDLE` when it was already
/// destroyed or is another type of handle.
/// Thread safety: no other call may use `xfer` at the same time or afterwards.
///
/// # Safety
///
/// `xfer` is NULL, a live `telering_xfer_t`, or one already destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_xfer_destroy(xfer: *mut telering_xfer_t) -> telering_status_t {
    const F: &str = "telering_xfer_destroy";
    guard(F, || {
        // SAFETY: the caller's contract.
        let _: Option<XferHandle> = unsafe { handle::destroy(xfer, XFER, F) }?;
        Ok(Status::TELERING_OK)
    })
}

/// The status of a per-transfer call that could not answer: no capture, or a
/// transfer that another telemetry started (an invalid argument, left unchanged).
fn xfer_error(function: &str, e: XferError) -> Failure {
    let status = match e {
        XferError::OtherTelemetry => Status::TELERING_ERR_INVALID_ARGUMENT,
        _ => Status::TELERING_ERR_NO_TELEMETRY,
    };
    Failure::new(status, format!("{function}: {e}"))
}
