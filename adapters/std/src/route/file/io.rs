//! Reading and replacing route files: bounded, never following a link, never
//! blocking on a FIFO; written aside and renamed into place.

use super::{FOLDER, MAX_FILE_BYTES, RouteFile, RouteFileError};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The route file of `agent` under the ring folder `dir`.
///
/// ```
/// use telering_std::route::file::path_of;
/// assert_eq!(path_of("/dev/shm/t".as_ref(), "a"), std::path::PathBuf::from("/dev/shm/t/.routes/a"));
/// ```
pub fn path_of(dir: &Path, agent: &str) -> PathBuf {
    dir.join(FOLDER).join(agent)
}

/// Reads the route file at `path` (see [`RouteFile::read`]).
pub fn read(path: &Path) -> Result<Option<RouteFile>, RouteFileError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RouteFileError::Io(e)),
    };
    if !meta.is_file() {
        return Err(RouteFileError::Io(std::io::Error::other(
            "not a regular file",
        )));
    }
    if meta.len() > MAX_FILE_BYTES as u64 {
        return Err(RouteFileError::TooLarge { bytes: meta.len() });
    }
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(RouteFileError::Io(e)),
    };
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(RouteFileError::Io)?;
    RouteFile::decode(&bytes).map(Some)
}

/// Puts `bytes` in place as `agent`'s route file under the ring folder `dir`: written
/// to a temporary file in `DIR/.routes` (made if missing), then renamed over the
/// previous one, so a reader sees the old file or the new one, whole.
pub fn write(dir: &Path, agent: &str, bytes: &[u8]) -> std::io::Result<()> {
    let folder = dir.join(FOLDER);
    match std::fs::create_dir(&folder) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            if !std::fs::symlink_metadata(&folder)?.is_dir() {
                return Err(std::io::Error::other(format!(
                    "{} is not a directory",
                    telering_core::text::Escaped::bytes(folder.as_os_str().as_encoded_bytes())
                )));
            }
        }
        Err(e) => return Err(e),
    }
    replace(&folder, agent, bytes)
}

/// Puts `bytes` in place as the file `name` of `folder`: written to a temporary
/// dot-file of the folder, then renamed over the previous one, so a reader sees the
/// old file or the new one, whole.
pub fn replace(folder: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let temp = folder.join(format!(".tmp.{}.{n}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)?;
        f.write_all(bytes)?;
        drop(f);
        std::fs::rename(&temp, folder.join(name))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}

/// Removes `agent`'s route file under `dir`, if any (a new run's totals start from
/// zero, so the previous run's must not be read as its).
pub fn remove(dir: &Path, agent: &str) -> std::io::Result<()> {
    match std::fs::remove_file(path_of(dir, agent)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_or_non_regular_file_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_of(dir.path(), "a");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let f = std::fs::File::create(&path).unwrap();
        f.set_len(MAX_FILE_BYTES as u64 + 1).unwrap();
        assert!(matches!(read(&path), Err(RouteFileError::TooLarge { .. })));
        std::fs::remove_file(&path).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(matches!(read(&path), Err(RouteFileError::Io(_))));
    }
}
