//! One link's worker: open the source (again, with backoff, when a device goes away),
//! decode, map device time to host time, and write into the link's ring.

use super::clock::ClockAlign;
use super::export::ExportPlan;
use super::sink::{LinkCounts, LinkSink, SinkError};
use super::source::{self, Got};
use super::spec::{LinkSpec, Source};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use telering_core::text::Escaped;
use telering_core::{Event, ObserverStart};
use telering_embedded_io::link::{LINK_VERSION, LinkDecoder, LinkItem};
use telering_embedded_io::{FrameError, FrameErrorKind};
use telering_shm::ObserverReader;
use telering_std::ExporterStats;

/// How a link is run.
#[derive(Clone, Debug)]
pub struct LinkOptions {
    /// The telemetry directory.
    pub dir: PathBuf,
    /// Capacity of the rings made (the writer's default if `None`).
    pub capacity: Option<u32>,
    /// Longest wait between two attempts to open a link.
    pub max_backoff: Duration,
    /// How long one read waits for bytes before the stop flag is looked at.
    pub poll: Duration,
    /// The exporter list each link's agent goes through besides its ring, if any.
    pub export: Option<Arc<ExportPlan>>,
}

/// What a finished link did.
#[derive(Clone, Debug)]
pub struct LinkReport {
    /// The link as given.
    pub link: String,
    /// The agent name its events went under last.
    pub agent: String,
    /// Its counts.
    pub counts: LinkCounts,
    /// Times it was opened.
    pub connections: u64,
    /// The error that ended it, if one did.
    pub error: Option<String>,
    /// Each exporter's counts (with an exporter list).
    pub exporters: Vec<ExporterStats>,
}

/// The host's wall clock in microseconds since the Unix epoch.
pub fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Sleeps up to `total`, in short steps, returning early once `stop` is set.
fn sleep_unless_stopped(total: Duration, stop: &AtomicBool) {
    let deadline = std::time::Instant::now() + total;
    while !stop.load(Ordering::Relaxed) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(20)));
    }
}

/// Decoded items in, ring events out, with the time mapping in between.
struct Session {
    decoder: LinkDecoder,
    sink: LinkSink,
    clock: Option<ClockAlign>,
    /// The device's clock unit (microseconds until a hello says otherwise).
    ticks_per_second: u32,
    /// Whether this epoch sent clock frames; until it does, each event's arrival
    /// is a time pair.
    clock_frames: bool,
    /// The link as given, for warnings.
    link: String,
    /// The fields of malformed frames already warned about (once per link each).
    warned: BTreeSet<&'static str>,
}

/// The hello's fields, with what the decoder accepts in each (docs/LINK.md).
const HELLO_FIELDS: [(&str, &str); 4] = [
    (
        "ticks_per_second",
        "1 to 4294967295 (it must fit in 32 bits)",
    ),
    (
        "ring_capacity",
        "at most 4294967295 (it must fit in 32 bits)",
    ),
    ("agent", "1 to 64 bytes of UTF-8 without NUL"),
    ("firmware_version", "1 to 32 bytes of UTF-8 without NUL"),
];

impl Session {
    /// Hands the clock's report to the sink when one is due, or `now` (before the
    /// estimator is dropped, at an epoch, or at the end).
    fn report_clock(&mut self, arrived_us: u64, now: bool) {
        if now || self.sink.clock_due(arrived_us) {
            if let Some(report) = self.clock.as_mut().and_then(ClockAlign::report) {
                self.sink.clock(report);
            }
        }
    }

    /// Starts the clock mapping over (a new epoch, or clock frames replacing event
    /// arrivals as pairs), reporting what the old one mapped first.
    fn restart_clock(&mut self, arrived_us: u64) {
        self.report_clock(arrived_us, true);
        self.clock = None;
    }

    fn handle(&mut self, items: Vec<LinkItem>, arrived_us: u64) -> Result<(), SinkError> {
        for item in items {
            match item {
                LinkItem::Epoch { device, reset } => {
                    self.restart_clock(arrived_us);
                    self.sink.epoch(&device.agent, reset, arrived_us)?;
                    self.ticks_per_second = device.ticks_per_second;
                    self.clock_frames = false;
                }
                LinkItem::ResetWithoutHello => {
                    // The device's clock restarted with it.
                    self.restart_clock(arrived_us);
                    let agent = self.sink.agent().to_owned();
                    self.sink.epoch(&agent, true, arrived_us)?;
                    self.clock_frames = false;
                }
                LinkItem::Clock { ticks } => {
                    let tps = self.ticks_per_second;
                    if !self.clock_frames {
                        // Clock frames are better pairs than event arrivals: start over.
                        self.restart_clock(arrived_us);
                        self.clock_frames = true;
                    }
                    let clock = self.clock.get_or_insert_with(|| ClockAlign::new(tps));
                    clock.add(ticks, arrived_us);
                }
                LinkItem::Event { mut event, version } => {
                    if version == LINK_VERSION {
                        let ticks = event.timestamp_us();
                        let tps = self.ticks_per_second;
                        let clock = self.clock.get_or_insert_with(|| ClockAlign::new(tps));
                        if !self.clock_frames {
                            // No clock frame yet: the event's arrival is an upper
                            // bound of its time, a pair the envelope accepts.
                            clock.add(ticks, arrived_us);
                        }
                        event.set_timestamp_us(
                            clock.map_event(ticks, arrived_us).unwrap_or(arrived_us),
                        );
                    }
                    self.sink.event(event);
                }
                LinkItem::Lost { events, cause } => self.sink.lost(events, cause),
                LinkItem::Noise { bytes } => self.sink.noise(bytes),
                LinkItem::Problem(e) => self.problem(&e),
            }
        }
        self.report_clock(arrived_us, false);
        self.sink.flush(arrived_us)
    }
}

impl Session {
    /// A frame the decoder could not take. Damage is counted as losses or noise and
    /// logged at debug level; an intact frame that does not parse is the device's
    /// doing (a hello with a 65-byte name, a clock above 32 bits), so it is warned
    /// about, once per link and field.
    fn problem(&mut self, e: &FrameError) {
        let FrameErrorKind::Malformed { field } = e.kind else {
            log::debug!("{}", Escaped::new(&e.to_string()));
            return;
        };
        if !self.warned.insert(field) {
            return;
        }
        let link = Escaped::new(&self.link);
        match HELLO_FIELDS.iter().find(|(name, _)| *name == field) {
            Some((_, accepted)) => log::warn!(
                "link {link}: the device's hello was dropped: its `{field}` is not {accepted}; \
                 until a valid hello, its events go under `{}` with a clock of {} ticks a second",
                Escaped::new(self.sink.agent()),
                self.ticks_per_second
            ),
            None => log::warn!(
                "link {link}: a frame from the device was dropped: its `{field}` is cut short, \
                 out of range or not UTF-8 (counted as noise, or as lost events with their cause)"
            ),
        }
    }

    /// Decodes with `decode` and handles what it gives. A panic while decoding or
    /// handling (an internal error) ends this link only: what the sink holds is still
    /// written and counted when the link closes, and the link's error says that the
    /// events in the bytes being decoded (one read, up to 64 KiB) are lost without a
    /// count. Other links go on.
    fn decode(
        &mut self,
        decode: impl FnOnce(&mut LinkDecoder) -> Vec<LinkItem>,
    ) -> Result<(), String> {
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let items = decode(&mut self.decoder);
            self.handle(items, now_us())
        }));
        match done {
            Ok(handled) => handled.map_err(|e| e.to_string()),
            Err(_) => Err(
                "internal error while decoding (a panic, on standard error); \
                 the events in the bytes being decoded are lost and not counted, \
                 the events before them are in the ring"
                    .into(),
            ),
        }
    }
}

/// Runs one link until its source ends for good or `stop` is set, then drains what
/// it holds into its ring and closes it.
pub fn run_link(spec: &LinkSpec, options: &LinkOptions, stop: &AtomicBool) -> LinkReport {
    let sink = LinkSink::with_exporters(
        options.dir.clone(),
        options.capacity,
        spec.name.clone(),
        spec.name_given,
        options.export.clone(),
    );
    let mut report = LinkReport {
        link: spec.text.clone(),
        agent: spec.name.clone(),
        counts: LinkCounts::default(),
        connections: 0,
        error: None,
        exporters: Vec::new(),
    };
    if let Source::Memory { path, offset } = &spec.source {
        return run_window(path, *offset, sink, options, stop, report);
    }
    let mut session = Session {
        decoder: LinkDecoder::new(),
        sink,
        clock: None,
        ticks_per_second: 1_000_000,
        clock_frames: false,
        link: spec.text.clone(),
        warned: BTreeSet::new(),
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut failures = 0u32;
    let outcome: Result<(), String> = 'link: loop {
        if stop.load(Ordering::Relaxed) {
            break Ok(());
        }
        let mut stream = match source::open(&spec.source) {
            Ok(stream) => stream,
            Err(e) if spec.source.reconnects() => {
                log::info!("link {}: {e}; trying again", Escaped::new(&spec.text));
                sleep_unless_stopped(source::backoff(failures, options.max_backoff), stop);
                failures = failures.saturating_add(1);
                continue;
            }
            Err(e) => break Err(format!("cannot open: {e}")),
        };
        report.connections = report.connections.saturating_add(1);
        failures = 0;
        let ended = loop {
            let stopping = stop.load(Ordering::Relaxed);
            // Once stopping, take only what is already there.
            let wait = if stopping {
                Duration::ZERO
            } else {
                options.poll
            };
            match stream.read_timeout(&mut buf, wait) {
                Ok(Got::Bytes(n)) => {
                    if let Err(e) = session.decode(|d| d.feed(&buf[..n]).collect()) {
                        break 'link Err(e);
                    }
                }
                Ok(Got::Quiet) if stopping => break false,
                Ok(Got::Quiet) => {
                    if let Err(e) = session.sink.flush(now_us()) {
                        break 'link Err(e.to_string());
                    }
                }
                Ok(Got::Ended) => break true,
                Err(e) => {
                    log::info!("link {}: {e}", Escaped::new(&spec.text));
                    break true;
                }
            }
        };
        // A frame cut by the disconnection ends here; the next intact frame says
        // whether it held events (see LinkDecoder).
        if let Err(e) = session.decode(|d| d.feed(&[0]).collect()) {
            break Err(e);
        }
        if !ended || !spec.source.reconnects() {
            break Ok(());
        }
        log::info!(
            "link {}: the device went away; reconnecting",
            Escaped::new(&spec.text)
        );
    };
    // After a failed decoder, only what the sink holds is written.
    let mut result = outcome.and_then(|()| session.decode(|d| d.finish().collect()));
    // The last report: every event mapped since the one before is under its bound.
    session.report_clock(now_us(), true);
    report.agent = session.sink.agent().to_owned();
    report.counts = session.sink.counts();
    let (counts, closed, exporters) = session.sink.close_with_exporters(now_us());
    report.counts = counts;
    report.exporters = exporters;
    if let Err(e) = closed {
        result = result.and(Err(e.to_string()));
    }
    report.error = result.err();
    report
}

/// Opens a memory window: a ring laid out by telering-core at `offset` in the file or
/// character device at `path`, read only through mappings (a PCI BAR's sysfs file
/// cannot be `read`), at offset 0 too; the file may go on after the ring.
pub fn open_window(
    path: &std::path::Path,
    offset: u64,
) -> Result<ObserverReader, telering_shm::ShmError> {
    ObserverReader::open_core_window_at(path, offset, ObserverStart::Oldest)
}

/// Follows a ring laid out by telering-core in shared memory.
fn run_window(
    path: &std::path::Path,
    offset: u64,
    mut sink: LinkSink,
    options: &LinkOptions,
    stop: &AtomicBool,
    mut report: LinkReport,
) -> LinkReport {
    let link = report.link.clone();
    let result = (|| -> Result<(), String> {
        let mut reader = open_window(path, offset).map_err(|e| e.to_string())?;
        report.connections = 1;
        let mut batch: Vec<Event> = Vec::with_capacity(1024);
        let mut missed = 0;
        let mut unknown = reader.lag_unknown();
        let mut warned = false;
        loop {
            let stopping = stop.load(Ordering::Relaxed);
            batch.clear();
            while batch.len() < 1024 {
                match reader.poll().map_err(|e| e.to_string())? {
                    Some(event) => batch.push(event),
                    None => break,
                }
                if reader.lag_unknown() != unknown {
                    break;
                }
            }
            let now_missed = reader.events_missed();
            sink.lapped(now_missed.saturating_sub(missed));
            missed = now_missed;
            let now_unknown = reader.lag_unknown();
            if now_unknown != unknown {
                // The reader resumed at the oldest event readable: the device's
                // position went backwards (a restart that laid its ring out again:
                // what follows is its new epoch), or it lapped the reader by 2^29.
                unknown = now_unknown;
                sink.lapped_unknown(true);
                let say = format!(
                    "link {}: the window's write position went backwards (the device restarted or laid its ring out again) or lapped this reader by 2^29 events or more; an unknown number of events may be lost, reading on from the oldest event in the ring",
                    Escaped::new(&link)
                );
                if warned {
                    log::info!("{say}");
                } else {
                    log::warn!("{say}");
                    warned = true;
                }
            }
            let idle = batch.is_empty();
            for event in batch.drain(..) {
                sink.event(event);
            }
            sink.flush(now_us()).map_err(|e| e.to_string())?;
            if stopping && idle {
                return Ok(());
            }
            if idle {
                std::thread::sleep(options.poll.min(Duration::from_millis(50)));
            }
        }
    })();
    report.agent = sink.agent().to_owned();
    report.counts = sink.counts();
    let (counts, closed, exporters) = sink.close_with_exporters(now_us());
    report.counts = counts;
    report.exporters = exporters;
    report.error = result.and(closed.map_err(|e| e.to_string())).err();
    report
}
