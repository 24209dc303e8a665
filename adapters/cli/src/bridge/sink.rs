//! Where a link's events go: a ring file `DIR/AGENT` written like any host agent's
//! (`telering_shm::ShmWriter`), so `stat`, `top`, `serve` and NIXL's readers see the
//! device as one more agent.
//!
//! Every event that did not reach the ring is added to the ring's loss counter
//! (`ShmWriter::add_dropped`: the trailer's `dropped_staging`, and an in-band
//! `agent_telemetry_events_dropped` report), whatever its cause: damaged, missing or
//! unknown-name frames on the link, and the device's own ring-full drops (its in-band
//! reports, taken out of the stream and counted here instead, so they are not counted
//! twice). Each cause is also written as its own `SYSTEM` event, its value the count
//! since the previous one of that name: `telering_link_lost_damaged`,
//! `telering_link_lost_missing`, `telering_link_lost_unknown_name`,
//! `telering_link_lost_device_full`, `telering_link_lost_lapped`,
//! `telering_link_lapped_unknown` (times a memory window lost a number of events it
//! cannot tell); with `telering_link_resets` (device restarts, new epochs) and `telering_link_noise_bytes` (bytes that were not frames). The
//! clock mapping's state goes in as gauges, at most once a second:
//! `telering_link_clock_offset_us`, `telering_link_clock_drift_ppb` (an `i64` in
//! two's complement) and `telering_link_clock_bound_us` (a bound holding for every
//! event mapped since the previous one, see [`super::clock`]). With an exporter list
//! ([`super::export`]), every event the ring gets, and every loss before it, goes to
//! the list too.
//!
//! A full ring takes a prefix of each flush's batch and counts what it refuses
//! (its `refused_full`), so the batch is ordered by what must survive: the per-cause
//! reports first, then the device's events, then the clock gauges. The reports are
//! few (at most eight a flush) and are the only record of *why* events were lost
//! before the ring; a refused device event is still counted by the ring itself, a
//! refused report would leave a loss without its cause. A report is also cumulative:
//! the sink remembers, per cause, the count the ring has taken, and a report the
//! ring refused is sent again, carrying everything since, at the next flush (the
//! exporter list, which never refuses, keeps its own record). So by the time the
//! ring has room again, and at the latest with the final flush of a drained ring,
//! the ring's reports of each cause add up to the link's count of that cause.

use super::clock::ClockReport;
use super::export::{ExportPlan, LinkExport};
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use telering_core::builtin::AGENT_TELEMETRY_EVENTS_DROPPED;
use telering_core::text::Escaped;
use telering_core::{Category, Event, EventName, event_name};
use telering_embedded_io::link::LossCause;
use telering_shm::{ShmError, ShmWriter, WriterOptions};
use telering_std::ExporterStats;

/// Why a link's ring cannot be written.
#[derive(Debug)]
pub enum SinkError {
    /// The ring file failed.
    Ring(ShmError),
    /// Another link of this bridge writes the ring of that agent name: a ring has one
    /// writer.
    AgentInUse(PathBuf),
    /// The exporter list could not be opened (a port in use, a file not writable).
    Export(String),
}

impl fmt::Display for SinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // The ring library's hint names the agents' variables; the bridge's knobs
            // are its options.
            SinkError::Ring(ShmError::NoSpace {
                dir,
                agent,
                needed,
                source,
            }) => write!(
                f,
                "{}: no room for the ring file of agent `{}`, which needs {needed} bytes ({source}); free space there, choose a smaller ring (--capacity) or another directory (--dir)",
                Escaped::new(&dir.display().to_string()),
                Escaped::new(agent)
            ),
            SinkError::Ring(e) => e.fmt(f),
            SinkError::AgentInUse(path) => write!(
                f,
                "{}: another link of this bridge writes this ring; give each device its own agent name (or each version-1 link its own NAME=)",
                Escaped::new(&path.display().to_string())
            ),
            SinkError::Export(e) => write!(f, "the exporter list: {e}"),
        }
    }
}

impl From<ShmError> for SinkError {
    fn from(e: ShmError) -> Self {
        SinkError::Ring(e)
    }
}

/// The rings this process's links write. A ring file has one writer, and the ring
/// writer's lock does not keep out a second writer of the same process.
static CLAIMED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn claim(path: &Path) -> bool {
    CLAIMED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(path.to_path_buf())
}

fn release(path: &Path) {
    CLAIMED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(path);
}

/// A link's counts, by cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCounts {
    /// Events delivered to the link's decoder (device drop reports not included).
    pub events: u64,
    /// Of them, written into the ring.
    pub written: u64,
    /// Lost in damaged frames.
    pub lost_damaged: u64,
    /// Lost in frames that never arrived.
    pub lost_missing: u64,
    /// Lost for a name id not in the table.
    pub lost_unknown_name: u64,
    /// Lost on the device, its ring full (its in-band reports).
    pub lost_device_full: u64,
    /// The device's in-band drop reports that arrived (events of its ring that carry
    /// `lost_device_full`, not counted in `events`).
    pub device_reports: u64,
    /// Lost because the host ring was full (counted by the ring writer too), or
    /// could not be made or written when the link ended.
    pub lost_host_ring_full: u64,
    /// Events a memory-window reader missed because the device lapped it.
    pub lost_lapped: u64,
    /// Times a memory-window reader lost a number of events it cannot tell: the
    /// device's write position went backwards (it restarted, or its ring was laid out
    /// again), or it lapped the reader by 2^29 events or more.
    pub lapped_unknown: u64,
    /// Device restarts.
    pub resets: u64,
    /// Bytes that were not frames.
    pub noise_bytes: u64,
}

impl LinkCounts {
    /// Every event lost before the ring, whatever the cause.
    pub fn lost_before_ring(&self) -> u64 {
        // Saturating: a hostile device can claim any count (a gap of 2^63 events).
        [
            self.lost_missing,
            self.lost_unknown_name,
            self.lost_device_full,
            self.lost_lapped,
        ]
        .into_iter()
        .fold(self.lost_damaged, u64::saturating_add)
    }
}

/// The ring of one link.
#[derive(Debug)]
pub struct LinkSink {
    dir: PathBuf,
    capacity: Option<u32>,
    fallback: String,
    /// The link's `NAME=`, which wins over the device's own name.
    fixed: bool,
    agent: String,
    writer: Option<ShmWriter>,
    /// The ring path this sink claimed (see [`CLAIMED`]), while it writes it.
    claimed: Option<PathBuf>,
    pending: Vec<Event>,
    counts: LinkCounts,
    /// Per report of [`REPORTS`], the count the ring's reports of it add up to.
    reported: [u64; REPORTS],
    /// Per report of [`REPORTS`], the count the exporter list's reports add up to.
    exported: [u64; REPORTS],
    /// The losses before the ring already given to the ring's loss counter.
    dropped_added: u64,
    /// The clock report to write with the next flush.
    clock: Option<ClockReport>,
    clock_reported_us: u64,
    /// The exporter list to open beside the ring, if one is configured.
    plan: Option<Arc<ExportPlan>>,
    export: LinkExport,
}

const LOST_DAMAGED: EventName = event_name!("telering_link_lost_damaged");
const LOST_MISSING: EventName = event_name!("telering_link_lost_missing");
const LOST_UNKNOWN_NAME: EventName = event_name!("telering_link_lost_unknown_name");
const LOST_DEVICE_FULL: EventName = event_name!("telering_link_lost_device_full");
const LOST_LAPPED: EventName = event_name!("telering_link_lost_lapped");
const LAPPED_UNKNOWN: EventName = event_name!("telering_link_lapped_unknown");
const RESETS: EventName = event_name!("telering_link_resets");
const NOISE_BYTES: EventName = event_name!("telering_link_noise_bytes");
const CLOCK_OFFSET: EventName = event_name!("telering_link_clock_offset_us");
const CLOCK_DRIFT: EventName = event_name!("telering_link_clock_drift_ppb");
const CLOCK_BOUND: EventName = event_name!("telering_link_clock_bound_us");

/// How many per-cause reports there are.
const REPORTS: usize = 8;

/// Each per-cause report with its count so far.
fn report_counts(c: &LinkCounts) -> [(EventName, u64); REPORTS] {
    [
        (LOST_DAMAGED, c.lost_damaged),
        (LOST_MISSING, c.lost_missing),
        (LOST_UNKNOWN_NAME, c.lost_unknown_name),
        (LOST_DEVICE_FULL, c.lost_device_full),
        (LOST_LAPPED, c.lost_lapped),
        (LAPPED_UNKNOWN, c.lapped_unknown),
        (RESETS, c.resets),
        (NOISE_BYTES, c.noise_bytes),
    ]
}

/// The reports of the counts that grew since `sent`, each carrying the growth,
/// with the index of its cause.
fn reports_since(
    now: &[(EventName, u64); REPORTS],
    sent: &[u64; REPORTS],
    now_us: u64,
) -> Vec<(usize, Event)> {
    now.iter()
        .zip(sent)
        .enumerate()
        .filter(|(_, ((_, now), sent))| now > sent)
        .map(|(i, ((name, now), sent))| {
            (i, Event::new(now_us, Category::System, *name, now - sent))
        })
        .collect()
}

impl LinkSink {
    /// A sink writing `dir/NAME`, `NAME` being `fallback` until a device names itself,
    /// or always when `fixed`.
    pub fn new(dir: PathBuf, capacity: Option<u32>, fallback: String, fixed: bool) -> LinkSink {
        LinkSink::with_exporters(dir, capacity, fallback, fixed, None)
    }

    /// [`LinkSink::new`], exporting through `plan`'s list too (opened, under the
    /// ring's agent name, before the ring is created).
    pub fn with_exporters(
        dir: PathBuf,
        capacity: Option<u32>,
        fallback: String,
        fixed: bool,
        plan: Option<Arc<ExportPlan>>,
    ) -> LinkSink {
        LinkSink {
            dir,
            capacity,
            agent: fallback.clone(),
            fallback,
            fixed,
            writer: None,
            claimed: None,
            pending: Vec::new(),
            counts: LinkCounts::default(),
            reported: [0; REPORTS],
            exported: [0; REPORTS],
            dropped_added: 0,
            clock: None,
            clock_reported_us: 0,
            plan,
            export: LinkExport::default(),
        }
    }

    /// Each exporter's counts so far (none without an exporter list).
    pub fn exporter_stats(&self) -> Vec<ExporterStats> {
        self.export.stats()
    }

    /// The counts so far.
    pub fn counts(&self) -> LinkCounts {
        self.counts
    }

    /// The agent name events go under now.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// A device said hello: its events go under its agent name from now on, unless the
    /// link's `NAME=` was given (a name that cannot be a ring file's keeps the link's
    /// name, with a warning).
    pub fn epoch(&mut self, agent: &str, reset: bool, now_us: u64) -> Result<(), SinkError> {
        let agent = if self.fixed {
            &self.fallback.clone()
        } else {
            agent
        };
        let agent = match telering_shm::validate_agent_name(agent) {
            Ok(()) => agent.to_owned(),
            Err(e) => {
                log::warn!(
                    "device agent name `{}` is not usable ({e}); its events go under `{}`",
                    Escaped::new(agent),
                    Escaped::new(&self.fallback)
                );
                self.fallback.clone()
            }
        };
        if agent != self.agent {
            // A different device on this link: finish the old ring first.
            self.flush(now_us)?;
            self.close_writer()?;
            self.agent = agent;
        }
        if reset {
            self.counts.resets = self.counts.resets.saturating_add(1);
        }
        Ok(())
    }

    /// An event for the ring (timestamp already on the host clock).
    pub fn event(&mut self, event: Event) {
        if event.event_name().ok() == Some(AGENT_TELEMETRY_EVENTS_DROPPED.name) {
            self.counts.lost_device_full =
                self.counts.lost_device_full.saturating_add(event.value());
            self.counts.device_reports = self.counts.device_reports.saturating_add(1);
        } else {
            self.counts.events = self.counts.events.saturating_add(1);
            self.pending.push(event);
        }
    }

    /// Events that did not arrive.
    pub fn lost(&mut self, events: u64, cause: LossCause) {
        match cause {
            LossCause::Damaged => {
                self.counts.lost_damaged = self.counts.lost_damaged.saturating_add(events)
            }
            LossCause::Missing => {
                self.counts.lost_missing = self.counts.lost_missing.saturating_add(events)
            }
            LossCause::UnknownName => {
                self.counts.lost_unknown_name = self.counts.lost_unknown_name.saturating_add(events)
            }
        }
    }

    /// Events a memory-window reader missed.
    pub fn lapped(&mut self, events: u64) {
        self.counts.lost_lapped = self.counts.lost_lapped.saturating_add(events);
    }

    /// A memory window lost an unknown number of events: its write position went
    /// backwards (a device restart: one reset more) or it lapped the reader by 2^29
    /// or more.
    pub fn lapped_unknown(&mut self, backwards: bool) {
        self.counts.lapped_unknown = self.counts.lapped_unknown.saturating_add(1);
        if backwards {
            self.counts.resets = self.counts.resets.saturating_add(1);
        }
    }

    /// Bytes that were not frames.
    pub fn noise(&mut self, bytes: u64) {
        self.counts.noise_bytes = self.counts.noise_bytes.saturating_add(bytes);
    }

    /// Whether the clock mapping is due to be written (once a second).
    pub fn clock_due(&self, now_us: u64) -> bool {
        now_us >= self.clock_reported_us.saturating_add(1_000_000)
    }

    /// The clock mapping's report, written with the next flush (it replaces one not
    /// written yet: its bound covers the same events and more).
    pub fn clock(&mut self, report: ClockReport) {
        self.clock = Some(match self.clock {
            Some(earlier) => ClockReport {
                bound_us: report.bound_us.max(earlier.bound_us),
                ..report
            },
            None => report,
        });
    }

    /// Writes the per-cause reports not yet in the ring, the pending events and the
    /// clock gauges into the ring (created on first use), in that order (see the
    /// module docs), and all of them to the exporter list.
    pub fn flush(&mut self, now_us: u64) -> Result<(), SinkError> {
        let counts = report_counts(&self.counts);
        let ring_reports = reports_since(&counts, &self.reported, now_us);
        let export_reports = reports_since(&counts, &self.exported, now_us);
        let mut gauges = Vec::new();
        if let Some(report) = self.clock.take() {
            for (name, value) in [
                (CLOCK_OFFSET, report.offset_us as u64),
                (CLOCK_DRIFT, report.drift_ppb as u64),
                (CLOCK_BOUND, report.bound_us),
            ] {
                gauges.push(Event::new(now_us, Category::System, name, value));
            }
            self.clock_reported_us = now_us;
        }
        if self.pending.is_empty() && ring_reports.is_empty() && gauges.is_empty() {
            if let Some(writer) = &mut self.writer {
                writer.heartbeat();
            }
            // Some exporters take every export as a sign of life.
            self.export.export(0, &[]);
            return Ok(());
        }
        if let (Some(plan), false) = (&self.plan, self.export.is_open()) {
            // Before the ring: an exporter that cannot start costs no file.
            let list = plan.open(&self.agent).map_err(SinkError::Export)?;
            self.export.set(list, plan.run_interval());
        }
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => {
                let path = self.dir.join(&self.agent);
                if !claim(&path) {
                    return Err(SinkError::AgentInUse(path));
                }
                self.claimed = Some(path);
                let mut options = WriterOptions::new(&self.dir, &self.agent);
                if let Some(capacity) = self.capacity {
                    options.capacity = capacity;
                }
                self.writer.insert(ShmWriter::create(options)?)
            }
        };
        let lost_before_ring = self.counts.lost_before_ring();
        let lost_now = lost_before_ring.saturating_sub(self.dropped_added);
        if lost_now > 0 {
            writer.add_dropped(lost_now);
            self.dropped_added = lost_before_ring;
        }
        let batch: Vec<Event> = ring_reports
            .iter()
            .map(|(_, e)| *e)
            .chain(self.pending.iter().copied())
            .chain(gauges.iter().copied())
            .collect();
        // The ring takes a prefix of the batch; what it refuses it counts itself.
        let taken = writer.write_batch(&batch);
        for (cause, report) in ring_reports.iter().take(taken) {
            self.reported[*cause] = self.reported[*cause].saturating_add(report.value());
        }
        let device_events = self.pending.len() as u64;
        let written = (taken.saturating_sub(ring_reports.len()) as u64).min(device_events);
        self.counts.written = self.counts.written.saturating_add(written);
        self.counts.lost_host_ring_full = self
            .counts
            .lost_host_ring_full
            .saturating_add(device_events - written);
        let exported: Vec<Event> = export_reports
            .iter()
            .map(|(_, e)| *e)
            .chain(self.pending.drain(..))
            .chain(gauges)
            .collect();
        self.export.export(lost_now, &exported);
        for (cause, report) in &export_reports {
            self.exported[*cause] = self.exported[*cause].saturating_add(report.value());
        }
        Ok(())
    }

    /// Flushes and closes the ring; the clock's last state is written whenever it was
    /// last reported.
    pub fn close(self, now_us: u64) -> Result<LinkCounts, SinkError> {
        let (counts, closed, _) = self.close_with_exporters(now_us);
        closed.map(|()| counts)
    }

    /// [`LinkSink::close`], with the final counts even when it failed (events it
    /// could not write then counted in `lost_host_ring_full`) and each exporter's
    /// final counts (its list shut down first, so they are final).
    pub fn close_with_exporters(
        mut self,
        now_us: u64,
    ) -> (LinkCounts, Result<(), SinkError>, Vec<ExporterStats>) {
        let flushed = self.flush(now_us);
        if flushed.is_err() {
            // No ring to write them to (it could not be made): they are lost here.
            let held = self.pending.len() as u64;
            self.counts.lost_host_ring_full = self.counts.lost_host_ring_full.saturating_add(held);
            self.pending.clear();
        }
        let closed = self.close_writer();
        let exporters = self.export.stats();
        (self.counts, closed.and(flushed), exporters)
    }

    fn close_writer(&mut self) -> Result<(), SinkError> {
        self.export.close();
        let closed = self.writer.take().map_or(Ok(()), ShmWriter::close);
        if let Some(path) = self.claimed.take() {
            release(&path);
        }
        Ok(closed?)
    }
}

impl Drop for LinkSink {
    fn drop(&mut self) {
        if let Some(path) = self.claimed.take() {
            release(&path);
        }
    }
}
