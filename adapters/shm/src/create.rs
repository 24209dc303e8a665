//! Making a new ring file: a temporary file with its blocks reserved, published under
//! the agent's name only once it is complete.
//!
//! - The temporary name is `.<agent>.<16 hex digits>.tmp`, created with `O_CREAT |
//!   O_EXCL | O_NOFOLLOW`, so nothing already in the directory is reused or followed.
//!   The agent part is cut (at a character boundary) so the whole name fits the
//!   directory's name limit (`f_namelen` from `fstatfs`, 255 on Linux file systems).
//! - Its blocks are reserved with `fallocate` before anything maps it, so a full file
//!   system is [`ShmError::NoSpace`] at start instead of `SIGBUS` at the first store
//!   into a page that has no block behind it. File systems without `fallocate` get
//!   their blocks by writing zeros, as `posix_fallocate` does.
//! - [`TempFile`] removes the file when dropped unless it was published, so every
//!   failure path cleans up.
//! - [`TempFile::publish`] links it under the agent's name: with
//!   `renameat2(RENAME_NOREPLACE)` when nothing may be there (two writers starting at
//!   once: exactly one rename succeeds, the other sees `EEXIST` and finds a live
//!   writer's lock), or with a plain `rename` over a dead writer's file that we hold
//!   locked.

use crate::error::ShmError;
use rustix::fs::{AtFlags, FallocateFlags, Mode, OFlags, RenameFlags};
use rustix::io::Errno;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Bytes a temporary name adds to the (possibly shortened) agent name:
/// `.` + `.` + 16 hex digits + `.tmp`.
pub(crate) const TEMP_NAME_EXTRA: usize = 1 + 1 + 16 + 4;

/// The longest file name the directory accepts (`NAME_MAX` of its file system).
pub(crate) fn name_limit(dir: &OwnedFd) -> usize {
    rustix::fs::fstatfs(dir)
        .ok()
        .and_then(|s| usize::try_from(s.f_namelen).ok())
        .filter(|&n| n > TEMP_NAME_EXTRA)
        .unwrap_or(255)
}

/// A file under a temporary name in the ring directory, removed on drop unless
/// published.
#[derive(Debug)]
pub(crate) struct TempFile<'d> {
    dir: &'d OwnedFd,
    name: String,
    path: PathBuf,
    fd: Option<OwnedFd>,
}

/// How [`TempFile::publish`] puts the file in place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Publish {
    /// Nothing may be at the agent's path: fail with [`Published::Taken`] otherwise.
    NoReplace,
    /// Replace the dead writer's file that the caller holds locked.
    Replace,
}

/// What [`TempFile::publish`] did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Published {
    /// The file is now `<dir>/<agent>`.
    InPlace,
    /// Another writer published its file first; ours was removed.
    Taken,
}

impl<'d> TempFile<'d> {
    /// Creates a new, empty temporary file for `agent` in `dir` (at `path`'s
    /// directory). `mode` is given to `open`, so the umask applies to it.
    pub(crate) fn create(
        dir: &'d OwnedFd,
        path: &Path,
        agent: &str,
        mode: u32,
    ) -> Result<TempFile<'d>, ShmError> {
        let limit = name_limit(dir);
        let mut stem_len = agent.len().min(limit - TEMP_NAME_EXTRA);
        while !agent.is_char_boundary(stem_len) {
            stem_len -= 1;
        }
        let stem = &agent[..stem_len];
        let pid = std::process::id();
        for attempt in 0u32..100 {
            let nonce = crate::layout::realtime_us()
                ^ ((attempt as u64) << 48)
                ^ (pid as u64).rotate_left(20);
            let name = format!(".{stem}.{nonce:016x}.tmp");
            match rustix::fs::openat(
                dir,
                name.as_str(),
                OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode((mode & 0o7777) as _),
            ) {
                Ok(fd) => {
                    return Ok(TempFile {
                        dir,
                        path: path.with_file_name(&name),
                        name,
                        fd: Some(fd),
                    });
                }
                Err(Errno::EXIST) => continue,
                Err(e) => {
                    return Err(ShmError::io(
                        path.with_file_name(&name),
                        "create temporary file",
                        e,
                    ));
                }
            }
        }
        Err(ShmError::io(
            path,
            "create temporary file",
            std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        ))
    }

    /// The open file.
    pub(crate) fn fd(&self) -> &OwnedFd {
        self.fd.as_ref().expect("only taken by publish")
    }

    /// The temporary file's path, for error messages.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Puts the file at `<dir>/<agent>` and hands back its descriptor.
    pub(crate) fn publish(
        mut self,
        agent: &str,
        how: Publish,
    ) -> Result<(Published, Option<OwnedFd>), ShmError> {
        let flags = match how {
            Publish::NoReplace => RenameFlags::NOREPLACE,
            Publish::Replace => RenameFlags::empty(),
        };
        let dest = self.path.with_file_name(agent);
        let renamed =
            match rustix::fs::renameat_with(self.dir, self.name.as_str(), self.dir, agent, flags) {
                // A file system without RENAME_NOREPLACE: a hard link also refuses to
                // replace, then the temporary name goes.
                Err(Errno::INVAL | Errno::NOSYS) if how == Publish::NoReplace => {
                    rustix::fs::linkat(
                        self.dir,
                        self.name.as_str(),
                        self.dir,
                        agent,
                        AtFlags::empty(),
                    )
                    .map(|()| {
                        let _ =
                            rustix::fs::unlinkat(self.dir, self.name.as_str(), AtFlags::empty());
                    })
                }
                other => other,
            };
        match renamed {
            Ok(()) => {
                self.name.clear(); // nothing left to remove
                Ok((Published::InPlace, self.fd.take()))
            }
            Err(Errno::EXIST) if how == Publish::NoReplace => Ok((Published::Taken, None)),
            Err(e) => Err(ShmError::io(dest, "rename into place", e)),
        }
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.name.is_empty() {
            let _ = rustix::fs::unlinkat(self.dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

/// Reserves blocks for the first `len` bytes of `fd` (and makes the file at least
/// that long), so that no store into a mapping of it can fault for want of space.
/// `dir` and `agent` name the error.
pub(crate) fn reserve(fd: impl AsFd, len: u64, dir: &Path, agent: &str) -> Result<(), ShmError> {
    let fd = fd.as_fd();
    let no_space = |source: Errno| ShmError::NoSpace {
        dir: dir.to_path_buf(),
        agent: agent.to_string(),
        needed: len,
        source: source.into(),
    };
    loop {
        match rustix::fs::fallocate(fd, FallocateFlags::empty(), 0, len) {
            Ok(()) => return Ok(()),
            Err(Errno::INTR) => continue,
            Err(e @ (Errno::NOSPC | Errno::DQUOT | Errno::FBIG)) => return Err(no_space(e)),
            Err(Errno::OPNOTSUPP | Errno::NOSYS) => break,
            Err(e) => return Err(ShmError::io(dir.join(agent), "fallocate", e)),
        }
    }
    // No fallocate here: write zeros over every block that is not yet allocated,
    // which is what posix_fallocate does in that case.
    let size = rustix::fs::fstat(fd)
        .map(|s| s.st_size.max(0) as u64)
        .map_err(|e| ShmError::io(dir.join(agent), "fstat", e))?;
    let zeros = vec![0u8; 64 * 1024];
    let mut at = size.min(len);
    while at < len {
        let n = (len - at).min(zeros.len() as u64) as usize;
        match rustix::io::pwrite(fd, &zeros[..n], at) {
            Ok(written) => at += written as u64,
            Err(Errno::INTR) => continue,
            Err(e @ (Errno::NOSPC | Errno::DQUOT | Errno::FBIG)) => return Err(no_space(e)),
            Err(e) => return Err(ShmError::io(dir.join(agent), "write", e)),
        }
    }
    Ok(())
}
