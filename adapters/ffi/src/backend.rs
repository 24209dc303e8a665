//! Backend handles: a transfer backend's own events, as NIXL's
//! `addTelemetryEvent` / `getTelemetryEvents`.

use crate::event::telering_event_t;
use crate::handle::{self, BACKEND, TELEMETRY};
use crate::record::status_of;
use crate::status::{Failure, Outcome, Status, guard, telering_status_t, text, write_out};
use crate::telemetry::telering_t;
use std::ffi::c_char;
use telering_core::EventName;
use telering_std::{BackendTelemetry, Telemetry};

/// A transfer backend's telemetry. Opaque; made by `telering_backend_create`, freed by
/// `telering_backend_destroy`; any number of threads may use it at once.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct telering_backend_t {
    _opaque: [u8; 0],
}

pub(crate) struct Backend {
    backend: BackendTelemetry,
    captures: bool,
}

/// Stores in `*out` the telemetry handle of the backend named `backend` (`"UCX"`):
/// its events are exported in category BACKEND at each flush. Asking again for the
/// same name gives a handle to the same buffer. Destroy the handle before
/// `telemetry`: after `telering_destroy`, its calls answer
/// `TELERING_ERR_INVALID_HANDLE` (nothing would export its events) and only
/// `telering_backend_destroy` still works.
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_HANDLE`, `TELERING_ERR_NULL_POINTER`
/// or `TELERING_ERR_INVALID_ARGUMENT` (a name that is not UTF-8); `*out` is NULL on
/// failure.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `backend` is NULL or NUL-terminated;
/// `out` is NULL or valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_backend_create(
    telemetry: *const telering_t,
    backend: *const c_char,
    out: *mut *mut telering_backend_t,
) -> telering_status_t {
    const F: &str = "telering_backend_create";
    guard(F, || {
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, std::ptr::null_mut(), F, "out") }?;
        // SAFETY: the caller's contract.
        let t: &Telemetry = unsafe { handle::get(telemetry, TELEMETRY, F, "telemetry") }?;
        // SAFETY: the caller's contract.
        let name = unsafe { text(backend, F, "backend") }?;
        let value = Backend {
            backend: t.backend(name),
            captures: t.captures(),
        };
        let handle = handle::into_handle(BACKEND, value);
        // SAFETY: `out` is non-NULL (checked) and valid for writes.
        unsafe { out.write(handle) };
        Ok(Status::TELERING_OK)
    })
}

/// Records a backend event `name` = `value` (category BACKEND, timestamped now), as
/// NIXL's `addTelemetryEvent`. The name must be 1 to 31 bytes; the allowlist applies.
///
/// Returns `TELERING_OK`; `TELERING_FILTERED` when capture is off or the allowlist
/// excludes the name; `TELERING_DROPPED` when the backend's buffer
/// (`NIXL_TELEMETRY_BUFFER_SIZE` events) is full (counted);
/// `TELERING_ERR_INVALID_NAME`; `TELERING_ERR_INVALID_HANDLE` (also when its
/// telemetry was destroyed); `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any number of threads at once (takes the backend's
/// lock).
///
/// # Safety
///
/// `backend` is NULL or a live `telering_backend_t`; `name` is NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_backend_add_event(
    backend: *const telering_backend_t,
    name: *const c_char,
    value: u64,
) -> telering_status_t {
    const F: &str = "telering_backend_add_event";
    guard(F, || {
        // SAFETY: the caller's contract.
        let b: &Backend = unsafe { handle::get(backend, BACKEND, F, "backend") }?;
        // SAFETY: the caller's contract; checked the same way as `telering_record`.
        let checked = unsafe { crate::names::event_name(name, F) }?;
        add(b, &checked, value, F)
    })
}

/// `telering_backend_add_event` with a name given as `name_len` bytes at `name` (no
/// NUL needed), for C++ `std::string_view` and other counted strings.
///
/// Returns as `telering_backend_add_event`.
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `backend` is NULL or a live `telering_backend_t`; `name` is NULL or valid for
/// reading `name_len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_backend_add_event_len(
    backend: *const telering_backend_t,
    name: *const c_char,
    name_len: usize,
    value: u64,
) -> telering_status_t {
    const F: &str = "telering_backend_add_event_len";
    guard(F, || {
        // SAFETY: the caller's contract.
        let b: &Backend = unsafe { handle::get(backend, BACKEND, F, "backend") }?;
        // SAFETY: the caller's contract.
        let checked = unsafe { crate::names::event_name_len(name, name_len, F) }?;
        add(b, &checked, value, F)
    })
}

/// `TELERING_ERR_INVALID_HANDLE` when the backend's telemetry was destroyed: its
/// events would go nowhere.
fn alive(b: &Backend, function: &str) -> Result<(), Failure> {
    if b.backend.is_closed() {
        return Err(Failure::new(
            Status::TELERING_ERR_INVALID_HANDLE,
            format!(
                "{function}: argument `backend` belongs to a telering_t that was destroyed; destroy the backend handle first"
            ),
        ));
    }
    Ok(())
}

fn add(b: &Backend, name: &EventName, value: u64, function: &str) -> Outcome {
    alive(b, function)?;
    let recorded = b
        .backend
        .add_telemetry_event(name.as_str(), value)
        .map_err(|e| {
            Failure::new(
                Status::TELERING_ERR_INVALID_NAME,
                format!("{function}: {}", crate::names::c_wording(&e)),
            )
        })?;
    Ok(status_of(recorded))
}

/// Copies the backend's events not yet exported, oldest first, into `events` (room
/// for `capacity`), as NIXL's `getTelemetryEvents`. `*count` receives how many are
/// pending in total: when it exceeds `capacity`, only the first `capacity` were
/// copied. The events stay pending (the next flush exports them).
///
/// Returns `TELERING_OK`; `TELERING_ERR_NO_TELEMETRY` when capture is off (`*count`
/// = 0); `TELERING_ERR_INVALID_HANDLE` (also when its telemetry was destroyed);
/// `TELERING_ERR_NULL_POINTER` (`events` may be
/// NULL only when `capacity` is 0).
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `backend` is NULL or a live `telering_backend_t`; `events` is valid for writing
/// `capacity` events; `count` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_backend_get_events(
    backend: *const telering_backend_t,
    events: *mut telering_event_t,
    capacity: usize,
    count: *mut usize,
) -> telering_status_t {
    const F: &str = "telering_backend_get_events";
    guard(F, || {
        // SAFETY: the caller's contract for `count`.
        unsafe { write_out(count, 0, F, "count") }?;
        // SAFETY: the caller's contract.
        let b: &Backend = unsafe { handle::get(backend, BACKEND, F, "backend") }?;
        alive(b, F)?;
        if events.is_null() && capacity > 0 {
            return Err(Failure::null(F, "events"));
        }
        if !b.captures {
            return Err(Failure::new(
                Status::TELERING_ERR_NO_TELEMETRY,
                format!("{F}: {}", telering_std::XferError::NoTelemetry),
            ));
        }
        let pending = b.backend.get_telemetry_events();
        for (i, event) in pending.iter().take(capacity).enumerate() {
            // SAFETY: `i < capacity`, and `events` is valid for `capacity` writes.
            unsafe { events.add(i).write(telering_event_t::from_event(event)) };
        }
        // SAFETY: as above.
        unsafe { write_out(count, pending.len(), F, "count") }?;
        Ok(Status::TELERING_OK)
    })
}

/// Frees a backend handle (its pending events stay with the telemetry). NULL does
/// nothing.
///
/// Returns `TELERING_OK`, or `TELERING_ERR_INVALID_HANDLE` when it was already
/// destroyed or is another type of handle.
/// Thread safety: no other call may use `backend` at the same time or afterwards.
///
/// # Safety
///
/// `backend` is NULL, a live `telering_backend_t`, or one already destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_backend_destroy(
    backend: *mut telering_backend_t,
) -> telering_status_t {
    const F: &str = "telering_backend_destroy";
    guard(F, || {
        // SAFETY: the caller's contract.
        let _: Option<Backend> = unsafe { handle::destroy(backend, BACKEND, F) }?;
        Ok(Status::TELERING_OK)
    })
}
