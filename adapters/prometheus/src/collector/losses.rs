//! What a followed agent lost, by cause, and whether it is losing now.
//!
//! The writer's own losses come from its ring's trailer, which it updates after every
//! batch whether or not anything reads the ring: a `DropNewest` ring that nobody drains
//! fills up, the writer refuses every later event and counts it in the trailer's
//! `dropped_ring_full`, and no in-band `agent_telemetry_events_dropped` report can be
//! written until a slot is free. So the collector charges the trailer's counters, read
//! at every poll, and not the in-band reports (which repeat what the trailer already
//! counted). A ring without a trailer (NIXL's own writer) has only its in-band reports,
//! which count the events NIXL's staging queue dropped: cause `staging`.
//!
//! Cause names, as `/api/agents` and the dashboard show them:
//!
//! | cause | counted by | `/metrics` family |
//! |---|---|---|
//! | `ring_full` | the writer: the ring was full (trailer `dropped_ring_full`) | `agent_telemetry_events_dropped_total` |
//! | `staging` | the writer: lost before the ring (trailer `dropped_staging`; without a trailer, NIXL's in-band reports of its staging queue's drops) | `agent_telemetry_events_dropped_total` |
//! | `not_in_layout` | the writer: the ring's layout cannot hold the event, so it was not written (trailer `dropped_unrepresentable`, version-4 rings; as `telering demo` and `stat` say, not a loss: it never makes an agent `dropping`) | none |
//! | `missed` | this collector: the writer lapped its observer | `agent_telemetry_events_missed_total` |
//! | `unexported` | this collector: the slot did not decode | `agent_telemetry_events_unexported_total` |

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use telering_shm::TrailerInfo;

/// Events one agent lost, by cause (see the module docs for each cause).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Losses {
    /// Refused by the writer because the ring was full.
    pub ring_full: u64,
    /// Lost by the writer before the ring (staging buffers, per-thread lanes).
    pub staging: u64,
    /// Not written: the ring's layout cannot hold them (version-4 rings). Counted so
    /// that every recorded event is accounted for, but not a loss: not in
    /// [`Losses::total`], and never a reason to be `dropping`.
    pub not_in_layout: u64,
    /// Overwritten before this collector read them.
    pub missed: u64,
    /// Read but not decodable, so not exported.
    pub unexported: u64,
}

impl Losses {
    /// Every cause with its count, in a fixed order.
    ///
    /// ```
    /// use telering_prometheus::collector::Losses;
    /// let l = Losses { ring_full: 3, ..Losses::default() };
    /// assert_eq!(l.by_cause()[0], ("ring_full", 3));
    /// assert_eq!(l.total(), 3);
    /// ```
    pub fn by_cause(&self) -> [(&'static str, u64); 5] {
        [
            ("ring_full", self.ring_full),
            ("staging", self.staging),
            ("not_in_layout", self.not_in_layout),
            ("missed", self.missed),
            ("unexported", self.unexported),
        ]
    }

    /// Every event lost, whatever the cause (`not_in_layout` is no loss).
    pub fn total(&self) -> u64 {
        self.by_cause()
            .iter()
            .filter(|(cause, _)| *cause != "not_in_layout")
            .fold(0u64, |sum, (_, n)| sum.saturating_add(*n))
    }

    /// The causes of losses whose count is larger than in `before`.
    pub fn grown_since(&self, before: &Losses) -> Vec<&'static str> {
        self.by_cause()
            .iter()
            .zip(before.by_cause())
            .filter(|((cause, now), (_, then))| now > then && *cause != "not_in_layout")
            .map(|((cause, _), _)| *cause)
            .collect()
    }
}

/// The writer-side counters of a trailer, as the collector follows them for one series.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct WriterCounters {
    writer_pid: u32,
    ring_full: u64,
    staging: u64,
    not_in_layout: u64,
    /// The trailer's `published` and clean-close flag, to notice a fresh trailer that
    /// kept the pid (see [`WriterCounters::advance`]).
    published: u64,
    clean_close: bool,
}

impl WriterCounters {
    /// Moves to `trailer`'s values; returns what was added per cause. Counters of a
    /// new run that reused the ring in place (a fresh trailer: its counters start at
    /// zero), or that went down, are new in all their value. A new run is another
    /// writer pid, or — the same process taking its ring over again, or a container's
    /// pid 1 restarted — a clean close that was cleared, or `published` going down.
    pub(super) fn advance(&mut self, trailer: &TrailerInfo) -> WriterCounters {
        let new_run = trailer.writer_pid != self.writer_pid
            || (self.clean_close && !trailer.clean_close)
            || trailer.published < self.published;
        if new_run {
            *self = WriterCounters {
                writer_pid: trailer.writer_pid,
                ..WriterCounters::default()
            };
        }
        self.published = trailer.published;
        self.clean_close = trailer.clean_close;
        let step = |seen: &mut u64, now: u64| {
            let added = if now >= *seen { now - *seen } else { now };
            *seen = now;
            added
        };
        WriterCounters {
            writer_pid: trailer.writer_pid,
            ring_full: step(&mut self.ring_full, trailer.dropped_ring_full),
            staging: step(&mut self.staging, trailer.dropped_staging),
            not_in_layout: step(&mut self.not_in_layout, trailer.dropped_unrepresentable),
            published: trailer.published,
            clean_close: trailer.clean_close,
        }
    }

    /// Takes up to `events` off the staging losses of this step (events the writer
    /// counted lost that the collector delivered); returns what could not be taken
    /// yet (the trailer counts them at the next poll).
    pub(super) fn forgive_staging(&mut self, events: u64) -> u64 {
        let taken = events.min(self.staging);
        self.staging -= taken;
        events - taken
    }

    /// Adds `added` to `losses`; returns the events the writer dropped (ring full or
    /// staging), which `agent_telemetry_events_dropped_total` counts.
    pub(super) fn charge(&self, losses: &mut Losses) -> u64 {
        losses.ring_full = losses.ring_full.saturating_add(self.ring_full);
        losses.staging = losses.staging.saturating_add(self.staging);
        losses.not_in_layout = losses.not_in_layout.saturating_add(self.not_in_layout);
        self.ring_full.saturating_add(self.staging)
    }
}

/// How an agent's export goes, as `/api/agents` and the dashboard say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportState {
    /// Everything the writer recorded is delivered.
    Ok,
    /// Events were lost recently (within [`CollectorOptions::dropping_for`](super::CollectorOptions::dropping_for)).
    Dropping,
    /// The writer is gone without a clean close, or reading its ring keeps failing
    /// (`agent_telemetry_exporter_failing` is 1).
    Failing,
}

impl ExportState {
    /// `ok`, `dropping` or `failing`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExportState::Ok => "ok",
            ExportState::Dropping => "dropping",
            ExportState::Failing => "failing",
        }
    }
}

/// One agent's losses and export state, as of the collector's last poll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentLoss {
    /// Everything the current series lost, by cause.
    pub losses: Losses,
    /// `Failing`, else `Dropping` while it lost events recently, else `Ok`.
    pub state: ExportState,
    /// The causes of the losses that made it `Dropping` (empty otherwise).
    pub dropping: Vec<&'static str>,
}

/// What the collector publishes after each poll for pages answered elsewhere (the
/// dashboard's `/api/agents`): each agent's losses and state, and how many ring files
/// it cannot follow.
#[derive(Clone, Debug, Default)]
pub struct NodeStatus {
    /// Agents by name.
    pub agents: BTreeMap<String, AgentLoss>,
    /// Ring files in the directory that are not followed because the process is out of
    /// file descriptors (or past [`CollectorOptions::max_agents`](super::CollectorOptions::max_agents),
    /// or, when draining, another draining reader holds them); each is tried again at
    /// every scan.
    pub rings_not_followed: usize,
}

/// A [`NodeStatus`] shared between the collector and the threads that answer requests.
#[derive(Clone, Debug, Default)]
pub struct SharedStatus(Arc<Mutex<NodeStatus>>);

impl SharedStatus {
    /// Locks the status (a poisoned lock is recovered: every field is a plain value).
    pub fn lock(&self) -> MutexGuard<'_, NodeStatus> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// When an agent last lost events and by which causes, to say it is dropping.
#[derive(Clone, Debug, Default)]
pub(super) struct RecentLoss {
    at: Option<Instant>,
    causes: Vec<&'static str>,
}

impl RecentLoss {
    /// Notes the causes that grew between `before` and `now`.
    pub(super) fn note(&mut self, before: &Losses, now: &Losses) {
        let grown = now.grown_since(before);
        if !grown.is_empty() {
            self.at = Some(Instant::now());
            for cause in grown {
                if !self.causes.contains(&cause) {
                    self.causes.push(cause);
                }
            }
        }
    }

    /// The causes of losses within `window`, or `None` when there were none.
    pub(super) fn within(&mut self, window: Duration) -> Option<&[&'static str]> {
        match self.at {
            Some(at) if at.elapsed() <= window => Some(&self.causes),
            _ => {
                self.at = None;
                self.causes.clear();
                None
            }
        }
    }
}
