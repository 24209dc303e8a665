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
//! counter where it is trusted (whichever clock stamps events), else
//! `CLOCK_MONOTONIC`. With the counter a transfer's
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

/// The source of duration ticks, with its scale.
#[derive(Clone, Debug)]
pub(crate) struct Ticks {
    /// `Some` for the CPU counter (and `quanta`'s calibration of it); `None` for
    /// `CLOCK_MONOTONIC` nanoseconds.
    counter: Option<quanta::Clock>,
    /// Nanoseconds per tick.
    ns_per_tick: f64,
    /// Microseconds per tick as a 0.64 fixed-point fraction (ticks are far shorter
    /// than a microsecond: one multiply converts).
    us_per_tick_q64: u64,
}

impl Ticks {
    /// The counter where it is trusted (`counter` is the probe's verdict), else the
    /// monotonic clock.
    pub(crate) fn new(counter: bool) -> Ticks {
        if !counter {
            return Ticks::with_scale(None, 1.0);
        }
        let clock = quanta::Clock::new();
        let ns_per_tick = if super::counter::quanta_reads_it(&clock) {
            const SPAN: u64 = 1 << 32;
            clock.delta_as_nanos(0, SPAN) as f64 / SPAN as f64
        } else {
            measure_ns_per_tick(&clock)
        };
        Ticks::with_scale(Some(clock), ns_per_tick)
    }

    fn with_scale(counter: Option<quanta::Clock>, ns_per_tick: f64) -> Ticks {
        // Below 1 ns per tick (counters above 1 GHz) the fraction is exact to 2⁻⁶⁴.
        let us_per_tick = (ns_per_tick / 1000.0).min(0.999_999);
        Ticks {
            counter,
            ns_per_tick,
            us_per_tick_q64: (us_per_tick * 18_446_744_073_709_551_616.0) as u64,
        }
    }

    /// One read.
    #[inline(always)]
    pub(crate) fn now(&self) -> u64 {
        match &self.counter {
            Some(clock) => super::counter::read(clock),
            None => monotonic_ns(),
        }
    }

    /// The time from tick `start` to tick `end` (zero if `end` is not later).
    #[inline]
    pub(crate) fn between(&self, start: u64, end: u64) -> Duration {
        let ticks = end.saturating_sub(start);
        Duration::from_nanos((ticks as f64 * self.ns_per_tick) as u64)
    }

    /// Whole microseconds from tick `start` to tick `end` (zero if `end` is not
    /// later): one multiply.
    #[inline(always)]
    pub(crate) fn micros_between(&self, start: u64, end: u64) -> u64 {
        let ticks = end.saturating_sub(start) as u128;
        ((ticks * self.us_per_tick_q64 as u128) >> 64) as u64
    }

    /// Nanoseconds per tick, as calibrated.
    pub(crate) fn ns_per_tick(&self) -> f64 {
        self.ns_per_tick
    }

    /// Whether these are counter ticks.
    #[inline(always)]
    pub(crate) fn is_counter(&self) -> bool {
        self.counter.is_some()
    }
}

/// The counter's rate against `CLOCK_MONOTONIC` over 2 ms, for when `quanta` does not
/// read the counter itself (its own CPU checks are stricter than the kernel's).
fn measure_ns_per_tick(clock: &quanta::Clock) -> f64 {
    let t0 = super::counter::read(clock);
    let m0 = monotonic_ns();
    while monotonic_ns() < m0 + 2_000_000 {
        std::hint::spin_loop();
    }
    let t1 = super::counter::read(clock);
    let m1 = monotonic_ns();
    (m1 - m0) as f64 / t1.saturating_sub(t0).max(1) as f64
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
    /// false when no sink needs timestamps; `counter_trusted` when the probe trusts
    /// the CPU counter, which then measures durations whatever stamps events.
    pub(crate) fn new(clock: ClockSource, stamps: bool, counter_trusted: bool) -> Stamper {
        let ticks = Ticks::new(counter_trusted || clock == ClockSource::Tsc);
        let kind = match clock {
            _ if !stamps => StampKind::Off,
            ClockSource::Tsc => StampKind::Counter,
            ClockSource::RealtimeCoarse => StampKind::Coarse,
            ClockSource::Realtime | ClockSource::Auto => StampKind::Realtime,
        };
        Stamper { kind, ticks }
    }

    /// The event timestamp to store now (raw; see [`StampKind`]). The counter and
    /// "no stamp" are tested first and inline; the wall clocks are a call.
    #[inline(always)]
    pub(crate) fn stamp(&self) -> u64 {
        if self.kind == StampKind::Counter {
            self.ticks.now()
        } else if self.kind == StampKind::Off {
            0
        } else {
            self.wall_stamp()
        }
    }

    #[inline(never)]
    fn wall_stamp(&self) -> u64 {
        match self.kind {
            StampKind::Coarse => ClockSource::RealtimeCoarse.now_us(),
            _ => ClockSource::Realtime.now_us(),
        }
    }

    /// The stamp of an event whose counter tick `now` was read already (a
    /// transfer's completion): that tick with the counter, else the stamp now.
    #[inline(always)]
    pub(crate) fn stamp_at(&self, now: u64) -> u64 {
        if self.kind == StampKind::Counter {
            now
        } else if self.kind == StampKind::Off {
            0
        } else {
            self.wall_stamp()
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
            assert_eq!(Stamper::new(clock, false, true).stamp(), 0);
            assert_eq!(Stamper::new(clock, false, true).kind(), StampKind::Off);
        }
    }

    #[test]
    fn wall_clock_stamps_are_microseconds() {
        let before = ClockSource::Realtime.now_us();
        let s = Stamper::new(ClockSource::Realtime, true, false).stamp();
        assert!(s >= before && s <= ClockSource::Realtime.now_us());
    }

    #[test]
    fn counter_ticks_convert_to_durations_and_microseconds() {
        // Bracketed by monotonic reads, so a descheduled test thread widens both
        // sides alike instead of failing: the counter's measure of [a, b] must lie
        // within the monotonic measures of the spans just inside and just outside it
        // (with 2 % + 20 µs for the calibration and the reads themselves).
        let t = Ticks::new(true);
        let outer_start = monotonic_ns();
        let a = t.now();
        let inner_start = monotonic_ns();
        while monotonic_ns() < inner_start + 3_000_000 {
            std::hint::spin_loop();
        }
        let inner_end = monotonic_ns();
        let b = t.now();
        let outer_end = monotonic_ns();
        let us = t.micros_between(a, b);
        let inner_us = (inner_end - inner_start) / 1_000;
        let outer_us = (outer_end - outer_start) / 1_000;
        let slack = outer_us / 50 + 20;
        assert!(
            us + slack >= inner_us && us <= outer_us + slack,
            "{us} µs by the counter, {inner_us}–{outer_us} µs by CLOCK_MONOTONIC"
        );
        assert_eq!(t.between(a, b).as_micros() as u64 / 10, us / 10);
    }

    #[test]
    fn monotonic_ticks_measure_nanoseconds() {
        let t = Ticks::new(false);
        let a = t.now();
        std::thread::sleep(Duration::from_millis(2));
        let d = t.between(a, t.now());
        assert!(d >= Duration::from_millis(2), "{d:?}");
        assert_eq!(t.between(5, 3), Duration::ZERO);
        assert_eq!(t.micros_between(0, 12_345_678), 12_345);
    }
}
