//! Link format version 2 for C firmware: telering-embedded-io's [`LinkEncoder`] in
//! memory the firmware provides, writing through a C callback (a UART, a DMA queue).
//!
//! One implementation of the wire format serves the Rust and the C firmware, so a C
//! firmware gets the host's format changes and fuzzed encoder with the library it
//! already links for the ring, rather than a second encoder kept in step by hand.
//!
//! Layout of the caller's buffer ([`TELERING_LINK_SIZE`] bytes, 8-byte aligned): a
//! tag, the agent name and firmware version copied from `telering_link_init`, the
//! write callback, and the encoder (a 253-byte body buffer and an 8-entry name table;
//! a ninth distinct name travels inline in each event, see `docs/LINK.md`).
//!
//! ```c
//! static uint64_t link[TELERING_LINK_SIZE / 8];
//! telering_link_init(link, sizeof link, "dpu0-fw", "1.0", 1000000, 64, uart_write, NULL);
//! telering_link_drain(link, ring, SIZE_MAX, NULL);   /* every 10 ms: one batch */
//! telering_link_clock(link, now_us());               /* every 100 ms */
//! ```

use crate::ring::control;
use crate::{Status, telering_ring_status_t};
use core::ffi::{CStr, c_char, c_void};
use core::ptr::addr_of_mut;
use embedded_io::ErrorKind;
use telering_embedded_io::link::{Hello, LinkEncoder, MAX_AGENT_LEN, MAX_VERSION_LEN};

/// Bytes of the memory a link encoder needs (8-byte aligned).
pub const TELERING_LINK_SIZE: usize = 1024;

/// Marks an initialised link ("TLRlink2").
const TAG: u64 = u64::from_le_bytes(*b"TLRlink2");

/// Name-table entries of the encoder.
const NAMES: usize = 8;

/// The callback a link writes its frames through: `len` bytes at `bytes`, all of them,
/// before it returns. It returns 0 when they were written, anything else when they
/// were not (the events of that frame are then counted lost, and the host sees the
/// gap).
pub type telering_link_write_t =
    Option<unsafe extern "C" fn(context: *mut c_void, bytes: *const u8, len: usize) -> i32>;

/// A link's counters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct telering_link_stats_t {
    /// Frames written completely (hello, names, batches, clock).
    pub frames_written: u64,
    /// Frames whose write failed.
    pub frames_failed: u64,
    /// Events taken from the ring since `telering_link_init`.
    pub events_taken: u64,
    /// Events lost because the write of their batch failed.
    pub events_failed: u64,
}

/// The C callback as an [`embedded_io::Write`].
struct CallbackWriter {
    write: unsafe extern "C" fn(context: *mut c_void, bytes: *const u8, len: usize) -> i32,
    context: *mut c_void,
}

impl embedded_io::ErrorType for CallbackWriter {
    /// `Other`: the callback reported a failed write.
    type Error = ErrorKind;
}

impl embedded_io::Write for CallbackWriter {
    fn write(&mut self, buf: &[u8]) -> Result<usize, ErrorKind> {
        // SAFETY: `telering_link_init`'s contract: the callback is safe to call with
        // its context and any readable bytes; `buf` is readable for its length.
        match unsafe { (self.write)(self.context, buf.as_ptr(), buf.len()) } {
            0 => Ok(buf.len()),
            _ => Err(ErrorKind::Other),
        }
    }

    fn flush(&mut self) -> Result<(), ErrorKind> {
        Ok(())
    }
}

/// The strings the hello refers to, copied out of the caller's arguments.
#[repr(C)]
struct Texts {
    agent: [u8; MAX_AGENT_LEN],
    version: [u8; MAX_VERSION_LEN],
}

#[repr(C, align(8))]
struct Link {
    tag: u64,
    texts: Texts,
    /// Borrows `texts`, in the same caller memory; `'static` stands for the C
    /// program's promise (`telering_link_init`'s contract) to keep that memory where it
    /// is, used only through these functions, for as long as the link is used.
    encoder: LinkEncoder<'static, CallbackWriter, NAMES>,
}

const _: () = assert!(core::mem::size_of::<Link>() <= TELERING_LINK_SIZE);

/// The text of a C string of 1 to `max` bytes of UTF-8, copied to the front of `to`.
///
/// # Safety
///
/// `text` is NULL or NUL-terminated.
unsafe fn copy_text(text: *const c_char, to: &mut [u8]) -> Option<usize> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-NULL and NUL-terminated (the contract).
    let bytes = unsafe { CStr::from_ptr(text) }.to_bytes();
    if bytes.is_empty() || bytes.len() > to.len() || core::str::from_utf8(bytes).is_err() {
        return None;
    }
    to.get_mut(..bytes.len())?.copy_from_slice(bytes);
    Some(bytes.len())
}

/// Lays out a version-2 link encoder in the `length` bytes at `link` (8-byte aligned,
/// at least `TELERING_LINK_SIZE`). Its first frame, written at the first drain or
/// clock, is the hello that starts a new epoch: `agent` (1 to 64 bytes of UTF-8, the
/// ring's name on the host), `firmware_version` (1 to 32 bytes), `ticks_per_second`
/// (the unit of every timestamp; not 0) and `ring_capacity`. Both strings are copied.
/// Frames go out through `write(context, bytes, len)`.
///
/// Returns `TELERING_RING_OK`; `TELERING_RING_ERR_NULL_POINTER` (link or write);
/// `TELERING_RING_ERR_MISALIGNED`; `TELERING_RING_ERR_BUFFER_TOO_SMALL`;
/// `TELERING_RING_ERR_INVALID_NAME` for an agent or version that is NULL, empty, too
/// long or not UTF-8, or a `ticks_per_second` of 0. Nothing is written on an error.
/// Thread safety: nothing else may use the buffer while it runs.
///
/// # Safety
///
/// `link` is NULL or valid for reads and writes of `length` bytes, and stays so, used
/// only through these functions, for as long as the link is used; `agent` and
/// `firmware_version` are NULL or NUL-terminated; `write` is safe to call with
/// `context` from the contexts that drain and clock the link.
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn telering_link_init(
    link: *mut c_void,
    length: usize,
    agent: *const c_char,
    firmware_version: *const c_char,
    ticks_per_second: u32,
    ring_capacity: u32,
    write: telering_link_write_t,
    context: *mut c_void,
) -> telering_ring_status_t {
    let Some(write) = write else {
        return Status::TELERING_RING_ERR_NULL_POINTER;
    };
    if link.is_null() {
        return Status::TELERING_RING_ERR_NULL_POINTER;
    }
    if link.cast::<u8>().align_offset(8) != 0 {
        return Status::TELERING_RING_ERR_MISALIGNED;
    }
    if length < TELERING_LINK_SIZE {
        return Status::TELERING_RING_ERR_BUFFER_TOO_SMALL;
    }
    let mut texts = Texts {
        agent: [0; MAX_AGENT_LEN],
        version: [0; MAX_VERSION_LEN],
    };
    // SAFETY: NULL or NUL-terminated (the contract).
    let lens = unsafe {
        (
            copy_text(agent, &mut texts.agent),
            copy_text(firmware_version, &mut texts.version),
        )
    };
    let (Some(agent_len), Some(version_len)) = lens else {
        return Status::TELERING_RING_ERR_INVALID_NAME;
    };
    if ticks_per_second == 0 {
        return Status::TELERING_RING_ERR_INVALID_NAME;
    }
    let link = link.cast::<Link>();
    // SAFETY: `link` is aligned and valid for `TELERING_LINK_SIZE` ≥ size_of::<Link>()
    // bytes of writes (checked, the contract); nothing else uses it during init.
    unsafe {
        addr_of_mut!((*link).tag).write(0);
        addr_of_mut!((*link).texts).write(texts);
    }
    // SAFETY: `texts` was just written and is never written again while the tag marks
    // the link initialised (a later init rewrites tag first, then both); the bytes are
    // the UTF-8 checked by `copy_text`; the memory stays put for as long as the link
    // is used (the contract), which covers every use of the encoder holding them.
    let (agent, firmware_version): (&'static str, &'static str) = unsafe {
        let texts = &*addr_of_mut!((*link).texts);
        (
            core::str::from_utf8_unchecked(&*core::ptr::slice_from_raw_parts(
                texts.agent.as_ptr(),
                agent_len,
            )),
            core::str::from_utf8_unchecked(&*core::ptr::slice_from_raw_parts(
                texts.version.as_ptr(),
                version_len,
            )),
        )
    };
    let hello = Hello {
        agent,
        firmware_version,
        ticks_per_second,
        ring_capacity,
    };
    let writer = CallbackWriter { write, context };
    // SAFETY: as above; the tag goes last, so a link is only ever seen whole.
    unsafe {
        addr_of_mut!((*link).encoder).write(LinkEncoder::new(writer, hello));
        addr_of_mut!((*link).tag).write(TAG);
    }
    Status::TELERING_RING_OK
}

/// The encoder at `link`, if it is one.
///
/// # Safety
///
/// `link` is NULL or a buffer passed to `telering_link_init`, used by one context at
/// a time.
unsafe fn encoder<'l>(
    link: *mut c_void,
) -> Result<&'l mut LinkEncoder<'static, CallbackWriter, NAMES>, Status> {
    if link.is_null() {
        return Err(Status::TELERING_RING_ERR_NULL_POINTER);
    }
    if link.cast::<u8>().align_offset(8) != 0 {
        return Err(Status::TELERING_RING_ERR_MISALIGNED);
    }
    let link = link.cast::<Link>();
    // SAFETY: aligned and readable (the contract); the tag is written only by init.
    if unsafe { addr_of_mut!((*link).tag).read() } != TAG {
        return Err(Status::TELERING_RING_ERR_NOT_INITIALISED);
    }
    // SAFETY: initialised (the tag); one context at a time (the contract), so this is
    // the only reference to the encoder while the call runs.
    Ok(unsafe { &mut *addr_of_mut!((*link).encoder) })
}

/// Takes up to `max` waiting events from `ring` and writes them as version-2 frames:
/// the hello first (on the first call), definitions of new names, and batches of up to
/// 253 bytes. `*taken` (if not NULL) receives how many events were taken.
///
/// Returns `TELERING_RING_OK`; `TELERING_RING_ERR_WRITE_FAILED` when the callback
/// failed (the events of the frames it failed are counted in `events_failed` and
/// reach the host as a gap); `TELERING_RING_ERR_NULL_POINTER`,
/// `TELERING_RING_ERR_NOT_INITIALISED` (link or ring), `TELERING_RING_ERR_MISALIGNED`.
/// Thread safety: the ring's draining context, one at a time per link.
///
/// # Safety
///
/// `link` is NULL or an initialised link; `ring` is NULL or an initialised ring;
/// `taken` is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_link_drain(
    link: *mut c_void,
    ring: *mut c_void,
    max: usize,
    taken: *mut usize,
) -> telering_ring_status_t {
    // SAFETY: the caller's contract.
    let encoder = match unsafe { encoder(link) } {
        Ok(e) => e,
        Err(s) => return s,
    };
    // SAFETY: the caller's contract.
    let control = match unsafe { control(ring) } {
        Ok(c) => c,
        Err(s) => return s,
    };
    // SAFETY: initialised; the consumer is used by one draining context at a time
    // (the contract), disjoint from the producer's fields.
    let consumer = unsafe { &mut *addr_of_mut!((*control).consumer) };
    let before = encoder.events_taken();
    let result = encoder.drain(consumer, max);
    if !taken.is_null() {
        let n = usize::try_from(encoder.events_taken() - before).unwrap_or(usize::MAX);
        // SAFETY: non-NULL and valid for a write (the contract).
        unsafe { taken.write(n) };
    }
    match result {
        Ok(_) => Status::TELERING_RING_OK,
        Err(_) => Status::TELERING_RING_ERR_WRITE_FAILED,
    }
}

/// Writes a clock frame carrying `ticks`, the device clock read just before (in the
/// unit given to `telering_link_init`): the host maps device time to its own from
/// these. Send one every 100 ms or so.
///
/// Returns `TELERING_RING_OK`, `TELERING_RING_ERR_WRITE_FAILED`,
/// `TELERING_RING_ERR_NULL_POINTER`, `TELERING_RING_ERR_NOT_INITIALISED` or
/// `TELERING_RING_ERR_MISALIGNED`.
/// Thread safety: the context that drains the link.
///
/// # Safety
///
/// `link` is NULL or an initialised link.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_link_clock(
    link: *mut c_void,
    ticks: u64,
) -> telering_ring_status_t {
    // SAFETY: the caller's contract.
    match unsafe { encoder(link) }.map(|e| e.clock(ticks)) {
        Ok(Ok(())) => Status::TELERING_RING_OK,
        Ok(Err(_)) => Status::TELERING_RING_ERR_WRITE_FAILED,
        Err(s) => s,
    }
}

/// Copies the link's counters into `*stats`.
///
/// Returns `TELERING_RING_OK`, `TELERING_RING_ERR_NULL_POINTER`,
/// `TELERING_RING_ERR_NOT_INITIALISED` or `TELERING_RING_ERR_MISALIGNED`.
/// Thread safety: the context that drains the link.
///
/// # Safety
///
/// `link` is NULL or an initialised link; `stats` is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_link_stats(
    link: *mut c_void,
    stats: *mut telering_link_stats_t,
) -> telering_ring_status_t {
    // SAFETY: the caller's contract.
    let encoder = match unsafe { encoder(link) } {
        Ok(e) => e,
        Err(s) => return s,
    };
    if stats.is_null() {
        return Status::TELERING_RING_ERR_NULL_POINTER;
    }
    let counters = telering_link_stats_t {
        frames_written: encoder.frames_written(),
        frames_failed: encoder.frames_failed(),
        events_taken: encoder.events_taken(),
        events_failed: encoder.events_failed(),
    };
    // SAFETY: non-NULL and valid for a write (the contract).
    unsafe { stats.write(counters) };
    Status::TELERING_RING_OK
}
