//! The writer: creates the ring file safely and is its one producer.
//!
//! # Creating the file
//!
//! 1. The agent name is checked (not empty, `.` or `..`; no leading `.`, `/` or NUL;
//!    at most 255 bytes and at most the directory file system's name limit, counted
//!    in bytes) and the directory is opened (created first if missing).
//! 2. Whatever sits at `<dir>/<agent>` is judged by the rule in the `leftover`
//!    module: nothing; a live writer's ring (its exclusive `flock` is held: refused
//!    with [`ShmError::WriterAlreadyRunning`] after a short retry, since a reader
//!    probing the lock holds it for a moment); a ring provably left by a dead writer;
//!    or anything else, refused with [`ShmError::NotALeftoverRing`] and left
//!    byte-identical. A symlink or a non-regular file is refused too.
//! 3. A dead writer's ring **of the same shape** (the generation this writer writes,
//!    version 1 or 4, and the capacity) is reused in place: the lock taken while judging it is kept, its blocks are
//!    reserved, a fresh trailer is written (appended if NIXL's writer made it), and
//!    the positions are kept, so the new run continues the sequence. The inode stays,
//!    so a reader left running — telering's or NIXL's, which keep their mapping —
//!    sees the new run's events after the old run's unread ones, with nothing reset
//!    under it. (Resetting `write_pos` and `read_pos` to 0 as NIXL's writer does would
//!    race a draining reader's store of `read_pos`, in either order.) A ring without
//!    telering's trailer was written by another program, whose stamp bytes mean
//!    nothing: they are cleared, so observers show only the events this writer writes.
//! 4. Otherwise a new file is built under a temporary name (see the `create` module:
//!    blocks reserved with `fallocate`, so a full disk is [`ShmError::NoSpace`] rather
//!    than `SIGBUS`), exclusively locked, mapped, initialised (header, zeroed slots,
//!    trailer), and only then put in place: with `RENAME_NOREPLACE` when nothing was
//!    there, so of two writers starting at once exactly one succeeds and the other
//!    finds the winner's lock; with a plain rename over a dead writer's ring of
//!    another shape, whose lock is held until then. Replacing is logged as a warning (readers
//!    of the old inode see nothing new until they have read it to the end). A reader
//!    never sees a half-initialised ring, and the temporary file is removed on every
//!    failure path.
//! 5. The mode is `0o644` less the umask, unless [`WriterOptions::mode`] sets one.
//!
//! # Writing
//!
//! The file's layout is NIXL's version 1 or version 4 ([`WriterOptions::layout`];
//! see `ring_producer` for what version 4 holds and what it counts instead).
//!
//! [`ShmWriter::write_batch`] pushes a batch through the core `Producer` and
//! publishes it with one release store of `write_pos`; then it updates the trailer's
//! counters and heartbeat. Every event the ring refuses (`DropNewest`) and every loss
//! reported through [`ShmWriter::add_dropped`] is counted in the trailer and, as
//! soon as the ring has room, reported in-band by one `agent_telemetry_events_dropped`
//! event whose value is the number of events lost since the previous report. A batch
//! the ring cannot take whole fills it only up to its last free slot, which takes
//! that report (this batch's losses included): so a ring that fills while refusing
//! events ends with the report of them, even if nobody drains it again. Losses while
//! the ring has no free slot at all are in the trailer at once, and in the next
//! report once a slot frees up (at the next batch, heartbeat, flush or close).
//!
//! A dead writer's ring of another capacity or layout is replaced, and its unread
//! events are carried into the new ring (the `carry` module): oldest dropped first
//! when they do not fit, counted in the trailer's `dropped_staging` and reported
//! in-band (loss cause "replaced"; [`ShmWriter::events_lost_replaced`]).
//!
//! At every heartbeat and flush, and before a batch when the last check is a second
//! old (so a writer that only writes batches notices too),
//! the writer checks that the path still names its file (a link count above 0, and
//! the same inode at the path). A reader that unlinked it —
//! NIXL's current reader unlinks every ring file of another version than its own —
//! would leave the writer writing into a file nobody can open: instead the writer warns
//! once, makes the file again at the path with the same layout and capacity, and
//! counts the events it published since the previous check (they went into the
//! unlinked file) as dropped.
//!
//! Before each batch the writer checks with one `fstat` that the file still has the
//! length it mapped. If someone truncated it, the writer stops touching the mapping
//! (a store there would kill the agent with `SIGBUS`), counts every further event as
//! dropped, and `flush`/`close` report [`ShmError::Truncated`].
//!
//! # Closing
//!
//! [`ShmWriter::close`] (or dropping the writer) writes a pending drop report if
//! there is room, sets the clean-close flag, `msync`s, and releases the lock. The file
//! stays for post-mortem readers unless [`WriterOptions::unlink_on_close`] is set.

mod relink;

use crate::error::ShmError;
use crate::file::FileId;
use crate::layout::{FLAG_CLEAN_CLOSE, TrailerCells, realtime_us};
use crate::leftover::RingShape;
use crate::mapping::FileMapping;
use crate::options::{WriterOptions, validate_agent_name};
use crate::place::{Parts, place};
use crate::ring_producer::RingProducer;
use rustix::fs::{AtFlags, Mode, OFlags};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use telering_core::Event;
use telering_core::drop_report::DropReport;
use telering_core::ring::MAX_CAPACITY;

/// The one producer of a ring file. See the module docs for how it is created.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("telering-doc-writer-{}", std::process::id()));
/// use telering_core::{event_name, Category, Event};
/// use telering_shm::{DrainingReader, ShmWriter, WriterOptions};
///
/// let mut writer = ShmWriter::create(WriterOptions::new(&dir, "agent-0"))?;
/// let events: Vec<Event> = (0..3)
///     .map(|v| Event::new(v, Category::Transfer, event_name!("agent_tx_bytes"), 4096 * v))
///     .collect();
/// assert_eq!(writer.write_batch(&events), 3);
///
/// let mut reader = DrainingReader::open(writer.path())?;
/// assert_eq!(reader.pop()?.map(|e| e.value()), Some(0));
/// writer.close()?;
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), telering_shm::ShmError>(())
/// ```
pub struct ShmWriter {
    /// Holds the file's region, which owns the mapping (ring and trailer).
    producer: RingProducer,
    /// Holds the exclusive `flock` for the writer's lifetime.
    locked_file: File,
    id: FileId,
    dir: OwnedFd,
    path: PathBuf,
    agent_name: String,
    unlink_on_close: bool,
    dropped_staging: u64,
    /// Events refused because the file was truncated under the writer.
    dropped_unwritable: u64,
    /// The file is shorter than the mapping: nothing may touch the mapping any more.
    truncated: bool,
    /// Bytes mapped: ring plus trailer.
    mapped_len: u64,
    /// Losses already reported in-band.
    reports: DropReport,
    closed: bool,
    /// What the file was made with, to make it again if it is unlinked.
    options: WriterOptions,
    /// Events published into files this writer has since made again (see
    /// [`ShmWriter::heartbeat`]), and refused by their full rings.
    retired_published: u64,
    retired_ring_full: u64,
    /// Events refused because the ring was full, beyond those the core producer
    /// refused: a batch that does not fit keeps the last free slot for the drop
    /// report (see `ring_producer::push_reporting`).
    refused_full: u64,
    /// Events published into the file before it was found unlinked, since the last
    /// check that found it in place: lost.
    dropped_unlinked: u64,
    /// `events_published()` at the last check that found the file in place.
    published_at_check: u64,
    /// Unread events of a dead writer's ring this writer replaced that could not be
    /// carried into its own (the `carry` module): not this writer's events, so not in
    /// [`ShmWriter::events_dropped`], but counted in the trailer's `dropped_staging`.
    dropped_replaced: u64,
    /// Whether the warning about an unlinked file was given.
    warned_unlinked: bool,
    /// When the path was last checked (microseconds since the epoch).
    link_checked_us: u64,
}

/// How often, at most, [`ShmWriter::write_batch`] checks that the path still names the
/// writer's file (two `stat`s): once a second. `heartbeat` and `flush` always check.
const LINK_CHECK_INTERVAL_US: u64 = 1_000_000;

impl std::fmt::Debug for ShmWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShmWriter")
            .field("path", &self.path)
            .field("producer", &self.producer)
            .field("dropped_staging", &self.dropped_staging)
            .field("reported_drops", &self.reports.reported())
            .finish()
    }
}

impl ShmWriter {
    /// Creates `<dir>/<agent_name>`, reuses a dead writer's ring of the same shape in
    /// place, or replaces a dead writer's ring of another shape, and becomes its
    /// writer (see the module docs).
    pub fn create(options: WriterOptions) -> Result<ShmWriter, ShmError> {
        validate_agent_name(&options.agent_name)?;
        let capacity = options.capacity;
        if !capacity.is_power_of_two() || !(2..=MAX_CAPACITY).contains(&capacity) {
            // The powers of two around the value, within the allowed range.
            let below = (1u32 << (31 - capacity.max(2).leading_zeros())).clamp(2, MAX_CAPACITY);
            let above = capacity
                .checked_next_power_of_two()
                .unwrap_or(MAX_CAPACITY)
                .clamp(2, MAX_CAPACITY);
            let suggestion = if below == above {
                format!("use {below}")
            } else {
                format!("use {below} or {above}")
            };
            return Err(ShmError::InvalidOption {
                field: "capacity",
                reason: format!(
                    "{capacity} is not a power of two from 2 to {MAX_CAPACITY}; {suggestion}"
                ),
            });
        }
        if let Some(mode) = options.mode.filter(|m| m & !0o7777 != 0) {
            return Err(ShmError::InvalidOption {
                field: "mode",
                reason: format!("{mode:#o} has bits beyond the permission bits 0o7777"),
            });
        }
        let dir_path = options.dir.clone();
        std::fs::create_dir_all(&dir_path)
            .map_err(|e| ShmError::io(&dir_path, "create directory", e))?;
        let dir = rustix::fs::open(
            &dir_path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| ShmError::io(&dir_path, "open directory", e))?;
        let name = options.agent_name.as_str();
        if name.len() > crate::create::name_limit(&dir) {
            return Err(ShmError::InvalidAgentName {
                name: name.to_string(),
                reason: "it is longer than the directory's file system allows for a file name (counted in bytes of UTF-8)",
            });
        }
        let path = dir_path.join(name);
        let shape = RingShape {
            generation: options.layout.generation(),
            capacity: capacity as u64,
        };

        let parts = place(&options, &dir, &path, shape)?;
        let writer = ShmWriter::assemble(parts, &options, dir, path);
        writer.store_dropped_staging();
        Ok(writer)
    }

    fn assemble(parts: Parts, options: &WriterOptions, dir: OwnedFd, path: PathBuf) -> ShmWriter {
        ShmWriter {
            dropped_replaced: parts.lost_replaced,
            producer: parts.producer,
            locked_file: parts.file,
            id: parts.id,
            dir,
            path,
            agent_name: options.agent_name.clone(),
            unlink_on_close: options.unlink_on_close,
            dropped_staging: 0,
            dropped_unwritable: 0,
            truncated: false,
            mapped_len: parts.mapped_len,
            reports: DropReport::new(0),
            closed: false,
            options: options.clone(),
            retired_published: 0,
            retired_ring_full: 0,
            refused_full: 0,
            dropped_unlinked: 0,
            published_at_check: 0,
            warned_unlinked: false,
            link_checked_us: realtime_us(),
        }
    }

    /// Writes as many of `events` as fit and publishes them at once; the rest are
    /// counted as dropped. A pending `agent_telemetry_events_dropped` report goes in
    /// first when there is room for it and the whole batch. A batch the ring cannot
    /// take whole (`DropNewest`) fills it up to the last free slot, which takes the
    /// report of every loss so far, this batch's included: a ring that fills while
    /// events are refused ends with their report even if nobody drains it again. Updates the trailer's counters
    /// and heartbeat. Returns how many of `events` were written.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("telering-doc-write-batch-{}", std::process::id()));
    /// use telering_core::{event_name, Category, Event};
    /// use telering_shm::{DrainingReader, ShmWriter, WriterOptions};
    /// let mut options = WriterOptions::new(&dir, "agent");
    /// options.capacity = 4; // holds 3
    /// let mut writer = ShmWriter::create(options)?;
    /// let e = Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), 64);
    /// // Two events, then the last slot takes the report of the three refused.
    /// assert_eq!(writer.write_batch(&[e; 5]), 2);
    /// assert_eq!(writer.events_dropped(), 3);
    /// assert_eq!(writer.write_batch(&[e]), 0); // full: counted, reported later
    /// let mut reader = DrainingReader::open(writer.path())?;
    /// let mut values = Vec::new();
    /// reader.read_batch(usize::MAX, |r| values.push(r.unwrap().value()))?;
    /// assert_eq!(values, [64, 64, 3]);
    /// // The next batch starts with the report of the later loss.
    /// assert_eq!(writer.write_batch(&[e]), 1);
    /// let report = reader.pop()?.unwrap();
    /// assert_eq!((report.name(), report.value()), (Ok("agent_telemetry_events_dropped"), 1));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), telering_shm::ShmError>(())
    /// ```
    pub fn write_batch(&mut self, events: &[Event]) -> usize {
        if realtime_us().wrapping_sub(self.link_checked_us) >= LINK_CHECK_INTERVAL_US {
            self.relink_if_unlinked();
        }
        if !self.file_intact() {
            self.dropped_unwritable = self.dropped_unwritable.saturating_add(events.len() as u64);
            return 0;
        }
        let first_ts = events.first().map(Event::timestamp_us);
        let pending = self.unreported_drops();
        let pushed = self.producer.push(
            &self.path,
            pending,
            first_ts.unwrap_or_else(realtime_us),
            events,
        );
        self.refused_full = self.refused_full.saturating_add(pushed.refused);
        if let Some(report) = &pushed.report {
            self.reports.written(report);
        }
        let written = pushed.written;
        if self.mapping().guard().faulted() {
            // The file was truncated during the batch: it went into anonymous memory.
            self.dropped_unwritable = self.dropped_unwritable.saturating_add(written as u64);
            self.file_intact();
            return 0;
        }
        self.update_trailer();
        written
    }

    /// Counts events lost before they reached the ring (a full staging buffer, a
    /// per-thread lane): they go into the trailer's `dropped_staging` and into the next
    /// in-band drop report.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("telering-doc-count-dropped-{}", std::process::id()));
    /// use telering_shm::{stat, ShmWriter, WriterOptions};
    /// let mut writer = ShmWriter::create(WriterOptions::new(&dir, "agent"))?;
    /// writer.add_dropped(3);
    /// assert_eq!(writer.events_dropped(), 3);
    /// assert_eq!(stat(writer.path())?.trailer.unwrap().dropped_staging, 3);
    /// writer.heartbeat(); // reports them in-band
    /// assert_eq!(writer.unreported_drops(), 0);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), telering_shm::ShmError>(())
    /// ```
    pub fn add_dropped(&mut self, events: u64) {
        self.dropped_staging = self.dropped_staging.saturating_add(events);
        self.store_dropped_staging();
    }

    /// Stores the trailer's `dropped_staging`: events lost before they reached this
    /// file (staging buffers, per-thread lanes, a previous file of this writer that
    /// was unlinked under it, and unread events of a replaced ring that could not be
    /// carried into this one).
    fn store_dropped_staging(&self) {
        if self.truncated {
            return;
        }
        if let Some(t) = self.mapping().trailer() {
            let before = self
                .dropped_staging
                .saturating_add(self.dropped_unlinked)
                .saturating_add(self.dropped_replaced);
            TrailerCells::store64(&t.dropped_staging, before, Ordering::Relaxed);
        }
    }

    /// The former name of [`add_dropped`](Self::add_dropped): it adds, it does not
    /// count.
    #[deprecated(note = "renamed `add_dropped`; this name read like a getter")]
    pub fn count_dropped(&mut self, events: u64) {
        self.add_dropped(events);
    }

    /// Refreshes the heartbeat even when there is nothing to write (and writes a
    /// pending drop report if there is room).
    ///
    /// It also checks that the path still names the writer's file, and makes the file
    /// again if a reader unlinked it (see the module docs).
    pub fn heartbeat(&mut self) {
        self.relink_if_unlinked();
        if !self.file_intact() {
            return;
        }
        if self.unreported_drops() != 0 {
            self.write_batch(&[]);
        } else {
            self.update_trailer();
        }
    }

    /// Writes a pending drop report if there is room and `msync`s the file.
    pub fn flush(&mut self) -> Result<(), ShmError> {
        if !self.file_intact() {
            return Err(self.truncated_error());
        }
        self.heartbeat();
        self.mapping()
            .map()
            .flush()
            .map_err(|e| ShmError::io(&self.path, "msync", e))
    }

    /// The mapping the ring and the trailer live in.
    fn mapping(&self) -> &FileMapping {
        self.producer.mapping()
    }

    /// Flushes, sets the clean-close flag, `msync`s, and removes the file if
    /// [`WriterOptions::unlink_on_close`] asked for it.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("telering-doc-close-{}", std::process::id()));
    /// use telering_shm::{stat, ShmWriter, WriterOptions};
    /// let mut options = WriterOptions::new(&dir, "agent");
    /// let writer = ShmWriter::create(options.clone())?;
    /// let path = writer.path().to_path_buf();
    /// writer.close()?;
    /// assert!(stat(&path)?.trailer.unwrap().clean_close); // kept for post-mortem reading
    ///
    /// options.unlink_on_close = true;
    /// ShmWriter::create(options)?.close()?;
    /// assert!(!path.exists());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), telering_shm::ShmError>(())
    /// ```
    pub fn close(mut self) -> Result<(), ShmError> {
        self.close_inner()
    }

    fn close_inner(&mut self) -> Result<(), ShmError> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        if !self.file_intact() {
            return Err(self.truncated_error());
        }
        self.heartbeat();
        if let Some(t) = self.mapping().trailer() {
            t.flags
                .fetch_or(FLAG_CLEAN_CLOSE.to_le(), Ordering::Release);
        }
        let synced = self
            .mapping()
            .map()
            .flush()
            .map_err(|e| ShmError::io(&self.path, "msync", e));
        if self.unlink_on_close {
            // Only remove the path if it still names our file.
            let ours = rustix::fs::statat(
                &self.dir,
                self.agent_name.as_str(),
                AtFlags::SYMLINK_NOFOLLOW,
            )
            .map(|s| FileId::of(&s) == self.id)
            .unwrap_or(false);
            if ours {
                rustix::fs::unlinkat(&self.dir, self.agent_name.as_str(), AtFlags::empty())
                    .map_err(|e| ShmError::io(&self.path, "unlink", e))?;
            }
        }
        synced
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every loss this writer counted: refused by a full ring plus reported through
    /// [`ShmWriter::add_dropped`].
    pub fn events_dropped(&self) -> u64 {
        self.ring_full()
            .saturating_add(self.dropped_staging)
            .saturating_add(self.dropped_unwritable)
            .saturating_add(self.dropped_unlinked)
    }

    /// Of [`events_dropped`](Self::events_dropped), the events this writer had
    /// published into a file that another program then unlinked (see the module
    /// docs): [`write_batch`](Self::write_batch) had counted them as written.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("telering-doc-unlinked-{}", std::process::id()));
    /// use telering_core::{event_name, Category, Event};
    /// use telering_shm::{ShmWriter, WriterOptions};
    /// let mut writer = ShmWriter::create(WriterOptions::new(&dir, "agent"))?;
    /// writer.write_batch(&[Event::new(1, Category::Custom, event_name!("x"), 1); 2]);
    /// std::fs::remove_file(writer.path())?; // as NIXL's reader does
    /// writer.heartbeat(); // notices, makes the file again
    /// assert_eq!((writer.events_lost_unlinked(), writer.events_dropped()), (2, 2));
    /// assert!(writer.path().exists());
    /// # drop(writer); std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn events_lost_unlinked(&self) -> u64 {
        self.dropped_unlinked
    }

    /// Unread events of a dead writer's ring this writer replaced (another capacity
    /// or layout) that did not fit into its ring, or could not be carried: counted in
    /// the trailer's `dropped_staging` and reported in-band at the start of the new
    /// ring (loss cause "replaced"), but not in [`events_dropped`](Self::events_dropped),
    /// which counts this writer's own events. The others were carried into the new
    /// ring, oldest first, ahead of this writer's events.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("telering-doc-replaced-{}", std::process::id()));
    /// use telering_core::{event_name, Category, Event};
    /// use telering_shm::{DrainingReader, ShmWriter, WriterOptions};
    /// let mut options = WriterOptions::new(&dir, "agent");
    /// options.capacity = 8;
    /// let mut writer = ShmWriter::create(options.clone())?;
    /// let events: Vec<Event> =
    ///     (0..5).map(|v| Event::new(v, Category::Custom, event_name!("x"), v)).collect();
    /// writer.write_batch(&events);
    /// writer.close()?;
    /// // Restarted with a smaller ring (it holds 3): the report of the 3 oldest, then 3, 4.
    /// options.capacity = 4;
    /// let writer = ShmWriter::create(options)?;
    /// assert_eq!(writer.events_lost_replaced(), 3);
    /// let mut reader = DrainingReader::open(writer.path())?;
    /// let mut got = Vec::new();
    /// reader.read_batch(usize::MAX, |e| got.push(e.unwrap().value()))?;
    /// assert_eq!(got, [3, 3, 4]);
    /// # drop(reader); writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), telering_shm::ShmError>(())
    /// ```
    pub fn events_lost_replaced(&self) -> u64 {
        self.dropped_replaced
    }

    /// Events refused by a full ring, in every file this writer made.
    fn ring_full(&self) -> u64 {
        self.retired_ring_full
            .saturating_add(self.refused_full)
            .saturating_add(self.producer.events_dropped())
    }

    /// Whether the file still has the length that is mapped. Someone truncating the
    /// file under the writer would otherwise kill the agent with `SIGBUS` at the next
    /// store; instead the writer stops touching the mapping and counts every further
    /// event as dropped. One `fstat` per batch.
    fn file_intact(&mut self) -> bool {
        if self.truncated {
            return false;
        }
        let len = rustix::fs::fstat(&self.locked_file).map(|s| s.st_size.max(0) as u64);
        if self.mapping().guard().faulted() || matches!(len, Ok(len) if len < self.mapped_len) {
            self.truncated = true;
            log::error!("{}", self.truncated_error());
            return false;
        }
        true
    }

    fn truncated_error(&self) -> ShmError {
        let len = rustix::fs::fstat(&self.locked_file)
            .map(|s| s.st_size.max(0) as u64)
            .unwrap_or(0);
        ShmError::Truncated {
            path: self.path.clone(),
            len,
            needed: self.mapped_len,
        }
    }

    /// Losses counted but not yet reported in-band (the ring had no room for the
    /// report yet).
    pub fn unreported_drops(&self) -> u64 {
        self.reports.unreported(self.events_dropped())
    }

    /// Events published into the ring, drop reports included.
    pub fn events_published(&self) -> u64 {
        self.retired_published
            .saturating_add(self.producer.events_published())
    }

    /// How many events fit in the ring now without dropping any (always
    /// `capacity − 1` under `OverwriteOldest`). A writer that prefers waiting to
    /// dropping checks this before [`ShmWriter::write_batch`].
    pub fn free_slots(&self) -> u32 {
        self.producer.free_slots()
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> u32 {
        self.producer.capacity()
    }

    /// Events the file's layout cannot hold, which were therefore not written
    /// (version 4: custom and backend events; always 0 for version 1). Counted in the
    /// trailer's `dropped_unrepresentable`, not in [`ShmWriter::events_dropped`].
    pub fn events_unrepresentable(&self) -> u64 {
        self.producer.unrepresentable()
    }

    fn update_trailer(&mut self) {
        if self.truncated {
            return;
        }
        let mapping = self.producer.mapping();
        if let Some(cell) = mapping.unrepresentable() {
            TrailerCells::store64(cell, self.producer.unrepresentable(), Ordering::Relaxed);
        }
        let Some(t) = mapping.trailer() else {
            return;
        };
        TrailerCells::store64(&t.dropped_ring_full, self.ring_full(), Ordering::Relaxed);
        TrailerCells::store64(&t.heartbeat_us, realtime_us(), Ordering::Relaxed);
        TrailerCells::store64(
            &t.published,
            self.producer.events_published(),
            Ordering::Release,
        );
    }
}

impl Drop for ShmWriter {
    fn drop(&mut self) {
        if let Err(e) = self.close_inner() {
            log::warn!("closing the ring file: {e}");
        }
    }
}
