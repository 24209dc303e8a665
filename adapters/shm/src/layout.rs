//! The telering trailer: what telering adds after the last slot of a NIXL version-1
//! ring file, where NIXL's readers never look.
//!
//! The trailer starts at offset `T = 40 + capacity × 56` (always 8-byte aligned,
//! because 40 and 56 are multiples of 8) and is [`TRAILER_SIZE`] bytes long. All
//! fields are little-endian.
//!
//! | offset from `T` | field | type | written |
//! |---|---|---|---|
//! | 0 | `magic` = `b"TLRNGTRL"` | `[u8; 8]` | once, at creation |
//! | 8 | `layout_version` = 1 | `u32` | once |
//! | 12 | `trailer_size` = 64 | `u32` | once |
//! | 16 | `writer_pid` | `u32` | once |
//! | 20 | `clock` ([`ClockId`]) | `u32` | once |
//! | 24 | `flags`: bit 0 clean close, bit 1 `OverwriteOldest`, bit 2 `unread_at_start` recorded | `u32` | at creation and at close |
//! | 28 | `unread_at_start`: unread events the ring held when this writer took it over (reused in place, or carried from a replaced ring; 0 otherwise) | `u32` | at creation |
//! | 32 | `published`: events published into the ring, drop reports included | `u64` | after every batch |
//! | 40 | `dropped_ring_full`: events refused because the ring was full | `u64` | after every batch |
//! | 48 | `dropped_staging`: events lost before the ring (staging, lanes, an unlinked previous file, a replaced ring's unread events not carried) | `u64` | when counted |
//! | 56 | `heartbeat_us`: realtime µs when the writer last wrote or said it is alive | `u64` | every batch and heartbeat |
//!
//! A version-4 ring (16-byte slots, see [`crate::Generation`]) carries the same
//! trailer with `trailer_size` = 72 and one more field:
//!
//! | offset from `T` | field | type | written |
//! |---|---|---|---|
//! | 64 | `dropped_unrepresentable`: events version 4 cannot hold (custom and backend events), not written | `u64` | after every batch |
//!
//! Every field is accessed through atomics by every party. The writer stores
//! `published` with release ordering after it published `write_pos`, so a reader that
//! loads `published` with acquire ordering and then `write_pos` sees at least that
//! many events published.

use crate::Generation;
use crate::error::ShmError;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use telering_core::OverflowPolicy;

/// The trailer's magic, the first 8 bytes after the last slot.
pub const TRAILER_MAGIC: [u8; 8] = *b"TLRNGTRL";
/// The trailer layout version this crate writes and reads.
pub const TRAILER_VERSION: u32 = 1;
/// Size of the trailer of a version-1 ring in bytes.
pub const TRAILER_SIZE: usize = 64;
/// Size of the trailer of a version-4 ring: [`TRAILER_SIZE`] plus the
/// `dropped_unrepresentable` counter.
pub const TRAILER_SIZE_V4: usize = 72;

/// The trailer size a ring of `generation` carries.
pub(crate) const fn trailer_size(generation: Generation) -> usize {
    match generation {
        Generation::V4 => TRAILER_SIZE_V4,
        _ => TRAILER_SIZE,
    }
}

/// Bit 0 of `flags`: the writer closed the file cleanly.
pub(crate) const FLAG_CLEAN_CLOSE: u32 = 1;
/// Bit 1 of `flags`: the writer overwrites the oldest events when the ring is full.
pub(crate) const FLAG_OVERWRITE_OLDEST: u32 = 2;

/// Bit 2 of `flags`: `unread_at_start` (offset 28, formerly reserved and zero) is
/// recorded, so readers can check the header's positions against `published`.
/// Files of earlier writers lack it and are not checked.
pub(crate) const FLAG_UNREAD_AT_START: u32 = 4;

/// Byte offsets of the trailer fields, relative to the trailer's start.
pub mod trailer_offsets {
    /// `magic: [u8; 8]`.
    pub const MAGIC: usize = 0;
    /// `layout_version: u32`.
    pub const LAYOUT_VERSION: usize = 8;
    /// `trailer_size: u32`.
    pub const TRAILER_SIZE: usize = 12;
    /// `writer_pid: u32`.
    pub const WRITER_PID: usize = 16;
    /// `clock: u32`.
    pub const CLOCK: usize = 20;
    /// `flags: u32`.
    pub const FLAGS: usize = 24;
    /// `unread_at_start: u32`.
    pub const UNREAD_AT_START: usize = 28;
    /// `published: u64`.
    pub const PUBLISHED: usize = 32;
    /// `dropped_ring_full: u64`.
    pub const DROPPED_RING_FULL: usize = 40;
    /// `dropped_staging: u64`.
    pub const DROPPED_STAGING: usize = 48;
    /// `heartbeat_us: u64`.
    pub const HEARTBEAT_US: usize = 56;
    /// `dropped_unrepresentable: u64` (version-4 rings only).
    pub const DROPPED_UNREPRESENTABLE: usize = 64;
}

/// Which clock the writer's timestamps come from, stored in the trailer as a `u32`.
///
/// ```
/// use telering_shm::ClockId;
/// assert_eq!(ClockId::from_u32(1), ClockId::Realtime);
/// assert_eq!(ClockId::from_u32(77), ClockId::Unknown);
/// assert_eq!(ClockId::Tsc as u32, 3);
/// ```
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ClockId {
    /// Not recorded (or a value this version does not know).
    Unknown = 0,
    /// `CLOCK_REALTIME`, microseconds since the Unix epoch.
    #[default]
    Realtime = 1,
    /// `CLOCK_REALTIME_COARSE`: realtime at tick resolution.
    RealtimeCoarse = 2,
    /// A cycle counter (TSC, `cntvct`) tied to realtime.
    Tsc = 3,
    /// `CLOCK_MONOTONIC`: not comparable across machines or reboots.
    Monotonic = 4,
    /// Some other clock the program defines.
    Other = 5,
}

impl ClockId {
    /// Decodes the stored value; values this version does not know are `Unknown`.
    pub fn from_u32(raw: u32) -> ClockId {
        match raw {
            1 => ClockId::Realtime,
            2 => ClockId::RealtimeCoarse,
            3 => ClockId::Tsc,
            4 => ClockId::Monotonic,
            5 => ClockId::Other,
            _ => ClockId::Unknown,
        }
    }
}

/// The trailer's values, read from a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrailerInfo {
    /// Process id of the writer that created the file.
    pub writer_pid: u32,
    /// Events published into the ring (drop reports included).
    pub published: u64,
    /// Events refused because the ring was full.
    pub dropped_ring_full: u64,
    /// Events lost before they reached the ring (staging buffers, per-thread lanes).
    pub dropped_staging: u64,
    /// When the writer last wrote or refreshed its heartbeat: realtime, µs since the
    /// Unix epoch (whatever clock the event timestamps use).
    pub heartbeat_us: u64,
    /// The clock the writer's timestamps come from.
    pub clock: ClockId,
    /// Whether the writer closed the file cleanly.
    pub clean_close: bool,
    /// The writer's overflow policy.
    pub policy: OverflowPolicy,
    /// Unread events the ring held when its writer took it over (a dead writer's
    /// ring reused in place), `None` in files of writers that did not record it.
    pub unread_at_start: Option<u64>,
    /// Events the ring's layout cannot hold, which the writer therefore did not write
    /// (version-4 rings: custom and backend events; always 0 in version-1 rings).
    pub dropped_unrepresentable: u64,
}

impl TrailerInfo {
    /// Every event the writer lost: `dropped_ring_full + dropped_staging`.
    pub fn events_dropped(&self) -> u64 {
        self.dropped_ring_full.saturating_add(self.dropped_staging)
    }
}

/// The trailer as it lies in shared memory: every field an atomic.
#[repr(C)]
pub(crate) struct TrailerCells {
    pub magic: AtomicU64,
    pub layout_version: AtomicU32,
    pub trailer_size: AtomicU32,
    pub writer_pid: AtomicU32,
    pub clock: AtomicU32,
    pub flags: AtomicU32,
    pub unread_at_start: AtomicU32,
    pub published: AtomicU64,
    pub dropped_ring_full: AtomicU64,
    pub dropped_staging: AtomicU64,
    pub heartbeat_us: AtomicU64,
}

const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<TrailerCells>() == TRAILER_SIZE);
    assert!(offset_of!(TrailerCells, magic) == trailer_offsets::MAGIC);
    assert!(offset_of!(TrailerCells, layout_version) == trailer_offsets::LAYOUT_VERSION);
    assert!(offset_of!(TrailerCells, trailer_size) == trailer_offsets::TRAILER_SIZE);
    assert!(offset_of!(TrailerCells, writer_pid) == trailer_offsets::WRITER_PID);
    assert!(offset_of!(TrailerCells, clock) == trailer_offsets::CLOCK);
    assert!(offset_of!(TrailerCells, flags) == trailer_offsets::FLAGS);
    assert!(offset_of!(TrailerCells, unread_at_start) == trailer_offsets::UNREAD_AT_START);
    assert!(offset_of!(TrailerCells, published) == trailer_offsets::PUBLISHED);
    assert!(offset_of!(TrailerCells, dropped_ring_full) == trailer_offsets::DROPPED_RING_FULL);
    assert!(offset_of!(TrailerCells, dropped_staging) == trailer_offsets::DROPPED_STAGING);
    assert!(offset_of!(TrailerCells, heartbeat_us) == trailer_offsets::HEARTBEAT_US);
};

/// Little-endian accessors: the file is little-endian on every host.
impl TrailerCells {
    pub fn load32(cell: &AtomicU32, order: Ordering) -> u32 {
        u32::from_le(cell.load(order))
    }
    pub fn store32(cell: &AtomicU32, value: u32, order: Ordering) {
        cell.store(value.to_le(), order)
    }
    pub fn load64(cell: &AtomicU64, order: Ordering) -> u64 {
        u64::from_le(cell.load(order))
    }
    pub fn store64(cell: &AtomicU64, value: u64, order: Ordering) {
        cell.store(value.to_le(), order)
    }

    /// Writes a fresh trailer of `size` bytes. `unread_at_start`: unread events the
    /// ring holds as this writer takes it over (below the capacity, so it fits in 32
    /// bits); stored before the flag that says it is recorded.
    pub fn init(
        &self,
        size: usize,
        pid: u32,
        clock: ClockId,
        policy: OverflowPolicy,
        now_us: u64,
        unread_at_start: u64,
    ) {
        let r = Ordering::Relaxed;
        self.magic.store(u64::from_ne_bytes(TRAILER_MAGIC), r);
        Self::store32(&self.layout_version, TRAILER_VERSION, r);
        Self::store32(&self.trailer_size, size as u32, r);
        Self::store32(&self.writer_pid, pid, r);
        Self::store32(&self.clock, clock as u32, r);
        let flags = match policy {
            OverflowPolicy::DropNewest => 0,
            OverflowPolicy::OverwriteOldest => FLAG_OVERWRITE_OLDEST,
        };
        Self::store32(&self.unread_at_start, unread_at_start as u32, r);
        Self::store32(&self.flags, flags | FLAG_UNREAD_AT_START, r);
        Self::store64(&self.published, 0, r);
        Self::store64(&self.dropped_ring_full, 0, r);
        Self::store64(&self.dropped_staging, 0, r);
        Self::store64(&self.heartbeat_us, now_us, Ordering::Release);
    }

    /// Reads every value (`dropped_unrepresentable` is 0: it lies outside these
    /// cells, see [`crate::mapping::FileMapping::unrepresentable`]).
    pub fn read(&self) -> TrailerInfo {
        let flags = Self::load32(&self.flags, Ordering::Acquire);
        TrailerInfo {
            writer_pid: Self::load32(&self.writer_pid, Ordering::Relaxed),
            published: Self::load64(&self.published, Ordering::Acquire),
            dropped_ring_full: Self::load64(&self.dropped_ring_full, Ordering::Relaxed),
            dropped_staging: Self::load64(&self.dropped_staging, Ordering::Relaxed),
            heartbeat_us: Self::load64(&self.heartbeat_us, Ordering::Relaxed),
            clock: ClockId::from_u32(Self::load32(&self.clock, Ordering::Relaxed)),
            clean_close: flags & FLAG_CLEAN_CLOSE != 0,
            policy: if flags & FLAG_OVERWRITE_OLDEST != 0 {
                OverflowPolicy::OverwriteOldest
            } else {
                OverflowPolicy::DropNewest
            },
            unread_at_start: (flags & FLAG_UNREAD_AT_START != 0)
                .then(|| u64::from(Self::load32(&self.unread_at_start, Ordering::Relaxed))),
            dropped_unrepresentable: 0,
        }
    }
}

/// What the bytes after the last slot hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TrailerKind {
    /// No telering trailer (a NIXL-written file, a raw memory window).
    Absent,
    /// A valid version-1 trailer.
    Present,
}

/// Decides from raw bytes whether a valid trailer follows a ring of `generation`.
/// `bytes` are the first bytes after the last slot (possibly fewer than a trailer).
pub(crate) fn classify_trailer(
    path: &Path,
    bytes: &[u8],
    generation: Generation,
) -> Result<TrailerKind, ShmError> {
    let expected_size = trailer_size(generation);
    if bytes.len() < TRAILER_MAGIC.len() || bytes[..8] != TRAILER_MAGIC {
        return Ok(TrailerKind::Absent);
    }
    if bytes.len() < expected_size {
        return Err(ShmError::TrailerCut {
            path: path.to_path_buf(),
            present: bytes.len() as u64,
            needed: expected_size as u64,
        });
    }
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let version = u32_at(trailer_offsets::LAYOUT_VERSION);
    if version != TRAILER_VERSION {
        return Err(ShmError::BadTrailer {
            path: path.to_path_buf(),
            field: "layout_version",
            found: version as u64,
            expected: format!(
                "{TRAILER_VERSION} (written by a newer telering? upgrade the reader)"
            ),
        });
    }
    let size = u32_at(trailer_offsets::TRAILER_SIZE);
    if size as usize != expected_size {
        return Err(ShmError::BadTrailer {
            path: path.to_path_buf(),
            field: "trailer_size",
            found: size as u64,
            expected: format!("{expected_size} in a {generation} ring"),
        });
    }
    Ok(TrailerKind::Present)
}

/// Microseconds since the Unix epoch: the clock of the trailer's `heartbeat_us`.
pub(crate) fn realtime_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}
