//! Each exporter's counters, for a telemetry running several
//! (`NIXL_TELEMETRY_EXPORTER=buffer,prometheus,otlp`): Rust's `ExporterStats`.

use crate::handle::{self, TELEMETRY};
use crate::status::{Failure, Status, guard, telering_status_t, write_out};
use crate::telemetry::telering_t;
use std::ffi::c_char;
use telering_std::Telemetry;

/// One exporter's deliveries and losses (see `telering_exporter_stats`), counted as
/// `telering_stats_t` counts the telemetry's.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct telering_exporter_stats_t {
    /// The exporter's name (`buffer`, `otlp`, a plug-in's), NUL-terminated, cut to
    /// 31 bytes.
    pub name: [c_char; 32],
    /// Events it delivered (written to its file, pushed to a collector that answered
    /// 2xx, folded into the metrics it serves).
    pub events_delivered: u64,
    /// Events it lost on its own: batches that found its queue full, failed exports.
    pub events_dropped: u64,
    /// Failed attempts: failed exports, pushes not delivered.
    pub export_errors: u64,
    /// Events it lost inside, as it reports: refused by a full shared-memory ring, or
    /// written into a ring file another program then unlinked.
    pub exporter_dropped: u64,
    /// Events its output cannot hold and left out (a version-4 ring's custom events).
    pub events_not_in_layout: u64,
    /// Events an aggregating exporter (`otlp`, `prometheus`) took but has not delivered.
    pub events_undelivered: u64,
    /// 1 when its last export failed (a write the disk refused), its last push
    /// failed or its endpoint could not start, else 0.
    pub exporter_failing: u32,
}

/// Copies each exporter's counters, in the order `NIXL_TELEMETRY_EXPORTER` lists
/// them, into `stats[0..capacity]`, and their number into `*count` (none without an
/// exporter; one for a single exporter, its counters being the telemetry's). When
/// `*count > capacity`, only the first `capacity` are written; `stats` may be NULL
/// when `capacity` is 0, to ask for the number.
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `telemetry` is NULL or a live `telering_t`; `stats` is NULL or valid for writing
/// `capacity` entries; `count` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_exporter_stats(
    telemetry: *const telering_t,
    stats: *mut telering_exporter_stats_t,
    capacity: usize,
    count: *mut usize,
) -> telering_status_t {
    const F: &str = "telering_exporter_stats";
    guard(F, || {
        // SAFETY: the caller's contract.
        let t: &Telemetry = unsafe { handle::get(telemetry, TELEMETRY, F, "telemetry") }?;
        if count.is_null() {
            return Err(Failure::null(F, "count"));
        }
        if stats.is_null() && capacity > 0 {
            return Err(Failure::null(F, "stats"));
        }
        let each = t.exporter_stats();
        for (i, e) in each.iter().take(capacity).enumerate() {
            let mut name: [c_char; 32] = [0; 32];
            for (to, from) in name.iter_mut().zip(e.name.bytes().take(31)) {
                *to = from as c_char;
            }
            let value = telering_exporter_stats_t {
                name,
                events_delivered: e.events_delivered,
                events_dropped: e.events_dropped,
                export_errors: e.export_errors,
                exporter_dropped: e.exporter_dropped,
                events_not_in_layout: e.events_not_in_layout,
                events_undelivered: e.events_undelivered,
                exporter_failing: u32::from(e.exporter_failing),
            };
            // SAFETY: `stats` is non-NULL (checked) and valid for `capacity` entries
            // (the caller's contract); `i < capacity`.
            unsafe { stats.add(i).write(value) };
        }
        // SAFETY: the caller's contract for `count`, non-NULL (checked).
        unsafe { write_out(count, each.len(), F, "count") }?;
        Ok(Status::TELERING_OK)
    })
}
