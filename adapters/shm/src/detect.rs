//! Telling a ring file's generation from its header and size, and checking the
//! header every generation shares: what readers and `stat` run before they map a file.

use crate::error::ShmError;
use crate::generation::Generation;
use std::path::Path;
use telering_core::ring::{HeaderInfo, MAX_CAPACITY, RegionError};

impl Generation {
    /// Decides the generation of a file from its header's `version` and `capacity`
    /// and its size in bytes (see the module docs). `path` names the file in errors.
    /// Any capacity is accepted here; readers check it first (a power of two from 2
    /// to 2²⁸).
    ///
    /// ```
    /// use telering_shm::Generation;
    /// let path = std::path::Path::new("agent");
    /// assert_eq!(Generation::detect(path, 2, 64, 40 + 64 * 48).unwrap(), Generation::V2Named);
    /// assert_eq!(Generation::detect(path, 2, 64, 40 + 64 * 16).unwrap(), Generation::V2);
    /// assert_eq!(Generation::detect(path, 4, 64, 40 + 64 * 16 + 64).unwrap(), Generation::V4);
    /// assert!(Generation::detect(path, 2, 64, 4096).unwrap_err().to_string().contains("4096 bytes"));
    /// assert!(Generation::detect(path, 9, 64, 4096).unwrap_err().to_string().contains("version"));
    /// ```
    pub fn detect(
        path: &Path,
        version: i32,
        capacity: u64,
        file_size: u64,
    ) -> Result<Generation, ShmError> {
        let candidates: &[Generation] = match version {
            1 => &[Generation::V1],
            2 => &[Generation::V2Named, Generation::V2],
            3 => &[Generation::V3],
            4 => &[Generation::V4],
            found => {
                return Err(ShmError::UnknownVersion {
                    path: path.to_path_buf(),
                    found,
                });
            }
        };
        let fits = |g: Generation| {
            let len = g.ring_bytes(capacity);
            if version == 2 {
                file_size == len
            } else {
                file_size >= len
            }
        };
        if let Some(g) = candidates.iter().copied().find(|&g| fits(g)) {
            return Ok(g);
        }
        let expected = match version {
            2 => format!(
                "exactly {} bytes (48-byte slots, development builds) or exactly {} bytes (16-byte slots, NIXL 1.1.0 and 1.2.0)",
                Generation::V2Named.ring_bytes(capacity),
                Generation::V2.ring_bytes(capacity)
            ),
            _ => format!(
                "at least {} bytes ({}-byte slots)",
                candidates[0].ring_bytes(capacity),
                candidates[0].slot_size()
            ),
        };
        Err(ShmError::InconsistentSize {
            path: path.to_path_buf(),
            version,
            capacity,
            size: file_size,
            expected,
        })
    }
}

/// Parses and validates the header of a file of `file_size` bytes and detects its
/// generation: the checks every generation shares (capacity, mask, positions), then
/// [`Generation::detect`].
pub(crate) fn check_header(
    path: &Path,
    bytes: &[u8],
    file_size: u64,
) -> Result<(HeaderInfo, Generation), ShmError> {
    let bad = |source| ShmError::BadHeader {
        path: path.to_path_buf(),
        source,
    };
    let header = HeaderInfo::from_bytes(bytes).map_err(bad)?;
    // The version first: a file of an unknown version says so, whatever else it holds.
    if !(1..=4).contains(&header.version) {
        return Err(ShmError::UnknownVersion {
            path: path.to_path_buf(),
            found: header.version,
        });
    }
    let capacity = header.capacity;
    if !capacity.is_power_of_two() || capacity < 2 || capacity > MAX_CAPACITY as u64 {
        return Err(bad(RegionError::BadCapacity { capacity }));
    }
    if header.mask != capacity - 1 {
        return Err(bad(RegionError::BadMask {
            mask: header.mask,
            capacity,
        }));
    }
    if header.version == 1 && file_size < Generation::V1.ring_bytes(capacity) {
        // Kept as the region error of the core's own layout.
        return Err(bad(RegionError::TooShort {
            len: usize::try_from(file_size).unwrap_or(usize::MAX),
            needed: Generation::V1.ring_bytes(capacity),
        }));
    }
    let generation = Generation::detect(path, header.version, capacity, file_size)?;
    for (field, value) in [
        ("write_pos", header.write_pos),
        ("read_pos", header.read_pos),
    ] {
        if value >= capacity {
            return Err(bad(RegionError::PositionOutOfRange {
                field,
                value,
                capacity,
            }));
        }
    }
    Ok((header, generation))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_forms_are_told_apart_by_exact_size_only() {
        let p = Path::new("f");
        for capacity in [2u64, 4, 1024] {
            let named = 40 + capacity * 48;
            let typed = 40 + capacity * 16;
            assert_eq!(
                Generation::detect(p, 2, capacity, named).unwrap(),
                Generation::V2Named
            );
            assert_eq!(
                Generation::detect(p, 2, capacity, typed).unwrap(),
                Generation::V2
            );
            for size in [typed - 1, typed + 1, named + 1, named - 1, named + 64] {
                let e = Generation::detect(p, 2, capacity, size).unwrap_err();
                assert!(
                    matches!(e, ShmError::InconsistentSize { size: s, .. } if s == size),
                    "{e}"
                );
            }
        }
    }

    #[test]
    fn absurd_capacities_do_not_overflow() {
        let e = Generation::detect(Path::new("f"), 4, u64::MAX, 1 << 20).unwrap_err();
        assert!(matches!(e, ShmError::InconsistentSize { .. }), "{e}");
        assert_eq!(Generation::V1.ring_bytes(u64::MAX), u64::MAX);
    }

    #[test]
    fn unknown_versions_are_refused_naming_the_version() {
        for v in [0, 5, -1, i32::MAX] {
            let e = Generation::detect(Path::new("f"), v, 4, 1 << 20).unwrap_err();
            assert!(matches!(e, ShmError::UnknownVersion { found, .. } if found == v));
            assert!(e.to_string().contains(&format!("is {v}")), "{e}");
        }
    }
}
