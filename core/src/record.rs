//! The recording front: allowlist check, timestamp, push — and drop reporting.
//!
//! [`Recorder`] owns a ring's [`Producer`], a [`Clock`] and an [`Allowlist`].
//! [`Recorder::record`] drops names the allowlist excludes (that is filtering, not
//! loss), takes the timestamp after the operation completed — that is, when `record`
//! is called — and pushes. When the ring refuses an event the producer counts it;
//! as soon as there is room again, the recorder first writes one
//! `agent_telemetry_events_dropped` event whose value is the number of events lost
//! since the previous such report, so a reader learns of every loss in-band. That
//! report is written even if the allowlist excludes its name: losses are never
//! hidden.

use crate::allowlist::Allowlist;
use crate::builtin::BuiltinEvent;
use crate::clock::Clock;
use crate::drop_report::DropReport;
use crate::event::{Category, Event, EventName};
use crate::ring::{EventOwner, Full, Producer, RingOwner};
use core::fmt;

/// What happened to one recorded event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recorded {
    /// Written into the ring.
    Written,
    /// Not recorded because the allowlist excludes its name.
    Filtered,
    /// The ring was full; the event was counted as dropped and will be reported.
    Dropped,
}

/// The recording front over one producer. See the module docs.
///
/// ```
/// use telering_core::{builtin, clock::FixedClock, Allowlist, Category, OverflowPolicy, Recorder, Recorded, Ring};
/// let ring = Ring::<4>::new();
/// let (producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
/// let mut rec = Recorder::new(producer, FixedClock(7), Allowlist::new("agent_*"));
/// assert_eq!(rec.record_builtin(builtin::AGENT_TX_BYTES, 100), Recorded::Written);
/// assert_eq!(rec.record_builtin(builtin::ErrorStatus::Backend.event(), 1), Recorded::Filtered);
/// for _ in 0..3 {
///     rec.record_builtin(builtin::AGENT_RX_BYTES, 1);
/// }
/// // Ring of 4 holds 3: one event was dropped. Make room, record again:
/// while consumer.pop().is_some() {}
/// rec.record_builtin(builtin::AGENT_RX_BYTES, 2);
/// let report = consumer.pop().unwrap();
/// assert_eq!(report.name(), Ok("agent_telemetry_events_dropped"));
/// assert_eq!(report.value(), 1);
/// assert_eq!(consumer.pop().unwrap().value(), 2);
/// ```
pub struct Recorder<'a, R: RingOwner, C> {
    producer: Producer<R>,
    clock: C,
    allowlist: Allowlist<'a>,
    /// Drops already written into the ring as a report.
    reports: DropReport,
}

impl<R: RingOwner, C> fmt::Debug for Recorder<'_, R, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("producer", &self.producer)
            .field("allowlist", &self.allowlist)
            .field("reported_drops", &self.reports.reported())
            .finish()
    }
}

impl<'a, R: EventOwner, C: Clock> Recorder<'a, R, C> {
    /// A recorder over `producer`.
    ///
    /// ```
    /// use telering_core::{builtin, clock::FixedClock, Allowlist, OverflowPolicy, Recorder, Recorded, Ring};
    /// let ring = Ring::<8>::new();
    /// let (producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let mut rec = Recorder::new(producer, FixedClock(3), Allowlist::all());
    /// assert_eq!(rec.record_builtin(builtin::AGENT_TX_BYTES, 8), Recorded::Written);
    /// assert_eq!(consumer.pop().unwrap().timestamp_us(), 3);
    /// ```
    pub fn new(producer: Producer<R>, clock: C, allowlist: Allowlist<'a>) -> Recorder<'a, R, C> {
        Recorder {
            reports: DropReport::new(producer.events_dropped()),
            producer,
            clock,
            allowlist,
        }
    }

    /// Records one event, timestamped now.
    ///
    /// ```
    /// use telering_core::{clock::FixedClock, event_name, Allowlist, Category, OverflowPolicy, Recorder, Recorded, Ring};
    /// let ring = Ring::<8>::new();
    /// let (producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let mut rec = Recorder::new(producer, FixedClock(3), Allowlist::new("cache_*"));
    /// assert_eq!(rec.record(Category::Custom, &event_name!("cache_hits"), 2), Recorded::Written);
    /// assert_eq!(rec.record(Category::Custom, &event_name!("other"), 2), Recorded::Filtered);
    /// let e = consumer.pop().unwrap();
    /// assert_eq!((e.name(), e.value(), e.timestamp_us()), (Ok("cache_hits"), 2, 3));
    /// assert!(consumer.pop().is_none());
    /// ```
    #[inline]
    pub fn record(&mut self, category: Category, name: &EventName, value: u64) -> Recorded {
        if !self.allowlist.allows_everything() && !self.allowlist.allows(name.as_str()) {
            return Recorded::Filtered;
        }
        let now = self.clock.now_us();
        self.push(&Event::new(now, category, *name, value))
    }

    /// Records a built-in event.
    ///
    /// ```
    /// use telering_core::{builtin, clock::FixedClock, Allowlist, OverflowPolicy, Recorder, Recorded, Ring};
    /// let ring = Ring::<8>::new();
    /// let (producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let mut rec = Recorder::new(producer, FixedClock(0), Allowlist::all());
    /// rec.record_builtin(builtin::AGENT_XFER_TIME, 120);
    /// let e = consumer.pop().unwrap();
    /// assert_eq!(e.category(), Ok(builtin::AGENT_XFER_TIME.category));
    /// assert_eq!((e.name(), e.value()), (Ok("agent_xfer_time"), 120));
    /// ```
    #[inline]
    pub fn record_builtin(&mut self, event: BuiltinEvent, value: u64) -> Recorded {
        self.record(event.category, &event.name, value)
    }

    /// Pushes a ready-made event (it bypasses the allowlist and keeps its timestamp),
    /// reporting earlier drops first if there is room.
    ///
    /// ```
    /// use telering_core::{clock::FixedClock, event_name, Allowlist, Category, Event, OverflowPolicy, Recorder, Recorded, Ring};
    /// let ring = Ring::<8>::new();
    /// let (producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// // The allowlist excludes the name, but a ready-made event bypasses it.
    /// let mut rec = Recorder::new(producer, FixedClock(0), Allowlist::new("agent_*"));
    /// let event = Event::new(99, Category::Custom, event_name!("replayed"), 1);
    /// assert_eq!(rec.push(&event), Recorded::Written);
    /// assert_eq!(consumer.pop(), Some(event));
    /// ```
    #[inline]
    pub fn push(&mut self, event: &Event) -> Recorded {
        if self.reports.unreported(self.producer.events_dropped()) != 0 {
            self.report_drops(event.timestamp_us());
        }
        match self.producer.push(event) {
            Ok(()) => Recorded::Written,
            Err(Full) => Recorded::Dropped,
        }
    }

    /// Writes the drop report if the ring has room for it and for one more event:
    /// reporting must not itself cause the triggering event to be dropped.
    #[cold]
    fn report_drops(&mut self, timestamp_us: u64) {
        self.try_report(timestamp_us, 2);
    }

    /// Writes a pending drop report now if there is room (for example at a flush).
    /// Returns whether drops remain unreported.
    ///
    /// ```
    /// use telering_core::{builtin, clock::FixedClock, Allowlist, OverflowPolicy, Recorder, Recorded, Ring};
    /// let ring = Ring::<2>::new(); // holds one event
    /// let (producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let mut rec = Recorder::new(producer, FixedClock(5), Allowlist::all());
    /// rec.record_builtin(builtin::AGENT_TX_BYTES, 1);
    /// assert_eq!(rec.record_builtin(builtin::AGENT_TX_BYTES, 2), Recorded::Dropped);
    /// assert!(rec.flush_drop_report(), "no room: still unreported");
    /// consumer.pop();
    /// assert!(!rec.flush_drop_report());
    /// let report = consumer.pop().unwrap();
    /// assert_eq!((report.name(), report.value()), (Ok("agent_telemetry_events_dropped"), 1));
    /// ```
    pub fn flush_drop_report(&mut self) -> bool {
        if self.unreported_drops() > 0 {
            let now = self.clock.now_us();
            self.try_report(now, 1);
        }
        self.unreported_drops() > 0
    }

    fn try_report(&mut self, timestamp_us: u64, min_free: u32) {
        let free = u64::from(self.producer.free_slots());
        let dropped = self.producer.events_dropped();
        if let Some(report) = self.reports.due(dropped, free, min_free > 1, timestamp_us) {
            if self.producer.push(&report).is_ok() {
                self.reports.written(&report);
            }
        }
    }

    /// Events dropped and not yet reported in the ring.
    ///
    /// ```
    /// use telering_core::{builtin, clock::FixedClock, Allowlist, OverflowPolicy, Recorder, Ring};
    /// let ring = Ring::<2>::new(); // holds one event
    /// let (producer, _consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let mut rec = Recorder::new(producer, FixedClock(0), Allowlist::all());
    /// for value in 0..3 {
    ///     rec.record_builtin(builtin::AGENT_RX_BYTES, value);
    /// }
    /// assert_eq!(rec.unreported_drops(), 2);
    /// ```
    #[inline]
    pub fn unreported_drops(&self) -> u64 {
        self.reports.unreported(self.producer.events_dropped())
    }

    /// The producer underneath.
    ///
    /// ```
    /// use telering_core::{builtin, clock::FixedClock, Allowlist, OverflowPolicy, Recorder, Recorded, Ring};
    /// let ring = Ring::<8>::new();
    /// let (producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let mut rec = Recorder::new(producer, FixedClock(0), Allowlist::all());
    /// rec.record_builtin(builtin::AGENT_TX_BYTES, 1);
    /// assert_eq!(rec.producer().events_dropped(), 0);
    /// assert_eq!(consumer.pop().map(|e| e.value()), Some(1));
    /// ```
    pub fn producer(&self) -> &Producer<R> {
        &self.producer
    }

    /// The producer underneath, mutably (for batches).
    ///
    /// ```
    /// use telering_core::{clock::FixedClock, event_name, Allowlist, Category, Event, OverflowPolicy, Recorder, Ring};
    /// let ring = Ring::<8>::new();
    /// let (producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let mut rec = Recorder::new(producer, FixedClock(0), Allowlist::all());
    /// let e = Event::new(1, Category::Custom, event_name!("x"), 4);
    /// rec.producer_mut().push(&e).unwrap();
    /// assert_eq!(consumer.pop(), Some(e));
    /// ```
    pub fn producer_mut(&mut self) -> &mut Producer<R> {
        &mut self.producer
    }

    /// The clock.
    ///
    /// ```
    /// use telering_core::{clock::FixedClock, Allowlist, Clock, OverflowPolicy, Recorder, Ring};
    /// let ring = Ring::<8>::new();
    /// let (producer, _consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let rec = Recorder::new(producer, FixedClock(77), Allowlist::all());
    /// assert_eq!(rec.clock().now_us(), 77);
    /// ```
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The allowlist.
    ///
    /// ```
    /// use telering_core::{clock::FixedClock, Allowlist, OverflowPolicy, Recorder, Ring};
    /// let ring = Ring::<8>::new();
    /// let (producer, _consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let rec = Recorder::new(producer, FixedClock(0), Allowlist::new("agent_*"));
    /// assert!(rec.allowlist().allows("agent_tx_bytes") && !rec.allowlist().allows("other"));
    /// ```
    pub fn allowlist(&self) -> &Allowlist<'a> {
        &self.allowlist
    }
}
