//! A ring laid out by telering-core at an offset inside a larger file or device: a
//! device's memory window (a RAM image, a shared-memory file holding other data too,
//! a PCIe BAR as the host maps it, a UIO map).
//!
//! The ring is a version-1 ring without a trailer (telering-core's `RingRegion`
//! alone), so the caller vouches that its slots are stamped, as for
//! [`ObserverReader::open_core_window`](crate::ObserverReader::open_core_window). An
//! offset need not be page-aligned: the file is mapped from the page at or below it,
//! and the ring is the part of the mapping from the offset on. It must be 8-aligned
//! (the ring's atomics).
//!
//! # Only mapped, never read
//!
//! The header is read through a mapping of the page(s) that hold it, checked, and
//! only then is the whole ring mapped; nothing is read with `read`/`pread`. A PCI
//! memory BAR's sysfs file (`/sys/bus/pci/devices/…/resourceN`) is a regular file of
//! the BAR's size on which the kernel supports `mmap` but not `read`, so that is the
//! only way to read it. The header's words are loaded as aligned 8-byte atomics, as
//! device memory wants them, and the header mapping is guarded against `SIGBUS` like
//! the ring's (a file cut short between the size check and the load is an error, not
//! a crash). The test `a_window_is_opened_with_read_and_pread_forbidden`
//! (tests/window_mapped_only.rs) opens and follows a window on a thread whose every
//! read system call the kernel refuses (a seccomp filter).
//!
//! # Regular files and character devices
//!
//! - A **regular file** has a size: the header, then the whole ring, must lie inside
//!   it (the file may go on after it), checked before mapping and again after (the
//!   file may shrink in between), and at every read batch after.
//! - A **character device** (`/dev/mem`, `/dev/uioN`) has no size: the ring's extent
//!   comes from its header alone, so the caller vouches that the device has that many
//!   bytes at that offset. A UIO device selects its map `N` by the offset `N` × the
//!   page size (mmap's rule), so a ring that starts `X` bytes into map `N` (`X` below
//!   one page) is at offset `N` × page size + `X`. A device the kernel cannot map
//!   (`ENODEV`, `EINVAL`, …) is a [`ShmError::Window`] naming the path, the offset and
//!   the kernel's reason.
//!
//! Anything else (a FIFO, a socket, a directory, a block device) is refused with
//! [`ShmError::NotRegularFile`], without blocking (the file is opened non-blocking).

use crate::detect::check_header;
use crate::error::ShmError;
use crate::file::{Access, FileId, MappedRing, RingMemory, check_size, file_kind, open_file};
use crate::generation::Generation;
use crate::mapping::{FileMapping, FileRegion};
use memmap2::{MmapOptions, MmapRaw};
use rustix::fs::FileType;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use telering_core::ring::{HEADER_SIZE, HeaderInfo, RegionError};

// The header is copied out as whole 8-byte words.
const _: () = assert!(HEADER_SIZE % 8 == 0);

/// Maps `len` bytes of `file` from `offset` read-only; the kernel's refusal is a
/// window error naming `what` was mapped.
fn map_at(
    file: &File,
    offset: u64,
    len: usize,
    what: &str,
    window_error: &dyn Fn(String) -> ShmError,
) -> Result<MmapRaw, ShmError> {
    // memmap2 maps from the page at or below the offset (mmap's offset must be
    // page-aligned) and hands out the address of the offset itself.
    MmapOptions::new()
        .offset(offset)
        .len(len)
        .map_raw_read_only(file)
        .map_err(|e| window_error(format!("{what} cannot be mapped there: {e}")))
}

/// The `HEADER_SIZE` bytes at `offset`, read through a mapping of the page(s) that
/// hold them (see the module docs: a PCI BAR's file cannot be `read`).
fn header_through_mapping(
    file: &File,
    offset: u64,
    window_error: &dyn Fn(String) -> ShmError,
) -> Result<[u8; HEADER_SIZE], ShmError> {
    let map = map_at(file, offset, HEADER_SIZE, "the ring header", window_error)?;
    let ptr = map.as_ptr();
    // Guarded as the ring's mapping is: a file cut short under it faults into zero
    // pages and sets the flag, instead of killing the process.
    let mapping = FileMapping::new(map, None, false)
        .ok_or_else(|| window_error("the ring header cannot be mapped there".into()))?;
    let mut header = [0u8; HEADER_SIZE];
    for (i, word) in header.chunks_exact_mut(8).enumerate() {
        // SAFETY: `ptr` is the address of `offset` in a mapping of `HEADER_SIZE`
        // readable bytes from there, which `mapping` keeps mapped until the end of
        // this function; it is 8-aligned (the mapping starts on a page and `offset` is
        // a multiple of 8), so each of the `HEADER_SIZE / 8` words is an aligned
        // `AtomicU64` in bounds. Another process (the device's writer) may write them
        // at any time, so they are loaded atomically.
        let cell = unsafe { &*ptr.add(i * 8).cast::<AtomicU64>() };
        word.copy_from_slice(&cell.load(Ordering::Acquire).to_ne_bytes());
    }
    if mapping.guard().faulted() {
        return Err(window_error(
            "the file was cut short while its ring header was read".into(),
        ));
    }
    Ok(header)
}

impl MappedRing {
    /// Opens `path` read-only and maps the core ring that starts `offset` bytes in.
    pub(crate) fn open_window(path: &Path, offset: u64) -> Result<MappedRing, ShmError> {
        let window_error = |reason: String| ShmError::Window {
            path: path.to_path_buf(),
            offset,
            reason,
        };
        if offset % 8 != 0 {
            return Err(window_error(format!(
                "the ring's atomics need an 8-byte aligned start; {offset} is {} past one",
                offset % 8
            )));
        }
        let file = open_file(path, Access::ReadOnly)?;
        let stat = rustix::fs::fstat(&file).map_err(|e| ShmError::io(path, "fstat", e))?;
        // A regular file's size bounds the ring; a character device has none.
        let size = match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Some(stat.st_size.max(0) as u64),
            FileType::CharacterDevice => None,
            _ => {
                return Err(ShmError::NotRegularFile {
                    path: path.to_path_buf(),
                    kind: file_kind(&stat).unwrap_or("file of unknown type"),
                });
            }
        };
        let header_end = offset.saturating_add(HEADER_SIZE as u64);
        if let Some(size) = size.filter(|&size| header_end > size) {
            return Err(window_error(format!(
                "the file is {size} bytes, so a ring header ({HEADER_SIZE} bytes) at this offset would end past it, at byte {header_end}"
            )));
        }
        let header = header_through_mapping(&file, offset, &window_error)?;
        let info = HeaderInfo::from_bytes(&header)
            .map_err(|e| window_error(format!("what lies there is no ring header: {e}")))?;
        if info.version != 1 {
            return Err(window_error(format!(
                "the header there says version {}; a window holds a version-1 ring laid out by telering-core",
                info.version
            )));
        }
        let ring_bytes = Generation::V1.ring_bytes(info.capacity.min(1 << 40));
        // The checks every header gets (capacity, mask, positions), on the ring alone.
        let (_, generation) = check_header(path, &header, ring_bytes)
            .map_err(|e| window_error(format!("what lies there is no ring: {e}")))?;
        let needed = offset.saturating_add(ring_bytes);
        if let Some(size) = size.filter(|&size| needed > size) {
            return Err(window_error(format!(
                "the ring there ({} slots, {ring_bytes} bytes) would end at byte {needed}, past the file's end ({size} bytes)",
                info.capacity
            )));
        }
        let too_big = || ShmError::BadHeader {
            path: path.to_path_buf(),
            source: RegionError::BadCapacity {
                capacity: info.capacity,
            },
        };
        let ring_len = usize::try_from(ring_bytes).map_err(|_| too_big())?;
        let what = format!("the ring ({} slots, {ring_bytes} bytes)", info.capacity);
        let map = map_at(&file, offset, ring_len, &what, &window_error)?;
        // A regular file may have shrunk between the fstat and the mmap (a character
        // device has no size to check: see the module docs).
        if size.is_some() {
            check_size(&file, path, needed)?;
        }
        let ptr = map.as_ptr();
        let mapping = FileMapping::new(map, None, false).ok_or_else(too_big)?;
        // SAFETY: `ptr` is the start of `ring_len` readable mapped bytes, 8-aligned
        // (the mapping starts on a page, and `offset` is a multiple of 8), owned by the
        // region built here, so they stay mapped at this address as long as the region
        // lives; the region is read-only and every access through it is atomic.
        let region =
            unsafe { FileRegion::attach_read_only(mapping, ptr, ring_len) }.map_err(|source| {
                ShmError::BadHeader {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        Ok(MappedRing {
            id: FileId::of(&stat),
            path: path.to_path_buf(),
            file,
            generation,
            memory: RingMemory::Events(Arc::new(region)),
            mapped_len: needed,
            window_offset: Some(offset),
        })
    }
}
