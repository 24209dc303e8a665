//! A ring laid out by telering-core at an offset inside a larger file: a device's
//! memory window (a RAM image, a shared-memory file holding other data too).
//!
//! The ring is a version-1 ring without a trailer (telering-core's `RingRegion`
//! alone), so the caller vouches that its slots are stamped, as for
//! [`ObserverReader::open_core_window`](crate::ObserverReader::open_core_window). An
//! offset need not be page-aligned: the file is mapped from the page at or below it,
//! and the ring is the part of the mapping from the offset on. It must be 8-aligned
//! (the ring's atomics), and the whole ring must lie inside the file; the file may
//! go on after it.

use crate::detect::check_header;
use crate::error::ShmError;
use crate::file::{
    Access, FileId, MappedRing, RingMemory, check_size, file_kind, open_file, read_at,
};
use crate::generation::Generation;
use crate::mapping::{FileMapping, FileRegion};
use memmap2::MmapOptions;
use std::path::Path;
use std::sync::Arc;
use telering_core::ring::{HEADER_SIZE, HeaderInfo, RegionError};

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
        if let Some(kind) = file_kind(&stat) {
            return Err(ShmError::NotRegularFile {
                path: path.to_path_buf(),
                kind,
            });
        }
        let size = stat.st_size.max(0) as u64;
        let header_end = offset.saturating_add(HEADER_SIZE as u64);
        if header_end > size {
            return Err(window_error(format!(
                "the file is {size} bytes, so a ring header ({HEADER_SIZE} bytes) at this offset would end past it, at byte {header_end}"
            )));
        }
        let mut header = [0u8; HEADER_SIZE];
        read_at(&file, path, &mut header, offset)?;
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
        if needed > size {
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
        // memmap2 maps from the page at or below the offset (mmap's offset must be
        // page-aligned) and hands out the address of the offset itself.
        let map = MmapOptions::new()
            .offset(offset)
            .len(ring_len)
            .map_raw_read_only(&file)
            .map_err(|e| ShmError::io(path, "mmap", e))?;
        // The file may have shrunk between the fstat and the mmap.
        check_size(&file, path, needed)?;
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
