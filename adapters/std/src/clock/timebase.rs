//! The flush side of the clock: raw counter stamps become wall-clock microseconds.
//!
//! # Conversion
//!
//! An *anchor* is a pair (counter tick, `CLOCK_REALTIME` nanoseconds) read together:
//! the realtime read sits between two counter reads and the midpoint is taken, so a
//! pair is off by at most half its window. The tightest of [`ANCHOR_TRIES`] tries is
//! kept, and more tries follow (up to [`ANCHOR_MAX_TRIES`]) while the best window is
//! wider than [`ANCHOR_WINDOW`]: a thread preempted between the reads (common on a
//! loaded virtual machine) would otherwise misplace the anchor by its time off-CPU.
//! A window is about 60 ns on the benchmark machine.
//!
//! The [`Timebase`] takes one anchor when the telemetry is built and one at every
//! flush, before the lanes are drained. The flush converts the events it drains with
//! the line through the previous anchor and the new one, anchored at the new one:
//!
//! ```text
//! µs(t) = (ns_new + (t − tick_new) × rate) / 1000,  rate = Δns / Δtick between anchors
//! ```
//!
//! Events recorded between the two anchors are interpolated, so a slewing NTP (which
//! changes the realtime clock's rate, not the counter's) is followed exactly, and a
//! stepped clock is followed from the next flush on. Consecutive lines meet at their
//! shared anchor, so the conversion is continuous and increasing across flushes.
//! When anchors are less than [`MIN_SPAN`] apart (back-to-back flushes) the measured
//! rate is too noisy; the previous rate is kept. A rate far from the calibrated one
//! (the realtime clock was stepped) is replaced by the calibrated one.
//!
//! The flush also keeps, per lane, the last microsecond it emitted and never emits an
//! earlier one for that lane ([`MonotoneStream`]): timestamps of one thread never go
//! backwards, even across a step of the realtime clock backwards.
//!
//! Stamps that already are microseconds (the realtime clocks) convert to themselves.

use super::stamp::Ticks;
use std::time::{Duration, Instant};

/// Anchors closer together than this keep the previous rate.
pub(crate) const MIN_SPAN: Duration = Duration::from_millis(5);

/// Tries per anchor; the tightest window wins.
pub(crate) const ANCHOR_TRIES: usize = 5;
/// Most tries per anchor while no window is tight enough.
pub(crate) const ANCHOR_MAX_TRIES: usize = 200;
/// A window this narrow ends the search early.
pub(crate) const ANCHOR_WINDOW: Duration = Duration::from_nanos(500);

/// A counter tick and the realtime nanoseconds read with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Anchor {
    pub(crate) tick: u64,
    pub(crate) ns: u64,
}

impl Anchor {
    /// Reads an anchor from `ticks` (`ns_per_tick` of them) and `CLOCK_REALTIME`.
    pub(crate) fn read(ticks: &Ticks, ns_per_tick: f64) -> Anchor {
        let tight = (ANCHOR_WINDOW.as_nanos() as f64 / ns_per_tick) as u64;
        let mut best = (u64::MAX, Anchor { tick: 0, ns: 0 });
        for attempt in 0..ANCHOR_MAX_TRIES {
            if attempt >= ANCHOR_TRIES && best.0 <= tight {
                break;
            }
            let before = ticks.now();
            let ns = realtime_ns();
            let after = ticks.now();
            let window = after.wrapping_sub(before);
            if window < best.0 {
                let tick = before.wrapping_add(window / 2);
                best = (window, Anchor { tick, ns });
            }
        }
        best.1
    }
}

fn realtime_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Realtime);
    u64::try_from(ts.tv_sec)
        .unwrap_or(0)
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::try_from(ts.tv_nsec).unwrap_or(0))
}

/// One line from ticks to realtime: see the module docs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Segment {
    anchor: Anchor,
    ns_per_tick: f64,
}

impl Segment {
    /// Microseconds since the Unix epoch at `tick`.
    #[inline]
    pub(crate) fn micros(&self, tick: u64) -> u64 {
        // Signed: events drained in a flush may predate its anchor.
        let ticks = tick.wrapping_sub(self.anchor.tick) as i64;
        let offset = (ticks as f64 * self.ns_per_tick) as i64;
        self.anchor.ns.saturating_add_signed(offset) / 1_000
    }
}

/// How the flush turns the stamps it drains into microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Conversion {
    /// Stamps are counter ticks.
    Counter(Segment),
    /// Stamps are microseconds already.
    Identity,
    /// There are no stamps (all 0).
    Off,
}

impl Conversion {
    /// The microseconds for `stamp`.
    #[inline]
    pub(crate) fn micros(&self, stamp: u64) -> u64 {
        match self {
            Conversion::Counter(segment) => segment.micros(stamp),
            Conversion::Identity | Conversion::Off => stamp,
        }
    }
}

/// Anchors and the current line; see the module docs.
#[derive(Debug)]
pub(crate) struct Timebase {
    ticks: Ticks,
    calibrated_ns_per_tick: f64,
    segment: Segment,
    anchored_at: Instant,
}

impl Timebase {
    /// A timebase over `ticks`, anchored now.
    pub(crate) fn new(ticks: Ticks) -> Timebase {
        let calibrated_ns_per_tick = ticks.ns_per_tick();
        let anchor = Anchor::read(&ticks, calibrated_ns_per_tick);
        Timebase {
            ticks,
            calibrated_ns_per_tick,
            segment: Segment {
                anchor,
                ns_per_tick: calibrated_ns_per_tick,
            },
            anchored_at: Instant::now(),
        }
    }

    /// Takes a new anchor and returns the line through the previous one and it.
    pub(crate) fn reanchor(&mut self) -> Segment {
        let anchor = Anchor::read(&self.ticks, self.calibrated_ns_per_tick);
        self.advance_to(anchor);
        self.anchored_at = Instant::now();
        self.segment
    }

    /// The segment rule, separated from the reads for testing.
    pub(crate) fn advance_to(&mut self, anchor: Anchor) {
        let prev = self.segment.anchor;
        let dticks = anchor.tick.wrapping_sub(prev.tick) as i64;
        let dns = anchor.ns.wrapping_sub(prev.ns) as i64;
        let calibrated = self.calibrated_ns_per_tick;
        let span_ns = dticks as f64 * calibrated;
        let mut rate = self.segment.ns_per_tick;
        if span_ns >= MIN_SPAN.as_nanos() as f64 {
            let measured = dns as f64 / dticks as f64;
            // Within 1 %: an NTP slew is at most 0.05 %; anything else is a step.
            rate = if (measured - calibrated).abs() <= calibrated / 100.0 {
                measured
            } else {
                calibrated
            };
        }
        self.segment = Segment {
            anchor,
            ns_per_tick: rate,
        };
    }

    /// Microseconds for counter tick `tick` read at most about `max_age` before the
    /// newest anchor or after it, re-anchoring first when the newest anchor is older
    /// than `max_age` (for per-transfer start times when no flush runs).
    pub(crate) fn micros_fresh(&mut self, tick: u64, max_age: Duration) -> u64 {
        if self.anchored_at.elapsed() > max_age {
            self.reanchor();
        }
        self.segment.micros(tick)
    }
}

/// A per-lane guard: the microseconds it passes never decrease.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MonotoneStream {
    last_us: u64,
}

impl MonotoneStream {
    /// `us`, or the last value passed if that was later.
    #[inline]
    pub(crate) fn pass(&mut self, us: u64) -> u64 {
        self.last_us = self.last_us.max(us);
        self.last_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timebase(ns_per_tick: f64, anchor: Anchor) -> Timebase {
        Timebase {
            ticks: Ticks::new(false),
            calibrated_ns_per_tick: ns_per_tick,
            segment: Segment {
                anchor,
                ns_per_tick,
            },
            anchored_at: Instant::now(),
        }
    }

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn events_between_anchors_are_interpolated() {
        // A 2 GHz counter against a realtime clock slewed 0.04 % fast.
        let mut tb = timebase(
            0.5,
            Anchor {
                tick: 0,
                ns: 1000 * SEC,
            },
        );
        let ns_per_tick = 0.5 * 1.0004;
        tb.advance_to(Anchor {
            tick: 200_000_000,
            ns: 1000 * SEC + (200_000_000.0 * ns_per_tick) as u64,
        });
        let s = tb.segment;
        // Halfway: 50 ms + 0.04 %.
        assert_eq!(s.micros(100_000_000), 1000 * 1_000_000 + 50_020);
        // Before the previous anchor (an event drained late) and after the new one.
        assert_eq!(s.micros(u64::MAX - 1_999), 1000 * 1_000_000 - 1);
    }

    #[test]
    fn consecutive_segments_meet_at_their_shared_anchor() {
        let mut tb = timebase(
            0.3,
            Anchor {
                tick: 10,
                ns: 5 * SEC,
            },
        );
        tb.advance_to(Anchor {
            tick: 400_000_010,
            ns: 5 * SEC + 120_003_000,
        });
        let first = tb.segment;
        tb.advance_to(Anchor {
            tick: 700_000_010,
            ns: 5 * SEC + 210_004_000,
        });
        let second = tb.segment;
        assert_eq!(first.micros(400_000_010), second.micros(400_000_010));
        let mut last = 0;
        for tick in (0..1_000_000_000u64).step_by(3_333_333) {
            let seg = if tick <= 400_000_010 { first } else { second };
            let us = seg.micros(tick);
            assert!(us >= last, "{us} after {last} at {tick}");
            last = us;
        }
    }

    #[test]
    fn a_stepped_clock_falls_back_to_the_calibrated_rate() {
        let mut tb = timebase(
            1.0,
            Anchor {
                tick: 0,
                ns: 100 * SEC,
            },
        );
        // Realtime stepped back 10 s within 100 ms.
        tb.advance_to(Anchor {
            tick: 100_000_000,
            ns: 90 * SEC + 100_000_000,
        });
        assert_eq!(tb.segment.ns_per_tick, 1.0);
        assert_eq!(tb.segment.micros(100_000_000), 90_100_000);
    }

    #[test]
    fn close_anchors_keep_the_previous_rate() {
        let mut tb = timebase(1.0, Anchor { tick: 0, ns: SEC });
        tb.advance_to(Anchor {
            tick: 1_000,
            ns: SEC + 1_002,
        });
        assert_eq!(tb.segment.ns_per_tick, 1.0);
    }

    #[test]
    fn a_stream_never_goes_backwards() {
        let mut s = MonotoneStream::default();
        assert_eq!([5, 7, 6, 9].map(|us| s.pass(us)), [5, 7, 7, 9]);
    }

    #[test]
    fn a_real_anchor_pairs_a_tick_with_the_wall_clock() {
        let ticks = Ticks::new(true);
        let before = realtime_ns();
        let a = Anchor::read(&ticks, ticks.ns_per_tick());
        let after = realtime_ns();
        assert!(before <= a.ns && a.ns <= after);
    }
}
