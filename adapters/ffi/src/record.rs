//! Recording: NIXL's built-in events, custom events by name, and `add_xfer_stats`
//! (pre-resolved names are in `event_handle`).
//!
//! Every recording function is callable from any number of threads at once on one
//! `telering_t`: each thread writes its own lock-free lane (telering-std), and after
//! a thread's first event no call takes a lock or allocates.

use crate::handle::{self, TELEMETRY};
use crate::names::{event_name, event_name_len};
use crate::status::{Failure, Status, guard, telering_status_t};
use crate::telemetry::telering_t;
use std::ffi::c_char;
use telering_core::builtin::ErrorStatus;
use telering_std::Recorded;
use telering_std::Telemetry;

/// NIXL's `NIXL_ERR_NOT_POSTED` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_NOT_POSTED: i32 = -1;
/// NIXL's `NIXL_ERR_INVALID_PARAM` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_INVALID_PARAM: i32 = -2;
/// NIXL's `NIXL_ERR_BACKEND` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_BACKEND: i32 = -3;
/// NIXL's `NIXL_ERR_NOT_FOUND` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_NOT_FOUND: i32 = -4;
/// NIXL's `NIXL_ERR_MISMATCH` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_MISMATCH: i32 = -5;
/// NIXL's `NIXL_ERR_NOT_ALLOWED` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_NOT_ALLOWED: i32 = -6;
/// NIXL's `NIXL_ERR_REPOST_ACTIVE` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_REPOST_ACTIVE: i32 = -7;
/// NIXL's `NIXL_ERR_UNKNOWN` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_UNKNOWN: i32 = -8;
/// NIXL's `NIXL_ERR_NOT_SUPPORTED` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_NOT_SUPPORTED: i32 = -9;
/// NIXL's `NIXL_ERR_REMOTE_DISCONNECT` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_REMOTE_DISCONNECT: i32 = -10;
/// NIXL's `NIXL_ERR_CANCELED` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_CANCELED: i32 = -11;
/// NIXL's `NIXL_ERR_NO_TELEMETRY` (`nixl_status_t` value), for `telering_update_error_count`.
pub const TELERING_NIXL_ERR_NO_TELEMETRY: i32 = -12;

pub(crate) fn status_of(recorded: Recorded) -> telering_status_t {
    match recorded {
        Recorded::Written => Status::TELERING_OK,
        Recorded::Dropped => Status::TELERING_DROPPED,
        // The C API keeps one status for "recorded nothing on purpose".
        Recorded::Filtered
        | Recorded::Disabled
        | Recorded::CaptureOnly
        | Recorded::AlreadyCompleted => Status::TELERING_FILTERED,
    }
}

/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[inline(always)]
pub(crate) unsafe fn telemetry<'a>(
    telemetry: *const telering_t,
    function: &str,
) -> Result<&'a Telemetry, Failure> {
    // SAFETY: forwarded.
    unsafe { handle::get(telemetry, TELEMETRY, function, "telemetry") }
}

/// Records `agent_tx_bytes` (TRANSFER): bytes sent.
///
/// Returns `TELERING_OK` (written), `TELERING_FILTERED` (export off or the
/// allowlist excludes it), `TELERING_DROPPED` (the lane was full; counted),
/// `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_update_tx_bytes(
    telemetry: *const telering_t,
    bytes: u64,
) -> telering_status_t {
    const F: &str = "telering_update_tx_bytes";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        Ok(status_of(t.update_tx_bytes(bytes)))
    })
}

/// Records `agent_rx_bytes` (TRANSFER): bytes received.
///
/// Returns `TELERING_OK` (written), `TELERING_FILTERED` (export off or the
/// allowlist excludes it), `TELERING_DROPPED` (the lane was full; counted),
/// `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_update_rx_bytes(
    telemetry: *const telering_t,
    bytes: u64,
) -> telering_status_t {
    const F: &str = "telering_update_rx_bytes";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        Ok(status_of(t.update_rx_bytes(bytes)))
    })
}

/// Records `agent_tx_requests_num` (TRANSFER): send requests.
///
/// Returns `TELERING_OK` (written), `TELERING_FILTERED` (export off or the
/// allowlist excludes it), `TELERING_DROPPED` (the lane was full; counted),
/// `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_update_tx_requests_num(
    telemetry: *const telering_t,
    requests: u64,
) -> telering_status_t {
    const F: &str = "telering_update_tx_requests_num";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        Ok(status_of(t.update_tx_requests_num(requests)))
    })
}

/// Records `agent_rx_requests_num` (TRANSFER): receive requests.
///
/// Returns `TELERING_OK` (written), `TELERING_FILTERED` (export off or the
/// allowlist excludes it), `TELERING_DROPPED` (the lane was full; counted),
/// `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_update_rx_requests_num(
    telemetry: *const telering_t,
    requests: u64,
) -> telering_status_t {
    const F: &str = "telering_update_rx_requests_num";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        Ok(status_of(t.update_rx_requests_num(requests)))
    })
}

/// Records `agent_memory_registered` (MEMORY): bytes registered.
///
/// Returns `TELERING_OK` (written), `TELERING_FILTERED` (export off or the
/// allowlist excludes it), `TELERING_DROPPED` (the lane was full; counted),
/// `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_update_memory_registered(
    telemetry: *const telering_t,
    bytes: u64,
) -> telering_status_t {
    const F: &str = "telering_update_memory_registered";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        Ok(status_of(t.update_memory_registered(bytes)))
    })
}

/// Records `agent_memory_deregistered` (MEMORY): bytes deregistered.
///
/// Returns `TELERING_OK` (written), `TELERING_FILTERED` (export off or the
/// allowlist excludes it), `TELERING_DROPPED` (the lane was full; counted),
/// `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_update_memory_deregistered(
    telemetry: *const telering_t,
    bytes: u64,
) -> telering_status_t {
    const F: &str = "telering_update_memory_deregistered";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        Ok(status_of(t.update_memory_deregistered(bytes)))
    })
}

/// Records one occurrence of a NIXL error status: an ERROR event named by the status
/// (`NIXL_ERR_BACKEND`, …) with value 1. `nixl_status` is NIXL's `nixl_status_t`
/// value, `TELERING_NIXL_ERR_NOT_POSTED` (-1) to `TELERING_NIXL_ERR_NO_TELEMETRY` (-12).
///
/// Returns as `telering_update_tx_bytes`, and `TELERING_ERR_INVALID_ARGUMENT` for a
/// value that is not a NIXL error status.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_update_error_count(
    telemetry: *const telering_t,
    nixl_status: i32,
) -> telering_status_t {
    const F: &str = "telering_update_error_count";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        let index = usize::try_from(-(nixl_status as i64) - 1).ok();
        let status = index
            .and_then(|i| ErrorStatus::ALL.get(i).copied())
            .ok_or_else(|| {
                Failure::new(
                    Status::TELERING_ERR_INVALID_ARGUMENT,
                    format!("{F}: argument `nixl_status` is {nixl_status}; NIXL error statuses are -1 (NIXL_ERR_NOT_POSTED) to -12 (NIXL_ERR_NO_TELEMETRY)"),
                )
            })?;
        Ok(status_of(t.update_error_count(status)))
    })
}

/// Records one completed transfer, all or none, as NIXL's `addXferStats`:
/// `agent_tx_bytes` (or `agent_rx_bytes` when `is_write` is 0) = `bytes`,
/// `agent_tx_requests_num` (or rx) = 1, `agent_xfer_time` = `xfer_time_us` and
/// `agent_xfer_post_time` = `post_time_us`, with one timestamp. If the lane lacks
/// room for all of them, none is written and all are counted as dropped.
///
/// Returns as `telering_update_tx_bytes`.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_add_xfer_stats(
    telemetry: *const telering_t,
    xfer_time_us: u64,
    is_write: i32,
    bytes: u64,
    post_time_us: u64,
) -> telering_status_t {
    const F: &str = "telering_add_xfer_stats";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        Ok(status_of(t.add_xfer_stats_us(
            xfer_time_us,
            is_write != 0,
            bytes,
            post_time_us,
        )))
    })
}

/// Records a custom event `name` = `value` in `category` (a `telering_category_t`),
/// timestamped now. The name must be 1 to 31 bytes of UTF-8; the allowlist applies.
///
/// Returns as `telering_update_tx_bytes`, and `TELERING_ERR_INVALID_NAME` (the message
/// quotes the name and says why), `TELERING_ERR_INVALID_ARGUMENT` for a category out
/// of range.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `name` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_record(
    telemetry: *const telering_t,
    category: i32,
    name: *const c_char,
    value: u64,
) -> telering_status_t {
    const F: &str = "telering_record";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        let category = crate::names::category(category, F)?;
        // SAFETY: the caller's contract for `name`.
        let name = unsafe { event_name(name, F) }?;
        Ok(status_of(t.record_event(category, &name, value)))
    })
}

/// `telering_record` with a name given as `name_len` bytes at `name` (no NUL needed),
/// for C++ `std::string_view` and other counted strings.
///
/// Returns as `telering_record`.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `name` is NULL or valid for reading
/// `name_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_record_len(
    telemetry: *const telering_t,
    category: i32,
    name: *const c_char,
    name_len: usize,
    value: u64,
) -> telering_status_t {
    const F: &str = "telering_record_len";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        let category = crate::names::category(category, F)?;
        // SAFETY: the caller's contract for `name`.
        let name = unsafe { event_name_len(name, name_len, F) }?;
        Ok(status_of(t.record_event(category, &name, value)))
    })
}
