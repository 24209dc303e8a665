//! The route file: an agent's route totals beside its ring, for node readers
//! (`telering serve`, `top`) that cannot learn them from the ring file, whose layout
//! (NIXL's) has no place for a route.
//!
//! The `buffer` exporter writes `DIR/.routes/<agent>` after each flush that carried
//! routes ([`Exporter::export_routes`](crate::Exporter::export_routes)): the whole
//! snapshot (cumulative totals, histogram buckets, errors per status, the folded
//! count), built in a temporary file of the same folder and renamed into place, so a
//! reader never sees half a file. The folder starts with `.`, which every ring-folder
//! listing skips (telering's scans, and directory listings in general), so no reader
//! of ring files takes it, or a file in it, for a ring.
//!
//! A reader takes the file as foreign input: at most [`MAX_FILE_BYTES`] bytes and
//! [`MAX_FILE_ROUTES`] routes, names checked as `Route` checks them, no route twice;
//! anything else is a typed [`RouteFileError`], never a panic.
//!
//! Layout (integers little-endian; `docs/ROUTES.md`, "The route file"):
//!
//! ```text
//! "TLRROUTE"  u32 version (1)  u32 writer_pid  u64 written_us  u64 folded
//! u32 n, n × u64 bounds (TIME_BOUNDS_US)   u32 s (error statuses)   u32 routes
//! each route: u8 operation (0 READ, 1 WRITE), u8 local, u8 remote (MemoryType::ALL
//!   index), u8 backend_len, u8 peer_len, backend, peer (UTF-8),
//!   u64 bytes, transfers, descriptors, slowest_xfer_us,
//!   transfer-time histogram: (n + 1) × u64 counts, u64 sum_us; post-time: the same,
//!   s × u64 errors (ErrorStatus::ALL order)
//! ```

use crate::route::{
    Histogram, MAX_ROUTE_NAME, MAX_ROUTES, MemoryType, Operation, Route, RouteReport, RouteStats,
    SlowXfer, TIME_BOUNDS_US,
};
use std::collections::HashSet;
use std::fmt;
use std::path::Path;
use telering_core::builtin::ErrorStatus;

mod builder;
mod io;
mod watch;
pub use builder::RouteFileBuilder;
pub use io::{path_of, read, remove, replace, write};
pub use watch::{Polled, RouteFileWatch};

/// The file's first bytes.
pub const MAGIC: &[u8; 8] = b"TLRROUTE";
/// The layout version this module writes and reads.
pub const VERSION: u32 = 1;
/// The folder of route files inside a ring folder.
pub const FOLDER: &str = ".routes";
/// The most routes a file may hold: an agent's bound plus `other` of each operation.
pub const MAX_FILE_ROUTES: usize = MAX_ROUTES as usize + 2;
const BUCKETS: usize = TIME_BOUNDS_US.len() + 1;
const STATUSES: usize = ErrorStatus::ALL.len();
const HEADER_BYTES: usize = 8 + 4 + 4 + 8 + 8 + 4 + TIME_BOUNDS_US.len() * 8 + 4 + 4;
const ROUTE_MAX_BYTES: usize =
    5 + 2 * MAX_ROUTE_NAME + 4 * 8 + 2 * (BUCKETS + 1) * 8 + STATUSES * 8;
/// The largest file a reader accepts: the largest a writer makes.
pub const MAX_FILE_BYTES: usize = HEADER_BYTES + MAX_FILE_ROUTES * ROUTE_MAX_BYTES;

/// One route of a route file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteEntry {
    /// The route.
    pub route: Route,
    /// Its totals.
    pub stats: RouteStats,
    /// The slowest transfer of the latest flush interval that had transfers on it, µs
    /// (0: none yet).
    pub slowest_xfer_us: u64,
}

/// An agent's routes as its route file holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteFile {
    /// The process that wrote it.
    pub writer_pid: u32,
    /// When, µs since the Unix epoch.
    pub written_us: u64,
    /// Routes folded into `other` so far.
    pub folded: u64,
    /// Every route with its totals.
    pub routes: Vec<RouteEntry>,
}

/// Why a route file was not taken.
#[derive(Debug)]
#[non_exhaustive]
pub enum RouteFileError {
    /// It cannot be read (or is not a regular file).
    Io(std::io::Error),
    /// It is larger than [`MAX_FILE_BYTES`].
    TooLarge {
        /// Its size in bytes.
        bytes: u64,
    },
    /// It does not start with [`MAGIC`].
    BadMagic,
    /// It is of a layout version this reader does not know.
    Version(u32),
    /// It ends inside the field named.
    Truncated(&'static str),
    /// The field named holds a value no writer writes.
    Invalid(&'static str),
    /// Bytes follow the last route.
    TrailingBytes(usize),
}

impl fmt::Display for RouteFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteFileError::Io(e) => write!(f, "cannot read it: {e}"),
            RouteFileError::TooLarge { bytes } => write!(
                f,
                "it is {bytes} bytes; a route file is at most {MAX_FILE_BYTES}"
            ),
            RouteFileError::BadMagic => f.write_str("not a telering route file (bad magic)"),
            RouteFileError::Version(v) => {
                write!(f, "route file version {v}; this reader knows {VERSION}")
            }
            RouteFileError::Truncated(field) => write!(f, "it ends inside its {field}"),
            RouteFileError::Invalid(field) => write!(f, "its {field} is not valid"),
            RouteFileError::TrailingBytes(n) => write!(f, "{n} bytes follow its last route"),
        }
    }
}

impl std::error::Error for RouteFileError {}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], RouteFileError> {
        if self.0.len() < n {
            return Err(RouteFileError::Truncated(field));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }
    fn u8(&mut self, field: &'static str) -> Result<u8, RouteFileError> {
        Ok(self.take(1, field)?[0])
    }
    fn u32(&mut self, field: &'static str) -> Result<u32, RouteFileError> {
        let b = self.take(4, field)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self, field: &'static str) -> Result<u64, RouteFileError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8, field)?);
        Ok(u64::from_le_bytes(a))
    }
    fn name(&mut self, len: u8, field: &'static str) -> Result<String, RouteFileError> {
        let bytes = self.take(usize::from(len), field)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| RouteFileError::Invalid(field))
    }
    fn histogram(&mut self, field: &'static str) -> Result<Histogram, RouteFileError> {
        let mut h = Histogram::default();
        for c in &mut h.counts {
            *c = self.u64(field)?;
        }
        h.sum_us = self.u64(field)?;
        Ok(h)
    }
}

fn put_histogram(out: &mut Vec<u8>, h: &Histogram) {
    for c in h.counts.iter().chain([&h.sum_us]) {
        out.extend_from_slice(&c.to_le_bytes());
    }
}

fn memory_index(m: MemoryType) -> u8 {
    MemoryType::ALL.iter().position(|t| *t == m).unwrap_or(0) as u8
}

impl RouteFile {
    /// The file's bytes.
    ///
    /// ```
    /// use telering_std::route::file::{RouteEntry, RouteFile};
    /// use telering_std::route::{MemoryType, Operation, Route, RouteStats};
    /// let route = Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "d-0");
    /// let stats = RouteStats { bytes: 4096, transfers: 1, ..Default::default() };
    /// let file = RouteFile { writer_pid: 7, written_us: 1, folded: 0,
    ///     routes: vec![RouteEntry { route, stats, slowest_xfer_us: 0 }] };
    /// assert_eq!(RouteFile::decode(&file.encode()).unwrap(), file);
    /// ```
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.routes.len() * 256);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.writer_pid.to_le_bytes());
        out.extend_from_slice(&self.written_us.to_le_bytes());
        out.extend_from_slice(&self.folded.to_le_bytes());
        out.extend_from_slice(&(TIME_BOUNDS_US.len() as u32).to_le_bytes());
        for b in TIME_BOUNDS_US {
            out.extend_from_slice(&b.to_le_bytes());
        }
        out.extend_from_slice(&(STATUSES as u32).to_le_bytes());
        out.extend_from_slice(&(self.routes.len() as u32).to_le_bytes());
        for e in &self.routes {
            let r = &e.route;
            let backend = &r.backend.as_bytes()[..r.backend.len().min(MAX_ROUTE_NAME)];
            let peer = &r.peer.as_bytes()[..r.peer.len().min(MAX_ROUTE_NAME)];
            out.push(u8::from(r.operation == Operation::Write));
            out.push(memory_index(r.local));
            out.push(memory_index(r.remote));
            out.push(backend.len() as u8);
            out.push(peer.len() as u8);
            out.extend_from_slice(backend);
            out.extend_from_slice(peer);
            let s = &e.stats;
            for v in [s.bytes, s.transfers, s.descriptors, e.slowest_xfer_us] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            put_histogram(&mut out, &s.xfer_time);
            put_histogram(&mut out, &s.post_time);
            for v in s.errors {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out
    }

    /// Reads a file's bytes, checking every field.
    pub fn decode(bytes: &[u8]) -> Result<RouteFile, RouteFileError> {
        if bytes.len() > MAX_FILE_BYTES {
            return Err(RouteFileError::TooLarge {
                bytes: bytes.len() as u64,
            });
        }
        let mut r = Reader(bytes);
        if r.take(8, "magic").map_err(|_| RouteFileError::BadMagic)? != MAGIC {
            return Err(RouteFileError::BadMagic);
        }
        let version = r.u32("version")?;
        if version != VERSION {
            return Err(RouteFileError::Version(version));
        }
        let writer_pid = r.u32("writer pid")?;
        let written_us = r.u64("write time")?;
        let folded = r.u64("folded count")?;
        if r.u32("bucket count")? as usize != TIME_BOUNDS_US.len() {
            return Err(RouteFileError::Invalid("bucket count"));
        }
        for b in TIME_BOUNDS_US {
            if r.u64("bucket bounds")? != b {
                return Err(RouteFileError::Invalid("bucket bounds"));
            }
        }
        if r.u32("status count")? as usize != STATUSES {
            return Err(RouteFileError::Invalid("status count"));
        }
        let count = r.u32("route count")? as usize;
        if count > MAX_FILE_ROUTES {
            return Err(RouteFileError::Invalid("route count"));
        }
        let mut routes = Vec::with_capacity(count);
        let mut seen = HashSet::with_capacity(count);
        for _ in 0..count {
            let operation = match r.u8("route operation")? {
                0 => Operation::Read,
                1 => Operation::Write,
                _ => return Err(RouteFileError::Invalid("route operation")),
            };
            let mut memory = || -> Result<MemoryType, RouteFileError> {
                let i = r.u8("route memory type")?;
                MemoryType::ALL
                    .get(usize::from(i))
                    .copied()
                    .ok_or(RouteFileError::Invalid("route memory type"))
            };
            let (local, remote) = (memory()?, memory()?);
            let backend_len = r.u8("route backend length")?;
            let peer_len = r.u8("route peer length")?;
            if backend_len == 0 || usize::from(backend_len) > MAX_ROUTE_NAME {
                return Err(RouteFileError::Invalid("route backend length"));
            }
            if usize::from(peer_len) > MAX_ROUTE_NAME {
                return Err(RouteFileError::Invalid("route peer length"));
            }
            let backend = r.name(backend_len, "route backend name")?;
            let peer = r.name(peer_len, "route peer name")?;
            let route = Route::new(operation, backend, local, remote, peer);
            let mut stats = RouteStats {
                bytes: r.u64("route totals")?,
                transfers: r.u64("route totals")?,
                descriptors: r.u64("route totals")?,
                ..RouteStats::default()
            };
            let slowest_xfer_us = r.u64("route slowest transfer")?;
            stats.xfer_time = r.histogram("transfer-time histogram")?;
            stats.post_time = r.histogram("post-time histogram")?;
            for e in &mut stats.errors {
                *e = r.u64("route errors")?;
            }
            if !seen.insert(route.clone()) {
                return Err(RouteFileError::Invalid("route list (a route twice)"));
            }
            routes.push(RouteEntry {
                route,
                stats,
                slowest_xfer_us,
            });
        }
        if !r.0.is_empty() {
            return Err(RouteFileError::TrailingBytes(r.0.len()));
        }
        Ok(RouteFile {
            writer_pid,
            written_us,
            folded,
            routes,
        })
    }

    /// The file as a report (each route's slowest transfer as its one slow transfer).
    pub fn report(&self) -> RouteReport {
        let slow = self
            .routes
            .iter()
            .filter(|e| e.slowest_xfer_us > 0)
            .map(|e| {
                let x = SlowXfer {
                    xfer_us: e.slowest_xfer_us,
                    start_us: 0,
                    post_us: 0,
                    bytes: 0,
                    descriptors: 0,
                    route_index: 0,
                    operation: e.route.operation,
                };
                (e.route.clone(), x)
            })
            .collect();
        RouteReport {
            routes: self
                .routes
                .iter()
                .map(|e| (e.route.clone(), e.stats.clone()))
                .collect(),
            slow,
            folded: self.folded,
        }
    }

    /// Reads the route file at `path`: `Ok(None)` when there is none.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// use telering_std::route::file::{write, read, path_of, RouteFile};
    /// assert!(read(&path_of(dir.path(), "a")).unwrap().is_none());
    /// let file = RouteFile { writer_pid: 1, folded: 3, ..Default::default() };
    /// write(dir.path(), "a", &file.encode()).unwrap();
    /// assert_eq!(read(&path_of(dir.path(), "a")).unwrap().unwrap().folded, 3);
    /// ```
    pub fn read(path: &Path) -> Result<Option<RouteFile>, RouteFileError> {
        read(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(peer: &str, bytes: u64) -> RouteEntry {
        let route = Route::new(
            Operation::Read,
            "GDS",
            MemoryType::Vram,
            MemoryType::File,
            peer,
        );
        let mut stats = RouteStats {
            bytes,
            transfers: 2,
            descriptors: 3,
            ..Default::default()
        };
        stats.xfer_time.counts[4] = 2;
        stats.xfer_time.sum_us = 400;
        stats.errors[1] = 5;
        RouteEntry {
            route,
            stats,
            slowest_xfer_us: 250,
        }
    }

    #[test]
    fn the_largest_file_a_writer_makes_is_accepted() {
        let routes = (0..MAX_FILE_ROUTES)
            .map(|i| {
                let mut e = entry(&format!("{i:064}"), i as u64);
                e.route.backend = "b".repeat(MAX_ROUTE_NAME);
                e
            })
            .collect();
        let file = RouteFile {
            routes,
            ..Default::default()
        };
        let bytes = file.encode();
        assert_eq!(bytes.len(), MAX_FILE_BYTES);
        assert_eq!(MAX_FILE_BYTES, 248_945, "docs/ROUTES.md gives the figure");
        assert_eq!(RouteFile::decode(&bytes).unwrap(), file);
    }

    #[test]
    fn every_cut_of_a_file_is_an_error_not_a_panic() {
        let file = RouteFile {
            writer_pid: 9,
            written_us: 1,
            folded: 2,
            routes: vec![entry("a", 1), entry("b", 2)],
        };
        let bytes = file.encode();
        for cut in 0..bytes.len() {
            assert!(RouteFile::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(matches!(
            RouteFile::decode(&longer),
            Err(RouteFileError::TrailingBytes(1))
        ));
    }

    #[test]
    fn a_route_twice_or_a_bad_field_is_refused() {
        let twice = RouteFile {
            routes: vec![entry("a", 1), entry("a", 2)],
            ..Default::default()
        };
        let e = RouteFile::decode(&twice.encode()).unwrap_err();
        assert!(e.to_string().contains("a route twice"), "{e}");
        let mut bytes = RouteFile {
            routes: vec![entry("a", 1)],
            ..Default::default()
        }
        .encode();
        let first = HEADER_BYTES;
        bytes[first] = 2; // operation
        assert!(matches!(
            RouteFile::decode(&bytes),
            Err(RouteFileError::Invalid("route operation"))
        ));
        bytes[first] = 0;
        bytes[first + 5 + 3] = 0xff; // peer name, not UTF-8
        assert!(matches!(
            RouteFile::decode(&bytes),
            Err(RouteFileError::Invalid("route peer name"))
        ));
        bytes[8] = 2; // version
        assert!(matches!(
            RouteFile::decode(&bytes),
            Err(RouteFileError::Version(2))
        ));
        let huge_count = {
            let mut b = RouteFile::default().encode();
            let at = b.len() - 4;
            b[at..].copy_from_slice(&u32::MAX.to_le_bytes());
            b
        };
        assert!(matches!(
            RouteFile::decode(&huge_count),
            Err(RouteFileError::Invalid("route count"))
        ));
    }
}
