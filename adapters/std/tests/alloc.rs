//! Recording allocates nothing once a thread has its lane: proved with a counting
//! global allocator that counts the allocations of the thread under test only (the
//! flush thread may allocate as it likes).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use telering_core::builtin::ErrorStatus;
use telering_core::{Category, event_name};
use telering_std::Telemetry;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // `const` and destructor-free, so reading it never allocates or registers anything.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn count_here() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: forwards every call to the system allocator unchanged; counting touches
// only an atomic and a const thread-local.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_here();
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_here();
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_here();
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by this thread while `f` runs.
fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

fn record_everything(telemetry: &Telemetry, v: u64) {
    const CUSTOM: telering_core::EventName = event_name!("app_queue_depth");
    telemetry.update_tx_bytes(v);
    telemetry.update_rx_bytes(v);
    telemetry.update_tx_requests_num(1);
    telemetry.update_rx_requests_num(1);
    telemetry.update_memory_registered(v);
    telemetry.update_memory_deregistered(v);
    telemetry.update_error_count(ErrorStatus::ALL[(v % 12) as usize]);
    telemetry.add_xfer_stats(
        Duration::from_micros(v),
        v % 2 == 0,
        v,
        Duration::from_micros(1),
    );
    telemetry
        .record(Category::Custom, "app_requests", v)
        .unwrap();
    telemetry.record_event(Category::Custom, &CUSTOM, v);
}

// One test function: the checks share the counter, so they must not run in parallel.
#[test]
fn recording_allocates_nothing_per_event_in_steady_state() {
    let exporting = Telemetry::builder("alloc")
        .enabled(true)
        .exporter("nop")
        .run_interval(Duration::from_millis(1))
        .build()
        .unwrap();

    // The first events set up this thread's lane and its cache of custom name ids:
    // that allocates, once.
    assert!(allocations_in(|| record_everything(&exporting, 0)) > 0);

    // Steady state, with the flush thread draining concurrently.
    let n = allocations_in(|| {
        for v in 1..20_000 {
            record_everything(&exporting, v);
        }
    });
    assert_eq!(n, 0, "allocations while recording 200 000 events");

    // A full lane: the drop path allocates nothing either.
    let tiny = Telemetry::builder("alloc-full")
        .enabled(true)
        .exporter("nop")
        .lane_capacity(4)
        .early_flush(false)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    // Its lane, and the ids of the thread's custom names, set up first.
    record_everything(&tiny, 0);
    let n = allocations_in(|| {
        for v in 0..10_000 {
            record_everything(&tiny, v);
        }
    });
    assert_eq!(n, 0, "allocations while dropping into a full lane");
    assert!(tiny.stats().events_dropped > 90_000);

    // Alternating between two telemetries with their lanes set up.
    let n = allocations_in(|| {
        for v in 0..10_000 {
            exporting.update_tx_bytes(v);
            tiny.update_rx_bytes(v);
        }
    });
    assert_eq!(n, 0, "allocations when alternating telemetries");

    // Metrics the allowlist excludes, and disabled telemetry.
    let filtered = Telemetry::builder("alloc-filtered")
        .enabled(true)
        .exporter("nop")
        .enabled_metrics("nothing_matches_*")
        .build()
        .unwrap();
    let disabled = Telemetry::disabled("alloc-off");
    let n = allocations_in(|| {
        for v in 0..10_000 {
            record_everything(&filtered, v);
            record_everything(&disabled, v);
        }
    });
    assert_eq!(n, 0, "allocations for filtered and disabled metrics");

    // Per-transfer telemetry.
    let capture = Telemetry::builder("alloc-xfer")
        .capture_telemetry(true)
        .build()
        .unwrap();
    let n = allocations_in(|| {
        for v in 0..1000 {
            // Captured only, and exported: each transfer on the telemetry that
            // started it.
            for t in [&capture, &exporting] {
                let mut xfer = t.start_xfer(true, v, 1);
                t.xfer_posted(&mut xfer).unwrap();
                t.xfer_completed(&mut xfer).unwrap();
                t.xfer_telemetry(&xfer).unwrap();
            }
        }
    });
    assert_eq!(n, 0, "allocations for per-transfer telemetry");
}
