//! Routes through the C API at the edges: values of `UINT64_MAX` that saturate the
//! totals without costing the flush its events, route numbers no `telering_route`
//! call returned, and a route that names the fold route `other`.

use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use telering_ffi::telering_status_t::*;
use telering_ffi::*;

fn create(agent: &CStr, exporter: &CStr, dir: Option<&CStr>) -> *mut telering_t {
    let mut options = MaybeUninit::<telering_options_t>::uninit();
    // SAFETY: `options` is valid for writing a `telering_options_t`.
    let status = unsafe { telering_options_init(options.as_mut_ptr()) };
    assert_eq!(status, TELERING_OK);
    // SAFETY: initialised by `telering_options_init`.
    let mut options = unsafe { options.assume_init() };
    options.enabled = 1;
    options.exporter = exporter.as_ptr();
    if let Some(dir) = dir {
        options.dir = dir.as_ptr();
    }
    let mut t = std::ptr::null_mut();
    // SAFETY: NUL-terminated name, initialised options, `t` valid for a write.
    let status = unsafe { telering_create(agent.as_ptr(), &options, &mut t) };
    assert_eq!(status, TELERING_OK);
    t
}

fn route(t: *const telering_t, op: i32, backend: &CStr, peer: &CStr) -> u16 {
    let mut id = 0u16;
    // SAFETY: a live handle, NUL-terminated strings, `id` valid for a write.
    let status = unsafe {
        telering_route(
            t,
            op,
            backend.as_ptr(),
            TELERING_MEM_DRAM,
            TELERING_MEM_DRAM,
            peer.as_ptr(),
            &mut id,
        )
    };
    assert_eq!(status, TELERING_OK);
    id
}

fn close(t: *mut telering_t) -> telering_stats_t {
    let mut stats = MaybeUninit::<telering_stats_t>::uninit();
    // SAFETY: a live handle, given up here; `stats` valid for a write.
    let status = unsafe { telering_close(t, stats.as_mut_ptr()) };
    assert_eq!(status, TELERING_OK);
    // SAFETY: written by `telering_close`.
    unsafe { stats.assume_init() }
}

fn last_error() -> String {
    // SAFETY: `telering_last_error` answers a NUL-terminated string of this thread.
    unsafe { CStr::from_ptr(telering_last_error()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn c_route_values_of_uint64_max_saturate_and_the_flush_delivers_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let dir_c = CString::new(dir.path().to_str().unwrap()).unwrap();
    let t = create(c"ovf", c"buffer", Some(&dir_c));
    let r = route(t, TELERING_ROUTE_WRITE, c"UCX", c"p");
    // SAFETY: a live handle.
    unsafe {
        for _ in 0..10 {
            assert_eq!(telering_add_xfer_stats(t, 5, 1, 100, 1), TELERING_OK);
        }
        for _ in 0..2 {
            assert_eq!(
                telering_add_route_xfer_stats(t, r, u64::MAX, u64::MAX, u64::MAX, u64::MAX),
                TELERING_OK
            );
        }
        assert_eq!(telering_flush(t), TELERING_OK, "{}", last_error());
    }
    let mut totals = telering_route_totals_t::default();
    // SAFETY: a live handle; `totals` valid for a write.
    let status = unsafe { telering_route_totals(t, r, &mut totals) };
    assert_eq!(status, TELERING_OK);
    assert_eq!(
        (totals.bytes, totals.descriptors, totals.xfer_time_us),
        (u64::MAX, u64::MAX, u64::MAX)
    );
    assert_eq!(totals.transfers, 2);
    let stats = close(t);
    assert_eq!(
        (stats.events_recorded, stats.events_exported),
        (48, 48),
        "every plain event and every route event is delivered"
    );
    assert_eq!(
        (
            stats.events_dropped,
            stats.exporter_dropped,
            stats.exporter_failing
        ),
        (0, 0, 0)
    );
}

#[test]
fn c_a_route_number_no_telering_route_call_returned_is_refused_and_records_nothing() {
    let t = create(c"stale", c"nop", None);
    let w = route(t, TELERING_ROUTE_WRITE, c"UCX", c"p1");
    // The write id of index 16 (no such route), index 0's read twin, the read
    // `other` (never handed out here), a number inside a route's block.
    for stale in [0xE108u16, w - 8, 0xFFF0, w + 1] {
        // SAFETY: a live handle.
        let status = unsafe { telering_add_route_xfer_stats(t, stale, 5, 9, 1, 1) };
        assert_eq!(status, TELERING_ERR_INVALID_ARGUMENT);
        assert!(
            last_error().contains(&format!(
                "argument `route` is {stale}, which no telering_route call"
            )),
            "{}",
            last_error()
        );
        // SAFETY: a live handle.
        let status = unsafe { telering_update_route_error_count(t, stale, -9) };
        assert_eq!(status, TELERING_ERR_INVALID_ARGUMENT);
        let mut totals = telering_route_totals_t::default();
        // SAFETY: a live handle; `totals` valid for a write.
        let status = unsafe { telering_route_totals(t, stale, &mut totals) };
        assert_eq!(status, TELERING_ERR_INVALID_ARGUMENT);
    }
    let stats = close(t);
    assert_eq!(stats.events_recorded, 0);
}

#[test]
fn c_a_route_named_other_is_the_fold_route_and_not_counted_folded() {
    let t = create(c"o2", c"nop", None);
    let user_other = route(t, TELERING_ROUTE_WRITE, c"other", c"other");
    let own: Vec<u16> = (0..64)
        .map(|i| {
            let peer = CString::new(format!("p{i}")).unwrap();
            route(t, TELERING_ROUTE_WRITE, c"UCX", &peer)
        })
        .collect();
    assert!(!own.contains(&user_other), "the fold route takes no place");
    let folded = route(t, TELERING_ROUTE_WRITE, c"UCX", c"p64");
    assert_eq!(folded, user_other);
    // SAFETY: a live handle.
    unsafe {
        assert_eq!(
            telering_add_route_xfer_stats(t, user_other, 5, 100, 1, 1),
            TELERING_OK
        );
        assert_eq!(
            telering_add_route_xfer_stats(t, folded, 5, 1, 1, 1),
            TELERING_OK
        );
        assert_eq!(telering_flush(t), TELERING_OK);
    }
    let mut folded_count = 0u64;
    // SAFETY: a live handle; `folded_count` valid for a write.
    let status = unsafe { telering_routes_folded(t, &mut folded_count) };
    assert_eq!((status, folded_count), (TELERING_OK, 1));
    let mut totals = telering_route_totals_t::default();
    // SAFETY: a live handle; `totals` valid for a write.
    let status = unsafe { telering_route_totals(t, folded, &mut totals) };
    assert_eq!(status, TELERING_OK);
    assert_eq!((totals.bytes, totals.transfers), (101, 2));
    close(t);
}
