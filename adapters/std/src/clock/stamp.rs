//! The recording side of the clock: what a recording call reads.
//!
//! A [`Stamper`] is fixed when the telemetry is built. Its [`stamp`](Stamper::stamp)
//! is the one read a recording call makes:
//!
//! - with the counter ([`ClockSource::Tsc`]), the raw counter value (`rdtsc` on
//!   x86-64, `CNTVCT_EL0` on AArch64, through `quanta`), stored as is in the event's
//!   timestamp field and turned into microseconds by the flush ([`super::timebase`]);
//! - with [`ClockSource::Realtime`] or [`ClockSource::RealtimeCoarse`], that clock
//!   in microseconds;
//! - when no sink needs timestamps ([`Exporter::needs_timestamps`]), nothing: the
//!   timestamp is 0 and no clock is read, as in NIXL's 16-byte events.
//!
//! Durations (transfer and post times) come from [`ticks`](Stamper::ticks): the same
//! counter where it is trusted, else `CLOCK_MONOTONIC`. With the counter a transfer's
//! completion read doubles as its events' stamp, so a whole transfer reads the clock
//! three times (start, posted, completed).
//!
//! [`Exporter::needs_timestamps`]: crate::export::Exporter::needs_timestamps

use super::ClockSource;
use std::time::Duration;

/// What [`Stamper::stamp`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StampKind {
    /// Raw counter ticks, converted at flush.
    Counter,
    /// `CLOCK_REALTIME` µs.
    Realtime,
    /// `CLOCK_REALTIME_COARSE` µs.
    Coarse,
    /// No timestamp (0): no sink needs one.
    Off,
}

/// The source of duration ticks.
#[derive(Clone, Debug)]
pub(crate) enum Ticks {
    /// The CPU counter, calibrated by `quanta`.
    Counter(quanta::Clock),
    /// `CLOCK_MONOTONIC` nanoseconds.
    Monotonic,
}

impl Ticks {
    /// The counter where it is trusted (`counter` is the probe's verdict), else the
    /// monotonic clock.
    pub(crate) fn new(counter: bool) -> Ticks {
        if counter {
            Ticks::Counter(quanta::Clock::new())
        } else {
            Ticks::Monotonic
        }
    }

    /// One read.
    #[inline(always)]
    pub(crate) fn now(&self) -> u64 {
        match self {
            Ticks::Counter(clock) => clock.raw(),
            Ticks::Monotonic => monotonic_ns(),
        }
    }

    /// The time from tick `start` to tick `end` (zero if `end` is not later).
    #[inline]
    pub(crate) fn between(&self, start: u64, end: u64) -> Duration {
        match self {
            Ticks::Counter(clock) => clock.delta(start, end),
            Ticks::Monotonic => Duration::from_nanos(end.saturating_sub(start)),
        }
    }

    /// Nanoseconds per tick, as calibrated.
    pub(crate) fn ns_per_tick(&self) -> f64 {
        const SPAN: u64 = 1 << 32;
        match self {
            Ticks::Counter(clock) => clock.delta_as_nanos(0, SPAN) as f64 / SPAN as f64,
            Ticks::Monotonic => 1.0,
        }
    }

    /// Whether these are counter ticks.
    pub(crate) fn is_counter(&self) -> bool {
        matches!(self, Ticks::Counter(_))
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
#[inline]
pub(crate) fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// What recording reads; see the module docs.
#[derive(Clone, Debug)]
pub(crate) struct Stamper {
    kind: StampKind,
    ticks: Ticks,
}

impl Stamper {
    /// A stamper for the resolved `clock` (never [`ClockSource::Auto`]); `stamps`
    /// false when no sink needs timestamps.
    pub(crate) fn new(clock: ClockSource, stamps: bool) -> Stamper {
        let ticks = Ticks::new(clock == ClockSource::Tsc);
        let kind = match clock {
            _ if !stamps => StampKind::Off,
            ClockSource::Tsc => StampKind::Counter,
            ClockSource::RealtimeCoarse => StampKind::Coarse,
            ClockSource::Realtime | ClockSource::Auto => StampKind::Realtime,
        };
        Stamper { kind, ticks }
    }

    /// The event timestamp to store now (raw; see [`StampKind`]).
    #[inline(always)]
    pub(crate) fn stamp(&self) -> u64 {
        match self.kind {
            StampKind::Counter => self.ticks.now(),
            StampKind::Realtime => ClockSource::Realtime.now_us(),
            StampKind::Coarse => ClockSource::RealtimeCoarse.now_us(),
            StampKind::Off => 0,
        }
    }

    /// The stamp for events recorded at tick `now`, read just before: the tick itself
    /// when stamps are counter ticks (no second read).
    #[inline(always)]
    pub(crate) fn stamp_at(&self, now: u64) -> u64 {
        match self.kind {
            StampKind::Counter => now,
            _ => self.stamp(),
        }
    }

    /// What stamps are.
    pub(crate) fn kind(&self) -> StampKind {
        self.kind
    }

    /// The duration clock.
    #[inline(always)]
    pub(crate) fn ticks(&self) -> &Ticks {
        &self.ticks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_sink_needing_them_stamps_are_zero() {
        for clock in ClockSource::ALL {
            assert_eq!(Stamper::new(clock, false).stamp(), 0);
            assert_eq!(Stamper::new(clock, false).kind(), StampKind::Off);
        }
    }

    #[test]
    fn wall_clock_stamps_are_microseconds() {
        let before = ClockSource::Realtime.now_us();
        let s = Stamper::new(ClockSource::Realtime, true).stamp();
        assert!(s >= before && s <= ClockSource::Realtime.now_us());
    }

    #[test]
    fn monotonic_ticks_measure_nanoseconds() {
        let t = Ticks::Monotonic;
        let a = t.now();
        std::thread::sleep(Duration::from_millis(2));
        let d = t.between(a, t.now());
        assert!(d >= Duration::from_millis(2), "{d:?}");
        assert_eq!(t.between(5, 3), Duration::ZERO);
    }
}
