//! Pre-resolved event handles: a custom name and category checked once, for hot paths.

use crate::handle::{self, EVENT_HANDLE};
use crate::names::{event_name, event_name_len};
use crate::record::status_of;
use crate::status::{Status, guard, telering_status_t};
use crate::telemetry::telering_t;
use std::ffi::c_char;
use telering_core::{Category, EventName};

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
        let category = crate::names::category(category, F)?;
        // SAFETY: the caller's contract for `name`.
        let name = unsafe { event_name(name, F) }?;
        let handle = handle::into_handle(EVENT_HANDLE, EventHandle { category, name });
        // SAFETY: `out` is non-NULL (checked above) and valid for writes.
        unsafe { out.write(handle) };
        Ok(Status::TELERING_OK)
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
        let category = crate::names::category(category, F)?;
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
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
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
