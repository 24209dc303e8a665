//! The loss-accounting ledger every telering test of sources, faults and surfaces uses.
//!
//! telering's first promise is one identity, written down in `docs/LOSS.md`:
//!
//! ```text
//! recorded = delivered + left out + Σ lost[cause]
//! ```
//!
//! Each surface a person or a program reads (a [`TelemetryStats`](telering_std::TelemetryStats), `telering stat`,
//! a `/metrics` page, `/api/agents`, the demo's `--json` summary, the in-band
//! `agent_telemetry_events_dropped` events) is turned into a [`Ledger`] by one
//! function of [`surfaces`], and every test then asks the same questions of it:
//! [`Ledger::assert_conserves`] (nothing is unaccounted for),
//! [`Ledger::assert_charged`] (each loss is charged to its true cause) and
//! [`Ledger::assert_not_ok_while_losing`] (a surface never says "ok" while it loses).
//!
//! ```
//! use telering_conservation::{Cause, Ledger};
//! let mut ledger = Ledger::new("example");
//! ledger.delivered = 63;
//! ledger.charge(Cause::RingFull, 1442);
//! ledger.assert_conserves(1505);
//! ledger.assert_charged(Cause::RingFull, 1442);
//! ```

#![deny(missing_docs, missing_debug_implementations)]

pub mod surfaces;

use std::collections::BTreeMap;
use std::fmt;

/// Why an event was not delivered: the vocabulary of `docs/LOSS.md`, one name per
/// cause, used by every surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cause {
    /// Lost before the exporter: a full per-thread lane or staging buffer, a thread
    /// that exited with events in its lane, a fan-out queue that was full.
    AtRecord,
    /// Refused by a full shared-memory ring (nothing drained it in time).
    RingFull,
    /// The exporter failed to deliver them: a failed write (a full disk), a refused
    /// or unreachable collector after its retries, a panicked exporter.
    ExporterFailed,
    /// Taken by an aggregating exporter (`otlp`, `prometheus`) that has not
    /// delivered them: a collector that is down, a port that could not be bound.
    Undelivered,
    /// Written into a ring file another program unlinked.
    Unlinked,
    /// Unread events of a ring file that a restarted writer replaced.
    Replaced,
    /// Lost inside NIXL before they reached telering, as NIXL reported.
    Upstream,
    /// Left out by design: events the output's layout cannot hold (custom events in
    /// a version-4 ring). Not delivered, not lost.
    NotInLayout,
    /// Overwritten in the ring before a reader read them.
    Missed,
    /// Slots a reader found but could not decode.
    Unexported,
    /// Lost by the exporter, where the surface does not tell its causes apart (full
    /// ring, failed export, unlinked file): `exporter_dropped` of the statistics, the
    /// demo's `dropped_by_exporter`.
    ByExporter,
    /// Lost before the ring, where the ring file does not tell the causes apart (at
    /// record, upstream, replaced, unlinked, a firmware link's losses): the trailer's
    /// `dropped_staging`, `staging` on `/api/agents`.
    Staging,
    /// The ring writer's losses as one figure (`ring_full` + `staging`):
    /// `agent_telemetry_events_dropped_total` on `/metrics`.
    WriterDropped,
}

impl Cause {
    /// The cause's name as every surface spells it.
    ///
    /// ```
    /// assert_eq!(telering_conservation::Cause::RingFull.name(), "ring_full");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Cause::AtRecord => "at_record",
            Cause::RingFull => "ring_full",
            Cause::ExporterFailed => "exporter_failed",
            Cause::Undelivered => "undelivered",
            Cause::Unlinked => "unlinked",
            Cause::Replaced => "replaced",
            Cause::Upstream => "upstream",
            Cause::NotInLayout => "not_in_layout",
            Cause::Missed => "missed",
            Cause::Unexported => "unexported",
            Cause::ByExporter => "by_exporter",
            Cause::Staging => "staging",
            Cause::WriterDropped => "dropped",
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What one surface says became of the events: delivered, and not delivered per
/// cause, and the state it shows a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ledger {
    /// The surface, for messages (`stat`, `/metrics`, `demo --json`, …).
    pub surface: String,
    /// Events the surface itself says were recorded, when it says so.
    pub recorded: Option<u64>,
    /// Events delivered.
    pub delivered: u64,
    /// Events not delivered, per cause.
    pub lost: BTreeMap<Cause, u64>,
    /// The state the surface shows (`ok`, `dropping`, `failing`, …), when it shows one.
    pub state: Option<String>,
}

impl Ledger {
    /// An empty ledger of `surface`.
    ///
    /// ```
    /// let l = telering_conservation::Ledger::new("stat");
    /// assert_eq!((l.delivered, l.lost_total()), (0, 0));
    /// ```
    pub fn new(surface: impl Into<String>) -> Ledger {
        Ledger {
            surface: surface.into(),
            recorded: None,
            delivered: 0,
            lost: BTreeMap::new(),
            state: None,
        }
    }

    /// Adds `n` events to the losses of `cause` (nothing for 0).
    ///
    /// ```
    /// use telering_conservation::{Cause, Ledger};
    /// let mut l = Ledger::new("x");
    /// l.charge(Cause::RingFull, 2);
    /// l.charge(Cause::RingFull, 3);
    /// assert_eq!(l.lost_to(Cause::RingFull), 5);
    /// ```
    pub fn charge(&mut self, cause: Cause, n: u64) {
        if n > 0 {
            *self.lost.entry(cause).or_default() += n;
        }
    }

    /// Events not delivered for `cause`.
    ///
    /// ```
    /// let l = telering_conservation::Ledger::new("x");
    /// assert_eq!(l.lost_to(telering_conservation::Cause::Missed), 0);
    /// ```
    pub fn lost_to(&self, cause: Cause) -> u64 {
        self.lost.get(&cause).copied().unwrap_or(0)
    }

    /// Every event not delivered, whatever the cause.
    ///
    /// ```
    /// use telering_conservation::{Cause, Ledger};
    /// let mut l = Ledger::new("x");
    /// l.charge(Cause::AtRecord, 1);
    /// l.charge(Cause::Upstream, 2);
    /// assert_eq!(l.lost_total(), 3);
    /// ```
    pub fn lost_total(&self) -> u64 {
        self.lost.values().sum()
    }

    /// Panics unless `recorded = delivered + Σ lost`, and, when the surface states
    /// its own recorded count, unless that count is `recorded` too.
    ///
    /// ```should_panic
    /// let mut l = telering_conservation::Ledger::new("x");
    /// l.delivered = 9;
    /// l.assert_conserves(10); // one event unaccounted for
    /// ```
    pub fn assert_conserves(&self, recorded: u64) {
        assert_eq!(
            self.delivered + self.lost_total(),
            recorded,
            "{self}: delivered + lost must be the {recorded} events recorded"
        );
        if let Some(own) = self.recorded {
            assert_eq!(own, recorded, "{self}: says {own} events were recorded");
        }
    }

    /// Panics unless exactly `n` events are charged to `cause`.
    ///
    /// ```should_panic
    /// use telering_conservation::{Cause, Ledger};
    /// let mut l = Ledger::new("x");
    /// l.charge(Cause::AtRecord, 5);
    /// l.assert_charged(Cause::RingFull, 5); // the wrong cause
    /// ```
    pub fn assert_charged(&self, cause: Cause, n: u64) {
        assert_eq!(
            self.lost_to(cause),
            n,
            "{self}: {n} events must be charged to {cause}"
        );
    }

    /// Panics if the surface loses events yet shows a state of `ok` (or shows no
    /// state at all when `must_show` is set).
    ///
    /// ```should_panic
    /// use telering_conservation::{Cause, Ledger};
    /// let mut l = Ledger::new("x");
    /// l.charge(Cause::RingFull, 5);
    /// l.state = Some("ok".into());
    /// l.assert_not_ok_while_losing();
    /// ```
    pub fn assert_not_ok_while_losing(&self) {
        let losing = self
            .lost
            .iter()
            .any(|(cause, n)| *cause != Cause::NotInLayout && *n > 0);
        if losing {
            assert_ne!(
                self.state.as_deref(),
                Some("ok"),
                "{self}: loses events but says ok"
            );
        }
    }
}

impl fmt::Display for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] delivered {}", self.surface, self.delivered)?;
        for (cause, n) in &self.lost {
            write!(f, ", {cause} {n}")?;
        }
        if let Some(recorded) = self.recorded {
            write!(f, ", recorded {recorded}")?;
        }
        if let Some(state) = &self.state {
            write!(f, ", state {state}")?;
        }
        Ok(())
    }
}
