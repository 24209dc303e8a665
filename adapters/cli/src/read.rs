//! `telering read` and `telering tail`: print the events of a ring file.
//!
//! - `read` is the ring's one draining consumer ([`DrainingReader`]): it advances the
//!   file's `read_pos`, as NIXL's readers do, so the writer can reuse the slots. Run
//!   only one per file.
//! - `tail` is an observer ([`ObserverReader`]): it maps the file read-only, never
//!   changes a byte of it, and any number can run alongside `read`. When the writer
//!   laps it (the ring wrapped before `tail` caught up) it reports the exact number of
//!   events it missed, on stderr, as it happens.
//!
//! Without `--follow` both stop once they have caught up with the writer; with it
//! they poll every `--interval` milliseconds until Ctrl-C. A slot whose record is
//! invalid is reported on stderr (naming the file and slot) and skipped; the run then
//! ends with exit code 1.

use crate::error::CliError;
use crate::output::{EventFormat, write_event};
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use telering_core::{Event, ObserverStart};
use telering_shm::{DrainingReader, ObserverReader, ShmError};

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
}

/// What a finished `read` or `tail` saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadSummary {
    /// Events printed.
    pub events: u64,
    /// Slots skipped because their record was invalid.
    pub corrupt: u64,
    /// Events the writer overwrote before they could be read.
    pub missed: u64,
}

/// The two readers behind one interface.
trait Source {
    fn next(&mut self) -> Result<Option<Event>, ShmError>;
    fn missed(&self) -> u64;
}

impl Source for DrainingReader {
    fn next(&mut self) -> Result<Option<Event>, ShmError> {
        self.pop()
    }
    fn missed(&self) -> u64 {
        self.events_lost()
    }
}

impl Source for ObserverReader {
    fn next(&mut self) -> Result<Option<Event>, ShmError> {
        self.poll()
    }
    fn missed(&self) -> u64 {
        self.events_missed()
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
    run(
        &mut reader,
        options,
        stop,
        out,
        err,
        "were overwritten before `read` took them",
    )
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
    let mut reader = ObserverReader::open(&options.path, start).map_err(|e| match e {
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
    let path = options.path.display();
    loop {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let got = match source.next() {
            Ok(Some(event)) => {
                write_event(out, &event, options.format).map_err(CliError::Output)?;
                summary.events += 1;
                true
            }
            Ok(None) => false,
            Err(e @ ShmError::CorruptEvent { .. }) => {
                summary.corrupt += 1;
                // stderr is best-effort: a closed stderr must not stop the output.
                let _ = writeln!(err, "telering: {e}");
                true
            }
            Err(e) => return Err(e.into()),
        };
        let missed = source.missed();
        if missed > summary.missed {
            let _ = writeln!(
                err,
                "telering: {path}: gap: {} events {missed_text} ({missed} in total)",
                missed - summary.missed
            );
            summary.missed = missed;
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
    if summary.corrupt > 0 {
        return Err(CliError::Incomplete {
            path: options.path.clone(),
            count: summary.corrupt,
            what: "corrupt slots",
        });
    }
    Ok(summary)
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
