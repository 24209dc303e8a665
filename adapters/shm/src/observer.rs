//! The observer of a ring file, [`ObserverReader`]: read-only, any number of them,
//! following telering's slot stamps (see the `reader` module docs for both readers).

use crate::error::ShmError;
use crate::file::{Access, MappedRing, RingFileInfo, RingMemory};
use crate::generation::{Generation, RingRecord};
use crate::layout::{TrailerCells, TrailerInfo};
use crate::mapping::{CompactRegion, FileRegion};
use crate::reader::{FollowFile, SlotRead, compact_record};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use telering_core::builtin::AGENT_TELEMETRY_EVENTS_DROPPED;
use telering_core::{Event, Observer, ObserverStart};

/// An in-band loss report (`agent_telemetry_events_dropped`).
fn is_loss_report(event: &Event) -> bool {
    event.name_field() == AGENT_TELEMETRY_EVENTS_DROPPED.name.field()
}

/// An observer of either stamped layout.
#[derive(Debug)]
enum Follow {
    Events(Observer<Arc<FileRegion>>),
    Compact(Observer<Arc<CompactRegion>>),
}

/// One mapped file and its observer (which holds a share of the file's region).
struct Watch {
    observer: Follow,
    ring: MappedRing,
}

impl Watch {
    /// Follows `ring` if its slots carry telering's stamps (`assume_stamps`: the
    /// caller knows they do, though the file cannot say so).
    fn new(ring: MappedRing, start: ObserverStart, assume_stamps: bool) -> Result<Watch, ShmError> {
        let stamped = ring.stamped() || assume_stamps;
        let observer = match &ring.memory {
            RingMemory::Events(region) if stamped => {
                Follow::Events(Observer::from_region(Arc::clone(region), start))
            }
            RingMemory::Compact(region) => {
                Follow::Compact(Observer::from_region(Arc::clone(region), start))
            }
            _ => {
                return Err(ShmError::NoSlotStamps {
                    generation: ring.generation,
                    path: ring.path,
                });
            }
        };
        ring.check_stamps()?;
        Ok(Watch { observer, ring })
    }

    fn poll(&mut self) -> Option<RingRecord> {
        match &mut self.observer {
            Follow::Events(o) => o.poll().map(|e| RingRecord::from_event(&e)),
            Follow::Compact(o) => o.poll().map(|e| compact_record(&e)),
        }
    }

    fn events_missed(&self) -> u64 {
        match &self.observer {
            Follow::Events(o) => o.events_missed(),
            Follow::Compact(o) => o.events_missed(),
        }
    }

    fn lag_unknown(&self) -> u64 {
        match &self.observer {
            Follow::Events(o) => o.lag_unknown(),
            Follow::Compact(o) => o.lag_unknown(),
        }
    }

    fn set_published(&mut self, published: u64) {
        match &mut self.observer {
            Follow::Events(o) => o.set_published(published),
            Follow::Compact(o) => o.set_published(published),
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
    /// Opened as a core window: a replacement file is assumed stamped too.
    assume_stamps: bool,
    /// Unknown-size losses of files followed before the current one.
    retired_lag_unknown: u64,
    /// The first event after the carried ones of a replacement ring, polled while
    /// skipping them (see [`ObserverReader::skip_carried`]).
    pending: Option<RingRecord>,
    /// Of the events counted as missed, those that were carried events this observer
    /// had already read in the file they were carried from.
    forgiven_missed: u64,
    /// Events the writers of the rings switched to counted as lost "replaced" that
    /// this observer had read (see [`ObserverReader::replaced_already_read`]).
    replaced_read: u64,
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
    /// Opens `path` read-only and starts following it at `start`. The ring must carry
    /// telering's slot stamps, which the file says by its telering trailer; a ring
    /// without one (NIXL's own writer) is refused at once with
    /// [`ShmError::NoSlotStamps`]: read it with a [`DrainingReader`](crate::DrainingReader).
    pub fn open(path: &Path, start: ObserverStart) -> Result<Self, ShmError> {
        ObserverReader::with_ring(MappedRing::open(path, Access::ReadOnly)?, start, false)
    }

    /// Follows a ring in an already open file (a memfd, for example). `label` names it
    /// in errors. As [`ObserverReader::open`], the file must say that it is stamped.
    pub fn from_file(
        file: File,
        label: impl Into<PathBuf>,
        start: ObserverStart,
    ) -> Result<Self, ShmError> {
        ObserverReader::with_ring(
            MappedRing::from_file(file, label.into(), Access::ReadOnly)?,
            start,
            false,
        )
    }

    /// Follows a version-1 ring without a trailer that the caller knows was written
    /// by telering-core's producer, which stamps every slot: a device window laid out
    /// with `telering_core::ring::RingRegion` alone. The file cannot say so itself,
    /// and a ring that NIXL's writer made would be followed wrongly, so only use this
    /// for windows whose writer you know.
    pub fn open_core_window(path: &Path, start: ObserverStart) -> Result<Self, ShmError> {
        ObserverReader::with_ring(MappedRing::open(path, Access::ReadOnly)?, start, true)
    }

    /// [`ObserverReader::open_core_window`] for a ring that starts `offset` bytes into
    /// the file (a device's RAM image, a file holding other data too), read without a
    /// trailer. The offset may be page-unaligned but must be 8-aligned, and the whole
    /// ring must lie inside the file ([`ShmError::Window`] otherwise, naming the offset).
    /// The file is only mapped, never read (a PCI memory BAR's sysfs file can be a
    /// window), and may be a character device (`/dev/mem`, `/dev/uioN`), whose extent
    /// the ring's header alone gives; see the `window` module for both.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy, Producer};
    /// use telering_shm::ObserverReader;
    /// # let dir = std::env::temp_dir().join(format!("telering-doc-window-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("ram.bin");
    /// // A ring of 8 slots laid out 4096 + 24 bytes into a file, after other data.
    /// let offset = 4096 + 24;
    /// let ring_bytes = HeaderInfo::ring_bytes(8) as usize;
    /// let mut memory = vec![0u64; (offset + ring_bytes).div_ceil(8)];
    /// // SAFETY: the vector is 8-aligned, outlives the region and holds the ring's
    /// // bytes from `offset` on; nothing else touches them while the region lives.
    /// let ring = unsafe { memory.as_mut_ptr().cast::<u8>().add(offset) };
    /// let region = unsafe { RingRegion::init((), ring, ring_bytes, 8) }.unwrap();
    /// let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    /// producer.push(&Event::new(1, Category::Custom, event_name!("x"), 7)).unwrap();
    /// drop(producer);
    /// drop(region);
    /// let bytes: Vec<u8> = memory.iter().flat_map(|w| w.to_ne_bytes()).collect();
    /// std::fs::write(&path, &bytes[..offset + ring_bytes]).unwrap();
    /// let mut reader = ObserverReader::open_core_window_at(&path, offset as u64, ObserverStart::Oldest)?;
    /// assert_eq!(reader.poll()?.map(|e| e.value()), Some(7));
    /// let past = ObserverReader::open_core_window_at(&path, 1 << 20, ObserverStart::Oldest).unwrap_err();
    /// assert!(past.to_string().contains("offset 1048576"), "{past}");
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), telering_shm::ShmError>(())
    /// ```
    pub fn open_core_window_at(
        path: &Path,
        offset: u64,
        start: ObserverStart,
    ) -> Result<Self, ShmError> {
        ObserverReader::with_ring(MappedRing::open_window(path, offset)?, start, true)
    }

    /// [`ObserverReader::open_core_window`] for an already open file.
    pub fn from_core_window(
        file: File,
        label: impl Into<PathBuf>,
        start: ObserverStart,
    ) -> Result<Self, ShmError> {
        ObserverReader::with_ring(
            MappedRing::from_file(file, label.into(), Access::ReadOnly)?,
            start,
            true,
        )
    }

    fn with_ring(
        ring: MappedRing,
        start: ObserverStart,
        assume_stamps: bool,
    ) -> Result<ObserverReader, ShmError> {
        Ok(ObserverReader {
            current: Watch::new(ring, start, assume_stamps)?,
            retired_missed: 0,
            assume_stamps,
            retired_lag_unknown: 0,
            pending: None,
            forgiven_missed: 0,
            replaced_read: 0,
        })
    }

    /// The next event, or `Ok(None)` when the observer has caught up.
    pub fn poll(&mut self) -> Result<Option<Event>, ShmError> {
        self.pop_event()
    }

    /// Reads up to `max` events, calling `each` with every one (or the error for a
    /// corrupt slot). Returns how many were read.
    pub fn read_batch(
        &mut self,
        max: usize,
        mut each: impl FnMut(Result<Event, ShmError>),
    ) -> Result<usize, ShmError> {
        self.read_events(max, &mut each)
    }

    /// The next slot as an unvalidated [`RingRecord`], or `Ok(None)` when caught up.
    pub fn poll_record(&mut self) -> Result<Option<RingRecord>, ShmError> {
        self.read_one()
    }

    /// Like [`ObserverReader::read_batch`], with each slot as an unvalidated
    /// [`RingRecord`].
    pub fn read_records(
        &mut self,
        max: usize,
        mut each: impl FnMut(RingRecord),
    ) -> Result<usize, ShmError> {
        self.read_following(max, &mut each)
    }

    /// The generation of the ring being followed.
    pub fn generation(&self) -> Generation {
        self.current.ring.generation
    }

    /// Events the writer overwrote before this observer read them, counted exactly
    /// from the slot stamps.
    pub fn events_missed(&self) -> u64 {
        (self.retired_missed + self.current.events_missed()).saturating_sub(self.forgiven_missed)
    }

    /// Skips the events a new writer carried into this ring from the dead writer's
    /// ring it replaced (another capacity or layout; trailer `unread_at_start`), for
    /// a follower that watched the replaced file and now opens its replacement itself
    /// (an observer that follows the path does so on its own when it switches). Call
    /// it right after opening, and only when the path named another file before: in a
    /// ring reused in place, `unread_at_start` counts the previous run's events, which
    /// a new follower has not seen.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("telering-doc-skip-carried-{}", std::process::id()));
    /// use telering_core::{event_name, Category, Event, ObserverStart};
    /// use telering_shm::{ObserverReader, ShmWriter, WriterOptions};
    /// let mut options = WriterOptions::new(&dir, "agent");
    /// let mut writer = ShmWriter::create(options.clone())?;
    /// writer.write_batch(&[Event::new(1, Category::Custom, event_name!("old"), 1); 2]);
    /// writer.close()?;
    /// options.capacity *= 2; // a restart with another size: the 2 events are carried
    /// let mut writer = ShmWriter::create(options)?;
    /// writer.write_batch(&[Event::new(2, Category::Custom, event_name!("new"), 2)]);
    /// let mut observer = ObserverReader::open(writer.path(), ObserverStart::Oldest)?;
    /// observer.skip_carried_events();
    /// assert_eq!(observer.poll()?.map(|e| e.value()), Some(2));
    /// # drop(observer); writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), telering_shm::ShmError>(())
    /// ```
    pub fn skip_carried_events(&mut self) {
        let carried = self
            .current
            .ring
            .trailer()
            .and_then(|t| t.read().unread_at_start)
            .unwrap_or(0);
        let _ = self.skip_carried(carried);
    }

    /// Skips the first `carried` events of the ring just switched to: a ring that
    /// replaced the one this observer read to its end starts with that ring's unread
    /// events, carried over by the new writer (trailer `unread_at_start`), which this
    /// observer has read already. Carried events the writer overwrote before this
    /// observer got to them are not counted as missed.
    ///
    /// Returns the value of the loss report the carried events start with, if the
    /// first slot is one and was read: the writer's count of the replaced ring's
    /// unread events that it could not carry (loss cause "replaced").
    fn skip_carried(&mut self, carried: u64) -> Option<u64> {
        let mut passed = 0u64;
        let mut report = None;
        while passed < carried {
            self.load_published();
            let missed_before = self.current.events_missed();
            let Some(record) = self.current.poll() else {
                break;
            };
            let missed = self.current.events_missed() - missed_before;
            let position = passed + missed;
            if position >= carried {
                // A new event: every carried one left was overwritten.
                self.forgiven_missed += carried - passed;
                self.pending = Some(record);
                return report;
            }
            if position == 0 {
                report = record
                    .to_event()
                    .ok()
                    .filter(is_loss_report)
                    .map(|e| e.value());
            }
            self.forgiven_missed += missed;
            passed = position + 1;
        }
        report
    }

    /// Of the events the writers of the rings this observer switched to counted as
    /// lost because they replaced a ring of another size and could not carry them
    /// (loss cause "replaced", in the new trailer's `dropped_staging`), those this
    /// observer had read in the replaced file before it switched: a reader that
    /// charges the trailer's `dropped_staging` as losses subtracts them, since it
    /// delivered them. They are known from the loss report the new ring starts with;
    /// a switch after the old file was truncated under the observer adds none.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("telering-doc-replaced-read-{}", std::process::id()));
    /// use telering_core::{event_name, Category, Event, ObserverStart};
    /// use telering_shm::{ObserverReader, ShmWriter, WriterOptions};
    /// let mut options = WriterOptions::new(&dir, "agent");
    /// options.capacity = 16;
    /// let mut writer = ShmWriter::create(options.clone())?;
    /// let mut observer = ObserverReader::open(writer.path(), ObserverStart::Oldest)?;
    /// writer.write_batch(&[Event::new(1, Category::Custom, event_name!("old"), 1); 10]);
    /// writer.close()?;
    /// assert_eq!(observer.read_batch(64, |_| {})?, 10);
    /// options.capacity = 4; // the 3 newest are carried, 7 are lost ("replaced")
    /// let writer = ShmWriter::create(options)?;
    /// assert_eq!(writer.events_lost_replaced(), 8);
    /// assert_eq!(observer.read_batch(64, |_| {})?, 0);
    /// assert_eq!(observer.replaced_already_read(), 8);
    /// # drop(observer); writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), telering_shm::ShmError>(())
    /// ```
    pub fn replaced_already_read(&self) -> u64 {
        self.replaced_read
    }

    /// The device and inode numbers of the file being followed: once a new writer
    /// replaced the file, they change when this observer has read the old one to its
    /// end and taken up the new one.
    pub fn file_id(&self) -> (u64, u64) {
        self.current.ring.id.numbers()
    }

    /// Gives the observer the writer's 64-bit count of published events, so a lapped
    /// observer counts exactly however far behind it fell.
    fn load_published(&mut self) {
        if let Some(t) = self.current.ring.trailer() {
            let published = TrailerCells::load64(&t.published, Ordering::Acquire);
            self.current.set_published(published);
        }
    }

    /// How many times this observer fell 2²⁹ events or more behind the writer, too
    /// far for the slot stamps to count what it missed; each time it resumed at the
    /// oldest readable event (see `telering_core::Observer::lag_unknown`).
    pub fn lag_unknown(&self) -> u64 {
        self.retired_lag_unknown + self.current.lag_unknown()
    }

    /// Capacity, fill, version, trailer and writer liveness of the file being followed.
    pub fn info(&self) -> RingFileInfo {
        self.current.ring.info()
    }

    /// The trailer of the file being followed as its writer last published it (loss
    /// counters, heartbeat), or `None` for a ring without one. Unlike
    /// [`ObserverReader::info`] it only loads from the mapping, with no system call,
    /// so a collector can read the writer's losses at every poll.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("telering-doc-trailer-{}", std::process::id()));
    /// use telering_core::{event_name, Category, Event, ObserverStart};
    /// use telering_shm::{ObserverReader, ShmWriter, WriterOptions};
    /// let mut options = WriterOptions::new(&dir, "full");
    /// options.capacity = 4;
    /// let mut writer = ShmWriter::create(options)?;
    /// let observer = ObserverReader::open(writer.path(), ObserverStart::Oldest)?;
    /// let e = Event::new(1, Category::Custom, event_name!("n"), 1);
    /// // 2 fit, 3 are refused and the last slot takes their report: nothing drains it.
    /// writer.write_batch(&[e; 5]);
    /// assert_eq!(observer.trailer().unwrap().dropped_ring_full, 3);
    /// # drop(observer); writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), telering_shm::ShmError>(())
    /// ```
    pub fn trailer(&self) -> Option<TrailerInfo> {
        self.current.ring.mapping().trailer_info()
    }
}

impl FollowFile for ObserverReader {
    fn ring(&self) -> &MappedRing {
        &self.current.ring
    }

    fn read_current(&mut self, max: usize, each: &mut dyn FnMut(SlotRead)) -> usize {
        self.load_published();
        let mut n = 0;
        if max > 0 {
            if let Some(record) = self.pending.take() {
                each(record);
                n += 1;
            }
        }
        while n < max {
            match self.current.poll() {
                Some(r) => each(r),
                None => break,
            }
            n += 1;
        }
        n
    }

    fn access(&self) -> Access {
        Access::ReadOnly
    }

    fn switch_to(&mut self, ring: MappedRing, read_to_end: bool) -> Result<(), ShmError> {
        let carried = ring
            .trailer()
            .and_then(|t| t.read().unread_at_start)
            .unwrap_or(0);
        let watch = Watch::new(ring, ObserverStart::Oldest, self.assume_stamps)?;
        self.retired_missed += self.current.events_missed();
        self.retired_lag_unknown += self.current.lag_unknown();
        self.current = watch;
        self.pending = None;
        let replaced = self.skip_carried(carried);
        if let (Some(lost), true) = (replaced, read_to_end) {
            // The report counts what the trailer's `dropped_staging` started with
            // (an old report carried first instead would say more than that).
            let staging = self.trailer().map_or(0, |t| t.dropped_staging);
            if lost <= staging {
                self.replaced_read = self.replaced_read.saturating_add(lost);
            }
        }
        Ok(())
    }
}
