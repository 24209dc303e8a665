//! Deciding what to do with a file already at `<dir>/<agent>`: nothing there, a live
//! writer's ring, a dead writer's ring (reused in place or replaced), or something
//! that is not provably a dead ring (left untouched).
//!
//! # The rule
//!
//! A file is taken over only when it is **provably a ring whose writer is gone**:
//!
//! 1. Its exclusive `flock` can be taken (every telering writer holds it for its
//!    whole life; the kernel releases it when the process dies).
//! 2. Its header is a ring header of a known generation (version, power-of-two
//!    capacity, matching mask) and the file size is **exactly** that of such a ring:
//!    `40 + capacity × slot size`, or that plus a valid 64-byte telering trailer. A
//!    file whose first 40 bytes merely look like a header is refused.
//! 3. Its writer is dead:
//!    - **with a trailer**, the trailer's writer pid is dead (`kill(pid, 0)` says
//!      `ESRCH`), or is this process (whose earlier writer closed), or the trailer's
//!      clean-close flag is set, or the live process with that pid neither has the
//!      file open nor maps it (the pid was reused);
//!    - **without a trailer** (NIXL's writer holds no lock and writes no pid), no
//!      process has the file open for writing or mapped shared and writable. This is
//!      read from `/proc`: every `/proc/<pid>/fd/<n>` naming the same device and inode
//!      has its access mode read from `/proc/<pid>/fdinfo/<n>` (`flags:`), and every
//!      `/proc/<pid>/maps` line of that device and inode is checked for `w` and `s`.
//!      A draining reader also opens the file for writing, so a running NIXL reader
//!      keeps a trailerless ring from being taken over until it exits.
//!
//!    `/proc` shows another user's descriptors only to root: an unprivileged writer
//!    sees its own user's processes, which is where NIXL agents of one deployment
//!    run. A process it cannot inspect does not count as a writer.
//!
//! Everything else is refused with [`ShmError::NotALeftoverRing`], and the file
//! stays byte-identical.

use crate::error::ShmError;
use crate::file::{FileId, file_kind, read_at};
use crate::generation::Generation;
use crate::layout::{FLAG_CLEAN_CLOSE, TRAILER_MAGIC, trailer_offsets, trailer_size};
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use telering_core::ring::{HEADER_SIZE, MAX_CAPACITY};

/// What a ring file is made of: its generation (header version and slot size) and
/// its capacity. Two rings of the same shape have the same size and can be reused
/// for each other. Every generation of [`Generation::ALL`] is recognised in a
/// leftover file (the two version-2 forms told apart by the file size); a writer
/// reuses one in place only if it writes that generation itself (version 1 or 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RingShape {
    /// The generation.
    pub generation: Generation,
    /// Slots.
    pub capacity: u64,
}

impl RingShape {
    /// Header plus slots.
    pub fn ring_bytes(&self) -> u64 {
        self.generation.ring_bytes(self.capacity)
    }

    /// The telering trailer a ring of this generation carries (64 bytes, 72 for
    /// version 4).
    pub fn trailer_len(&self) -> u64 {
        trailer_size(self.generation) as u64
    }
}

/// A leftover ring found at the path, locked by us.
#[derive(Debug)]
pub(crate) struct DeadRing {
    /// Opened read-write, holding the exclusive `flock`.
    pub file: File,
    pub shape: RingShape,
    /// Whether a telering trailer follows the slots.
    pub has_trailer: bool,
    /// How its writer was found dead, for the log.
    pub evidence: String,
}

/// What sits at the path.
#[derive(Debug)]
pub(crate) enum Found {
    /// Nothing.
    Nothing,
    /// The lock is held (a live writer, or a reader probing for one), or the path
    /// changed under us: try again shortly.
    Busy,
    /// A dead writer's ring, locked by us.
    Dead(DeadRing),
}

/// Looks at `<dir>/<name>` and, if it is a dead writer's ring, locks it.
pub(crate) fn inspect(dir: &OwnedFd, path: &Path, name: &str) -> Result<Found, ShmError> {
    // Read-write: a ring reused in place is written through this descriptor. Fall
    // back to read-only when we may not write the file, so the refusal below still
    // names what is wrong with it.
    let flags = OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK | OFlags::NOCTTY;
    let opened = match rustix::fs::openat(dir, name, flags | OFlags::RDWR, Mode::empty()) {
        Err(rustix::io::Errno::ACCESS | rustix::io::Errno::ISDIR) => {
            rustix::fs::openat(dir, name, flags | OFlags::RDONLY, Mode::empty())
        }
        other => other,
    };
    let fd = match opened {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(Found::Nothing),
        Err(rustix::io::Errno::LOOP) => {
            return Err(ShmError::SymlinkRefused {
                path: path.to_path_buf(),
            });
        }
        Err(e) => return Err(ShmError::io(path, "open existing file", e)),
    };
    let stat = rustix::fs::fstat(&fd).map_err(|e| ShmError::io(path, "fstat", e))?;
    if let Some(kind) = file_kind(&stat) {
        return Err(ShmError::NotRegularFile {
            path: path.to_path_buf(),
            kind,
        });
    }
    match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => {}
        Err(rustix::io::Errno::WOULDBLOCK) => return Ok(Found::Busy),
        Err(e) => return Err(ShmError::io(path, "flock", e)),
    }
    // The path may have been replaced between our open and our lock.
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(now) if FileId::of(&now) == FileId::of(&stat) => {}
        _ => return Ok(Found::Busy),
    }
    let file = File::from(fd);
    let id = FileId::of(&stat);
    let size = stat.st_size.max(0) as u64;
    let refuse = |reason: String| ShmError::NotALeftoverRing {
        path: path.to_path_buf(),
        reason,
    };
    let (shape, trailer) = ring_shape(&file, path, size).map_err(refuse)?;
    let probe = file.as_raw_fd() as u32;
    let evidence = writer_gone(id, probe, trailer.as_ref()).map_err(refuse)?;
    let writable = rustix::fs::fcntl_getfl(&file)
        .map(|f| f.contains(OFlags::RDWR))
        .unwrap_or(false);
    if !writable {
        return Err(ShmError::io(
            path,
            "open existing file for writing",
            rustix::io::Errno::ACCESS,
        ));
    }
    Ok(Found::Dead(DeadRing {
        file,
        shape,
        has_trailer: trailer.is_some(),
        evidence,
    }))
}

/// The trailer fields the liveness rule uses.
#[derive(Clone, Copy, Debug)]
struct TrailerFacts {
    writer_pid: u32,
    clean_close: bool,
}

/// The shape of the ring in `file`, if its header and exact size say it is one.
fn ring_shape(
    file: &File,
    path: &Path,
    size: u64,
) -> Result<(RingShape, Option<TrailerFacts>), String> {
    let mut header = [0u8; HEADER_SIZE];
    let got = read_at(file, path, &mut header, 0).map_err(|e| e.to_string())?;
    if got < HEADER_SIZE {
        return Err(format!(
            "it is {size} bytes long, shorter than a ring header"
        ));
    }
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
    let version = i32::from_le_bytes(header[16..20].try_into().unwrap());
    let capacity = u64_at(24);
    let mask = u64_at(32);
    let generations: Vec<Generation> = Generation::ALL
        .into_iter()
        .filter(|g| g.version() == version)
        .collect();
    if generations.is_empty() {
        return Err(format!(
            "its header's version is {version}, not that of a known ring generation"
        ));
    };
    if !capacity.is_power_of_two() || !(2..=MAX_CAPACITY as u64).contains(&capacity) {
        return Err(format!(
            "its header's capacity {capacity} is not a power of two from 2 to {MAX_CAPACITY}"
        ));
    }
    if mask != capacity - 1 {
        return Err(format!(
            "its header's mask {mask} does not match its capacity {capacity}"
        ));
    }
    let mut expected = Vec::new();
    for generation in generations {
        let shape = RingShape {
            generation,
            capacity,
        };
        let ring_bytes = shape.ring_bytes();
        let trailer_len = shape.trailer_len();
        if size == ring_bytes {
            return Ok((shape, None));
        }
        if !generation.may_have_trailer() {
            expected.push(ring_bytes.to_string());
            continue;
        }
        if size == ring_bytes + trailer_len {
            let mut tail = vec![0u8; trailer_len as usize];
            let got = read_at(file, path, &mut tail, ring_bytes).map_err(|e| e.to_string())?;
            crate::layout::classify_trailer(path, &tail[..got], generation)
                .map_err(|e| e.to_string())?;
            if tail[..8] == TRAILER_MAGIC {
                let u32_at = |at: usize| u32::from_le_bytes(tail[at..at + 4].try_into().unwrap());
                let facts = TrailerFacts {
                    writer_pid: u32_at(trailer_offsets::WRITER_PID),
                    clean_close: u32_at(trailer_offsets::FLAGS) & FLAG_CLEAN_CLOSE != 0,
                };
                return Ok((shape, Some(facts)));
            }
            return Err(format!(
                "its header describes a {generation} ring of {capacity} slots ({ring_bytes} bytes), but the {trailer_len} bytes after it are not a telering trailer"
            ));
        }
        expected.push(ring_bytes.to_string());
        expected.push((ring_bytes + trailer_len).to_string());
    }
    Err(format!(
        "its header describes a version-{version} ring of {capacity} slots, which is {} bytes long (with telering's trailer), but the file has {size} bytes",
        expected.join(" or ")
    ))
}

/// Why the ring's writer is known to be gone, or why that cannot be shown.
fn writer_gone(id: FileId, probe: u32, trailer: Option<&TrailerFacts>) -> Result<String, String> {
    match trailer {
        Some(t) => {
            if t.clean_close {
                return Ok(format!("its writer (pid {}) closed it", t.writer_pid));
            }
            if t.writer_pid == std::process::id() {
                return Ok("its writer was this process, and is gone".into());
            }
            if !pid_alive(t.writer_pid) {
                return Ok(format!("its writer (pid {}) is dead", t.writer_pid));
            }
            match process_uses(t.writer_pid, id) {
                Some(false) => Ok(format!(
                    "pid {} in its trailer now belongs to a process that does not use the file",
                    t.writer_pid
                )),
                Some(true) => Err(format!(
                    "its trailer names pid {}, which is alive and has the file open, yet holds no lock",
                    t.writer_pid
                )),
                None => Err(format!(
                    "its trailer names pid {}, which is alive and cannot be inspected",
                    t.writer_pid
                )),
            }
        }
        None => match writing_process(id, probe) {
            None => Ok("it has no telering trailer and no process has it open for writing".into()),
            Some(pid) => Err(format!(
                "it has no telering trailer (so no writer pid) and process {pid} has it open for writing or maps it writable; a NIXL writer holds no lock, so the file counts as in use until that process closes it"
            )),
        },
    }
}

/// Whether a process with this pid exists (`kill(pid, 0)`: only `ESRCH` means no).
fn pid_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// Whether process `pid` has the file open (any mode) or mapped. `None` if its
/// `/proc` entries cannot be read.
fn process_uses(pid: u32, id: FileId) -> Option<bool> {
    let fds = open_fds(pid, id)?;
    Some(!fds.is_empty() || mapped(pid, id, false).unwrap_or(false))
}

/// The first process that has the file open for writing (other than through our
/// own descriptor `probe`) or mapped shared and writable.
fn writing_process(id: FileId, probe: u32) -> Option<u32> {
    let me = std::process::id();
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let writes = open_fds(pid, id)
            .unwrap_or_default()
            .into_iter()
            .any(|fd| !(pid == me && fd == probe) && fd_writable(pid, fd));
        if writes || mapped(pid, id, true).unwrap_or(false) {
            return Some(pid);
        }
    }
    None
}

/// The descriptors of process `pid` that name the file.
fn open_fds(pid: u32, id: FileId) -> Option<Vec<u32>> {
    let entries = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let mut fds = Vec::new();
    for entry in entries.flatten() {
        let Some(fd) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        // `stat` follows the magic link to the open file itself.
        if let Ok(stat) = rustix::fs::stat(entry.path()) {
            if FileId::of(&stat) == id {
                fds.push(fd);
            }
        }
    }
    Some(fds)
}

/// Whether descriptor `fd` of process `pid` was opened for writing (`O_WRONLY` or
/// `O_RDWR` in the `flags:` line of its fdinfo, an octal number).
fn fd_writable(pid: u32, fd: u32) -> bool {
    let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")) else {
        return false;
    };
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        .is_some_and(|flags| flags & 0o3 != 0)
}

/// Whether process `pid` maps the file (only shared writable mappings if
/// `writable_only`). `None` if its maps cannot be read.
fn mapped(pid: u32, id: FileId, writable_only: bool) -> Option<bool> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let dev = format!("{:02x}:{:02x}", id.major(), id.minor());
    let ino = id.ino().to_string();
    Some(maps.lines().any(|line| {
        let mut fields = line.split_ascii_whitespace();
        let (_range, perms, _offset, d, i) = (
            fields.next(),
            fields.next().unwrap_or(""),
            fields.next(),
            fields.next().unwrap_or(""),
            fields.next().unwrap_or(""),
        );
        let writable =
            perms.as_bytes().get(1) == Some(&b'w') && perms.as_bytes().get(3) == Some(&b's');
        d == dev && i == ino && (writable || !writable_only)
    }))
}
