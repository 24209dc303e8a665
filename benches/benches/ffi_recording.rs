//! Recording one event from C through libtelering's C API against recording it from
//! Rust through telering-std, side by side in one run (see `BENCHMARKS.md`).
//!
//! The C contenders are loops in `benches/c/ffi_record_loop.c`, compiled by the C
//! compiler (`-O2`, through the `cc` crate) and linked with libtelering as
//! `libtelering.a` would be: every call crosses the C ABI into the library's entry
//! point (panic guard, handle check, name check, status). The Rust contenders make
//! the same calls on `telering_std::Telemetry` directly. Both telemetries have the
//! same configuration — the `nop` exporter, the default clock, lanes of 2¹⁸
//! events, no periodic flush during a round — and are recorded into from the same
//! thread, interleaved round by round; each round's events fit the lane, and the lane
//! is flushed, untimed, before every round, so every timed call takes the write path.
//!
//! Three pairs: a built-in event (`update_tx_bytes`), a custom event by name (checked
//! on every call), a custom event through a pre-resolved handle.
//!
//! `TELERING_FFI_CALLGRIND=<c|rust>-<builtin|named|handle>` runs only that loop, for
//! `valgrind --tool=callgrind --toggle-collect=<loop function>` (the loops are
//! `c_record_*` and `rust_record_*`): instructions per event = Ir ÷ `CALLGRIND_EVENTS`.

use std::ffi::c_void;
use std::hint::black_box;
use std::time::{Duration, Instant};
use telering_benches::{Contender, compare, rounds};
use telering_core::{Category, EventName};
use telering_ffi::{
    telering_create, telering_destroy, telering_event_handle_create, telering_event_handle_t,
    telering_flush, telering_options_init, telering_options_t, telering_status_t, telering_t,
};
use telering_std::{Recorded, Telemetry};

const EVENTS_PER_ROUND: u64 = 200_000;
const LANE: u32 = 1 << 18;
const CALLGRIND_EVENTS: u64 = 100_000;

// The handles cross as untyped pointers: the C side declares them with their types.
unsafe extern "C" {
    fn c_record_builtin(t: *const c_void, n: u64) -> u64;
    fn c_record_named(t: *const c_void, n: u64) -> u64;
    fn c_record_handle(t: *const c_void, e: *const c_void, n: u64) -> u64;
}

const QUEUE_DEPTH: EventName = telering_core::event_name!("queue_depth");

/// The Rust loops, not inlined, with unmangled names for callgrind's
/// `--toggle-collect`; each returns how many calls were not written.
#[inline(never)]
#[unsafe(no_mangle)]
extern "C" fn rust_record_builtin(t: &Telemetry, n: u64) -> u64 {
    (0..n)
        .filter(|&i| t.update_tx_bytes(black_box(i)) != Recorded::Written)
        .count() as u64
}

#[inline(never)]
#[unsafe(no_mangle)]
extern "C" fn rust_record_named(t: &Telemetry, n: u64) -> u64 {
    (0..n)
        .filter(|&i| {
            t.record(Category::Custom, black_box("queue_depth"), i) != Ok(Recorded::Written)
        })
        .count() as u64
}

#[inline(never)]
#[unsafe(no_mangle)]
extern "C" fn rust_record_handle(t: &Telemetry, n: u64) -> u64 {
    (0..n)
        .filter(|&i| {
            t.record_event(Category::Custom, black_box(&QUEUE_DEPTH), i) != Recorded::Written
        })
        .count() as u64
}

/// Both telemetries, configured alike.
struct Setup {
    rust: Telemetry,
    c: *mut telering_t,
    handle: *mut telering_event_handle_t,
}

impl Setup {
    fn new() -> Setup {
        let rust = Telemetry::builder("bench-rust")
            .enabled(true)
            .exporter("nop")
            .buffer_size(LANE)
            .run_interval(Duration::from_secs(3600))
            .build()
            .expect("telemetry");
        let mut options = std::mem::MaybeUninit::<telering_options_t>::uninit();
        let mut c = std::ptr::null_mut();
        let mut handle = std::ptr::null_mut();
        // SAFETY: valid out-pointers and NUL-terminated strings, as the C API asks.
        unsafe {
            assert_eq!(
                telering_options_init(options.as_mut_ptr()),
                telering_status_t::TELERING_OK
            );
            let mut o = options.assume_init();
            o.enabled = 1;
            o.exporter = c"nop".as_ptr();
            o.buffer_size = LANE;
            o.run_interval_ms = 3_600_000;
            assert_eq!(
                telering_create(c"bench-c".as_ptr(), &o, &mut c),
                telering_status_t::TELERING_OK
            );
            assert_eq!(
                telering_event_handle_create(7, c"queue_depth".as_ptr(), &mut handle),
                telering_status_t::TELERING_OK
            );
        }
        Setup { rust, c, handle }
    }

    fn flush(&self) {
        self.rust.flush().expect("flush");
        // SAFETY: a live handle.
        let status = unsafe { telering_flush(self.c) };
        assert_eq!(status, telering_status_t::TELERING_OK);
    }

    /// Runs one loop by name; returns the calls that were not written.
    fn run(&self, which: &str, n: u64) -> u64 {
        // SAFETY: live handles; the C loops only call the C API with them.
        unsafe {
            match which {
                "c-builtin" => c_record_builtin(self.c.cast(), n),
                "c-named" => c_record_named(self.c.cast(), n),
                "c-handle" => c_record_handle(self.c.cast(), self.handle.cast(), n),
                "rust-builtin" => rust_record_builtin(&self.rust, n),
                "rust-named" => rust_record_named(&self.rust, n),
                "rust-handle" => rust_record_handle(&self.rust, n),
                other => panic!("unknown loop {other}"),
            }
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        // SAFETY: live handles, destroyed once.
        unsafe {
            telering_ffi::telering_event_handle_destroy(self.handle);
            telering_destroy(self.c);
        }
    }
}

fn main() {
    let setup = Setup::new();
    if let Ok(which) = std::env::var("TELERING_FFI_CALLGRIND") {
        // Registers both lanes outside the measured loop (callgrind counts only the loop
        // function named by --toggle-collect).
        for i in 0..1000 {
            setup.rust.update_tx_bytes(i);
            // SAFETY: a live handle.
            unsafe { telering_ffi::telering_update_tx_bytes(setup.c, i) };
        }
        setup.flush();
        let not_written = setup.run(&which, CALLGRIND_EVENTS);
        println!("{which}: {CALLGRIND_EVENTS} events, {not_written} not written");
        return;
    }
    println!("## telering-ffi\n");
    let rounds = rounds(9);
    for (title, kind) in [
        ("one built-in event (update_tx_bytes)", "builtin"),
        ("one custom event by name (record)", "named"),
        ("one custom event through a pre-resolved handle", "handle"),
    ] {
        let contender = |side: &'static str| {
            let name = format!("{side}-{kind}");
            let setup = &setup;
            Contender::self_timed(format!("{side} ({kind})"), move || {
                setup.flush();
                let start = Instant::now();
                let not_written = setup.run(&name, EVENTS_PER_ROUND);
                let took = start.elapsed();
                assert_eq!(not_written, 0, "{name}: events not written");
                took
            })
        };
        let result = compare(
            &format!("Recording {title}, 1 thread"),
            EVENTS_PER_ROUND,
            rounds,
            &format!("rust ({kind})"),
            vec![contender("rust"), contender("c")],
        );
        println!("{}", result.to_markdown());
        for (name, thr, _) in &result.rows {
            println!("- `{name}`: {:.2} ns per event (median)", 1e9 / thr.median);
        }
        let c = result.ratio(&format!("c ({kind})")).expect("c row");
        // The table's ratio is throughput(c) ÷ throughput(rust); the cost ratio is its inverse.
        println!(
            "- cost of C ÷ cost of Rust: {:.3}× (min–max {:.3}–{:.3}×)\n",
            1.0 / c.median,
            1.0 / c.max,
            1.0 / c.min
        );
    }
}
