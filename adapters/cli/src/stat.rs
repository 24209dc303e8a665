//! `telering stat PATH|DIR`: what each ring file holds, without changing it.
//!
//! For every ring: capacity, fill, header version, and from telering's trailer the
//! writer's pid, whether the writer is alive (some process holds the file's writer
//! lock) or gone, events published, events dropped (ring full and before the ring),
//! the last heartbeat, and whether the writer closed the file cleanly. Every ring
//! names its generation (NIXL version 1 to 4, see [`telering_shm::Generation`]). A
//! file without a trailer (written by NIXL's own writer, or a raw window laid out by
//! `telering-core`) shows only the header's fields and says that no writer pid or
//! loss counters exist for it.
//!
//! Given a directory, `stat` reports every regular file in it whose name does not
//! start with `.` (writers build files under dot-names and rename them into place).
//! Files there that are not rings, and entries that are not regular files (a symbolic
//! link is never followed, a directory, a FIFO), are listed on stderr as skipped with
//! the reason (`top DIR` shows them as rows saying so); a file that cannot
//! be read at all is reported on stderr too and makes the run exit with code 1, with a
//! last line counting every problem reported ([`CliError::StatProblems`]).
//!
//! File names are printed escaped ([`shown_path`]): a ring file whose name holds a
//! newline or an `ESC` cannot forge a line of the report or drive the terminal.

use crate::error::CliError;
use crate::output::{local_time, message_line, shown_path, write_json_string};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};
use telering_shm::{ClockId, Generation, RingFileInfo, ShmError};

/// Writes the report of one ring as an indented text block.
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("telering-cli-doc-stat-{}", std::process::id()));
/// use telering_shm::{stat, ShmWriter, WriterOptions};
/// let writer = ShmWriter::create(WriterOptions::new(&dir, "agent"))?;
/// let mut out = Vec::new();
/// telering_cli::stat::write_text(&mut out, &stat(writer.path())?)?;
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains("capacity:       4096 slots"), "{text}");
/// assert!(text.contains("writer:         alive"), "{text}");
/// # writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_text(out: &mut dyn Write, info: &RingFileInfo) -> std::io::Result<()> {
    writeln!(out, "{}", shown_path(&info.path))?;
    writeln!(out, "  capacity:       {} slots", info.capacity)?;
    writeln!(out, "  fill:           {} events", info.fill)?;
    writeln!(out, "  version:        {}", info.version)?;
    writeln!(out, "  generation:     {}", info.generation)?;
    match &info.trailer {
        None => {
            writeln!(
                out,
                "  writer:         {} (no telering trailer: written by NIXL or a raw ring window)",
                if info.writer_alive {
                    "lock held"
                } else {
                    "unknown"
                }
            )?;
            writeln!(
                out,
                "  counters:       none: a ring without telering's trailer records no writer pid, heartbeat or loss counters"
            )?;
        }
        Some(t) => {
            writeln!(out, "  writer pid:     {}", t.writer_pid)?;
            writeln!(
                out,
                "  writer:         {}",
                if info.writer_alive { "alive" } else { "gone" }
            )?;
            writeln!(out, "  published:      {}", t.published)?;
            writeln!(
                out,
                "  dropped:        {} (ring full {}, before the ring {})",
                t.events_dropped(),
                t.dropped_ring_full,
                t.dropped_staging
            )?;
            if info.generation == Generation::V4 {
                writeln!(
                    out,
                    "  not in layout:  {} (events version 4 cannot hold, such as custom events; not written)",
                    t.dropped_unrepresentable
                )?;
            }
            writeln!(
                out,
                "  last heartbeat: {}",
                heartbeat_text(t.heartbeat_us, t.clock)
            )?;
            writeln!(
                out,
                "  clean close:    {}",
                if t.clean_close { "yes" } else { "no" }
            )?;
            writeln!(out, "  policy:         {:?}", t.policy)?;
            writeln!(out, "  clock:          {:?}", t.clock)?;
        }
    }
    Ok(())
}

fn heartbeat_text(heartbeat_us: u64, clock: ClockId) -> String {
    match clock {
        ClockId::Realtime | ClockId::RealtimeCoarse | ClockId::Tsc => {
            let now_us = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_micros() as u64)
                .unwrap_or(0);
            // A writer's clock may run a little ahead of ours; a heartbeat far in the
            // future (u64::MAX in a corrupt trailer) is no time at all.
            const AHEAD_US: u64 = 60_000_000;
            if heartbeat_us > now_us.saturating_add(AHEAD_US) {
                return format!(
                    "{heartbeat_us} us since the epoch: in the future, so not a heartbeat this machine's clock could have written (a corrupt trailer, or another machine's clock)"
                );
            }
            let age = now_us.saturating_sub(heartbeat_us) as f64 / 1e6;
            format!("{} ({age:.1} s ago)", local_time(heartbeat_us))
        }
        _ => format!("{heartbeat_us} us on the writer's {clock:?} clock"),
    }
}

/// Writes the report of one ring as one JSON object on one line.
pub fn write_json(out: &mut dyn Write, info: &RingFileInfo) -> std::io::Result<()> {
    let mut line = Vec::new();
    line.extend_from_slice(b"{\"path\":");
    write_json_string(&mut line, &info.path.to_string_lossy())?;
    write!(
        line,
        ",\"capacity\":{},\"fill\":{},\"version\":{},\"generation\":\"{}\",\"slot_size\":{},\"timestamps\":{},\"writer_alive\":{}",
        info.capacity,
        info.fill,
        info.version,
        generation_id(info.generation),
        info.generation.slot_size(),
        info.generation.has_timestamps(),
        info.writer_alive
    )?;
    match &info.trailer {
        None => line.extend_from_slice(b",\"trailer\":null"),
        Some(t) => write!(
            line,
            ",\"trailer\":{{\"writer_pid\":{},\"published\":{},\"dropped_ring_full\":{},\"dropped_staging\":{},\"dropped_unrepresentable\":{},\"heartbeat_us\":{},\"clock\":\"{:?}\",\"clean_close\":{},\"policy\":\"{:?}\"}}",
            t.writer_pid,
            t.published,
            t.dropped_ring_full,
            t.dropped_staging,
            t.dropped_unrepresentable,
            t.heartbeat_us,
            t.clock,
            t.clean_close,
            t.policy
        )?,
    }
    line.extend_from_slice(b"}\n");
    out.write_all(&line)
}

/// The generation's short name in JSON: `v1`, `v2-48`, `v2`, `v3`, `v4`.
fn generation_id(generation: Generation) -> &'static str {
    match generation {
        Generation::V1 => "v1",
        Generation::V2Named => "v2-48",
        Generation::V2 => "v2",
        Generation::V3 => "v3",
        Generation::V4 => "v4",
    }
}

/// The ring files to report for `path`: itself, or the candidate files of a directory
/// in name order.
pub fn ring_paths(path: &Path) -> Result<Vec<PathBuf>, CliError> {
    Ok(list_rings(path)?.rings)
}

/// What a directory holds for the ring readers: the candidate ring files, and the
/// entries skipped with the reason (hidden names are neither).
#[derive(Debug, Default)]
pub struct Listing {
    /// Regular files, in name order.
    pub rings: Vec<PathBuf>,
    /// Entries that are not regular files (symbolic links, directories, FIFOs…),
    /// in name order, each with why it is skipped.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Lists `path`: itself if it is not a directory, else the entries of the directory
/// (see [`Listing`]). A symbolic link is skipped, never followed: a ring is read at
/// the path its writer made, which is never a link.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("a"), b"").unwrap();
/// std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("b")).unwrap();
/// let listing = telering_cli::stat::list_rings(dir.path()).unwrap();
/// assert_eq!(listing.rings, [dir.path().join("a")]);
/// assert_eq!(listing.skipped[0].0, dir.path().join("b"));
/// assert!(listing.skipped[0].1.contains("symbolic link"));
/// ```
pub fn list_rings(path: &Path) -> Result<Listing, CliError> {
    let meta = std::fs::metadata(path).map_err(|source| CliError::Input {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Ok(Listing {
            rings: vec![path.to_path_buf()],
            skipped: Vec::new(),
        });
    }
    let entries = std::fs::read_dir(path).map_err(|source| CliError::Input {
        path: path.to_path_buf(),
        source,
    })?;
    let mut listing = Listing::default();
    for entry in entries {
        let entry = entry.map_err(|source| CliError::Input {
            path: path.to_path_buf(),
            source,
        })?;
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        match entry.file_type() {
            Ok(t) if t.is_file() => listing.rings.push(entry.path()),
            Ok(t) => {
                let what = if t.is_symlink() {
                    "a symbolic link: rings are read only at the path their writer made, never through a link"
                } else if t.is_dir() {
                    "a directory"
                } else {
                    "not a regular file (a FIFO, socket or device)"
                };
                listing.skipped.push((entry.path(), what.to_string()));
            }
            Err(e) => listing
                .skipped
                .push((entry.path(), format!("its type cannot be read: {e}"))),
        }
    }
    listing.rings.sort();
    listing.skipped.sort();
    Ok(listing)
}

/// Reports every ring at `path` (a file or a directory) to `out`, in text or JSON.
/// Returns how many rings were reported.
pub fn stat(
    path: &Path,
    json: bool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<usize, CliError> {
    let is_dir = path.is_dir();
    let mut reported = 0;
    let (mut unreadable, mut not_rings) = (0u64, 0u64);
    let listing = list_rings(path)?;
    for (skipped, why) in &listing.skipped {
        let _ = writeln!(
            err,
            "telering: skipped: {}: {}",
            shown_path(skipped),
            message_line(why)
        );
        not_rings += 1;
    }
    for (i, file) in listing.rings.iter().enumerate() {
        match telering_shm::stat(file) {
            Ok(info) => {
                if !json && i > 0 {
                    writeln!(out).map_err(CliError::Output)?;
                }
                if json {
                    write_json(out, &info)
                } else {
                    write_text(out, &info)
                }
                .map_err(CliError::Output)?;
                reported += 1;
            }
            Err(
                e @ (ShmError::BadHeader { .. }
                | ShmError::UnknownVersion { .. }
                | ShmError::InconsistentSize { .. }),
            ) if is_dir => {
                let _ = writeln!(err, "telering: skipped: {}", message_line(&e.to_string()));
                not_rings += 1;
            }
            Err(e) if is_dir => {
                let _ = writeln!(err, "telering: {}", message_line(&e.to_string()));
                unreadable += 1;
            }
            Err(e) => return Err(e.into()),
        }
    }
    out.flush().map_err(CliError::Output)?;
    if is_dir && reported == 0 && unreadable == 0 && not_rings == 0 {
        let _ = writeln!(err, "telering: {}: no ring files here", shown_path(path));
    }
    if unreadable > 0 {
        return Err(CliError::StatProblems {
            path: path.to_path_buf(),
            unreadable,
            not_rings,
        });
    }
    Ok(reported)
}
