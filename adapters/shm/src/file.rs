//! Opening, validating and mapping an existing ring file — shared by both readers and
//! by [`crate::stat`].
//!
//! Nothing is mapped before it is validated: the header is read with `pread`, checked
//! against the file size from `fstat` (so an absurd capacity is rejected before any
//! mapping is attempted), and only then exactly the bytes the readers use are mapped.
//! Files are opened with `O_NONBLOCK` so a FIFO planted at the path cannot hang the
//! open, and anything that is not a regular file is refused before it is read.

use crate::detect::check_header;
use crate::error::ShmError;
use crate::generation::Generation;
use crate::layout::{
    TRAILER_SIZE_V4, TrailerCells, TrailerInfo, TrailerKind, classify_trailer, trailer_size,
};
use crate::mapping::{CompactRegion, FileMapping, FileRegion};
use crate::plain::PlainRing;
use memmap2::MmapOptions;
use rustix::fs::{FileType, FlockOperation, Mode, OFlags};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use telering_core::OverflowPolicy;
use telering_core::ring::HEADER_SIZE;

/// What [`crate::stat`] and the readers' `info()` report about a ring file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingFileInfo {
    /// The file.
    pub path: PathBuf,
    /// Slots in the ring (it holds `capacity − 1` events).
    pub capacity: u64,
    /// Events waiting for the draining reader: `(write_pos − read_pos) & mask`.
    pub fill: u64,
    /// The header's `version` (1 to 4).
    pub version: i32,
    /// The ring's generation, from its header and size.
    pub generation: Generation,
    /// The telering trailer, or `None` for a file without one (written by NIXL, or a
    /// raw memory window laid out by `telering-core` alone).
    pub trailer: Option<TrailerInfo>,
    /// Whether some process holds the writer's lock on the file.
    pub writer_alive: bool,
}

/// Identity of an open file, to notice when the path names another one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
}

impl FileId {
    /// The device and inode numbers.
    pub(crate) fn numbers(&self) -> (u64, u64) {
        (self.dev, self.ino)
    }

    // `st_dev`/`st_ino` are `u64` on some targets only.
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn of(stat: &rustix::fs::Stat) -> FileId {
        FileId {
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
        }
    }

    /// The device's major number.
    pub(crate) fn major(&self) -> u32 {
        rustix::fs::major(self.dev as _)
    }

    /// The device's minor number.
    pub(crate) fn minor(&self) -> u32 {
        rustix::fs::minor(self.dev as _)
    }

    /// The inode number.
    pub(crate) fn ino(&self) -> u64 {
        self.ino
    }
}

pub(crate) fn file_kind(stat: &rustix::fs::Stat) -> Option<&'static str> {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => None,
        FileType::Directory => Some("directory"),
        FileType::Fifo => Some("FIFO"),
        FileType::Socket => Some("socket"),
        FileType::CharacterDevice => Some("character device"),
        FileType::BlockDevice => Some("block device"),
        FileType::Symlink => Some("symbolic link"),
        FileType::Unknown => Some("file of unknown type"),
    }
}

/// A validated ring file, mapped. The memory owns the mapping (see [`FileMapping`]);
/// the handles the readers make from it hold it through an `Arc`, so the mapping
/// lives until the last of them is gone.
pub(crate) struct MappedRing {
    pub path: PathBuf,
    pub file: File,
    pub id: FileId,
    /// The ring's generation, from its header and size.
    pub generation: Generation,
    pub memory: RingMemory,
    /// Bytes of the file the ring needs: the ring, plus the trailer if there is one
    /// (for a window at an offset, up to the window's end).
    pub mapped_len: u64,
    /// For a core window at an offset ([`MappedRing::open_window`]), that offset: a
    /// replacement file is opened at it too.
    pub window_offset: Option<u64>,
}

/// How a mapped ring is accessed.
pub(crate) enum RingMemory {
    /// A version-1 ring: telering-core's region over the mapping.
    Events(Arc<FileRegion>),
    /// A version-4 ring telering wrote (it has telering's trailer, so its slots are
    /// stamped): telering-core's region of 16-byte slots.
    Compact(Arc<CompactRegion>),
    /// Any other generation, and version 4 as NIXL writes it: the mapping, read by
    /// NIXL's protocol.
    Plain(Arc<PlainRing>),
}

impl std::fmt::Debug for MappedRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedRing")
            .field("path", &self.path)
            .field("generation", &self.generation)
            .field("has_trailer", &self.trailer().is_some())
            .field("mapped_len", &self.mapped_len)
            .finish()
    }
}

/// Whether a mapping may be written (draining reader) or only read (observer, stat).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    ReadOnly,
    ReadWrite,
}

/// Opens `path` as a ring file is opened: close-on-exec, never blocking on a FIFO,
/// never becoming a controlling terminal; a directory is named as such.
pub(crate) fn open_file(path: &Path, access: Access) -> Result<File, ShmError> {
    let (mode, op) = match access {
        Access::ReadOnly => (OFlags::RDONLY, "open for reading"),
        Access::ReadWrite => (OFlags::RDWR, "open for reading and writing"),
    };
    let fd = rustix::fs::open(
        path,
        mode | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY,
        Mode::empty(),
    )
    .map_err(|e| {
        if e == rustix::io::Errno::ISDIR {
            ShmError::NotRegularFile {
                path: path.to_path_buf(),
                kind: "directory",
            }
        } else {
            ShmError::io(path, op, e)
        }
    })?;
    Ok(File::from(fd))
}

impl MappedRing {
    /// Opens `path` and validates it.
    pub(crate) fn open(path: &Path, access: Access) -> Result<MappedRing, ShmError> {
        MappedRing::from_file(open_file(path, access)?, path.to_path_buf(), access)
    }

    /// Validates and maps an already open file (a regular file or a memfd).
    pub(crate) fn from_file(
        file: File,
        path: PathBuf,
        access: Access,
    ) -> Result<MappedRing, ShmError> {
        let stat = rustix::fs::fstat(&file).map_err(|e| ShmError::io(&path, "fstat", e))?;
        if let Some(kind) = file_kind(&stat) {
            return Err(ShmError::NotRegularFile { path, kind });
        }
        let size = stat.st_size.max(0) as u64;
        let mut header = [0u8; HEADER_SIZE];
        let got = read_at(&file, &path, &mut header, 0)?;
        let (raw, generation) = check_header(&path, &header[..got], size)?;
        let capacity = raw.capacity;
        let ring_bytes = generation.ring_bytes(capacity);
        let mut tail = [0u8; TRAILER_SIZE_V4];
        let tail = &mut tail[..trailer_size(generation)];
        let tail_len = if size > ring_bytes && generation.may_have_trailer() {
            read_at(&file, &path, tail, ring_bytes)?
        } else {
            0
        };
        let kind = classify_trailer(&path, &tail[..tail_len], generation)?;
        let mapped_len = match kind {
            TrailerKind::Absent => ring_bytes,
            TrailerKind::Present => ring_bytes + trailer_size(generation) as u64,
        };
        // One rule for every generation: the file is exactly its ring, plus telering's
        // trailer when it carries one. Bytes beyond are no part of any layout.
        if size != mapped_len {
            let with_trailer = ring_bytes + trailer_size(generation) as u64;
            let expected = if generation.may_have_trailer() && size == with_trailer {
                // The size fits a trailer, so the bytes after the ring are what is wrong.
                format!(
                    "exactly {ring_bytes} bytes ({}-byte slots) without a trailer; the file's last {} bytes are where telering's trailer goes, but they do not begin with its magic `TLRNGTRL`: they are not a trailer telering wrote",
                    generation.slot_size(),
                    trailer_size(generation)
                )
            } else if generation.may_have_trailer() {
                format!(
                    "exactly {ring_bytes} bytes ({}-byte slots), or {} with telering's trailer",
                    generation.slot_size(),
                    ring_bytes + trailer_size(generation) as u64
                )
            } else {
                format!(
                    "exactly {ring_bytes} bytes ({}-byte slots)",
                    generation.slot_size()
                )
            };
            return Err(ShmError::InconsistentSize {
                path,
                version: generation.version(),
                capacity,
                size,
                expected,
            });
        }
        let map_len = usize::try_from(mapped_len).map_err(|_| ShmError::BadHeader {
            path: path.clone(),
            source: telering_core::ring::RegionError::BadCapacity { capacity },
        })?;
        let mut options = MmapOptions::new();
        options.len(map_len);
        let map = match access {
            Access::ReadOnly => options.map_raw_read_only(&file),
            Access::ReadWrite => options.map_raw(&file),
        }
        .map_err(|e| ShmError::io(&path, "mmap", e))?;
        // The file may have shrunk between the fstat above and the mmap: check again
        // before the first access through the mapping.
        check_size(&file, &path, mapped_len)?;
        let (ptr, writable) = (map.as_mut_ptr(), access == Access::ReadWrite);
        let trailer_at = match kind {
            TrailerKind::Absent => None,
            TrailerKind::Present => Some(ring_bytes as usize),
        };
        // Registered with the SIGBUS handler from here on (the `guard` module).
        let mapping = FileMapping::new(map, trailer_at, writable).ok_or(ShmError::BadHeader {
            path: path.clone(),
            source: telering_core::ring::RegionError::TooShort {
                len: map_len,
                needed: mapped_len,
            },
        })?;
        let memory = match generation {
            Generation::V1 => {
                // SAFETY: the mapping is page-aligned, `map_len` bytes long, readable
                // (and writable for `ReadWrite`), and owned by the region built here,
                // so it stays mapped, at the same address, as long as the region
                // lives. Every party accesses the ring only through atomics (ours) or
                // from another program. A read-only mapping gets a read-only region,
                // which never stores.
                let region = unsafe {
                    if writable {
                        FileRegion::attach(mapping, ptr, map_len)
                    } else {
                        FileRegion::attach_read_only(mapping, ptr, map_len)
                    }
                }
                .map_err(|source| ShmError::BadHeader {
                    path: path.clone(),
                    source,
                })?;
                RingMemory::Events(Arc::new(region))
            }
            Generation::V4 if kind == TrailerKind::Present => {
                // SAFETY: as for the version-1 region: page-aligned, `map_len` bytes,
                // owned by the region, accessed only atomically (or by other programs).
                let region = unsafe {
                    CompactRegion::attach_as(mapping, ptr, map_len, generation.version(), writable)
                }
                .map_err(|source| ShmError::BadHeader {
                    path: path.clone(),
                    source,
                })?;
                RingMemory::Compact(Arc::new(region))
            }
            _ => {
                let plain = PlainRing::new(mapping, generation, capacity as u32, writable).ok_or(
                    ShmError::BadHeader {
                        path: path.clone(),
                        source: telering_core::ring::RegionError::TooShort {
                            len: map_len,
                            needed: ring_bytes,
                        },
                    },
                )?;
                RingMemory::Plain(Arc::new(plain))
            }
        };
        Ok(MappedRing {
            id: FileId::of(&stat),
            path,
            file,
            generation,
            memory,
            mapped_len,
            window_offset: None,
        })
    }

    /// Opens the file now at this ring's path as this ring was opened: at the same
    /// window offset, if it is a window.
    pub(crate) fn reopen(&self, access: Access) -> Result<MappedRing, ShmError> {
        match self.window_offset {
            Some(offset) => MappedRing::open_window(&self.path, offset),
            None => MappedRing::open(&self.path, access),
        }
    }

    /// The trailer's cells, if the file has a trailer.
    pub(crate) fn trailer(&self) -> Option<&TrailerCells> {
        self.mapping().trailer()
    }

    /// The mapping the ring (and trailer) lie in.
    pub(crate) fn mapping(&self) -> &FileMapping {
        match &self.memory {
            RingMemory::Events(region) => region.owner(),
            RingMemory::Compact(region) => region.owner(),
            RingMemory::Plain(plain) => plain.mapping(),
        }
    }

    /// Fails if the file is now shorter than what is mapped, so that no access
    /// through the mapping can fault. Call before every read batch.
    pub(crate) fn check_size(&self) -> Result<(), ShmError> {
        if let Some(e) = self.fault_error() {
            return Err(e);
        }
        check_size(&self.file, &self.path, self.mapped_len)
    }

    /// The flag the `SIGBUS` handler sets when an access through this mapping faults.
    pub(crate) fn fault_flag(&self) -> Option<&'static std::sync::atomic::AtomicBool> {
        self.mapping().guard().flag()
    }

    /// The error to report if an access through the mapping faulted because the file
    /// was truncated (see the `guard` module): the mapping now holds zeros.
    pub(crate) fn fault_error(&self) -> Option<ShmError> {
        if !self.mapping().guard().faulted() {
            return None;
        }
        let len = rustix::fs::fstat(&self.file).map_or(0, |s| s.st_size.max(0) as u64);
        Some(ShmError::Truncated {
            path: self.path.clone(),
            // The file may have grown back since; it was shorter when it faulted.
            len: len.min(self.mapped_len.saturating_sub(1)),
            needed: self.mapped_len,
        })
    }

    /// The writer's overflow policy, from the trailer (`DropNewest` without one).
    pub(crate) fn policy(&self) -> OverflowPolicy {
        self.trailer()
            .map(|t| t.read().policy)
            .unwrap_or(OverflowPolicy::DropNewest)
    }

    /// Whether the path still names the file that is open. `None` if the path is gone
    /// (unlinked by its writer) or cannot be inspected.
    pub(crate) fn path_names_other_file(&self) -> bool {
        match rustix::fs::stat(&self.path) {
            Ok(stat) => FileId::of(&stat) != self.id,
            Err(_) => false,
        }
    }

    /// Whether the slots carry telering's stamps, as the file says: a ring with
    /// telering's trailer was written by telering's producer, which stamps every
    /// slot; a ring without one was written by NIXL's own writer, which stamps none
    /// (a caller that knows better, for a device window laid out by telering-core,
    /// says so with [`crate::ObserverReader::open_core_window`]). Never inferred from
    /// slot contents: NIXL leaves the stamp bytes uninitialised.
    pub(crate) fn stamped(&self) -> bool {
        self.trailer().is_some()
    }

    /// Checks that the slot stamps tell one consistent story before a stamp-following
    /// reader (observer, `OverwriteOldest` consumer) trusts them (see
    /// `RingRegion::check_stamps`): corrupted or crafted stamps are reported here
    /// instead of sending a follower skipping around the sequence. One load per slot,
    /// at open. Only rings the core lays out carry stamps it can check.
    pub(crate) fn check_stamps(&self) -> Result<(), ShmError> {
        use telering_core::ring::{CompactFormat, EventFormat, SlotFormat};
        let (checked, offset) = match &self.memory {
            RingMemory::Events(region) => (region.check_stamps(), EventFormat::STAMP_OFFSET),
            RingMemory::Compact(region) => (region.check_stamps(), CompactFormat::STAMP_OFFSET),
            RingMemory::Plain(_) => (Ok(()), 0),
        };
        checked.map_err(|e| ShmError::BadSlotStamp {
            path: self.path.clone(),
            slot: e.slot as u64,
            stamp: e.stamp,
            offset,
        })
    }

    /// Slots in the ring.
    pub(crate) fn capacity(&self) -> u32 {
        match &self.memory {
            RingMemory::Events(region) => region.capacity(),
            RingMemory::Compact(region) => region.capacity(),
            RingMemory::Plain(plain) => plain.capacity(),
        }
    }

    /// `(write_pos, read_pos)` as stored (for inspection only).
    pub(crate) fn positions(&self) -> (u64, u64) {
        match &self.memory {
            RingMemory::Events(region) => {
                let header = region.header();
                (header.write_pos.load_u64(), header.read_pos.load_u64())
            }
            RingMemory::Compact(region) => {
                let header = region.header();
                (header.write_pos.load_u64(), header.read_pos.load_u64())
            }
            RingMemory::Plain(plain) => plain.positions(),
        }
    }

    pub(crate) fn info(&self) -> RingFileInfo {
        let capacity = self.capacity() as u64;
        let mask = capacity - 1;
        let (w, r) = self.positions();
        RingFileInfo {
            path: self.path.clone(),
            capacity,
            fill: w.wrapping_sub(r) & mask,
            version: self.generation.version(),
            generation: self.generation,
            trailer: self.mapping().trailer_info(),
            writer_alive: writer_alive(&self.file),
        }
    }
}

pub(crate) fn read_at(
    file: &File,
    path: &Path,
    buf: &mut [u8],
    offset: u64,
) -> Result<usize, ShmError> {
    let mut got = 0;
    while got < buf.len() {
        match rustix::io::pread(file, &mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(ShmError::io(path, "read", e)),
        }
    }
    Ok(got)
}

pub(crate) fn check_size(file: &File, path: &Path, needed: u64) -> Result<(), ShmError> {
    let stat = rustix::fs::fstat(file).map_err(|e| ShmError::io(path, "fstat", e))?;
    // A character device (a memory window on `/dev/mem` or `/dev/uioN`) has no size;
    // whoever named it vouched for its extent (see the `window` module).
    if FileType::from_raw_mode(stat.st_mode) == FileType::CharacterDevice {
        return Ok(());
    }
    let len = stat.st_size.max(0) as u64;
    if len < needed {
        return Err(ShmError::Truncated {
            path: path.to_path_buf(),
            len,
            needed,
        });
    }
    Ok(())
}

/// Whether some process holds the writer's exclusive `flock` on the file. Probes
/// with a shared lock on our own descriptor and releases it at once.
pub(crate) fn writer_alive(file: &File) -> bool {
    match rustix::fs::flock(file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => {
            let _ = rustix::fs::flock(file, FlockOperation::Unlock);
            false
        }
        Err(rustix::io::Errno::WOULDBLOCK) => true,
        Err(_) => false,
    }
}

/// Reads and validates a ring file without changing it: capacity, fill, version,
/// trailer and whether its writer is alive.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("telering-doc-stat-{}", std::process::id()));
/// use telering_shm::{stat, ShmWriter, WriterOptions};
/// let writer = ShmWriter::create(WriterOptions::new(&dir, "agent"))?;
/// let info = stat(writer.path())?;
/// assert_eq!((info.capacity, info.fill, info.version), (4096, 0, 1));
/// assert!(info.writer_alive);
/// assert_eq!(info.trailer.unwrap().writer_pid, std::process::id());
/// # writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), telering_shm::ShmError>(())
/// ```
pub fn stat(path: &Path) -> Result<RingFileInfo, ShmError> {
    Ok(MappedRing::open(path, Access::ReadOnly)?.info())
}

/// The writer pid recorded in a file's trailer, if it has a valid one.
pub(crate) fn trailer_pid(path: &Path) -> Option<u32> {
    let ring = MappedRing::open(path, Access::ReadOnly).ok()?;
    ring.trailer().map(|t| t.read().writer_pid)
}
