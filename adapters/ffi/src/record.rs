//! Recording: NIXL's built-in events, custom events by name or through a
//! pre-resolved handle, and `add_xfer_stats`.
//!
//! Every recording function is callable from any number of threads at once on one
//! `telering_t`: each thread writes its own lock-free lane (telering-std), and after
//! a thread's first event no call takes a lock or allocates.

use crate::handle::{self, EVENT_HANDLE, TELEMETRY};
use crate::status::{Failure, Status, guard, telering_status_t};
use crate::telemetry::telering_t;
use std::ffi::{CStr, c_char};
use std::time::Duration;
use telering_core::builtin::ErrorStatus;
use telering_core::{Category, EventName, Recorded};
use telering_std::Telemetry;

/// The eight event categories, numbered as NIXL numbers them.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum telering_category_t {
    /// Memory registration and deregistration.
    TELERING_CATEGORY_MEMORY = 0,
    /// Bytes and requests moved.
    TELERING_CATEGORY_TRANSFER = 1,
    /// Connections made and lost.
    TELERING_CATEGORY_CONNECTION = 2,
    /// Events a transfer backend reports about itself.
    TELERING_CATEGORY_BACKEND = 3,
    /// Error counts, one event per status.
    TELERING_CATEGORY_ERROR = 4,
    /// Latencies and other performance figures.
    TELERING_CATEGORY_PERFORMANCE = 5,
    /// The telemetry system itself and its host.
    TELERING_CATEGORY_SYSTEM = 6,
    /// Anything the program defines.
    TELERING_CATEGORY_CUSTOM = 7,
}

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

/// A custom event name checked once, for a hot path: recording through it skips the
/// name's validation. Opaque; made by `telering_event_handle_create`, freed by
/// `telering_event_handle_destroy`. Immutable, so any number of threads may use it.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct telering_event_handle_t {
    _opaque: [u8; 0],
}

pub(crate) struct EventHandle {
    category: Category,
    name: EventName,
}

pub(crate) fn status_of(recorded: Recorded) -> telering_status_t {
    match recorded {
        Recorded::Written => Status::TELERING_OK,
        Recorded::Filtered => Status::TELERING_FILTERED,
        Recorded::Dropped => Status::TELERING_DROPPED,
    }
}

pub(crate) fn category(raw: i32, function: &str) -> Result<Category, Failure> {
    Category::try_from(raw).map_err(|_| {
        Failure::new(
            Status::TELERING_ERR_INVALID_ARGUMENT,
            format!("{function}: argument `category` is {raw}; categories are 0 (TELERING_CATEGORY_MEMORY) to 7 (TELERING_CATEGORY_CUSTOM)"),
        )
    })
}

/// Checks a C string as an event name: 1 to 31 bytes of UTF-8. One pass over at most
/// 32 bytes (never past the terminating NUL); the message for a bad name is built
/// out of line.
///
/// # Safety
///
/// `name` is NULL or NUL-terminated.
#[inline]
pub(crate) unsafe fn event_name(name: *const c_char, function: &str) -> Result<EventName, Failure> {
    if name.is_null() {
        return Err(Failure::null(function, "name"));
    }
    let mut field = [0u8; 32];
    let mut len = 0;
    let mut high_bits = 0u8;
    while len < field.len() {
        // SAFETY: bytes up to and including the NUL are readable (the contract), and
        // the loop stops at the first NUL.
        let byte = unsafe { name.add(len).read() } as u8;
        if byte == 0 {
            break;
        }
        field[len] = byte;
        high_bits |= byte;
        len += 1;
    }
    let bytes = &field[..len];
    // Names are almost always ASCII, which is valid UTF-8 without a decoder pass.
    let text = if high_bits < 0x80 {
        // SAFETY: every byte is below 0x80: ASCII, hence UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    };
    let valid = text.and_then(|text| EventName::new(text).ok());
    match valid {
        Some(checked) => Ok(checked),
        // SAFETY: as above; the cold path reads the whole string for the message.
        None => Err(unsafe { bad_c_name(name, function) }),
    }
}

/// # Safety
///
/// `name` is non-NULL and NUL-terminated.
#[cold]
#[inline(never)]
unsafe fn bad_c_name(name: *const c_char, function: &str) -> Failure {
    // SAFETY: the caller's contract.
    let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
    match name_from_bytes(bytes, function) {
        Err(failure) => failure,
        Ok(_) => Failure::new(
            Status::TELERING_ERR_INTERNAL,
            format!("{function}: a name was refused and then accepted"),
        ),
    }
}

/// Checks `len` bytes at `name` as an event name (they may hold a NUL, which is
/// refused).
///
/// # Safety
///
/// `name` is NULL or valid for reading `len` bytes.
pub(crate) unsafe fn event_name_len(
    name: *const c_char,
    len: usize,
    function: &str,
) -> Result<EventName, Failure> {
    if name.is_null() {
        return Err(Failure::null(function, "name"));
    }
    // SAFETY: non-NULL and valid for `len` bytes (the contract).
    name_from_bytes(
        unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) },
        function,
    )
}

fn name_from_bytes(bytes: &[u8], function: &str) -> Result<EventName, Failure> {
    let invalid = |why: String| {
        Failure::new(
            Status::TELERING_ERR_INVALID_NAME,
            format!("{function}: argument `name` {why}"),
        )
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        invalid(format!(
            "is not valid UTF-8 (from byte {})",
            e.valid_up_to()
        ))
    })?;
    EventName::new(text).map_err(|e| {
        let shown: String = text
            .chars()
            .take(40)
            .map(|c| if c == '\0' { '?' } else { c })
            .collect();
        invalid(format!("\"{shown}\" is invalid: {e}"))
    })
}

/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[inline(always)]
unsafe fn telemetry<'a>(
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
        let t = unsafe { self::telemetry(telemetry, F) }?;
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
        let t = unsafe { self::telemetry(telemetry, F) }?;
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
        let t = unsafe { self::telemetry(telemetry, F) }?;
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
        let t = unsafe { self::telemetry(telemetry, F) }?;
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
        let t = unsafe { self::telemetry(telemetry, F) }?;
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
        let t = unsafe { self::telemetry(telemetry, F) }?;
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
        let t = unsafe { self::telemetry(telemetry, F) }?;
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
        let t = unsafe { self::telemetry(telemetry, F) }?;
        Ok(status_of(t.add_xfer_stats(
            Duration::from_micros(xfer_time_us),
            is_write != 0,
            bytes,
            Duration::from_micros(post_time_us),
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
        let t = unsafe { self::telemetry(telemetry, F) }?;
        let category = self::category(category, F)?;
        // SAFETY: the caller's contract for `name`.
        let name = unsafe { event_name(name, F) }?;
        Ok(status_of(t.record_event(category, &name, value)))
    })
}

/// Checks `name` and `category` once and stores a handle for them in `*out`, for
/// `telering_record_event`. It does not depend on a telemetry: one handle serves
/// every `telering_t`.
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_NAME`, `TELERING_ERR_INVALID_ARGUMENT`
/// or `TELERING_ERR_NULL_POINTER`; `*out` is NULL on failure.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `name` is NULL or NUL-terminated; `out` is NULL or valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_event_handle_create(
    category: i32,
    name: *const c_char,
    out: *mut *mut telering_event_handle_t,
) -> telering_status_t {
    const F: &str = "telering_event_handle_create";
    guard(F, || {
        // SAFETY: the caller's contract for `out`.
        unsafe { crate::status::write_out(out, std::ptr::null_mut(), F, "out") }?;
        let category = self::category(category, F)?;
        // SAFETY: the caller's contract for `name`.
        let name = unsafe { event_name(name, F) }?;
        let handle = handle::into_handle(EVENT_HANDLE, EventHandle { category, name });
        // SAFETY: `out` is non-NULL (checked above) and valid for writes.
        unsafe { out.write(handle) };
        Ok(Status::TELERING_OK)
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
        let t = unsafe { self::telemetry(telemetry, F) }?;
        let category = self::category(category, F)?;
        // SAFETY: the caller's contract for `name`.
        let name = unsafe { event_name_len(name, name_len, F) }?;
        Ok(status_of(t.record_event(category, &name, value)))
    })
}

/// `telering_event_handle_create` with a name given as `name_len` bytes at `name`.
///
/// Returns as `telering_event_handle_create`.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `name` is NULL or valid for reading `name_len` bytes; `out` is NULL or valid for
/// writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_event_handle_create_len(
    category: i32,
    name: *const c_char,
    name_len: usize,
    out: *mut *mut telering_event_handle_t,
) -> telering_status_t {
    const F: &str = "telering_event_handle_create_len";
    guard(F, || {
        // SAFETY: the caller's contract for `out`.
        unsafe { crate::status::write_out(out, std::ptr::null_mut(), F, "out") }?;
        let category = self::category(category, F)?;
        // SAFETY: the caller's contract for `name`.
        let name = unsafe { event_name_len(name, name_len, F) }?;
        let handle = handle::into_handle(EVENT_HANDLE, EventHandle { category, name });
        // SAFETY: `out` is non-NULL (checked above) and valid for writes.
        unsafe { out.write(handle) };
        Ok(Status::TELERING_OK)
    })
}

/// Records `value` under a pre-resolved event, timestamped now. The allowlist
/// applies.
///
/// Returns as `telering_update_tx_bytes`.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `event` is NULL or a live
/// `telering_event_handle_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_record_event(
    telemetry: *const telering_t,
    event: *const telering_event_handle_t,
    value: u64,
) -> telering_status_t {
    const F: &str = "telering_record_event";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { self::telemetry(telemetry, F) }?;
        // SAFETY: the caller's contract.
        let e: &EventHandle = unsafe { handle::get(event, EVENT_HANDLE, F, "event") }?;
        Ok(status_of(t.record_event(e.category, &e.name, value)))
    })
}

/// Frees an event handle. NULL does nothing.
///
/// Returns `TELERING_OK`, or `TELERING_ERR_INVALID_HANDLE` when it was already
/// destroyed or is another type of handle.
/// Thread safety: no other call may use `event` at the same time or afterwards.
///
/// # Safety
///
/// `event` is NULL, a live `telering_event_handle_t`, or one already destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_event_handle_destroy(
    event: *mut telering_event_handle_t,
) -> telering_status_t {
    const F: &str = "telering_event_handle_destroy";
    guard(F, || {
        // SAFETY: the caller's contract.
        let _: Option<EventHandle> = unsafe { handle::destroy(event, EVENT_HANDLE, F) }?;
        Ok(Status::TELERING_OK)
    })
}
