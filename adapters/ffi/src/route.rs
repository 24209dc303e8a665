//! Routes from C: where a transfer's bytes go (operation, backend, memory types,
//! peer), interned once as a `uint16_t` id, and transfers and errors recorded on it
//! (see telering-std's `route` module and docs/ROUTES.md).

use crate::record::status_of;
use crate::status::{Failure, Status, guard, telering_status_t, text, write_out};
use crate::telemetry::telering_t;
use std::ffi::c_char;
use telering_core::builtin::ErrorStatus;
use telering_std::Telemetry;
use telering_std::route::{MemoryType, Operation, Route, RouteId};

/// Route operation: bytes received (`agent_rx_*`), for `telering_route`.
pub const TELERING_ROUTE_READ: i32 = 0;
/// Route operation: bytes sent (`agent_tx_*`), for `telering_route`.
pub const TELERING_ROUTE_WRITE: i32 = 1;
/// Memory type `DRAM` (NIXL's `DRAM_SEG`), for `telering_route`.
pub const TELERING_MEM_DRAM: i32 = 0;
/// Memory type `VRAM` (NIXL's `VRAM_SEG`).
pub const TELERING_MEM_VRAM: i32 = 1;
/// Memory type `BLK` (NIXL's `BLK_SEG`).
pub const TELERING_MEM_BLK: i32 = 2;
/// Memory type `OBJ` (NIXL's `OBJ_SEG`).
pub const TELERING_MEM_OBJ: i32 = 3;
/// Memory type `FILE` (NIXL's `FILE_SEG`).
pub const TELERING_MEM_FILE: i32 = 4;

/// One route's totals so far (what the flushes drained), from
/// `telering_route_totals`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct telering_route_totals_t {
    /// Bytes moved on the route.
    pub bytes: u64,
    /// Transfers completed on it.
    pub transfers: u64,
    /// Descriptors of those transfers.
    pub descriptors: u64,
    /// Sum of their transfer times, µs.
    pub xfer_time_us: u64,
    /// Errors recorded on it, all statuses.
    pub errors: u64,
}

fn memory_type(value: i32, function: &str, argument: &str) -> Result<MemoryType, Failure> {
    usize::try_from(value)
        .ok()
        .and_then(|i| MemoryType::ALL.get(i).copied())
        .ok_or_else(|| {
            Failure::new(
                Status::TELERING_ERR_INVALID_ARGUMENT,
                format!("{function}: argument `{argument}` is {value}; memory types are 0 (TELERING_MEM_DRAM) to 4 (TELERING_MEM_FILE)"),
            )
        })
}

/// The route `raw` if a `telering_route` call of `t` returned it.
#[inline]
fn route_id(t: &Telemetry, raw: u16, function: &str) -> Result<RouteId, Failure> {
    t.route_id(raw).ok_or_else(|| {
        Failure::new(
            Status::TELERING_ERR_INVALID_ARGUMENT,
            format!("{function}: argument `route` is {raw}, which no telering_route call returned"),
        )
    })
}

/// Interns a route and writes its id to `*route_out`: `operation`
/// (`TELERING_ROUTE_READ` or `TELERING_ROUTE_WRITE`), `backend` (1 to 64 bytes of
/// UTF-8: "UCX", "GDS", …), `local_mem` and `remote_mem` (`TELERING_MEM_*`), `peer`
/// (0 to 64 bytes of UTF-8; NULL is the empty name). Asking again for the same route
/// gives the same id. Beyond the agent's bound (`TELERING_ROUTES_MAX`, default 64)
/// the id is the `other` route of the operation, and the route is counted as folded.
/// A route named as the `other` route itself (backend and peer "other", both memory
/// types `TELERING_MEM_DRAM`) is given that route's id (one series, not two alike;
/// not counted as folded).
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_ARGUMENT` (an operation or memory
/// type out of range, a name not UTF-8, too long, or an empty backend; the message
/// says which), `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any number of threads at once (it takes a lock;
/// call it once per route, not per transfer).
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `backend` is NULL or NUL-terminated;
/// `peer` is NULL or NUL-terminated; `route_out` is NULL or valid for writing a
/// `uint16_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_route(
    telemetry: *const telering_t,
    operation: i32,
    backend: *const c_char,
    local_mem: i32,
    remote_mem: i32,
    peer: *const c_char,
    route_out: *mut u16,
) -> telering_status_t {
    const F: &str = "telering_route";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        if route_out.is_null() {
            return Err(Failure::null(F, "route_out"));
        }
        let operation = match operation {
            TELERING_ROUTE_READ => Operation::Read,
            TELERING_ROUTE_WRITE => Operation::Write,
            other => {
                return Err(Failure::new(
                    Status::TELERING_ERR_INVALID_ARGUMENT,
                    format!(
                        "{F}: argument `operation` is {other}; use TELERING_ROUTE_READ (0) or TELERING_ROUTE_WRITE (1)"
                    ),
                ));
            }
        };
        // SAFETY: the caller's contract for `backend`.
        let backend = unsafe { text(backend, F, "backend") }?;
        let peer = if peer.is_null() {
            ""
        } else {
            // SAFETY: non-NULL, and NUL-terminated (the caller's contract).
            unsafe { text(peer, F, "peer") }?
        };
        let route = Route::new(
            operation,
            backend,
            memory_type(local_mem, F, "local_mem")?,
            memory_type(remote_mem, F, "remote_mem")?,
            peer,
        );
        let id = t.route(&route).map_err(|e| {
            Failure::new(Status::TELERING_ERR_INVALID_ARGUMENT, format!("{F}: {e}"))
        })?;
        // SAFETY: checked non-NULL above; valid for a write (the contract).
        unsafe { write_out(route_out, id.raw(), F, "route_out") }?;
        Ok(Status::TELERING_OK)
    })
}

/// Records one completed transfer on `route` (from `telering_route`), all or none,
/// as `telering_add_xfer_stats` with the route's operation, covering `descriptors`
/// descriptors. The ring file and other route-less outputs get the same events as
/// from `telering_add_xfer_stats`.
///
/// Returns as `telering_update_tx_bytes`, and `TELERING_ERR_INVALID_ARGUMENT` for a
/// number no `telering_route` call on this `telemetry` returned (nothing recorded).
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_add_route_xfer_stats(
    telemetry: *const telering_t,
    route: u16,
    xfer_time_us: u64,
    bytes: u64,
    post_time_us: u64,
    descriptors: u64,
) -> telering_status_t {
    const F: &str = "telering_add_route_xfer_stats";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        let route = route_id(t, route, F)?;
        Ok(status_of(t.add_route_xfer_stats_us(
            route,
            xfer_time_us,
            bytes,
            post_time_us,
            descriptors,
        )))
    })
}

/// Records one occurrence of `nixl_status` (-1 … -12, as
/// `telering_update_error_count`) on `route`.
///
/// Returns as `telering_update_error_count`, and `TELERING_ERR_INVALID_ARGUMENT` for
/// a route number no `telering_route` call on this `telemetry` returned (nothing
/// recorded).
/// Thread safety: callable from any number of threads at once.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_update_route_error_count(
    telemetry: *const telering_t,
    route: u16,
    nixl_status: i32,
) -> telering_status_t {
    const F: &str = "telering_update_route_error_count";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        let route = route_id(t, route, F)?;
        let status = usize::try_from(-(nixl_status as i64) - 1)
            .ok()
            .and_then(|i| ErrorStatus::ALL.get(i).copied())
            .ok_or_else(|| {
                Failure::new(
                    Status::TELERING_ERR_INVALID_ARGUMENT,
                    format!("{F}: argument `nixl_status` is {nixl_status}; NIXL error statuses are -1 (NIXL_ERR_NOT_POSTED) to -12 (NIXL_ERR_NO_TELEMETRY)"),
                )
            })?;
        Ok(status_of(t.update_route_error_count(route, status)))
    })
}

/// Writes `route`'s totals so far (what the flushes drained: call `telering_flush`
/// first for the latest) to `*out`; all zero for a route nothing was recorded on.
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_ARGUMENT` (a route number no
/// `telering_route` call on this `telemetry` returned), `TELERING_ERR_INVALID_HANDLE` or
/// `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `out` is NULL or valid for writing a
/// `telering_route_totals_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_route_totals(
    telemetry: *const telering_t,
    route: u16,
    out: *mut telering_route_totals_t,
) -> telering_status_t {
    const F: &str = "telering_route_totals";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        let route = route_id(t, route, F)?;
        let totals = t
            .route_totals(route)
            .map(|s| telering_route_totals_t {
                bytes: s.bytes,
                transfers: s.transfers,
                descriptors: s.descriptors,
                xfer_time_us: s.xfer_time.sum_us,
                errors: s.errors_total(),
            })
            .unwrap_or_default();
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, totals, F, "out") }?;
        Ok(Status::TELERING_OK)
    })
}

/// Writes to `*out` how many routes were folded into `other` because the agent's
/// bound was reached.
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `out` is NULL or valid for writing a
/// `uint64_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_routes_folded(
    telemetry: *const telering_t,
    out: *mut u64,
) -> telering_status_t {
    const F: &str = "telering_routes_folded";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t = unsafe { crate::record::telemetry(telemetry, F) }?;
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, t.routes_folded(), F, "out") }?;
        Ok(Status::TELERING_OK)
    })
}
