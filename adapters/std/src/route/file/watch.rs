//! Following a route file as a reader does at every poll: read again only when the
//! file changed (each write renames a new file into place, so its inode and change
//! time move) or its ring's writer did, and a file another process wrote (a run that
//! ended before the ring was taken over) told apart from the ring's own.

use super::{RouteFile, RouteFileError, read};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// What a [`RouteFileWatch::poll`] found.
#[derive(Debug)]
pub enum Polled {
    /// The file and the ring's writer are as at the last read.
    Unchanged,
    /// No file at the path (or it went between looking and reading).
    Absent,
    /// A file written by this process id, not by the ring's writer.
    Foreign(u32),
    /// The file, read and checked.
    Read(RouteFile),
    /// The file is refused (malformed, oversized, unreadable).
    Refused(RouteFileError),
}

/// Inode, change time, size and the ring's writer pid at the last read.
type Key = (u64, i64, i64, u64, Option<u32>);

/// One route file followed across polls (see the module docs).
///
/// ```
/// use telering_std::route::file::{Polled, RouteFileWatch};
/// let dir = tempfile::tempdir().unwrap();
/// let mut watch = RouteFileWatch::default();
/// assert!(matches!(watch.poll(&dir.path().join("none"), Some(1)), Polled::Absent));
/// ```
#[derive(Debug, Default)]
pub struct RouteFileWatch {
    key: Option<Key>,
}

impl RouteFileWatch {
    /// Reads the file at `path` if it or `writer_pid` (the ring trailer's writer)
    /// changed since the last poll.
    pub fn poll(&mut self, path: &Path, writer_pid: Option<u32>) -> Polled {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            self.key = None;
            return Polled::Absent;
        };
        let key = (
            meta.ino(),
            meta.ctime(),
            meta.ctime_nsec(),
            meta.len(),
            writer_pid,
        );
        if self.key == Some(key) {
            return Polled::Unchanged;
        }
        self.key = Some(key);
        match read(path) {
            Ok(Some(f)) if Some(f.writer_pid) != writer_pid => Polled::Foreign(f.writer_pid),
            Ok(Some(f)) => Polled::Read(f),
            Ok(None) => {
                self.key = None;
                Polled::Absent
            }
            Err(e) => Polled::Refused(e),
        }
    }

    /// Reads the file again at the next poll, changed or not (after a failure that
    /// was the reader's, not the file's: out of descriptors).
    pub fn forget(&mut self) {
        self.key = None;
    }
}
