//! Reading ring files: the draining reader (the one consumer, advancing `read_pos` as
//! NIXL's readers do) or an observer (read-only, any number), and `stat`.
//!
//! Readers validate a file before they trust it and never modify, truncate or delete
//! a file they cannot read: a corrupt file is answered with
//! `TELERING_ERR_CORRUPT_FILE` and left byte-identical.
//!
//! They read every ring generation NIXL has shipped (detected from the header version
//! and the file size) and deliver each slot as it is found, as `telering read` shows
//! it: an event without a timestamp, or one NIXL's writer stored with an empty name
//! or category 8, comes with `telering_event_t.flags` saying so rather than being
//! skipped (see `TELERING_EVENT_LENIENT`).

use crate::event::telering_event_t;
use crate::handle::{self, READER};
use crate::status::{Failure, Status, guard, telering_status_t, text, write_out};
use std::ffi::c_char;
use std::path::Path;
use telering_core::ObserverStart;
use telering_shm::{DrainingReader, ObserverReader, RingFileInfo, RingRecord, ShmError};

/// A reader of one ring file. Opaque; made by `telering_reader_open`, freed by
/// `telering_reader_destroy`. One thread at a time per reader.
#[allow(non_camel_case_types)]
#[derive(Debug)]
pub struct telering_reader_t {
    _opaque: [u8; 0],
}

/// How `telering_reader_open` reads.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum telering_read_mode_t {
    /// The ring's one draining consumer: takes events and frees their slots. Only one
    /// per file: a second is refused with TELERING_ERR_BUSY naming the first one's pid
    /// (NIXL's readers take no lock and are not detected).
    TELERING_READ_DRAIN = 0,
    /// A read-only observer starting at the oldest event still in the ring; it never
    /// writes the file and counts exactly the events it missed.
    TELERING_READ_OBSERVE_OLDEST = 1,
    /// A read-only observer starting at the next event published.
    TELERING_READ_OBSERVE_NEWEST = 2,
}

/// What a ring file holds (`telering_stat`, `telering_reader_stat`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, Default)]
pub struct telering_ring_info_t {
    /// Slots in the ring (it holds `capacity - 1` events).
    pub capacity: u64,
    /// Events waiting for the draining reader.
    pub fill: u64,
    /// The ring file's format generation (the header's `version`).
    pub generation: i32,
    /// 1 if a writer process holds the file, else 0.
    pub writer_alive: i32,
    /// 1 if the file has telering's trailer (then the next five fields are valid).
    pub has_trailer: i32,
    /// 1 if the writer closed the file cleanly.
    pub clean_close: i32,
    /// The writer's process id.
    pub writer_pid: u64,
    /// Events the writer published.
    pub events_published: u64,
    /// Events the writer dropped (ring full, or before the ring).
    pub events_dropped: u64,
    /// The writer's last heartbeat, µs since the Unix epoch.
    pub heartbeat_us: u64,
    /// For `telering_reader_stat`: events this reader lost (overwritten before it read
    /// them); 0 for `telering_stat`.
    pub events_lost: u64,
}

enum Reader {
    Drain(DrainingReader),
    Observe(ObserverReader),
}

impl Reader {
    fn read(&mut self, max: usize, each: impl FnMut(RingRecord)) -> Result<usize, ShmError> {
        match self {
            Reader::Drain(r) => r.read_records(max, each),
            Reader::Observe(r) => r.read_records(max, each),
        }
    }

    fn lost(&self) -> u64 {
        match self {
            Reader::Drain(r) => r.events_lost(),
            Reader::Observe(r) => r.events_missed(),
        }
    }

    fn info(&self) -> RingFileInfo {
        match self {
            Reader::Drain(r) => r.info(),
            Reader::Observe(r) => r.info(),
        }
    }
}

fn shm_failure(function: &str, e: ShmError) -> Failure {
    let status = match &e {
        ShmError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            Status::TELERING_ERR_NOT_FOUND
        }
        ShmError::Io { .. } | ShmError::NotRegularFile { .. } | ShmError::SymlinkRefused { .. } => {
            Status::TELERING_ERR_IO
        }
        // A file that is not a ring at all (`/etc/passwd`) fails on its header.
        ShmError::BadHeader { .. }
        | ShmError::BadTrailer { .. }
        | ShmError::TrailerCut { .. }
        | ShmError::Truncated { .. }
        | ShmError::UnknownVersion { .. }
        | ShmError::InconsistentSize { .. }
        | ShmError::NotALeftoverRing { .. }
        | ShmError::BadSlotStamp { .. }
        | ShmError::InconsistentPositions { .. } => Status::TELERING_ERR_CORRUPT_FILE,
        ShmError::CorruptEvent { .. } => Status::TELERING_ERR_CORRUPT_EVENT,
        ShmError::NoSlotStamps { .. } => Status::TELERING_ERR_UNSUPPORTED,
        ShmError::WriterAlreadyRunning { .. } | ShmError::DrainerRunning { .. } => {
            Status::TELERING_ERR_BUSY
        }
        _ => Status::TELERING_ERR_IO,
    };
    Failure::new(status, format!("{function}: {e}"))
}

fn ring_info(info: &RingFileInfo, lost: u64) -> telering_ring_info_t {
    let trailer = info.trailer.as_ref();
    telering_ring_info_t {
        capacity: info.capacity,
        fill: info.fill,
        generation: info.version,
        writer_alive: i32::from(info.writer_alive),
        has_trailer: i32::from(trailer.is_some()),
        clean_close: trailer.map_or(0, |t| i32::from(t.clean_close)),
        writer_pid: trailer.map_or(0, |t| u64::from(t.writer_pid)),
        events_published: trailer.map_or(0, |t| t.published),
        events_dropped: trailer.map_or(0, |t| t.events_dropped()),
        heartbeat_us: trailer.map_or(0, |t| t.heartbeat_us),
        events_lost: lost,
    }
}

/// Opens the ring file at `path` (`$NIXL_TELEMETRY_DIR/<agent>`) in `mode` (a
/// `telering_read_mode_t`) and stores the reader in `*out`.
///
/// Returns `TELERING_OK`; `TELERING_ERR_NOT_FOUND` (no such file);
/// `TELERING_ERR_CORRUPT_FILE` naming the file and the field at fault (the file is not
/// changed); `TELERING_ERR_UNSUPPORTED` for an observer on a ring whose writer does not
/// stamp slots; `TELERING_ERR_IO`; `TELERING_ERR_INVALID_ARGUMENT` (unknown mode);
/// `TELERING_ERR_NULL_POINTER`. `*out` is NULL on failure.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `path` is NULL or NUL-terminated; `out` is NULL or valid for writing a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_reader_open(
    path: *const c_char,
    mode: i32,
    out: *mut *mut telering_reader_t,
) -> telering_status_t {
    const F: &str = "telering_reader_open";
    guard(F, || {
        // SAFETY: the caller's contract for `out`.
        unsafe { write_out(out, std::ptr::null_mut(), F, "out") }?;
        // SAFETY: the caller's contract for `path`.
        let path = Path::new(unsafe { text(path, F, "path") }?);
        let reader = match mode {
            0 => Reader::Drain(DrainingReader::open(path).map_err(|e| shm_failure(F, e))?),
            1 | 2 => {
                let start = if mode == 1 {
                    ObserverStart::Oldest
                } else {
                    ObserverStart::Newest
                };
                Reader::Observe(ObserverReader::open(path, start).map_err(|e| shm_failure(F, e))?)
            }
            other => {
                return Err(Failure::new(
                    Status::TELERING_ERR_INVALID_ARGUMENT,
                    format!(
                        "{F}: argument `mode` is {other}; use TELERING_READ_DRAIN (0), TELERING_READ_OBSERVE_OLDEST (1) or TELERING_READ_OBSERVE_NEWEST (2)"
                    ),
                ));
            }
        };
        let handle = handle::into_handle(READER, reader);
        // SAFETY: `out` is non-NULL (checked) and valid for writes.
        unsafe { out.write(handle) };
        Ok(Status::TELERING_OK)
    })
}

/// Reads up to `capacity` events into `events`, oldest first; `*count` receives how
/// many were stored. A draining reader frees their slots with one store.
///
/// Every slot is delivered as found: check `flags` for `TELERING_EVENT_HAS_TIMESTAMP`
/// (clear for NIXL's versions 2 to 4) and `TELERING_EVENT_LENIENT` (an event of a
/// foreign writer that does not validate, such as an empty name or category 8).
///
/// Returns `TELERING_OK` (at least one event); `TELERING_EMPTY` (none waiting,
/// `*count` = 0); `TELERING_ERR_INVALID_ARGUMENT` when `capacity` is 0;
/// `TELERING_ERR_CORRUPT_FILE` when the file was truncated under the
/// reader or a slot's stamp is impossible; `TELERING_ERR_INVALID_HANDLE`;
/// `TELERING_ERR_NULL_POINTER`.
/// Thread safety: one thread at a time per reader.
///
/// # Safety
///
/// `reader` is NULL or a live `telering_reader_t`; `events` is valid for writing
/// `capacity` events; `count` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_reader_read_batch(
    reader: *mut telering_reader_t,
    events: *mut telering_event_t,
    capacity: usize,
    count: *mut usize,
) -> telering_status_t {
    // SAFETY: forwarded.
    unsafe {
        read_batch(
            reader,
            events,
            capacity,
            count,
            "telering_reader_read_batch",
        )
    }
}

/// `telering_reader_read_batch` on behalf of the API function `function`, which its
/// errors name.
///
/// # Safety
///
/// As `telering_reader_read_batch`.
unsafe fn read_batch(
    reader: *mut telering_reader_t,
    events: *mut telering_event_t,
    capacity: usize,
    count: *mut usize,
    function: &str,
) -> telering_status_t {
    guard(function, || {
        // SAFETY: the caller's contract for `count`.
        unsafe { write_out(count, 0, function, "count") }?;
        // SAFETY: the caller's contract.
        let r: &mut Reader = unsafe { handle::get_mut(reader, READER, function, "reader") }?;
        if events.is_null() {
            return Err(Failure::null(function, "events"));
        }
        if capacity == 0 {
            return Err(Failure::new(
                Status::TELERING_ERR_INVALID_ARGUMENT,
                format!(
                    "{function}: argument `capacity` is 0; pass the number of events `events` has room for (at least 1)"
                ),
            ));
        }
        let mut stored = 0usize;
        r.read(capacity, |record| {
            // SAFETY: `read` hands over at most `capacity` records, so
            // `stored < capacity`, and `events` is valid for `capacity` writes.
            unsafe {
                events
                    .add(stored)
                    .write(telering_event_t::from_record(&record))
            };
            stored += 1;
        })
        .map_err(|e| shm_failure(function, e))?;
        // SAFETY: as above.
        unsafe { write_out(count, stored, function, "count") }?;
        Ok(if stored == 0 {
            Status::TELERING_EMPTY
        } else {
            Status::TELERING_OK
        })
    })
}

/// Reads the next event into `*event`.
///
/// Returns `TELERING_OK`, `TELERING_EMPTY` (none waiting), or the errors of
/// `telering_reader_read_batch`.
/// Thread safety: one thread at a time per reader.
///
/// # Safety
///
/// `reader` is NULL or a live `telering_reader_t`; `event` is NULL or valid for
/// writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_reader_next(
    reader: *mut telering_reader_t,
    event: *mut telering_event_t,
) -> telering_status_t {
    const F: &str = "telering_reader_next";
    if event.is_null() {
        return guard(F, || Err(Failure::null(F, "event")));
    }
    let mut count = 0usize;
    // SAFETY: `event` is valid for one write (the caller's contract); `reader` is
    // forwarded.
    let status = unsafe { read_batch(reader, event, 1, &mut count, F) };
    if status == Status::TELERING_EMPTY || count == 0 {
        // SAFETY: as above.
        unsafe { event.write(telering_event_t::ZERO) };
    }
    status
}

/// Copies what the reader's file holds now, and the events this reader lost, into
/// `*info`.
///
/// Returns `TELERING_OK`, `TELERING_ERR_INVALID_HANDLE` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: one thread at a time per reader.
///
/// # Safety
///
/// `reader` is NULL or a live `telering_reader_t`; `info` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_reader_stat(
    reader: *const telering_reader_t,
    info: *mut telering_ring_info_t,
) -> telering_status_t {
    const F: &str = "telering_reader_stat";
    guard(F, || {
        // SAFETY: the caller's contract.
        let r: &Reader = unsafe { handle::get(reader, READER, F, "reader") }?;
        let value = ring_info(&r.info(), r.lost());
        // SAFETY: the caller's contract for `info`.
        unsafe { write_out(info, value, F, "info") }?;
        Ok(Status::TELERING_OK)
    })
}

/// Copies what the ring file at `path` holds into `*info` without changing the file:
/// capacity, fill, generation, whether its writer is alive, its loss counters.
///
/// Returns `TELERING_OK`, `TELERING_ERR_NOT_FOUND`, `TELERING_ERR_CORRUPT_FILE` (the
/// message names the field), `TELERING_ERR_IO` or `TELERING_ERR_NULL_POINTER`.
/// Thread safety: callable from any thread.
///
/// # Safety
///
/// `path` is NULL or NUL-terminated; `info` is NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_stat(
    path: *const c_char,
    info: *mut telering_ring_info_t,
) -> telering_status_t {
    const F: &str = "telering_stat";
    guard(F, || {
        // SAFETY: the caller's contract for `info`.
        unsafe { write_out(info, telering_ring_info_t::default(), F, "info") }?;
        // SAFETY: the caller's contract for `path`.
        let path = Path::new(unsafe { text(path, F, "path") }?);
        let found = telering_shm::stat(path).map_err(|e| shm_failure(F, e))?;
        // SAFETY: as above.
        unsafe { write_out(info, ring_info(&found, 0), F, "info") }?;
        Ok(Status::TELERING_OK)
    })
}

/// Closes a reader (a draining reader's progress is already in the file). NULL does
/// nothing.
///
/// Returns `TELERING_OK`, or `TELERING_ERR_INVALID_HANDLE` when it was already
/// destroyed or is another type of handle.
/// Thread safety: no other call may use `reader` at the same time or afterwards.
///
/// # Safety
///
/// `reader` is NULL, a live `telering_reader_t`, or one already destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_reader_destroy(
    reader: *mut telering_reader_t,
) -> telering_status_t {
    const F: &str = "telering_reader_destroy";
    guard(F, || {
        // SAFETY: the caller's contract.
        let _: Option<Reader> = unsafe { handle::destroy(reader, READER, F) }?;
        Ok(Status::TELERING_OK)
    })
}
