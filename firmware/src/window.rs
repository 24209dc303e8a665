//! The device side of a DPU-to-host memory window.
//!
//! On a DPU the window is memory the host maps through a PCIe BAR; here it is a
//! `static` byte array, which is what it looks like from the core: raw memory at a
//! fixed address. The ring is laid out in it with `RingRegion::init` — NIXL's 40-byte
//! header and the slots, no telering trailer — and written through the region's
//! producer with `telering-core` alone. This core has no 64-bit atomics: the slot
//! words are 32-bit stores, and each position update is one 32-bit store of the low
//! half of the 64-bit header field, whose high half `init` zeroed (see
//! `telering_core::ring::AtomicLeU64`).
//!
//! QEMU cannot map the emulated RAM into a host process, so at the end the window's
//! bytes are copied to the host as a file (semihosting `SYS_OPEN`/`SYS_WRITE`), where
//! telering-shm's readers read it as they would read the BAR
//! (`adapters/shm/tests/memory_window.rs`).

use core::cell::UnsafeCell;
use telering_core::ring::{HeaderInfo, RingRegion};
use telering_core::{Category, Clock, Event, OverflowPolicy, Producer, event_name};

/// Slots in the window's ring: it holds 15 events.
pub const SLOTS: u32 = 16;
/// Events written into the window; their values are `FIRST_VALUE..FIRST_VALUE + EVENTS`.
pub const EVENTS: u64 = 10;
/// The value of the first event.
pub const FIRST_VALUE: u64 = 100;
const LEN: usize = HeaderInfo::ring_bytes(SLOTS as u64) as usize;
/// Name of the file the window is copied to, in QEMU's working directory.
const FILE: &core::ffi::CStr = c"telering-window.bin";

/// The window memory: 8-byte aligned as the ring requires.
#[repr(C, align(8))]
struct Window(UnsafeCell<[u8; LEN]>);

// SAFETY: the program is single-threaded and no interrupt handler touches the window;
// `run` is its only user and runs once.
unsafe impl Sync for Window {}

static WINDOW: Window = Window(UnsafeCell::new([0; LEN]));

/// Lays the ring out, writes the events and copies the window to the host. Returns
/// the producer's (published, dropped) counts.
pub fn run(clock: &impl Clock) -> (u64, u64) {
    let base = WINDOW.0.get().cast::<u8>();
    // SAFETY: `WINDOW` is `LEN` bytes, 8-aligned and static (its owner, a `'static`
    // reference, keeps it alive for ever); `run` is called once and nothing else
    // accesses it, so `init` has it to itself; afterwards it is accessed only through
    // the region's atomics until the copy below.
    let Ok(region) = (unsafe { RingRegion::init(&WINDOW, base, LEN, SLOTS) }) else {
        crate::fail()
    };
    // The region's only producer.
    let Ok(mut producer) = Producer::from_region(&region, OverflowPolicy::DropNewest) else {
        crate::fail()
    };
    for value in FIRST_VALUE..FIRST_VALUE + EVENTS {
        let event = Event::new(
            clock.now_us(),
            Category::Transfer,
            event_name!("dpu_window_tx_bytes"),
            value,
        );
        // A full ring counts the event as dropped; reported with the counts.
        let _ = producer.push(&event);
    }
    let counts = (producer.events_published(), producer.events_dropped());
    // SAFETY: the producer has published everything and no one else accesses the
    // window, so plain reads of its bytes race with nothing.
    let bytes = unsafe { core::slice::from_raw_parts(base.cast_const(), LEN) };
    if semihosting::fs::write(FILE, bytes).is_err() {
        crate::fail()
    }
    counts
}
