//! The one error type of this crate.

use crate::generation::Generation;
use std::fmt;
use std::io;
use std::path::PathBuf;
use telering_core::DecodeError;
use telering_core::ring::RegionError;

/// Everything that can go wrong creating, opening or reading a ring file. Each
/// variant's `Display` names the file (or option) and the field at fault and, where
/// there is one, what to do about it.
#[derive(Debug)]
#[non_exhaustive]
pub enum ShmError {
    /// A system call on a file failed.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done (`"open"`, `"fstat"`, `"mmap"`, …).
        operation: &'static str,
        /// The error from the system.
        source: io::Error,
    },
    /// The agent name cannot be a file name.
    InvalidAgentName {
        /// The name as given.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A [`crate::WriterOptions`] field holds an unusable value.
    InvalidOption {
        /// The field.
        field: &'static str,
        /// Why, and what to use instead.
        reason: String,
    },
    /// A symbolic link sits where the ring file should be; the writer refuses to follow it.
    SymlinkRefused {
        /// The link.
        path: PathBuf,
    },
    /// The path is not a regular file (a directory, FIFO, socket, device).
    NotRegularFile {
        /// The path.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// Another live writer holds the file's lock: a ring has one producer.
    WriterAlreadyRunning {
        /// The file.
        path: PathBuf,
        /// The pid recorded in the file's trailer, if it has one.
        pid: Option<u32>,
    },
    /// Another draining reader holds the ring's drain lock: a ring has one draining
    /// reader (see [`crate::DrainingReader`]).
    DrainerRunning {
        /// The file.
        path: PathBuf,
        /// The pid of the reader holding the lock, if it could be found.
        pid: Option<u32>,
    },
    /// The file system holding the ring directory has no room for the ring file. Its
    /// blocks are reserved before the file is mapped, so this is found at start.
    NoSpace {
        /// The ring directory.
        dir: PathBuf,
        /// The agent whose ring it is.
        agent: String,
        /// Bytes the ring file needs.
        needed: u64,
        /// The error from the system (`ENOSPC`, `EDQUOT` or `EFBIG`).
        source: io::Error,
    },
    /// A file sits at the agent's path that is not provably a ring whose writer is
    /// gone, so it is neither reused nor replaced.
    NotALeftoverRing {
        /// The file.
        path: PathBuf,
        /// What it is, or why its writer may still be running.
        reason: String,
    },
    /// The NIXL header is invalid (size, version, capacity, mask or positions).
    BadHeader {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the field.
        source: RegionError,
    },
    /// The header's positions contradict the ring's own trailer: they leave more
    /// unread events than the writer published, or name a slot it never wrote. A
    /// reader that trusted them would return slots nobody wrote (or old ones again),
    /// and advance `read_pos` over them.
    InconsistentPositions {
        /// The file.
        path: PathBuf,
        /// The header field at fault: `read_pos` or `write_pos`.
        field: &'static str,
        /// Its offset in the header.
        offset: usize,
        /// Its value.
        found: u64,
        /// What contradicts it.
        reason: String,
    },
    /// The bytes after the last slot carry the telering magic but an invalid trailer.
    BadTrailer {
        /// The file.
        path: PathBuf,
        /// The trailer field at fault.
        field: &'static str,
        /// The value found.
        found: u64,
        /// What was expected.
        expected: String,
    },
    /// The file shrank below the mapped length while it was open (someone truncated it).
    Truncated {
        /// The file.
        path: PathBuf,
        /// Its size now.
        len: u64,
        /// The length the reader has mapped.
        needed: u64,
    },
    /// A core ring window at an offset cannot be read there: the offset is not
    /// 8-aligned, the ring would not lie inside the file, or what lies there is no
    /// version-1 ring.
    Window {
        /// The file.
        path: PathBuf,
        /// The window's offset in it.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// An observer was asked to follow a ring whose slots carry no telering stamps:
    /// the file has no telering trailer (NIXL's own writer made it), so only a
    /// draining reader can read it.
    NoSlotStamps {
        /// The file.
        path: PathBuf,
        /// The ring's generation.
        generation: Generation,
    },
    /// The header's `version` is not one any NIXL release writes (1 to 4).
    UnknownVersion {
        /// The file.
        path: PathBuf,
        /// The value found.
        found: i32,
    },
    /// The file's size fits no layout of its header's version and capacity.
    InconsistentSize {
        /// The file.
        path: PathBuf,
        /// The header's `version`.
        version: i32,
        /// The header's `capacity`.
        capacity: u64,
        /// The file's size in bytes.
        size: u64,
        /// The sizes that would fit.
        expected: String,
    },
    /// A slot's stamp (offset 44 of a version-1 slot, 4 of a version-4 slot) does not
    /// fit the ring's sequence: the file is corrupt, and following it by stamps cannot
    /// be trusted.
    BadSlotStamp {
        /// The file.
        path: PathBuf,
        /// The slot index.
        slot: u64,
        /// The stamp found.
        stamp: u32,
        /// The stamp's offset in the slot.
        offset: usize,
    },
    /// The file ends inside telering's trailer: it carries the trailer's magic, but
    /// fewer bytes than the trailer has (the file was truncated).
    TrailerCut {
        /// The file.
        path: PathBuf,
        /// Bytes present after the last slot.
        present: u64,
        /// The trailer's length in this generation.
        needed: u64,
    },
    /// A slot held an event whose category or name is invalid. The reader has moved
    /// past it and can continue.
    CorruptEvent {
        /// The file.
        path: PathBuf,
        /// The slot index, when the reader knows it (the draining reader always does).
        slot: Option<u64>,
        /// What is wrong with the record.
        source: DecodeError,
    },
}

impl fmt::Display for ShmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShmError::Io {
                path,
                operation,
                source,
            } => {
                write!(f, "{}: {operation} failed: {source}", path.display())?;
                if source.kind() == io::ErrorKind::PermissionDenied
                    && *operation == "open for reading and writing"
                {
                    f.write_str(" (a draining reader advances `read_pos`, so it needs write access: create the file with a mode that grants it, or use an observer)")?;
                }
                Ok(())
            }
            ShmError::InvalidAgentName { name, reason } => {
                write!(f, "agent name {name:?} cannot name a ring file: {reason}")
            }
            ShmError::InvalidOption { field, reason } => {
                write!(f, "writer option `{field}`: {reason}")
            }
            ShmError::SymlinkRefused { path } => write!(
                f,
                "{}: is a symbolic link; a ring file is never written through a link (remove it or choose another directory)",
                path.display()
            ),
            ShmError::NotRegularFile { path, kind } => write!(
                f,
                "{}: is a {kind}, not a ring file; it was left untouched",
                path.display()
            ),
            ShmError::WriterAlreadyRunning { path, pid } => {
                write!(f, "{}: another writer is running", path.display())?;
                if let Some(pid) = pid {
                    write!(f, " (pid {pid})")?;
                }
                f.write_str(
                    "; a ring has exactly one producer, so give this agent another name or stop the other one",
                )
            }
            ShmError::DrainerRunning { path, pid } => {
                write!(f, "{}: another draining reader", path.display())?;
                if let Some(pid) = pid {
                    write!(f, " (pid {pid})")?;
                }
                f.write_str(
                    " is taking this ring's events; a ring has one draining reader (two would take the same events twice and skip others), so stop it, or follow the ring with an observer (`telering tail`), of which any number may run",
                )
            }
            ShmError::NoSpace {
                dir,
                agent,
                needed,
                source,
            } => write!(
                f,
                "{}: no room for the ring file of agent {agent:?}, which needs {needed} bytes ({source}); free space there, choose a smaller ring (NIXL_TELEMETRY_BUFFER_SIZE) or another directory (NIXL_TELEMETRY_DIR)",
                dir.display()
            ),
            ShmError::NotALeftoverRing { path, reason } => write!(
                f,
                "{}: is not provably a ring whose writer is gone: {reason}; the file was left untouched",
                path.display()
            ),
            ShmError::BadHeader { path, source } => write!(
                f,
                "{}: not a valid NIXL telemetry ring: {source}; the file was left untouched",
                path.display()
            ),
            ShmError::InconsistentPositions {
                path,
                field,
                offset,
                found,
                reason,
            } => write!(
                f,
                "{}: field `{field}` (offset {offset}) is {found}, which contradicts the ring's trailer: {reason}; the file is corrupt and was left untouched",
                path.display()
            ),
            ShmError::UnknownVersion { path, found } => write!(
                f,
                "{}: field `version` (offset 16) is {found}; no NIXL ring generation has it (telering reads versions 1 to 4); the file was left untouched",
                path.display()
            ),
            ShmError::InconsistentSize {
                path,
                version,
                capacity,
                size,
                expected,
            } => write!(
                f,
                "{}: the file is {size} bytes, but a version-{version} ring of {capacity} slots is {expected}; the file was left untouched",
                path.display()
            ),
            ShmError::BadTrailer {
                path,
                field,
                found,
                expected,
            } => write!(
                f,
                "{}: telering trailer field `{field}` is {found}; expected {expected}",
                path.display()
            ),
            ShmError::Truncated { path, len, needed } => write!(
                f,
                "{}: the file was truncated to {len} bytes while mapped ({needed} needed); its remaining events cannot be read",
                path.display()
            ),
            ShmError::Window {
                path,
                offset,
                reason,
            } => write!(
                f,
                "{}: no ring window at offset {offset}: {reason}",
                path.display()
            ),
            ShmError::NoSlotStamps { path, generation } => write!(
                f,
                "{}: a {generation} ring without telering's trailer: its writer (NIXL's own) does not stamp the slots, so an observer cannot follow it; read it with a draining reader",
                path.display()
            ),
            ShmError::TrailerCut {
                path,
                present,
                needed,
            } => write!(
                f,
                "{}: the file ends {present} bytes after the last slot, inside telering's trailer, which is {needed} bytes long: the file was truncated",
                path.display()
            ),
            ShmError::BadSlotStamp {
                path,
                slot,
                stamp,
                offset,
            } => write!(
                f,
                "{}: slot {slot}: stamp {stamp:#010x} (offset {offset}) does not fit the ring's event sequence; the file is corrupt (a draining reader of a `DropNewest` ring does not need stamps)",
                path.display()
            ),
            ShmError::CorruptEvent { path, slot, source } => {
                write!(f, "{}: ", path.display())?;
                match slot {
                    Some(slot) => write!(f, "slot {slot}")?,
                    None => f.write_str("an observed slot")?,
                }
                write!(f, ": {source}; the event was skipped")
            }
        }
    }
}

impl std::error::Error for ShmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ShmError::Io { source, .. } | ShmError::NoSpace { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl ShmError {
    pub(crate) fn io(
        path: impl Into<PathBuf>,
        operation: &'static str,
        source: impl Into<io::Error>,
    ) -> ShmError {
        ShmError::Io {
            path: path.into(),
            operation,
            source: source.into(),
        }
    }
}
