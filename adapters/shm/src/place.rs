//! Putting a writer's ring in place at `<dir>/<agent>`: a new file (the `create`
//! module), a dead writer's ring of the same shape reused in place, or a dead
//! writer's ring of another shape replaced (judged by the `leftover` module). What
//! each choice means for readers is in the `writer` module's docs.

use crate::carry::Carried;
use crate::create::{Publish, Published, TempFile};
use crate::error::ShmError;
use crate::file::FileId;
use crate::layout::{TrailerCells, realtime_us, trailer_size};
use crate::leftover::{self, DeadRing, Found, RingShape};
use crate::mapping::FileMapping;
use crate::options::{DEFAULT_MODE, WriterOptions};
use crate::ring_producer::RingProducer;
use memmap2::MmapOptions;
use rustix::fs::{FlockOperation, Mode};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::time::Duration;
use telering_core::ring::HeaderInfo;

/// How long a writer keeps trying to lock a leftover file before concluding that its
/// writer is alive: a reader probing `writer_alive` holds a shared lock for a moment,
/// so one failed attempt proves nothing. 40 × 5 ms.
const LEFTOVER_LOCK_ATTEMPTS: u32 = 40;
const LEFTOVER_LOCK_PAUSE: Duration = Duration::from_millis(5);

/// Puts a ring for `options` at `path` — a new file, a dead writer's ring reused in
/// place, or a replacement — and returns it locked and mapped with its producer.
pub(crate) fn place(
    options: &WriterOptions,
    dir: &OwnedFd,
    path: &Path,
    shape: RingShape,
) -> Result<Parts, ShmError> {
    let name = options.agent_name.as_str();
    for _attempt in 0..LEFTOVER_LOCK_ATTEMPTS {
        let parts = match leftover::inspect(dir, path, name)? {
            Found::Busy => None,
            Found::Nothing => build_new(options, dir, path, shape, Publish::NoReplace, None)?,
            Found::Dead(dead) if dead.shape == shape => match reuse(options, path, dead)? {
                Ok(parts) => Some(parts),
                Err(dead) => Some(replace(options, dir, path, shape, dead)?),
            },
            Found::Dead(dead) => Some(replace(options, dir, path, shape, dead)?),
        };
        match parts {
            Some(parts) => return Ok(parts),
            // A live writer's lock, a reader probing it, or another writer that
            // published first: look again shortly.
            None => std::thread::sleep(LEFTOVER_LOCK_PAUSE),
        }
    }
    Err(ShmError::WriterAlreadyRunning {
        pid: crate::file::trailer_pid(path),
        path: path.to_path_buf(),
    })
}

/// A ring file, locked and mapped, with its producer: what a writer is made of. The
/// producer holds the file's region, which owns the mapping (ring, trailer and the
/// mapping's `SIGBUS` registration).
pub(crate) struct Parts {
    pub(crate) producer: RingProducer,
    pub(crate) file: File,
    pub(crate) id: FileId,
    pub(crate) mapped_len: u64,
    /// Unread events of a replaced ring that could not be carried into this one
    /// (the `carry` module): counted in its trailer's `dropped_staging`.
    pub(crate) lost_replaced: u64,
}

/// Maps `file` (ring and trailer of `options.layout`), lays out a fresh ring or
/// attaches to the one there, writes a fresh trailer and makes the producer.
/// `foreign`: the ring being attached to has no telering trailer (another program
/// wrote it), so its slot stamps are cleared.
///
/// The caller holds the file's exclusive lock, so there is no other producer; a fresh
/// ring's file is not yet visible to anyone.
fn start_ring(
    options: &WriterOptions,
    file: File,
    path: &Path,
    fresh: bool,
    foreign: bool,
    unread_at_start: u64,
) -> Result<Parts, ShmError> {
    let capacity = options.capacity;
    let generation = options.layout.generation();
    let ring_bytes = generation.ring_bytes(capacity as u64);
    let trailer_len = trailer_size(generation);
    let len = ring_bytes + trailer_len as u64;
    let map_len = usize::try_from(len).map_err(|_| ShmError::InvalidOption {
        field: "capacity",
        reason: format!("{capacity} slots do not fit in this process's address space"),
    })?;
    let map = MmapOptions::new()
        .len(map_len)
        .map_raw(&file)
        .map_err(|e| ShmError::io(path, "mmap", e))?;
    let ptr = map.as_mut_ptr();
    // `ring_bytes + trailer == map_len`, `ring_bytes` a multiple of 8: always accepted.
    // From here on the mapping is registered with the SIGBUS handler (the `guard`
    // module).
    let mapping = FileMapping::new(map, Some(ring_bytes as usize), true).ok_or_else(|| {
        ShmError::InvalidOption {
            field: "capacity",
            reason: format!("{capacity} slots leave no aligned room for the trailer"),
        }
    })?;
    let producer = if fresh {
        // SAFETY: the mapping is page-aligned, `map_len` bytes long, writable, and
        // owned by the region built here, so it stays mapped at the same address as
        // long as the region lives. Nobody else can reach the file yet: it has a
        // fresh temporary name created with O_EXCL, so laying it out has exclusive
        // access, and this writer holds its exclusive lock: the one producer.
        unsafe {
            RingProducer::create(
                options.layout,
                mapping,
                ptr,
                map_len,
                capacity,
                options.policy,
                path,
            )
        }
    } else {
        // SAFETY: as above for the mapping. The file is a dead writer's ring that we
        // hold the exclusive lock of, so there is no other producer; readers still
        // attached to it access it only through the core's atomics or from another
        // program, as we do. Clearing a foreign ring's stamps touches only bytes NIXL's
        // readers never look at, and no telering observer follows a ring without a
        // trailer.
        unsafe {
            RingProducer::attach(
                options.layout,
                mapping,
                ptr,
                ring_bytes as usize,
                options.policy,
                path,
                foreign,
            )
        }
    }?;
    let mapping = producer.mapping();
    if let Some(trailer) = mapping.trailer() {
        trailer.init(
            trailer_len,
            rustix::process::getpid().as_raw_nonzero().get() as u32,
            options.clock,
            options.policy,
            realtime_us(),
            unread_at_start,
        );
    }
    if let Some(cell) = mapping.unrepresentable() {
        // A reused version-4 ring's counter belongs to the dead writer's run.
        TrailerCells::store64(cell, 0, std::sync::atomic::Ordering::Relaxed);
    }
    let stat = rustix::fs::fstat(&file).map_err(|e| ShmError::io(path, "fstat", e))?;
    Ok(Parts {
        producer,
        file,
        id: FileId::of(&stat),
        mapped_len: len,
        lost_replaced: 0,
    })
}

/// Builds a new ring under a temporary name, writes the events `carry` brings from a
/// dead writer's ring into it, and publishes it at `path`. `None` if another writer published its file first (only with
/// [`Publish::NoReplace`]).
fn build_new(
    options: &WriterOptions,
    dir: &OwnedFd,
    path: &Path,
    shape: RingShape,
    how: Publish,
    carry: Option<(&Carried, &DeadRing)>,
) -> Result<Option<Parts>, ShmError> {
    let name = options.agent_name.as_str();
    let len = shape.ring_bytes() + shape.trailer_len();
    let temp = TempFile::create(dir, path, name, options.mode.unwrap_or(DEFAULT_MODE))?;
    let tmp_path = temp.path().to_path_buf();
    if let Some(mode) = options.mode {
        rustix::fs::fchmod(temp.fd(), Mode::from_raw_mode(mode as _))
            .map_err(|e| ShmError::io(&tmp_path, "fchmod", e))?;
    }
    crate::create::reserve(temp.fd(), len, &options.dir, name)?;
    rustix::fs::flock(temp.fd(), FlockOperation::NonBlockingLockExclusive)
        .map_err(|e| ShmError::io(&tmp_path, "flock", e))?;
    let file = File::from(
        temp.fd()
            .try_clone()
            .map_err(|e| ShmError::io(&tmp_path, "dup", e))?,
    );
    let mut parts = start_ring(options, file, &tmp_path, true, false, 0)?;
    if let Some((carried, dead)) = carry {
        // Nobody can see the file yet: these are simply its first events.
        if carried.push_into(dead, path, &mut parts.producer)? {
            if let Some(t) = parts.producer.mapping().trailer() {
                // They are the unread events this ring starts with: an observer that
                // read them in the replaced file skips them here.
                let carried = parts.producer.events_published();
                let relaxed = std::sync::atomic::Ordering::Relaxed;
                TrailerCells::store32(&t.unread_at_start, carried as u32, relaxed);
                TrailerCells::store64(&t.published, carried, std::sync::atomic::Ordering::Release);
            }
        }
    }
    match temp.publish(name, how)? {
        (Published::InPlace, _) => {
            log::debug!(
                "{}: ring of {} slots created",
                path.display(),
                options.capacity
            );
            Ok(Some(parts))
        }
        (Published::Taken, _) => Ok(None),
    }
}

/// Replaces a dead writer's ring of another shape (or with unusable positions) by a
/// new one, holding the dead ring's lock until the new file is in place.
fn replace(
    options: &WriterOptions,
    dir: &OwnedFd,
    path: &Path,
    shape: RingShape,
    dead: DeadRing,
) -> Result<Parts, ShmError> {
    // Readers following the old inode go on with the new file once they have read
    // the old one to the end; until then they see no new events: worth a warning.
    // The old ring's unread events go into the new one (the `carry` module).
    let carried = crate::carry::unread_events(&dead, path, shape.generation, shape.capacity)?;
    log::warn!(
        "{}: replacing a {} ring of {} slots ({}) with a {} ring of {} slots; {}",
        path.display(),
        dead.shape.generation,
        dead.shape.capacity,
        dead.evidence,
        shape.generation,
        shape.capacity,
        carried.describe()
    );
    let mut parts = build_new(
        options,
        dir,
        path,
        shape,
        Publish::Replace,
        Some((&carried, &dead)),
    )?
    .expect("a replacing rename never reports the path as taken");
    parts.lost_replaced = carried.lost;
    drop(dead);
    Ok(parts)
}

/// Takes over a dead writer's ring of the same shape in place: the inode stays, so
/// readers that have it open keep following it. The positions are kept, not reset:
/// the new producer continues from `write_pos` (and the slot stamps), so to every
/// reader the restart looks like a writer that paused, and the previous run's unread
/// events stay readable. `Err(dead)` if the header's positions are not usable.
fn reuse(
    options: &WriterOptions,
    path: &Path,
    dead: DeadRing,
) -> Result<Result<Parts, DeadRing>, ShmError> {
    let len = dead.shape.ring_bytes() + dead.shape.trailer_len();
    let mut header = [0u8; telering_core::ring::HEADER_SIZE];
    let got = crate::file::read_at(&dead.file, path, &mut header, 0)?;
    let generation = dead.shape.generation;
    let checked = HeaderInfo::from_bytes(&header[..got]).and_then(|h| {
        h.validate_for(
            dead.shape.ring_bytes() as usize,
            generation.version(),
            generation.slot_size(),
        )
        .map(|()| h)
    });
    let fill = match checked {
        Ok(h) => h.write_pos.wrapping_sub(h.read_pos) & h.mask,
        Err(e) => {
            log::info!("{}: the dead writer's ring has {e}", path.display());
            return Ok(Err(dead));
        }
    };
    if let Some(mode) = options.mode {
        rustix::fs::fchmod(&dead.file, Mode::from_raw_mode(mode as _))
            .map_err(|e| ShmError::io(path, "fchmod", e))?;
    }
    // Blocks for every page (a NIXL-made file may be sparse) and room for the
    // trailer if it had none.
    crate::create::reserve(&dead.file, len, &options.dir, &options.agent_name)?;
    let evidence = dead.evidence.clone();
    let had_trailer = dead.has_trailer;
    let parts = start_ring(options, dead.file, path, false, !had_trailer, fill)?;
    log::info!(
        "{}: reusing the ring in place ({evidence}{}); {fill} events of the previous run are still unread",
        path.display(),
        if had_trailer {
            ""
        } else {
            "; telering's trailer appended, the slot stamps another writer left cleared"
        }
    );
    Ok(Ok(parts))
}
