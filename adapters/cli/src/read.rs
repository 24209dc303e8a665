//! `telering read` and `telering tail`: print the events of a ring file.
//!
//! - `read` is the ring's one draining consumer ([`DrainingReader`]): it advances the
//!   file's `read_pos`, as NIXL's readers do, so the writer can reuse the slots. A
//!   second one on the same file is refused, naming the first one's pid (see
//!   [`DrainingReader`]). It takes events in batches of at most [`READ_BATCH`] and
//!   releases a batch's slots only after the batch's output was written and flushed:
//!   delivery is at-least-once, so a reader killed at any moment loses nothing and
//!   the next reader repeats at most one batch. (Under `OverwriteOldest`, where the
//!   consumer releases each slot as it reads it, a batch is one event.) When the
//!   output closes (`telering read f | head`) it stops with
//!   [`CliError::OutputClosed`], which says how many events were taken and how many
//!   of them at most never reached the output's reader (see [`crate::delivery`]).
//!   `--max N` ([`ReadOptions::max`]) takes exactly `N` slots.
//! - `tail` is an observer ([`ObserverReader`]): it maps the file read-only, never
//!   changes a byte of it, and any number can run alongside `read`. When the writer
//!   laps it (the ring wrapped before `tail` caught up) it reports the exact number of
//!   events it missed, on stderr, as it happens.
//!
//! Without `--follow` both stop once they have caught up with the writer; with it
//! they poll every `--interval` milliseconds until Ctrl-C.
//!
//! Both read every ring generation (NIXL versions 1 to 4, see
//! [`telering_shm::Generation`]). Generations 2 to 4 carry no timestamps: their events
//! print without one. A ring without telering's trailer carries no slot stamps, and
//! `tail` refuses it at once, since only a draining reader can read it. A record that
//! does not validate (an empty name, a category outside 0 to 7, a name that is not
//! UTF-8, an unknown type number) is printed as it is; each kind is reported once on
//! stderr naming the slot, and the run ends with a count (see [`crate::lenient`]).

use crate::delivery::Delivery;
use crate::error::CliError;
use crate::lenient::LossyDisplay;
use crate::output::{EventFormat, message_line, shown_path, write_record};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use telering_core::{ObserverStart, OverflowPolicy};
use telering_shm::{DrainingReader, ObserverReader, RingRecord, ShmError};

/// Most events `read` takes, writes and releases at once: a killed reader's
/// successor repeats at most this many. Large enough that the writes cost little
/// next to formatting (one `write` per batch of about 25 KiB of JSON).
pub const READ_BATCH: u64 = 256;

/// What `read` and `tail` do.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// The ring file.
    pub path: PathBuf,
    /// How to print each event.
    pub format: EventFormat,
    /// Keep waiting for new events until stopped.
    pub follow: bool,
    /// Pause between polls when the ring is empty and `follow` is set.
    pub interval: Duration,
    /// Stop after taking (or, for `tail`, printing) this many slots; `None`: no limit.
    pub max: Option<u64>,
    /// How many bytes written to the output its reader has not read yet (for the
    /// command's standard output: [`crate::delivery::stdout_unread_bytes`]); `None`
    /// when unknown. Used only to report a closed output.
    pub unread_output: Option<fn() -> Option<u64>>,
}

/// What a finished `read` or `tail` saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadSummary {
    /// Events printed.
    pub events: u64,
    /// Of those, records printed as they are although they do not validate.
    pub lossy: u64,
    /// Events the writer overwrote before they could be read.
    pub missed: u64,
}

/// The observer behind `tail`'s loop.
trait Source {
    fn next(&mut self) -> Result<Option<RingRecord>, ShmError>;
    fn missed(&self) -> u64;
    /// Times the reader fell too far behind to count what it missed.
    fn lag_unknown(&self) -> u64 {
        0
    }
}

impl Source for ObserverReader {
    fn next(&mut self) -> Result<Option<RingRecord>, ShmError> {
        self.poll_record()
    }
    fn missed(&self) -> u64 {
        self.events_missed()
    }
    fn lag_unknown(&self) -> u64 {
        ObserverReader::lag_unknown(self)
    }
}

/// Drains the ring at `options.path` as its one consumer, printing each event to
/// `out` and each problem to `err`, until it is empty (or, with `follow`, until
/// `stop` is set).
///
/// ```
/// # let dir = std::env::temp_dir().join(format!("telering-cli-doc-read-{}", std::process::id()));
/// use std::sync::atomic::AtomicBool;
/// use telering_core::{event_name, Category, Event};
/// use telering_cli::{output::EventFormat, read::{read, ReadOptions}};
/// use telering_shm::{ShmWriter, WriterOptions};
///
/// let mut writer = ShmWriter::create(WriterOptions::new(&dir, "agent"))?;
/// writer.write_batch(&[Event::new(7, Category::Memory, event_name!("agent_memory_registered"), 4096)]);
/// let options = ReadOptions {
///     path: writer.path().to_path_buf(),
///     format: EventFormat::Json,
///     follow: false,
///     interval: std::time::Duration::from_millis(100),
///     max: None,
///     unread_output: None,
/// };
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// let summary = read(&options, &AtomicBool::new(false), &mut out, &mut err)?;
/// assert_eq!(summary.events, 1);
/// assert_eq!(
///     String::from_utf8(out).unwrap(),
///     "{\"timestamp_us\":7,\"category\":\"MEMORY\",\"event\":\"agent_memory_registered\",\"value\":4096}\n"
/// );
/// # writer.close()?; std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read(
    options: &ReadOptions,
    stop: &AtomicBool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<ReadSummary, CliError> {
    let mut reader = DrainingReader::open(&options.path)?;
    drain(&mut reader, options, stop, out, err)
}

/// `read`'s loop: take a batch, write and flush its output, and only then — when
/// `read_batch` returns — release its slots. See the module docs.
fn drain(
    reader: &mut DrainingReader,
    options: &ReadOptions,
    stop: &AtomicBool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<ReadSummary, CliError> {
    let mut summary = ReadSummary::default();
    let mut lossy = LossyDisplay::default();
    let mut delivery = Delivery::new();
    let mut buf = Vec::new();
    let mut ends = Vec::new();
    let mut waiting = false;
    let path = shown_path(&options.path);
    loop {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let left = options.max.map(|m| m.saturating_sub(delivery.taken()));
        if left == Some(0) {
            break;
        }
        // `read_batch` releases the slots it read when it returns, so the output is
        // written from inside it, with the batch's last event. Asking for no more
        // than are waiting makes the batch's length known in advance: the ring only
        // grows while we read. Under `OverwriteOldest` the consumer releases each
        // slot as it reads it, so a batch is one event there.
        let info = reader.info();
        let per_event = info.trailer.map(|t| t.policy) == Some(OverflowPolicy::OverwriteOldest);
        let batch = if per_event {
            1
        } else {
            info.fill.clamp(1, READ_BATCH)
        };
        let batch = left.map_or(batch, |l| batch.min(l));
        buf.clear();
        ends.clear();
        let mut seen = 0u64;
        let mut written: Option<(usize, std::io::Result<()>)> = None;
        let read = reader.read_records(batch as usize, |record| {
            seen += 1;
            if lossy.note(&options.path, &record, err) {
                summary.lossy += 1;
            }
            // Writing into a `Vec` cannot fail.
            let _ = write_record(&mut buf, &record, options.format);
            ends.push(buf.len());
            if seen == batch {
                written = Some(write_counted(out, &buf));
            }
        });
        let read_ok = read.is_ok();
        let n = match read {
            Ok(n) => n as u64,
            Err(e @ ShmError::Truncated { .. }) if options.follow => {
                // Another writer may be laying the ring out again in this file; the
                // reader takes it up as a new ring once it validates.
                if !std::mem::replace(&mut waiting, true) {
                    let _ = writeln!(
                        err,
                        "telering: {}; waiting for a valid ring at the path",
                        message_line(&e.to_string())
                    );
                }
                if written.is_none() && !buf.is_empty() {
                    written = Some(write_counted(out, &buf));
                }
                ends.len() as u64
            }
            Err(e) => return Err(e.into()),
        };
        if read_ok {
            waiting = false;
        }
        if n > 0 && written.is_none() {
            // Fewer than asked: only when the file was replaced by a new writer's
            // mid-batch; these slots are already released.
            written = Some(write_counted(out, &buf));
        }
        if let Some((partial, result)) = written {
            if let Err(e) = result {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(CliError::Output(e));
                }
                let lost = delivery.lost(n, &ends, partial);
                let unread = options.unread_output.and_then(|probe| probe());
                return Err(CliError::OutputClosed {
                    path: options.path.clone(),
                    taken: lost.taken(),
                    unreached: lost.unreached(unread),
                });
            }
            delivery.delivered(n, &ends, buf.len());
        }
        summary.events += ends.len() as u64;
        let missed = reader.events_lost();
        if missed > summary.missed {
            let _ = writeln!(
                err,
                "telering: {path}: gap: {} events were overwritten before `read` took them ({missed} in total)",
                missed - summary.missed
            );
            summary.missed = missed;
        }
        if n == 0 || waiting {
            if !options.follow {
                break;
            }
            sleep_unless_stopped(options.interval, stop);
        }
    }
    out.flush().map_err(CliError::Output)?;
    lossy.finish(&options.path, err);
    Ok(summary)
}

/// Follows the ring at `options.path` as a read-only observer starting at `start`,
/// printing each event to `out` and each gap and problem to `err`. Never modifies the
/// file.
pub fn tail(
    options: &ReadOptions,
    start: ObserverStart,
    stop: &AtomicBool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<ReadSummary, CliError> {
    let reader = ObserverReader::open(&options.path, start);
    follow(reader, options, stop, out, err)
}

/// [`tail`] for a version-1 ring window laid out by telering-core alone (a device's
/// memory window saved to a file): such a window has no trailer to say that its
/// slots are stamped, so the caller says it (`telering tail --core-window`).
pub fn tail_core_window(
    options: &ReadOptions,
    start: ObserverStart,
    stop: &AtomicBool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<ReadSummary, CliError> {
    let reader = ObserverReader::open_core_window(&options.path, start);
    follow(reader, options, stop, out, err)
}

fn follow(
    reader: Result<ObserverReader, ShmError>,
    options: &ReadOptions,
    stop: &AtomicBool,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<ReadSummary, CliError> {
    let mut reader = reader.map_err(|e| match e {
        ShmError::NoSlotStamps { .. } => CliError::Usage(format!("{e} (`telering read`)")),
        e => e.into(),
    })?;
    run(
        &mut reader,
        options,
        stop,
        out,
        err,
        "were overwritten by the writer before this observer read them",
    )
}

fn run(
    source: &mut dyn Source,
    options: &ReadOptions,
    stop: &AtomicBool,
    out: &mut dyn Write,
    err: &mut dyn Write,
    missed_text: &str,
) -> Result<ReadSummary, CliError> {
    let mut summary = ReadSummary::default();
    let mut lossy = LossyDisplay::default();
    let mut lag_unknown = 0;
    let mut waiting = false;
    let path = shown_path(&options.path);
    loop {
        if stop.load(Ordering::SeqCst) || options.max.is_some_and(|m| summary.events >= m) {
            break;
        }
        let got = match source.next() {
            Ok(Some(record)) => {
                if lossy.note(&options.path, &record, err) {
                    summary.lossy += 1;
                }
                write_record(out, &record, options.format).map_err(CliError::Output)?;
                summary.events += 1;
                true
            }
            Ok(None) => false,
            Err(e @ (ShmError::Truncated { .. } | ShmError::NoSlotStamps { .. }))
                if options.follow =>
            {
                // Taken up as a new ring once the file validates again, or — when
                // another writer (NIXL's) re-created it without slot stamps, which an
                // observer cannot follow — once a writer with stamps takes the path
                // over again.
                if !std::mem::replace(&mut waiting, true) {
                    let wait = match e {
                        ShmError::NoSlotStamps { .. } => {
                            "it was re-created by another writer under this `tail` (`telering read` drains it); waiting for a ring with slot stamps at the path"
                        }
                        _ => "waiting for a valid ring at the path",
                    };
                    let _ = writeln!(err, "telering: {}; {wait}", message_line(&e.to_string()));
                }
                false
            }
            Err(e) => return Err(e.into()),
        };
        if got {
            waiting = false;
        }
        let missed = source.missed();
        if missed > summary.missed {
            let _ = writeln!(
                err,
                "telering: {path}: gap: {} events {missed_text} ({missed} in total)",
                missed - summary.missed
            );
            summary.missed = missed;
        }
        if source.lag_unknown() > lag_unknown {
            lag_unknown = source.lag_unknown();
            let _ = writeln!(
                err,
                "telering: {path}: gap: an unknown number of events (2^29 or more) {missed_text}; resumed at the oldest event in the ring"
            );
        }
        if !got {
            out.flush().map_err(CliError::Output)?;
            if !options.follow {
                break;
            }
            sleep_unless_stopped(options.interval, stop);
        }
    }
    out.flush().map_err(CliError::Output)?;
    lossy.finish(&options.path, err);
    Ok(summary)
}

/// Writes all of `bytes` and flushes; returns how many bytes `out` accepted before
/// an error, so that a closed pipe's account includes a partly written batch. (Given
/// an unbuffered or line-buffered output, as `telering read` uses, accepted bytes
/// went out.)
fn write_counted(out: &mut dyn Write, bytes: &[u8]) -> (usize, std::io::Result<()>) {
    let mut done = 0;
    while done < bytes.len() {
        match out.write(&bytes[done..]) {
            Ok(0) => return (done, Err(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (done, Err(e)),
        }
    }
    (done, out.flush())
}

/// Sleeps for `total`, waking early (within 50 ms) when `stop` is set.
pub(crate) fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let step = Duration::from_millis(50);
    let mut left = total;
    while !left.is_zero() && !stop.load(Ordering::SeqCst) {
        let now = left.min(step);
        std::thread::sleep(now);
        left -= now;
    }
}
