//! The in-band drop report: one `agent_telemetry_events_dropped` event (category
//! `ERROR`) whose value is the number of events lost since the previous report.
//!
//! Every writer of events that can lose some — the core [`Recorder`](crate::Recorder),
//! the shared-memory ring writer, telering-std's flush — keeps one [`DropReport`]
//! beside its running loss count. The rule is the same everywhere: the report goes
//! out *as soon as there is room* for it, and, when an event is about to follow, for
//! that event too, so that reporting a loss never causes the next one. A report
//! counts as made only once it was actually written ([`DropReport::written`]); one
//! that was refused is made again, larger, next time.

use crate::builtin::AGENT_TELEMETRY_EVENTS_DROPPED;
use crate::event::Event;

/// How many losses have been reported in-band, and the rule for when the next
/// report is due.
///
/// ```
/// use telering_core::drop_report::DropReport;
/// let mut report = DropReport::new(0);
/// let mut dropped = 3; // a writer's running loss count
/// // One free slot and an event to follow: no room for the report yet.
/// assert!(report.due(dropped, 1, true, 10).is_none());
/// let event = report.due(dropped, 2, true, 10).unwrap();
/// assert_eq!((event.name(), event.value()), (Ok("agent_telemetry_events_dropped"), 3));
/// report.written(&event);
/// assert_eq!(report.unreported(dropped), 0);
/// dropped += 2;
/// assert_eq!(report.due(dropped, 1, false, 11).unwrap().value(), 2);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropReport {
    reported: u64,
}

impl DropReport {
    /// Starts with `already_reported` losses reported (the loss count of a writer that
    /// existed before, whose losses are not this reporter's to repeat).
    ///
    /// ```
    /// use telering_core::drop_report::DropReport;
    /// assert_eq!(DropReport::new(4).unreported(6), 2);
    /// ```
    pub const fn new(already_reported: u64) -> DropReport {
        DropReport {
            reported: already_reported,
        }
    }

    /// Losses reported in-band so far.
    ///
    /// ```
    /// use telering_core::drop_report::DropReport;
    /// assert_eq!(DropReport::new(4).reported(), 4);
    /// ```
    pub const fn reported(&self) -> u64 {
        self.reported
    }

    /// Of `dropped` losses in all, those not reported yet.
    ///
    /// ```
    /// use telering_core::drop_report::DropReport;
    /// assert_eq!(DropReport::new(0).unreported(7), 7);
    /// ```
    #[inline]
    pub const fn unreported(&self, dropped: u64) -> u64 {
        dropped.saturating_sub(self.reported)
    }

    /// The report to write now, if losses are unreported and `free_slots` leaves room
    /// for it — and for one more event when `event_follows`. Stamped `timestamp_us`.
    /// Pass `u64::MAX` as `free_slots` when the destination has no bound.
    ///
    /// ```
    /// use telering_core::drop_report::DropReport;
    /// let report = DropReport::new(0);
    /// assert!(report.due(0, 8, true, 1).is_none(), "nothing lost");
    /// assert!(report.due(5, 0, false, 1).is_none(), "no room");
    /// assert_eq!(report.due(5, 1, false, 1).unwrap().timestamp_us(), 1);
    /// ```
    #[inline]
    pub fn due(
        &self,
        dropped: u64,
        free_slots: u64,
        event_follows: bool,
        timestamp_us: u64,
    ) -> Option<Event> {
        let lost = self.unreported(dropped);
        let room = if event_follows { 2 } else { 1 };
        (lost > 0 && free_slots >= room).then(|| {
            Event::new(
                timestamp_us,
                AGENT_TELEMETRY_EVENTS_DROPPED.category,
                AGENT_TELEMETRY_EVENTS_DROPPED.name,
                lost,
            )
        })
    }

    /// Records that `report` (made by [`due`](Self::due)) was written.
    ///
    /// ```
    /// use telering_core::drop_report::DropReport;
    /// let mut report = DropReport::new(0);
    /// let event = report.due(2, 4, false, 0).unwrap();
    /// report.written(&event);
    /// assert_eq!(report.reported(), 2);
    /// ```
    #[inline]
    pub fn written(&mut self, report: &Event) {
        self.reported = self.reported.saturating_add(report.value());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Category;

    #[test]
    fn a_refused_report_is_made_again_with_the_later_losses_added() {
        let mut report = DropReport::new(0);
        let first = report.due(3, 4, true, 0).unwrap();
        assert_eq!(first.category(), Ok(Category::Error));
        // Not written (the destination refused it): still due, now larger.
        assert_eq!(report.due(5, 4, true, 0).unwrap().value(), 5);
        report.written(&report.due(5, 4, true, 0).unwrap());
        assert_eq!((report.reported(), report.unreported(5)), (5, 0));
        assert!(report.due(5, 4, true, 0).is_none());
    }

    #[test]
    fn a_report_before_an_event_needs_room_for_both() {
        let report = DropReport::new(0);
        assert!(report.due(1, 1, true, 0).is_none());
        assert!(report.due(1, 1, false, 0).is_some());
        assert!(report.due(1, 2, true, 0).is_some());
    }
}
