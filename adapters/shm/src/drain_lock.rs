//! The advisory lock that makes a draining reader the ring's only one.
//!
//! A ring has one draining reader: it advances `read_pos`, and two of them take the
//! same events twice and skip others. Every telering draining reader — `telering
//! read`, `telering serve --drain`, the C API's `TELERING_READ_DRAIN` and Python's
//! `SharedRingBuffer`, which all read through [`crate::DrainingReader`] — takes a write
//! lock on the 8 bytes of `read_pos` (offset 8) with an open-file-description lock
//! (`fcntl(F_OFD_SETLK)`) before it reads, and a second one is refused with
//! [`ShmError::DrainerRunning`], naming the first one's pid.
//!
//! Why this lock: the writer holds a `flock` on the whole file for its lifetime, and
//! `flock` and `fcntl` locks do not interact on Linux, so the two never block each
//! other; an open-file-description lock belongs to the open file, not the process,
//! so it is released exactly when the reader's file is closed (a process-associated
//! `F_SETLK` lock would be dropped by any other descriptor of the same file being
//! closed, `stat` included, and would let two readers in one process both hold it).
//! Such a lock carries no pid (`F_OFD_GETLK` reports -1), so the holder is found, on
//! refusal only, among the processes whose `/proc/<pid>/fdinfo` lists the lock.
//! Observers take no lock and are never refused. NIXL's readers take no lock either:
//! a NIXL reader next to a telering draining reader is not detected.

use crate::error::ShmError;
use crate::file::FileId;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

/// The locked byte range: `read_pos`.
const START: i64 = 8;
const LEN: i64 = 8;

/// Takes the draining reader's lock on `file` (the ring at `path`, identified by
/// `id`), or fails naming the reader that holds it. A file system without such locks
/// is read without one, with a warning.
pub(crate) fn lock(file: &File, path: &Path, id: FileId) -> Result<(), ShmError> {
    match set(file, libc::F_WRLCK as libc::c_short) {
        Ok(()) => Ok(()),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => {
            Err(ShmError::DrainerRunning {
                path: path.to_path_buf(),
                pid: holder(id),
            })
        }
        Err(e) => {
            log::warn!(
                "{}: cannot take the draining reader's lock ({e}); a second draining reader would not be refused",
                path.display()
            );
            Ok(())
        }
    }
}

/// Releases the lock taken on `file` (before the same reader opens the ring again).
pub(crate) fn unlock(file: &File) {
    let _ = set(file, libc::F_UNLCK as libc::c_short);
}

/// Whether another open file description holds the draining reader's lock on the
/// file `file` is open on (a telering draining reader still reads it). Probes by
/// taking the lock through `file` and releasing it at once.
pub(crate) fn held_by_other(file: &File) -> bool {
    match set(file, libc::F_WRLCK as libc::c_short) {
        Ok(()) => {
            unlock(file);
            false
        }
        Err(e) => matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)),
    }
}

/// `struct flock` with 64-bit offsets, as `F_OFD_SETLK` takes it.
#[cfg(target_pointer_width = "64")]
type Flock = libc::flock;
#[cfg(target_pointer_width = "32")]
type Flock = libc::flock64;

/// `fcntl(fd, F_OFD_SETLK, lock)`: 0, or -1 with `errno` set.
///
/// # Safety
/// `fd` is an open descriptor for the duration of the call.
#[cfg(target_pointer_width = "64")]
unsafe fn ofd_setlk(fd: libc::c_int, lock: &Flock) -> libc::c_long {
    // SAFETY: the caller keeps `fd` open; `lock` is a valid `flock` that outlives the
    // call, which only reads it.
    libc::c_long::from(unsafe { libc::fcntl(fd, libc::F_OFD_SETLK, lock as *const Flock) })
}

/// `fcntl(fd, F_OFD_SETLK, lock)`: 0, or -1 with `errno` set. A 32-bit process takes
/// open-file-description locks only through the `fcntl64` system call with a
/// `struct flock64` (a 64-bit kernel refuses them through `fcntl`, and glibc's
/// `fcntl` would pass a `struct flock` with 32-bit offsets).
///
/// # Safety
/// `fd` is an open descriptor for the duration of the call.
#[cfg(target_pointer_width = "32")]
unsafe fn ofd_setlk(fd: libc::c_int, lock: &Flock) -> libc::c_long {
    // SAFETY: the caller keeps `fd` open; `lock` is a valid `flock64` that outlives
    // the call, which only reads it; `fcntl64` takes (fd, cmd, pointer).
    unsafe {
        libc::syscall(
            libc::SYS_fcntl64,
            fd,
            libc::F_OFD_SETLK,
            lock as *const Flock,
        )
    }
}

fn set(file: &File, kind: libc::c_short) -> std::io::Result<()> {
    // SAFETY: `flock` is plain data; all-zero is a valid value, and the fields the
    // call reads are set below.
    let mut lock: Flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    lock.l_start = START;
    lock.l_len = LEN;
    lock.l_pid = 0; // required for open-file-description locks
    loop {
        // SAFETY: the descriptor is open for the duration of the call (borrowed from
        // `file`).
        let r = unsafe { ofd_setlk(file.as_raw_fd(), &lock) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The pid of a process with an open-file-description write lock on `read_pos` of
/// the file `id`, from `/proc/<pid>/fdinfo/<fd>` (`lock: 1: OFDLCK ADVISORY WRITE -1
/// MAJ:MIN:INO 8 15`). `None` if none is visible (another user's process).
fn holder(id: FileId) -> Option<u32> {
    let wanted = format!(
        "{:02x}:{:02x}:{} {} {}",
        id.major(),
        id.minor(),
        id.ino(),
        START,
        START + LEN - 1
    );
    let me = std::process::id();
    let mut mine = None;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else {
            continue;
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_to_string(fd.path()).is_ok_and(|info| {
                info.lines().any(|l| {
                    l.starts_with("lock:")
                        && l.contains("OFDLCK")
                        && l.contains("WRITE")
                        && l.trim_end().ends_with(&wanted)
                })
            })
        });
        if holds {
            if pid != me {
                return Some(pid);
            }
            mine = Some(pid);
        }
    }
    mine
}
