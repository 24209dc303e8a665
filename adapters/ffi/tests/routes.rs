//! Routes through the C API (the `extern "C"` functions, called as a C program
//! calls them): exact per-route sums, folding at the bound, and argument errors.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use telering_ffi::telering_status_t::*;
use telering_ffi::*;

fn create(agent: &CStr) -> *mut telering_t {
    let mut options = MaybeUninit::<telering_options_t>::uninit();
    // SAFETY: `options` is valid for writing a `telering_options_t`.
    let status = unsafe { telering_options_init(options.as_mut_ptr()) };
    assert_eq!(status, TELERING_OK);
    // SAFETY: initialised by `telering_options_init`.
    let mut options = unsafe { options.assume_init() };
    options.enabled = 1;
    options.exporter = c"nop".as_ptr();
    let mut t = std::ptr::null_mut();
    // SAFETY: NUL-terminated name, initialised options, `t` valid for a write.
    let status = unsafe { telering_create(agent.as_ptr(), &options, &mut t) };
    assert_eq!(status, TELERING_OK);
    t
}

fn route(
    t: *const telering_t,
    op: i32,
    backend: &CStr,
    local: i32,
    remote: i32,
    peer: &CStr,
) -> (telering_status_t, u16) {
    let mut id = 0u16;
    // SAFETY: a live handle, NUL-terminated strings, `id` valid for a write.
    let status = unsafe {
        telering_route(
            t,
            op,
            backend.as_ptr(),
            local,
            remote,
            peer.as_ptr(),
            &mut id,
        )
    };
    (status, id)
}

fn totals(t: *const telering_t, id: u16) -> telering_route_totals_t {
    let mut out = telering_route_totals_t::default();
    // SAFETY: a live handle; `out` valid for a write.
    let status = unsafe { telering_route_totals(t, id, &mut out) };
    assert_eq!(status, TELERING_OK);
    out
}

#[test]
fn c_route_transfers_and_errors_sum_exactly_per_route() {
    let t = create(c"c-agent");
    let (s, w) = route(
        t,
        TELERING_ROUTE_WRITE,
        c"UCX",
        TELERING_MEM_VRAM,
        TELERING_MEM_VRAM,
        c"decode-0",
    );
    assert_eq!(s, TELERING_OK);
    let (s, r) = route(
        t,
        TELERING_ROUTE_READ,
        c"POSIX",
        TELERING_MEM_DRAM,
        TELERING_MEM_FILE,
        c"",
    );
    assert_eq!(s, TELERING_OK);
    assert_ne!(w, r);
    assert_eq!(
        route(
            t,
            TELERING_ROUTE_WRITE,
            c"UCX",
            TELERING_MEM_VRAM,
            TELERING_MEM_VRAM,
            c"decode-0"
        )
        .1,
        w
    );
    let t_addr = t as usize;
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(move || {
                let t = t_addr as *const telering_t;
                for i in 0..250u64 {
                    // SAFETY: a live handle, shared by threads as the API allows.
                    unsafe {
                        assert_eq!(
                            telering_add_route_xfer_stats(t, w, 10 + i, 4096, 2, 3),
                            TELERING_OK
                        );
                        assert_eq!(
                            telering_add_route_xfer_stats(t, r, 7, 100, 1, 1),
                            TELERING_OK
                        );
                    }
                }
            });
        }
    });
    // SAFETY: a live handle.
    unsafe {
        assert_eq!(
            telering_update_route_error_count(t, w, TELERING_NIXL_ERR_BACKEND),
            TELERING_OK
        );
        assert_eq!(telering_flush(t), TELERING_OK);
    }
    let tw = totals(t, w);
    assert_eq!(
        (tw.bytes, tw.transfers, tw.descriptors, tw.errors),
        (1000 * 4096, 1000, 3000, 1)
    );
    assert_eq!(
        tw.xfer_time_us,
        4 * (0..250u64).map(|i| 10 + i).sum::<u64>()
    );
    let tr = totals(t, r);
    assert_eq!(
        (tr.bytes, tr.transfers, tr.xfer_time_us, tr.errors),
        (100_000, 1000, 7000, 0)
    );
    // SAFETY: a live handle, destroyed once.
    assert_eq!(unsafe { telering_destroy(t) }, TELERING_OK);
}

#[test]
fn c_routes_beyond_the_bound_fold_and_bad_arguments_are_refused_by_name() {
    let t = create(c"c-fold");
    let mut first = None;
    for p in 0..70u32 {
        let peer = std::ffi::CString::new(format!("p{p}")).unwrap();
        let (s, id) = route(
            t,
            TELERING_ROUTE_WRITE,
            c"UCX",
            TELERING_MEM_VRAM,
            TELERING_MEM_DRAM,
            &peer,
        );
        assert_eq!(s, TELERING_OK);
        first.get_or_insert(id);
        if p >= 64 {
            assert_eq!(
                telering_std::route::RouteId::from_raw(id).map(|r| r.is_other()),
                Some(true)
            );
        }
    }
    let mut folded = 0;
    // SAFETY: a live handle; `folded` valid for a write.
    let status = unsafe { telering_routes_folded(t, &mut folded) };
    assert_eq!(status, TELERING_OK);
    assert_eq!(folded, 6);
    let last_error = || {
        // SAFETY: `telering_last_error` returns a NUL-terminated string.
        unsafe { CStr::from_ptr(telering_last_error()) }
            .to_string_lossy()
            .into_owned()
    };
    assert_eq!(
        route(t, 2, c"UCX", 0, 0, c"").0,
        TELERING_ERR_INVALID_ARGUMENT
    );
    assert!(
        last_error().contains("`operation` is 2"),
        "{}",
        last_error()
    );
    assert_eq!(
        route(t, 0, c"UCX", 5, 0, c"").0,
        TELERING_ERR_INVALID_ARGUMENT
    );
    assert!(
        last_error().contains("`local_mem` is 5"),
        "{}",
        last_error()
    );
    assert_eq!(route(t, 0, c"", 0, 0, c"").0, TELERING_ERR_INVALID_ARGUMENT);
    let long = std::ffi::CString::new("x".repeat(65)).unwrap();
    assert_eq!(
        route(t, 0, c"UCX", 0, 0, &long).0,
        TELERING_ERR_INVALID_ARGUMENT
    );
    assert!(
        last_error().contains("peer name is 65 bytes"),
        "{}",
        last_error()
    );
    // SAFETY: a live handle.
    unsafe {
        assert_eq!(
            telering_add_route_xfer_stats(t, 7, 1, 1, 1, 1),
            TELERING_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            telering_update_route_error_count(t, first.unwrap(), -13),
            TELERING_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            telering_route(
                t,
                0,
                c"UCX".as_ptr(),
                0,
                0,
                std::ptr::null(),
                std::ptr::null_mut()
            ),
            TELERING_ERR_NULL_POINTER
        );
        assert_eq!(telering_destroy(t), TELERING_OK);
    }
}

mod common;

#[test]
fn a_cpp_program_records_on_routes_and_reads_exact_totals_back() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = common::compile("routes.cpp", scratch.path());
    let dir = scratch.path().join("rings");
    let output = common::run_ok(common::program(&exe).arg(&dir));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("route ")).collect();
    assert_eq!(
        lines,
        [
            format!("route {} 2000 8000 1", 2000u64 << 20),
            format!("route {} 2000 2000 0", 2000 * 4096),
        ],
        "{stdout}"
    );
    // The ring file has the built-in events only: 2000 + 2000 transfers' requests.
    let tally = common::telering_read(&dir.join("cpp-routes"));
    assert_eq!(tally["agent_tx_requests_num"].2, 2000);
    assert_eq!(tally["agent_rx_requests_num"].2, 2000);
    assert_eq!(tally["agent_tx_bytes"].2, 2000u64 << 20);
}
