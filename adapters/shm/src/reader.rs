//! The two readers of a ring file.
//!
//! - [`DrainingReader`]: the one consumer. It reads from `read_pos` and advances it,
//!   exactly as NIXL's readers do, so the writer can reuse the slots. There is only one
//!   per file: each takes an advisory lock (the `drain_lock` module), and a second is
//!   refused with [`ShmError::DrainerRunning`] naming the first one's pid. NIXL's
//!   readers take no lock, so one of them next to a telering draining reader is not
//!   detected.
//! - [`ObserverReader`](crate::ObserverReader) (the `observer` module): maps the
//!   file read-only and never writes it; any number may follow the stream alongside
//!   the draining reader. It checks the slot stamps
//!   (offset 44 of a version-1 slot, offset 4 of a version-4 slot, see
//!   `telering_core::ring`), so it never returns a torn event, and when the writer
//!   laps it — under `OverwriteOldest`, or when it lags behind the draining reader —
//!   it counts exactly how many events it missed. Observers need a ring written by
//!   telering, which the file says by its trailer; NIXL's own writer writes no stamps.
//!
//! # Generations
//!
//! Both read every NIXL ring generation ([`Generation`]), detected from the header's
//! version and the file's size. Version-1 rings, and version-4 rings telering wrote,
//! are read with telering-core's consumer and observer; the other layouts (and
//! version 4 as NIXL writes it) with NIXL's draining protocol (`plain`).
//! `read_records` / `pop_record` / `poll_record` give each slot as a [`RingRecord`],
//! without validation, for showing what a foreign writer put there; `read_batch` /
//! `pop` / `poll` validate each record into a telering [`Event`].
//!
//! # Trust
//!
//! Both validate the file before mapping it (see [`crate::stat`]). While reading they
//! re-check the file's size with `fstat` before every read or batch, so a file
//! truncated under the mapping yields [`ShmError::Truncated`] rather than a `SIGBUS`.
//! (A truncation in the microseconds between that check and the next load cannot be
//! excluded without a signal handler; it needs a second process to shrink a file it
//! does not own while it is being read.) When a read finds the ring empty, the reader
//! checks whether the path now names another file — a new writer replaced a dead
//! one's file — and if so, having drained the old mapping, continues with the new
//! file. When it finds its file truncated, it checks the file at the path again: one
//! re-created in place (NIXL's writer truncates the file to its own size and lays the
//! header out again) or replaced is validated, mapped again and read as a new ring,
//! with one warning; one still too short is [`ShmError::Truncated`], until it
//! validates. NIXL's version-1 writer re-creates its ring in place at the same size
//! when it restarts (same inode, both positions 0), which no size check sees: the
//! draining reader notices that `read_pos`, which only it stores, is no longer where
//! it left it, and starts over from the header's positions with one warning, so it
//! neither repeats the previous run's events nor returns slots never written. (A
//! restart between the reader's load of `write_pos` and its store of `read_pos` —
//! microseconds — can still hide the reset: NIXL's writer takes no lock to wait on.)
//! Before it trusts a ring's positions at all, the draining reader checks them
//! against the trailer (`published`, `unread_at_start`, the newest events' stamps)
//! and refuses a contradiction with [`ShmError::InconsistentPositions`], writing
//! nothing. Through the validating API, events whose category or name is invalid are
//! returned as [`ShmError::CorruptEvent`] naming the slot; the reader has moved past
//! them and can go on.

use crate::drain::Drain;
use crate::error::ShmError;
use crate::file::{Access, MappedRing, RingFileInfo};
use crate::generation::{Generation, RingRecord};
use crate::layout::TrailerInfo;
use std::fs::File;
use std::path::{Path, PathBuf};
use telering_core::Event;
use telering_core::ring::CompactEvent;

/// One slot as a reader read it: where, and what it holds (not yet validated).
pub(crate) type SlotRead = RingRecord;

fn validated(record: &RingRecord, path: &Path) -> Result<Event, ShmError> {
    record.to_event().map_err(|source| ShmError::CorruptEvent {
        path: path.to_path_buf(),
        slot: record.slot,
        source,
    })
}

/// What both readers do around their own way of reading: refuse a file truncated
/// under the mapping, and move on to the file a new writer put in place of the old
/// one once the old one is read to the end.
pub(crate) trait FollowFile {
    /// The file being read.
    fn ring(&self) -> &MappedRing;

    /// Reads up to `max` events from the current file.
    fn read_current(&mut self, max: usize, each: &mut dyn FnMut(SlotRead)) -> usize;

    /// Starts reading `ring`, the file now at the path, as a new ring; `read_to_end`
    /// when the file it replaces was read to its end (not truncated under the reader).
    fn switch_to(&mut self, ring: MappedRing, read_to_end: bool) -> Result<(), ShmError>;

    /// The access this reader maps files with.
    fn access(&self) -> Access;

    /// Switches to the file now at the path if a new writer replaced it, or — when
    /// the mapped file was `truncated` — if the file at the path (the same inode,
    /// re-created in place by a writer that truncates and lays it out again, as NIXL's
    /// does) validates again: it is checked, mapped and read as a new ring. A
    /// truncated file that does not validate yet is no switch (`Ok(false)`).
    fn switch_if_replaced(&mut self, truncated: bool) -> Result<bool, ShmError> {
        let replaced = self.ring().path_names_other_file();
        if !replaced && !truncated {
            return Ok(false);
        }
        let ring = match self.ring().reopen(self.access()) {
            Ok(ring) => ring,
            Err(_) if !replaced => return Ok(false),
            Err(e) => return Err(e),
        };
        let what = if replaced {
            "the file was replaced by a new writer"
        } else {
            "the file was truncated under this reader and now holds a valid ring again (re-created in place)"
        };
        let (path, generation, capacity) = (ring.path.clone(), ring.generation, ring.capacity());
        // Logged once the switch is made: a new ring this reader cannot follow (an
        // observer of a stampless ring) is the error returned, at every read, and the
        // caller says it once.
        self.switch_to(ring, !truncated)?;
        log::warn!(
            "{}: {what}; reading it as a new ring ({generation}, {capacity} slots)",
            telering_core::text::Escaped::bytes(path.as_os_str().as_encoded_bytes()),
        );
        Ok(true)
    }

    fn read_following(
        &mut self,
        max: usize,
        each: &mut dyn FnMut(SlotRead),
    ) -> Result<usize, ShmError> {
        if let Err(e) = self.ring().check_size() {
            // A truncated file is lost; if a new writer put a new file in its
            // place, or laid the ring out again in this one, continue there.
            if !self.switch_if_replaced(true)? {
                return Err(e);
            }
        }
        let n = self.read_checked(max, each)?;
        // Caught up: has a new writer replaced the file?
        if n == 0 && max > 0 && self.switch_if_replaced(false)? {
            return self.read_checked(max, each);
        }
        Ok(n)
    }

    /// Reads a batch, handing on only the events copied before an access faulted: a
    /// file truncated during the batch leaves zeros where events were (see the `guard`
    /// module), which must not be passed on as events.
    fn read_checked(
        &mut self,
        max: usize,
        each: &mut dyn FnMut(SlotRead),
    ) -> Result<usize, ShmError> {
        // A fault sets the flag before the faulting load completes, so checking it
        // after each event copied tells exactly which events came from the file.
        let faulted = self.ring().fault_flag();
        let n = self.read_current(max, &mut |r| {
            if !faulted.is_some_and(|f| f.load(std::sync::atomic::Ordering::Acquire)) {
                each(r);
            }
        });
        if let Some(e) = self.ring().fault_error() {
            return Err(e);
        }
        Ok(n)
    }

    fn read_one(&mut self) -> Result<Option<SlotRead>, ShmError> {
        let mut out = None;
        self.read_following(1, &mut |r| out = Some(r))?;
        Ok(out)
    }

    /// The strict face: each record validated into an [`Event`].
    fn read_events(
        &mut self,
        max: usize,
        each: &mut dyn FnMut(Result<Event, ShmError>),
    ) -> Result<usize, ShmError> {
        let path = self.ring().path.clone();
        self.read_following(max, &mut |r| each(validated(&r, &path)))
    }

    fn pop_event(&mut self) -> Result<Option<Event>, ShmError> {
        let path = self.ring().path.clone();
        self.read_one()?.map(|r| validated(&r, &path)).transpose()
    }
}

/// The record of a version-4 slot telering-core read.
pub(crate) fn compact_record(e: &CompactEvent) -> RingRecord {
    let mut slot = [0u8; 16];
    slot[0..4].copy_from_slice(&e.type_id.to_le_bytes());
    slot[8..16].copy_from_slice(&e.value.to_le_bytes());
    Generation::V4.decode(&slot)
}

/// The one draining consumer of a ring file, NIXL-compatible: it advances `read_pos`.
/// See the module docs.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("telering-doc-drain-{}", std::process::id()));
/// use telering_core::{event_name, Category, Event};
/// use telering_shm::{DrainingReader, ShmWriter, WriterOptions};
/// let mut writer = ShmWriter::create(WriterOptions::new(&dir, "agent"))?;
/// let mut reader = DrainingReader::open(writer.path())?;
/// assert_eq!(reader.pop()?, None);
/// let e = Event::new(5, Category::Memory, event_name!("agent_memory_registered"), 1 << 20);
/// writer.write_batch(&[e, e]);
/// let mut values = Vec::new();
/// reader.read_batch(usize::MAX, |r| values.push(r.unwrap().value()))?;
/// assert_eq!(values, [1 << 20, 1 << 20]);
/// assert_eq!(reader.info().fill, 0);
/// # drop(reader); writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), telering_shm::ShmError>(())
/// ```
pub struct DrainingReader {
    current: Drain,
    /// Events lost in files this reader has finished with (`OverwriteOldest`).
    retired_lost: u64,
}

impl std::fmt::Debug for DrainingReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DrainingReader")
            .field("ring", &self.current.ring)
            .field("retired_lost", &self.retired_lost)
            .finish()
    }
}

impl DrainingReader {
    /// Opens `path` read-write, validates it and becomes its consumer.
    pub fn open(path: &Path) -> Result<Self, ShmError> {
        DrainingReader::with_ring(MappedRing::open(path, Access::ReadWrite)?)
    }

    /// Becomes the consumer of a ring in an already open, read-write file (a memfd
    /// shared with another process, for example). `label` names it in errors.
    ///
    /// ```
    /// use std::fs::File;
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Producer};
    /// use telering_shm::DrainingReader;
    ///
    /// // A memory window laid out by telering-core alone (no trailer).
    /// let len = HeaderInfo::ring_bytes(8) as usize;
    /// let mut window = vec![0u64; len / 8];
    /// let ptr = window.as_mut_ptr().cast::<u8>();
    /// // SAFETY: aligned, `len` bytes, owned by the region (a moved `Vec` keeps its
    /// // buffer in place), only touched through it until copied.
    /// let region = unsafe { RingRegion::init(window, ptr, len, 8) }.unwrap();
    /// let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    /// producer.push(&Event::new(1, Category::System, event_name!("boot"), 1)).unwrap();
    /// let bytes: Vec<u8> = region.owner().iter().flat_map(|w| w.to_ne_bytes()).collect();
    ///
    /// let fd = rustix::fs::memfd_create("window", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    /// let file = File::from(fd);
    /// std::os::unix::fs::FileExt::write_all_at(&file, &bytes, 0).unwrap();
    /// let mut reader = DrainingReader::from_file(file, "memfd:window")?;
    /// assert_eq!(reader.pop()?.map(|e| e.value()), Some(1));
    /// assert_eq!(reader.info().trailer, None);
    /// # Ok::<(), telering_shm::ShmError>(())
    /// ```
    pub fn from_file(file: File, label: impl Into<PathBuf>) -> Result<Self, ShmError> {
        DrainingReader::with_ring(MappedRing::from_file(
            file,
            label.into(),
            Access::ReadWrite,
        )?)
    }

    fn with_ring(ring: MappedRing) -> Result<DrainingReader, ShmError> {
        crate::drain_lock::lock(&ring.file, &ring.path, ring.id)?;
        Ok(DrainingReader {
            current: Drain::new(ring)?,
            retired_lost: 0,
        })
    }

    /// Takes the oldest unread event, `Ok(None)` if there is none. A corrupt slot is an
    /// `Err` naming the file and slot; the reader has moved past it.
    pub fn pop(&mut self) -> Result<Option<Event>, ShmError> {
        self.pop_event()
    }

    /// Reads up to `max` events, calling `each` with every one (or with the error for
    /// a corrupt slot), and releases their slots with one store of `read_pos`. Returns
    /// how many slots were consumed. Fails before reading if the file was truncated.
    pub fn read_batch(
        &mut self,
        max: usize,
        mut each: impl FnMut(Result<Event, ShmError>),
    ) -> Result<usize, ShmError> {
        self.read_events(max, &mut each)
    }

    /// Takes the oldest unread slot as a [`RingRecord`], without validating it: for
    /// showing what a foreign writer put there (see [`RingRecord::problems`]).
    pub fn pop_record(&mut self) -> Result<Option<RingRecord>, ShmError> {
        self.read_one()
    }

    /// Like [`DrainingReader::read_batch`], with each slot as an unvalidated
    /// [`RingRecord`].
    pub fn read_records(
        &mut self,
        max: usize,
        mut each: impl FnMut(RingRecord),
    ) -> Result<usize, ShmError> {
        self.read_following(max, &mut each)
    }

    /// Events the writer overwrote before this reader could take them (only under
    /// `OverwriteOldest`; a `DropNewest` writer counts its drops in the trailer).
    pub fn events_lost(&self) -> u64 {
        self.retired_lost + self.current.events_lost()
    }

    /// The generation of the ring being read.
    pub fn generation(&self) -> Generation {
        self.current.ring.generation
    }

    /// Capacity, fill, version, trailer and writer liveness of the file being read.
    pub fn info(&self) -> RingFileInfo {
        self.current.ring.info()
    }

    /// The trailer of the file being read as its writer last published it (loss
    /// counters, heartbeat), or `None` for a ring without one. Unlike
    /// [`DrainingReader::info`] it only loads from the mapping, with no system call,
    /// so a collector can read the writer's losses at every poll.
    pub fn trailer(&self) -> Option<TrailerInfo> {
        self.current.ring.mapping().trailer_info()
    }

    /// The device and inode numbers of the file being read: once a new writer
    /// replaced the file, they change when this reader has read the old one to its
    /// end and taken up the new one.
    pub fn file_id(&self) -> (u64, u64) {
        self.current.ring.id.numbers()
    }
}

impl FollowFile for DrainingReader {
    fn ring(&self) -> &MappedRing {
        &self.current.ring
    }

    fn read_current(&mut self, max: usize, each: &mut dyn FnMut(SlotRead)) -> usize {
        self.current.read(max, each)
    }

    fn access(&self) -> Access {
        Access::ReadWrite
    }

    fn switch_to(&mut self, ring: MappedRing, _read_to_end: bool) -> Result<(), ShmError> {
        // The new file may be the same inode (re-created in place), whose lock this
        // reader holds through its old descriptor: release it first.
        crate::drain_lock::unlock(&self.current.ring.file);
        crate::drain_lock::lock(&ring.file, &ring.path, ring.id)?;
        self.retired_lost += self.current.events_lost();
        self.current = Drain::new(ring)?;
        Ok(())
    }
}
