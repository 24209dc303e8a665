//! The two readers of a ring file.
//!
//! - [`DrainingReader`]: the one consumer. It reads from `read_pos` and advances it,
//!   exactly as NIXL's readers do, so the writer can reuse the slots. There must be
//!   only one per file (as with NIXL's readers, this is not enforced).
//! - [`ObserverReader`]: maps the file read-only and never writes it; any number may
//!   follow the stream alongside the draining reader. It checks the slot stamps
//!   (offset 44 of each slot, see `telering_core::ring`), so it never returns a torn
//!   event, and when the writer laps it — under `OverwriteOldest`, or when it lags
//!   behind the draining reader — it counts exactly how many events it missed.
//!   Observers need a ring written by telering (the stamps); NIXL's own writer does
//!   not write them.
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
//! file. Events whose category or name is invalid are returned as
//! [`ShmError::CorruptEvent`] naming the slot; the reader has moved past them and can
//! go on.

use crate::error::ShmError;
use crate::file::{Access, MappedRing, RingFileInfo};
use crate::mapping::FileRegion;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use telering_core::{Consumer, Event, Observer, ObserverStart, OverflowPolicy};

fn validated(event: Event, path: &Path, slot: Option<u64>) -> Result<Event, ShmError> {
    event
        .validate()
        .map(|()| event)
        .map_err(|source| ShmError::CorruptEvent {
            path: path.to_path_buf(),
            slot,
            source,
        })
}

/// What both readers do around their own way of reading: refuse a file truncated
/// under the mapping, and move on to the file a new writer put in place of the old
/// one once the old one is read to the end.
trait FollowFile {
    /// The file being read.
    fn ring(&self) -> &MappedRing;

    /// Reads up to `max` events from the current file.
    fn read_current(&mut self, max: usize, each: &mut dyn FnMut(Result<Event, ShmError>)) -> usize;

    /// Switches to the file now at the path, if a new writer replaced it.
    fn switch_if_replaced(&mut self) -> Result<bool, ShmError>;

    fn read_following(
        &mut self,
        max: usize,
        each: &mut dyn FnMut(Result<Event, ShmError>),
    ) -> Result<usize, ShmError> {
        if let Err(e) = self.ring().check_size() {
            // A truncated file is lost; if a new writer put a new file in its
            // place, continue there.
            if !self.switch_if_replaced()? {
                return Err(e);
            }
        }
        let n = self.read_checked(max, each)?;
        // Caught up: has a new writer replaced the file?
        if n == 0 && max > 0 && self.switch_if_replaced()? {
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
        each: &mut dyn FnMut(Result<Event, ShmError>),
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

    fn read_one(&mut self) -> Result<Option<Event>, ShmError> {
        let mut out = None;
        self.read_following(1, &mut |r| out = Some(r))?;
        out.transpose()
    }
}

/// One mapped file and its consumer (which holds a share of the file's region).
struct Drain {
    consumer: Consumer<Arc<FileRegion>>,
    ring: MappedRing,
    policy: OverflowPolicy,
    /// The slot the consumer reads next under `DropNewest`.
    next_slot: u32,
}

impl Drain {
    fn new(ring: MappedRing) -> Result<Drain, ShmError> {
        let policy = ring.policy();
        if policy == OverflowPolicy::OverwriteOldest {
            // This consumer follows the stamps.
            ring.check_stamps()?;
        }
        // This reader is the file's one consumer by the documented contract of
        // `DrainingReader`, as with NIXL's readers. No local type can stop another
        // process from breaking that contract, but every access to the shared bytes is
        // atomic, so a second consumer could only make events be read twice or
        // skipped — never a data race or a torn value.
        let consumer = Consumer::from_region(Arc::clone(&ring.region), policy).map_err(|e| {
            ShmError::io(
                &ring.path,
                "map for writing",
                std::io::Error::new(std::io::ErrorKind::PermissionDenied, e.to_string()),
            )
        })?;
        let next_slot =
            ring.region.header().read_pos.load_u64() as u32 & (ring.region.capacity() - 1);
        Ok(Drain {
            consumer,
            ring,
            policy,
            next_slot,
        })
    }

    fn read(&mut self, max: usize, each: &mut dyn FnMut(Result<Event, ShmError>)) -> usize {
        let mask = self.ring.region.capacity() - 1;
        let path = &self.ring.path;
        match self.policy {
            OverflowPolicy::DropNewest => {
                let start = self.next_slot;
                let mut i = 0u32;
                let n = self.consumer.read_batch(max, |e| {
                    let slot = start.wrapping_add(i) & mask;
                    i = i.wrapping_add(1);
                    each(validated(*e, path, Some(slot as u64)));
                });
                self.next_slot = start.wrapping_add(n as u32) & mask;
                n
            }
            OverflowPolicy::OverwriteOldest => {
                // One at a time, so that the slot of each event is known even when the
                // consumer skips overwritten ones.
                let mut n = 0;
                while n < max {
                    let mut got = None;
                    if self.consumer.read_batch(1, |e| got = Some(*e)) == 0 {
                        break;
                    }
                    let after = self.ring.region.header().read_pos.load_u64() as u32;
                    let slot = after.wrapping_sub(1) & mask;
                    if let Some(e) = got {
                        each(validated(e, path, Some(slot as u64)));
                    }
                    n += 1;
                }
                n
            }
        }
    }
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
            .field("consumer", &self.current.consumer)
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
    /// let len = HeaderInfo::ring_len(8) as usize;
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
        Ok(DrainingReader {
            current: Drain::new(ring)?,
            retired_lost: 0,
        })
    }

    /// Takes the oldest unread event, `Ok(None)` if there is none. A corrupt slot is an
    /// `Err` naming the file and slot; the reader has moved past it.
    pub fn pop(&mut self) -> Result<Option<Event>, ShmError> {
        self.read_one()
    }

    /// Reads up to `max` events, calling `each` with every one (or with the error for
    /// a corrupt slot), and releases their slots with one store of `read_pos`. Returns
    /// how many slots were consumed. Fails before reading if the file was truncated.
    pub fn read_batch(
        &mut self,
        max: usize,
        mut each: impl FnMut(Result<Event, ShmError>),
    ) -> Result<usize, ShmError> {
        self.read_following(max, &mut each)
    }

    /// Events the writer overwrote before this reader could take them (only under
    /// `OverwriteOldest`; a `DropNewest` writer counts its drops in the trailer).
    pub fn events_lost(&self) -> u64 {
        self.retired_lost + self.current.consumer.events_lost()
    }

    /// Capacity, fill, version, trailer and writer liveness of the file being read.
    pub fn info(&self) -> RingFileInfo {
        self.current.ring.info()
    }
}

impl FollowFile for DrainingReader {
    fn ring(&self) -> &MappedRing {
        &self.current.ring
    }

    fn read_current(&mut self, max: usize, each: &mut dyn FnMut(Result<Event, ShmError>)) -> usize {
        self.current.read(max, each)
    }

    fn switch_if_replaced(&mut self) -> Result<bool, ShmError> {
        if !self.current.ring.path_names_other_file() {
            return Ok(false);
        }
        let ring = MappedRing::open(&self.current.ring.path, Access::ReadWrite)?;
        log::info!(
            "{}: the file was replaced by a new writer; reading the new one",
            ring.path.display()
        );
        self.retired_lost += self.current.consumer.events_lost();
        self.current = Drain::new(ring)?;
        Ok(true)
    }
}

/// One mapped file and its observer (which holds a share of the file's region).
struct Watch {
    observer: Observer<Arc<FileRegion>>,
    ring: MappedRing,
}

impl Watch {
    fn new(ring: MappedRing, start: ObserverStart) -> Watch {
        Watch {
            observer: Observer::from_region(Arc::clone(&ring.region), start),
            ring,
        }
    }
}

/// A read-only follower of a ring file: maps it read-only, never writes it, and any
/// number may run at once. See the module docs.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("telering-doc-observe-{}", std::process::id()));
/// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy};
/// use telering_shm::{ObserverReader, ShmWriter, WriterOptions};
/// let mut options = WriterOptions::new(&dir, "recorder");
/// options.capacity = 4;
/// options.policy = OverflowPolicy::OverwriteOldest;
/// let mut writer = ShmWriter::create(options)?;
/// let mut observer = ObserverReader::open(writer.path(), ObserverStart::Oldest)?;
/// let events: Vec<Event> = (0..6).map(|v| Event::new(v, Category::Custom, event_name!("n"), v)).collect();
/// writer.write_batch(&events);
/// // The 4 slots now hold events 2 to 5: 0 and 1 were overwritten.
/// assert_eq!(observer.poll()?.map(|e| e.value()), Some(2));
/// assert_eq!(observer.events_missed(), 2);
/// # drop(observer); writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), telering_shm::ShmError>(())
/// ```
pub struct ObserverReader {
    current: Watch,
    retired_missed: u64,
}

impl std::fmt::Debug for ObserverReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObserverReader")
            .field("ring", &self.current.ring)
            .field("observer", &self.current.observer)
            .field("retired_missed", &self.retired_missed)
            .finish()
    }
}

impl ObserverReader {
    /// Opens `path` read-only and starts following it at `start`.
    pub fn open(path: &Path, start: ObserverStart) -> Result<Self, ShmError> {
        ObserverReader::with_ring(MappedRing::open(path, Access::ReadOnly)?, start)
    }

    /// Follows a ring in an already open file (a memfd, for example). `label` names it
    /// in errors.
    pub fn from_file(
        file: File,
        label: impl Into<PathBuf>,
        start: ObserverStart,
    ) -> Result<Self, ShmError> {
        ObserverReader::with_ring(
            MappedRing::from_file(file, label.into(), Access::ReadOnly)?,
            start,
        )
    }

    fn with_ring(ring: MappedRing, start: ObserverStart) -> Result<ObserverReader, ShmError> {
        if ring.lacks_stamps() {
            return Err(ShmError::NoSlotStamps { path: ring.path });
        }
        ring.check_stamps()?;
        Ok(ObserverReader {
            current: Watch::new(ring, start),
            retired_missed: 0,
        })
    }

    /// The next event, or `Ok(None)` when the observer has caught up.
    pub fn poll(&mut self) -> Result<Option<Event>, ShmError> {
        self.read_one()
    }

    /// Reads up to `max` events, calling `each` with every one (or the error for a
    /// corrupt slot). Returns how many were read.
    pub fn read_batch(
        &mut self,
        max: usize,
        mut each: impl FnMut(Result<Event, ShmError>),
    ) -> Result<usize, ShmError> {
        self.read_following(max, &mut each)
    }

    /// Events the writer overwrote before this observer read them, counted exactly
    /// from the slot stamps.
    pub fn events_missed(&self) -> u64 {
        self.retired_missed + self.current.observer.events_missed()
    }

    /// Capacity, fill, version, trailer and writer liveness of the file being followed.
    pub fn info(&self) -> RingFileInfo {
        self.current.ring.info()
    }
}

impl FollowFile for ObserverReader {
    fn ring(&self) -> &MappedRing {
        &self.current.ring
    }

    fn read_current(&mut self, max: usize, each: &mut dyn FnMut(Result<Event, ShmError>)) -> usize {
        let mut n = 0;
        while n < max {
            match self.current.observer.poll() {
                Some(e) => each(validated(e, &self.current.ring.path, None)),
                None => break,
            }
            n += 1;
        }
        n
    }

    fn switch_if_replaced(&mut self) -> Result<bool, ShmError> {
        if !self.current.ring.path_names_other_file() {
            return Ok(false);
        }
        let ring = MappedRing::open(&self.current.ring.path, Access::ReadOnly)?;
        if ring.lacks_stamps() {
            return Err(ShmError::NoSlotStamps { path: ring.path });
        }
        ring.check_stamps()?;
        log::info!(
            "{}: the file was replaced by a new writer; following the new one",
            ring.path.display()
        );
        self.retired_missed += self.current.observer.events_missed();
        self.current = Watch::new(ring, ObserverStart::Oldest);
        Ok(true)
    }
}
