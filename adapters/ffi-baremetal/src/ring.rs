//! The ring in caller memory: layout, initialisation, recording, counters, draining.
//!
//! Layout of the caller's buffer (8-byte aligned):
//!
//! | offset | bytes | what |
//! |---|---|---|
//! | 0 | [`TELERING_RING_CONTROL_SIZE`] | the control block: a tag, the ring's producer and consumer, the frame sequence |
//! | 256 | 40 | NIXL's ring header (`write_pos`, `read_pos`, version, capacity, mask) |
//! | 296 | capacity × 56 | the slots |
//!
//! The control block is private to this library; the header and slots are
//! telering-core's region layout, readable by the host as a ring file.

use crate::{Status, telering_ring_status_t};
use core::ffi::{CStr, c_char, c_void};
use core::ptr::addr_of_mut;
use telering_core::builtin::AGENT_TELEMETRY_EVENTS_DROPPED;
use telering_core::ring::{HEADER_SIZE, MAX_CAPACITY, RingRegion};
use telering_core::{Category, Consumer, EVENT_SIZE, Event, EventName, OverflowPolicy, Producer};

/// Bytes reserved at the start of the buffer for the control block.
pub const TELERING_RING_CONTROL_SIZE: usize = 256;
/// Bytes of the NIXL ring header that follows the control block.
pub const TELERING_RING_HEADER_SIZE: usize = 40;
/// Bytes of one slot.
pub const TELERING_RING_SLOT_SIZE: usize = 56;

// Literals above so that the generated header carries numbers; the layout itself is
// telering-core's.
const _: () =
    assert!(TELERING_RING_HEADER_SIZE == HEADER_SIZE && TELERING_RING_SLOT_SIZE == EVENT_SIZE);

/// Marks an initialised control block ("TLRring1").
const TAG: u64 = u64::from_le_bytes(*b"TLRring1");

/// The region over the caller's memory. Its owner is `()`: the memory belongs to the C
/// program, which promises (`telering_ring_init`'s contract) to keep it for as long as
/// the ring is used.
type Region = RingRegion<()>;
/// The handles' owner: the region, which lives in the control block, in the same
/// caller memory; `'static` stands for the C program's promise above.
type RegionRef = &'static Region;

#[repr(C, align(8))]
pub(crate) struct Control {
    tag: u64,
    region: Region,
    producer: Producer<RegionRef>,
    /// Drops already reported in-band; written by the producer side only.
    reported_drops: u64,
    pub(crate) consumer: Consumer<RegionRef>,
    /// The next frame's sequence number; consumer side only.
    pub(crate) frame_seq: u32,
    /// Whether the synchronising zero before the first frame was written; consumer side.
    pub(crate) synced: bool,
}

const _: () = assert!(core::mem::size_of::<Control>() <= TELERING_RING_CONTROL_SIZE);

/// One event as the C side sees it.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct telering_ring_event_t {
    /// The timestamp given when it was recorded, µs.
    pub timestamp_us: u64,
    /// Its value.
    pub value: u64,
    /// Its category, 0 (MEMORY) to 7 (CUSTOM), numbered as NIXL numbers them.
    pub category: i32,
    /// Reserved, zero.
    pub reserved: u32,
    /// Its name, NUL-terminated.
    pub name: [c_char; 32],
}

impl telering_ring_event_t {
    pub(crate) fn from_event(e: &Event) -> telering_ring_event_t {
        let mut name = e.name_field().map(|b| b as c_char);
        name[31] = 0;
        telering_ring_event_t {
            timestamp_us: e.timestamp_us(),
            value: e.value(),
            category: e.raw_category(),
            reserved: 0,
            name,
        }
    }
}

/// A ring's counters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct telering_ring_stats_t {
    /// Slots in the ring (it holds `capacity - 1` events).
    pub capacity: u32,
    /// Events waiting to be drained.
    pub waiting: u32,
    /// Events written, drop reports included.
    pub published: u64,
    /// Events dropped because the ring was full.
    pub dropped: u64,
    /// Dropped events not yet reported in-band (the ring had no room for the report).
    pub unreported: u64,
}

/// The callback `telering_ring_drain` calls with each event, oldest first. `event` is
/// valid only during the call.
pub type telering_ring_callback_t =
    Option<unsafe extern "C" fn(context: *mut c_void, event: *const telering_ring_event_t)>;

/// The largest power-of-two capacity whose ring fits in `len` bytes after the control
/// block, or `None` if not even two slots fit.
fn capacity_for(len: usize) -> Option<u32> {
    let room = len.checked_sub(TELERING_RING_CONTROL_SIZE + HEADER_SIZE)? / EVENT_SIZE;
    let mut capacity: u32 = 2;
    if room < 2 {
        return None;
    }
    while capacity < MAX_CAPACITY && (capacity as usize) * 2 <= room {
        capacity *= 2;
    }
    Some(capacity)
}

/// The bytes a buffer needs for a ring of `capacity` slots (a power of two from 2 to
/// 2^28), or 0 for any other capacity.
///
/// Thread safety: callable from any context.
#[unsafe(no_mangle)]
pub extern "C" fn telering_ring_buffer_size(capacity: u32) -> usize {
    if !capacity.is_power_of_two() || !(2..=MAX_CAPACITY).contains(&capacity) {
        return 0;
    }
    TELERING_RING_CONTROL_SIZE + HEADER_SIZE + capacity as usize * EVENT_SIZE
}

/// Lays out a ring in the `length` bytes at `buffer` (8-byte aligned, at least
/// `telering_ring_buffer_size(2)`): the largest power-of-two number of slots that
/// fits. `*capacity` (if not NULL) receives it. Any earlier content is overwritten.
///
/// Returns `TELERING_RING_OK`, `TELERING_RING_ERR_NULL_POINTER`,
/// `TELERING_RING_ERR_MISALIGNED` or `TELERING_RING_ERR_BUFFER_TOO_SMALL`.
/// Thread safety: nothing else may use the buffer while it runs.
///
/// # Safety
///
/// `buffer` is NULL or valid for reads and writes of `length` bytes, and stays so —
/// used only through these functions — for as long as the ring is used.
/// `capacity` is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_ring_init(
    buffer: *mut c_void,
    length: usize,
    capacity: *mut u32,
) -> telering_ring_status_t {
    if buffer.is_null() {
        return Status::TELERING_RING_ERR_NULL_POINTER;
    }
    let base = buffer.cast::<u8>();
    if base.align_offset(8) != 0 {
        return Status::TELERING_RING_ERR_MISALIGNED;
    }
    let Some(slots) = capacity_for(length) else {
        return Status::TELERING_RING_ERR_BUFFER_TOO_SMALL;
    };
    // SAFETY: `length ≥ CONTROL_SIZE + 40 + 2 × 56` (capacity_for), so the region
    // start is inside the buffer; it stays 8-aligned (256 is a multiple of 8).
    let region_ptr = unsafe { base.add(TELERING_RING_CONTROL_SIZE) };
    let region_len = length.wrapping_sub(TELERING_RING_CONTROL_SIZE);
    // SAFETY: the caller grants exclusive use of the buffer for as long as the ring is
    // used, and after this call it is accessed only through the region's atomics.
    let region: Region = match unsafe { RingRegion::init((), region_ptr, region_len, slots) } {
        Ok(region) => region,
        Err(_) => return Status::TELERING_RING_ERR_BUFFER_TOO_SMALL,
    };
    let control = base.cast::<Control>();
    // SAFETY: the first `CONTROL_SIZE ≥ size_of::<Control>()` bytes are the caller's,
    // 8-aligned (checked), and nothing else uses them during init. The region is
    // written first, at its final address, so the handles can refer to it there; the
    // buffer never moves (it is the C program's memory).
    let region: RegionRef = unsafe {
        addr_of_mut!((*control).region).write(region);
        &*addr_of_mut!((*control).region)
    };
    // The region's only producer and only consumer, kept in the control block for the
    // ring's life. The region was laid out writable, so neither can fail.
    let (Ok(producer), Ok(consumer)) = (
        Producer::from_region(region, OverflowPolicy::DropNewest),
        Consumer::from_region(region, OverflowPolicy::DropNewest),
    ) else {
        return Status::TELERING_RING_ERR_NOT_INITIALISED;
    };
    // SAFETY: as above; each field is written once, the tag last, so a ring whose
    // init did not complete is never taken for an initialised one.
    unsafe {
        addr_of_mut!((*control).producer).write(producer);
        addr_of_mut!((*control).reported_drops).write(0);
        addr_of_mut!((*control).consumer).write(consumer);
        addr_of_mut!((*control).frame_seq).write(0);
        addr_of_mut!((*control).synced).write(false);
        addr_of_mut!((*control).tag).write(TAG);
    }
    if !capacity.is_null() {
        // SAFETY: non-NULL and valid for a write (the contract).
        unsafe { capacity.write(slots) };
    }
    Status::TELERING_RING_OK
}

/// The control block at `ring`, if it is one.
///
/// # Safety
///
/// `ring` is NULL or a buffer passed to `telering_ring_init` (or at least 8 readable,
/// aligned bytes).
pub(crate) unsafe fn control(ring: *mut c_void) -> Result<*mut Control, Status> {
    if ring.is_null() {
        return Err(Status::TELERING_RING_ERR_NULL_POINTER);
    }
    if ring.cast::<u8>().align_offset(8) != 0 {
        return Err(Status::TELERING_RING_ERR_MISALIGNED);
    }
    let control = ring.cast::<Control>();
    // SAFETY: aligned and readable for the tag (the contract); the tag is written once
    // by init and only read afterwards, so this read races with nothing.
    if unsafe { addr_of_mut!((*control).tag).read() } != TAG {
        return Err(Status::TELERING_RING_ERR_NOT_INITIALISED);
    }
    Ok(control)
}

fn category(raw: i32) -> Result<Category, Status> {
    Category::try_from(raw).map_err(|_| Status::TELERING_RING_ERR_INVALID_CATEGORY)
}

/// Records `name` = `value` in `category` (0 MEMORY … 7 CUSTOM) at `timestamp_us`. If
/// earlier events were dropped and the ring has room for the report and this event,
/// an `agent_telemetry_events_dropped` event (category ERROR, value = the number lost)
/// is written first, with the same timestamp.
///
/// Returns `TELERING_RING_OK`; `TELERING_RING_DROPPED` (ring full; counted);
/// `TELERING_RING_ERR_INVALID_NAME`, `TELERING_RING_ERR_INVALID_CATEGORY`,
/// `TELERING_RING_ERR_NULL_POINTER`, `TELERING_RING_ERR_NOT_INITIALISED`.
/// Thread safety: one recording context at a time per ring; may preempt a drain.
///
/// # Safety
///
/// `ring` is NULL or a buffer initialised by `telering_ring_init`; `name` is NULL or
/// NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_ring_record(
    ring: *mut c_void,
    category: i32,
    name: *const c_char,
    value: u64,
    timestamp_us: u64,
) -> telering_ring_status_t {
    // SAFETY: the caller's contract.
    let control = match unsafe { self::control(ring) } {
        Ok(c) => c,
        Err(s) => return s,
    };
    let category = match self::category(category) {
        Ok(c) => c,
        Err(s) => return s,
    };
    if name.is_null() {
        return Status::TELERING_RING_ERR_NULL_POINTER;
    }
    // SAFETY: non-NULL and NUL-terminated (the contract).
    let text = match unsafe { CStr::from_ptr(name) }.to_str() {
        Ok(t) => t,
        Err(_) => return Status::TELERING_RING_ERR_INVALID_NAME,
    };
    let Ok(name) = EventName::new(text) else {
        return Status::TELERING_RING_ERR_INVALID_NAME;
    };
    // SAFETY: `control` is initialised; the producer side (the producer and
    // `reported_drops`) is used by one context at a time (the contract), and the
    // consumer side is a disjoint set of fields.
    let (producer, reported) = unsafe {
        (
            &mut *addr_of_mut!((*control).producer),
            &mut *addr_of_mut!((*control).reported_drops),
        )
    };
    push(
        producer,
        reported,
        &Event::new(timestamp_us, category, name, value),
    )
}

/// Reports earlier drops first when there is room for the report and `event`, then
/// pushes `event`.
fn push(
    producer: &mut Producer<RegionRef>,
    reported: &mut u64,
    event: &Event,
) -> telering_ring_status_t {
    let dropped = producer.events_dropped();
    if dropped != *reported && producer.free_slots() >= 2 {
        let report = Event::new(
            event.timestamp_us(),
            AGENT_TELEMETRY_EVENTS_DROPPED.category,
            AGENT_TELEMETRY_EVENTS_DROPPED.name,
            dropped.wrapping_sub(*reported),
        );
        if producer.push(&report).is_ok() {
            *reported = dropped;
        }
    }
    match producer.push(event) {
        Ok(()) => Status::TELERING_RING_OK,
        Err(_) => Status::TELERING_RING_DROPPED,
    }
}

/// Copies the ring's counters into `*stats`.
///
/// Returns `TELERING_RING_OK`, `TELERING_RING_ERR_NULL_POINTER` or
/// `TELERING_RING_ERR_NOT_INITIALISED`.
/// Thread safety: from the recording context (it reads the producer's counters).
///
/// # Safety
///
/// `ring` is NULL or an initialised buffer; `stats` is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_ring_stats(
    ring: *mut c_void,
    stats: *mut telering_ring_stats_t,
) -> telering_ring_status_t {
    // SAFETY: the caller's contract.
    let control = match unsafe { self::control(ring) } {
        Ok(c) => c,
        Err(s) => return s,
    };
    if stats.is_null() {
        return Status::TELERING_RING_ERR_NULL_POINTER;
    }
    // SAFETY: initialised; read from the producer's context (the contract). The
    // consumer's `len` only loads the shared atomics.
    let value = unsafe {
        let producer = &*addr_of_mut!((*control).producer);
        let consumer = &*addr_of_mut!((*control).consumer);
        let reported = addr_of_mut!((*control).reported_drops).read();
        telering_ring_stats_t {
            capacity: producer.capacity(),
            waiting: consumer.len(),
            published: producer.events_published(),
            dropped: producer.events_dropped(),
            unreported: producer.events_dropped().wrapping_sub(reported),
        }
    };
    // SAFETY: non-NULL and valid for a write (the contract).
    unsafe { stats.write(value) };
    Status::TELERING_RING_OK
}

/// Calls `callback(context, event)` for up to `max` waiting events, oldest first, and
/// frees their slots. `*drained` (if not NULL) receives how many.
///
/// Returns `TELERING_RING_OK`, `TELERING_RING_ERR_NULL_POINTER` (ring or callback) or
/// `TELERING_RING_ERR_NOT_INITIALISED`.
/// Thread safety: one draining context at a time per ring; a recording interrupt may
/// preempt it. The callback must not drain the same ring.
///
/// # Safety
///
/// `ring` is NULL or an initialised buffer; `callback` is safe to call with `context`;
/// `drained` is NULL or valid for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_ring_drain(
    ring: *mut c_void,
    callback: telering_ring_callback_t,
    context: *mut c_void,
    max: usize,
    drained: *mut usize,
) -> telering_ring_status_t {
    // SAFETY: the caller's contract.
    let control = match unsafe { self::control(ring) } {
        Ok(c) => c,
        Err(s) => return s,
    };
    let Some(callback) = callback else {
        return Status::TELERING_RING_ERR_NULL_POINTER;
    };
    // SAFETY: initialised; the consumer is used by one context at a time (the
    // contract) and is disjoint from the producer's fields.
    let consumer = unsafe { &mut *addr_of_mut!((*control).consumer) };
    let n = consumer.read_batch(max, |event| {
        let c = telering_ring_event_t::from_event(event);
        // SAFETY: the caller vouches for the callback and its context; `c` lives
        // for the call.
        unsafe { callback(context, &c) };
    });
    if !drained.is_null() {
        // SAFETY: non-NULL and valid for a write (the contract).
        unsafe { drained.write(n) };
    }
    Status::TELERING_RING_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capacity_is_the_largest_power_of_two_that_fits() {
        assert_eq!(capacity_for(0), None);
        assert_eq!(capacity_for(256 + 40 + 2 * 56 - 1), None);
        assert_eq!(capacity_for(256 + 40 + 2 * 56), Some(2));
        assert_eq!(capacity_for(256 + 40 + 64 * 56), Some(64));
        assert_eq!(capacity_for(256 + 40 + 127 * 56), Some(64));
        assert_eq!(telering_ring_buffer_size(64), 256 + 40 + 64 * 56);
        assert_eq!(telering_ring_buffer_size(3), 0);
    }
}
