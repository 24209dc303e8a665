//! The bare-metal C API of telering: `libtelering_firmware.a` and
//! `include/telering_firmware.h`, for firmware written in C.
//!
//! A ring lives in memory the firmware provides (a `static` array, a region shared
//! with a host through a BAR): [`telering_ring_init`] lays out a control block and,
//! after it, a ring in NIXL's layout (40-byte header, 56-byte slots) — the same bytes
//! telering-shm's readers and `telering read` understand, so a host can read the
//! window directly. Then:
//!
//! - [`telering_ring_record`] — `record(category, name, value, timestamp)`; a full
//!   ring drops the event and counts it, and the next event that finds room is
//!   preceded by one `agent_telemetry_events_dropped` event carrying the count;
//! - [`telering_ring_stats`] — published, dropped and not-yet-reported counts;
//! - [`telering_ring_drain`] — hands every waiting event to a C callback;
//! - [`telering_ring_encode_frames`] — drains into a caller buffer as
//!   telering-embedded-io's COBS/CRC-32 frames (68 bytes each), ready for a UART;
//!   `telering decode` reads them on the host;
//! - [`telering_link_init`], [`telering_link_drain`], [`telering_link_clock`],
//!   [`telering_link_stats`] — link format version 2 (`docs/LINK.md`: a hello, a name
//!   table, batches of compact events, clock frames; about 7 bytes an event instead
//!   of 68) written through a C callback; `telering bridge` reads it on the host.
//!
//! No heap, no thread-local state, no panicking path: every argument is checked and
//! every failure is a status. On `target_os = "none"` the crate is `no_std` and its
//! panic handler is never linked into a correct program (the C firmware's CI step
//! checks that the linked image has none).
//!
//! # Concurrency
//!
//! A ring has one producer and one consumer. Recording must come from one context at
//! a time, and draining/encoding from one context at a time; a recording interrupt
//! may preempt a drain in the main loop (the two ends touch disjoint parts of the
//! control block and synchronise through the ring's atomics).
#![cfg_attr(target_os = "none", no_std)]
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
// The C names are the API.
#![allow(non_camel_case_types)]

mod frames;
mod link;
mod ring;

pub use frames::*;
pub use link::*;
pub use ring::*;

/// What a call did: zero and positive are outcomes, negative are errors.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum telering_ring_status_t {
    /// Done; for recording, the event was written.
    TELERING_RING_OK = 0,
    /// The ring was full: the event was dropped and counted.
    TELERING_RING_DROPPED = 1,
    /// A pointer that must not be NULL was NULL.
    TELERING_RING_ERR_NULL_POINTER = -1,
    /// The memory does not hold a ring made by `telering_ring_init`.
    TELERING_RING_ERR_NOT_INITIALISED = -2,
    /// The buffer is not 8-byte aligned.
    TELERING_RING_ERR_MISALIGNED = -3,
    /// The buffer is too small: for a ring of two slots, or for one frame.
    TELERING_RING_ERR_BUFFER_TOO_SMALL = -4,
    /// The name is empty, longer than 31 bytes, or not UTF-8.
    TELERING_RING_ERR_INVALID_NAME = -5,
    /// The category is not 0 to 7.
    TELERING_RING_ERR_INVALID_CATEGORY = -6,
    /// A link's write callback failed: the events of the frames it could not write
    /// are counted lost (`telering_link_stats`) and reach the host as a gap.
    TELERING_RING_ERR_WRITE_FAILED = -7,
}

pub(crate) use telering_ring_status_t as Status;

#[cfg(target_os = "none")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    // Unreachable from the API (no call can panic); kept only because a `no_std`
    // static library must name one. Spin rather than touch any peripheral.
    loop {
        core::hint::spin_loop();
    }
}
