//! Encoding events as telering-embedded-io's frames: a COBS-encoded, CRC-32-checked,
//! sequence-numbered 68-byte frame per event (format in telering-embedded-io's docs),
//! written into a caller buffer for the firmware to send on its UART.

use crate::ring::{control, telering_ring_event_t};
use crate::{Status, telering_ring_status_t};
use core::ffi::c_void;
use core::ptr::addr_of_mut;
use telering_core::{Category, Event, EventName};
use telering_embedded_io::{FRAME_WIRE_LEN, encode_frame};

/// Bytes one frame takes on the wire, its `0x00` delimiter included.
pub const TELERING_RING_FRAME_SIZE: usize = 68;

const _: () = assert!(TELERING_RING_FRAME_SIZE == FRAME_WIRE_LEN);

/// Drains waiting events into `out` as frames, as many as fit in `out_len` bytes.
/// The first call on a ring starts with one `0x00` byte that ends any noise on the
/// line before it (as telering-embedded-io's exporter does). Frame sequence numbers
/// count up from 0 per ring. `*written` receives the bytes stored and `*frames` (if
/// not NULL) the frames.
///
/// Returns `TELERING_RING_OK` (possibly with 0 frames when nothing waits);
/// `TELERING_RING_ERR_BUFFER_TOO_SMALL` when events wait but not even one frame fits;
/// `TELERING_RING_ERR_NULL_POINTER`; `TELERING_RING_ERR_NOT_INITIALISED`.
/// Thread safety: the draining context (as `telering_ring_drain`).
///
/// # Safety
///
/// `ring` is NULL or an initialised buffer; `out` is NULL or valid for writing
/// `out_len` bytes; `written` and `frames` are NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_ring_encode_frames(
    ring: *mut c_void,
    out: *mut u8,
    out_len: usize,
    written: *mut usize,
    frames: *mut usize,
) -> telering_ring_status_t {
    // SAFETY: the caller's contract.
    let control = match unsafe { control(ring) } {
        Ok(c) => c,
        Err(s) => return s,
    };
    if out.is_null() || written.is_null() {
        return Status::TELERING_RING_ERR_NULL_POINTER;
    }
    // SAFETY: non-NULL and valid for `out_len` bytes of writes (the contract).
    let out = unsafe { core::slice::from_raw_parts_mut(out, out_len) };
    // SAFETY: initialised; the consumer side (consumer, frame_seq, synced) is used by
    // one context at a time (the contract), disjoint from the producer's fields.
    let (consumer, seq, synced) = unsafe {
        (
            &mut *addr_of_mut!((*control).consumer),
            &mut *addr_of_mut!((*control).frame_seq),
            &mut *addr_of_mut!((*control).synced),
        )
    };
    let mut at = usize::from(!*synced);
    let fit = out_len.saturating_sub(at) / FRAME_WIRE_LEN;
    if fit == 0 {
        // SAFETY: non-NULL and valid for a write (checked, the contract).
        unsafe { written.write(0) };
        return if consumer.is_empty() {
            Status::TELERING_RING_OK
        } else {
            Status::TELERING_RING_ERR_BUFFER_TOO_SMALL
        };
    }
    if !*synced {
        if let Some(first) = out.first_mut() {
            *first = 0;
        }
        *synced = true;
    }
    let n = consumer.read_batch(fit, |event| {
        let frame = out
            .get_mut(at..at + FRAME_WIRE_LEN)
            .and_then(|s| <&mut [u8; FRAME_WIRE_LEN]>::try_from(s).ok());
        // `fit` frames fit after `at`, so this always finds its room.
        if let Some(frame) = frame {
            at += encode_frame(*seq, event, frame);
            *seq = seq.wrapping_add(1);
        }
    });
    // SAFETY: as above.
    unsafe { written.write(at) };
    if !frames.is_null() {
        // SAFETY: non-NULL and valid for a write (the contract).
        unsafe { frames.write(n) };
    }
    Status::TELERING_RING_OK
}

/// Encodes one event as frame number `seq` into `out` (at least
/// `TELERING_RING_FRAME_SIZE` bytes), without a ring: for firmware that keeps its own
/// queue. `*written` receives the bytes stored (always `TELERING_RING_FRAME_SIZE`).
///
/// Returns `TELERING_RING_OK`; `TELERING_RING_ERR_BUFFER_TOO_SMALL`;
/// `TELERING_RING_ERR_INVALID_NAME` / `TELERING_RING_ERR_INVALID_CATEGORY` for an
/// event whose fields are invalid; `TELERING_RING_ERR_NULL_POINTER`.
/// Thread safety: callable from any context.
///
/// # Safety
///
/// `event` is NULL or valid for a read; `out` is NULL or valid for writing `out_len`
/// bytes; `written` is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_ring_encode_event(
    seq: u32,
    event: *const telering_ring_event_t,
    out: *mut u8,
    out_len: usize,
    written: *mut usize,
) -> telering_ring_status_t {
    if event.is_null() || out.is_null() || written.is_null() {
        return Status::TELERING_RING_ERR_NULL_POINTER;
    }
    // SAFETY: non-NULL and valid for a read (the contract).
    let e = unsafe { event.read() };
    let Ok(category) = Category::try_from(e.category) else {
        return Status::TELERING_RING_ERR_INVALID_CATEGORY;
    };
    let field = e.name.map(|c| c as u8);
    let Ok(name) = EventName::from_field(&field) else {
        return Status::TELERING_RING_ERR_INVALID_NAME;
    };
    // SAFETY: non-NULL and valid for `out_len` bytes of writes (the contract).
    let out = unsafe { core::slice::from_raw_parts_mut(out, out_len) };
    let Some(frame) = out
        .get_mut(..FRAME_WIRE_LEN)
        .and_then(|s| <&mut [u8; FRAME_WIRE_LEN]>::try_from(s).ok())
    else {
        return Status::TELERING_RING_ERR_BUFFER_TOO_SMALL;
    };
    let n = encode_frame(
        seq,
        &Event::new(e.timestamp_us, category, name, e.value),
        frame,
    );
    // SAFETY: non-NULL and valid for a write (the contract).
    unsafe { written.write(n) };
    Status::TELERING_RING_OK
}
