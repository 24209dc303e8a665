//! Host clocks: where event timestamps come from.
//!
//! Timestamps are microseconds since the Unix epoch, read *after* the operation an
//! event describes completed (that is, when it is recorded). Two sources:
//!
//! - [`ClockSource::RealtimeCoarse`], the fast clock and the default:
//!   `clock_gettime(CLOCK_REALTIME_COARSE)`, the wall clock as the kernel saw it at
//!   its last timer tick. A read costs about 4 ns (it copies a value the kernel keeps
//!   in the vDSO page; no TSC read), which is what makes recording an event several
//!   times cheaper than NIXL's (see `BENCHMARKS.md`). Its timestamps advance in
//!   ticks (4 ms on the benchmark machine, `HZ=250`).
//! - [`ClockSource::Realtime`]: `clock_gettime(CLOCK_REALTIME)` through rustix (the
//!   vDSO on Linux, no system call). Exact to the microsecond; the clock NIXL uses
//!   (`std::chrono::system_clock`). About 23 ns per read on the benchmark machine
//!   (a TSC-clocked x86-64 VM). Choose it when event timestamps must order events
//!   closer together than a tick.
//!
//! Durations (per-transfer telemetry, `agent_xfer_time`) never come from these
//! timestamps: they are measured with the monotonic clock, exact to the microsecond
//! whichever source stamps the events.
//!
//! # Error bound of the fast clock
//!
//! `CLOCK_REALTIME_COARSE` is never ahead of `CLOCK_REALTIME` and lags it by less
//! than one tick; the tick is what `clock_getres(CLOCK_REALTIME_COARSE)` reports (1 ms
//! at `HZ=1000`, 4 ms at `HZ=250`). A timer interrupt delayed by a loaded or
//! virtualised host can stretch that, so [`ClockSource::error_bound`] documents **two
//! ticks** plus the 1 µs lost to truncating nanoseconds to microseconds, and the test
//! `coarse_clock_stays_within_its_error_bound` checks it against the realtime clock.
//! Both clocks follow the wall clock, so NTP steps move them alike; neither is
//! monotonic.
//!
//! The clock in use is written into the shared-memory file's trailer
//! (`telering_shm::ClockId`) so that readers know how precise the timestamps are.

use core::fmt;
use std::time::Duration;

/// Which clock stamps recorded events; the default is the fast
/// [`ClockSource::RealtimeCoarse`]. See the module docs for precision and cost.
///
/// ```
/// use telering_std::ClockSource;
/// let before = ClockSource::Realtime.now_us();
/// let coarse = ClockSource::RealtimeCoarse.now_us();
/// let bound = ClockSource::RealtimeCoarse.error_bound().as_micros() as u64;
/// assert!(coarse + bound >= before);
/// assert_eq!(ClockSource::from_name("FAST"), Some(ClockSource::RealtimeCoarse));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ClockSource {
    /// `CLOCK_REALTIME`: microsecond-exact wall clock, as in NIXL.
    Realtime,
    /// `CLOCK_REALTIME_COARSE` (the default): the wall clock at the last kernel tick;
    /// several times cheaper to read, at most [`ClockSource::error_bound`] behind.
    #[default]
    RealtimeCoarse,
}

impl ClockSource {
    /// Both sources.
    pub const ALL: [ClockSource; 2] = [ClockSource::Realtime, ClockSource::RealtimeCoarse];

    fn id(self) -> rustix::time::ClockId {
        match self {
            ClockSource::Realtime => rustix::time::ClockId::Realtime,
            ClockSource::RealtimeCoarse => rustix::time::ClockId::RealtimeCoarse,
        }
    }

    /// Microseconds since the Unix epoch (0 for a clock set before 1970).
    #[inline]
    pub fn now_us(self) -> u64 {
        let ts = rustix::time::clock_gettime(self.id());
        let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
        let micros = u64::try_from(ts.tv_nsec).unwrap_or(0) / 1_000;
        secs.saturating_mul(1_000_000).saturating_add(micros)
    }

    /// The clock's resolution as the kernel reports it (`clock_getres`).
    pub fn resolution(self) -> Duration {
        let ts = rustix::time::clock_getres(self.id());
        Duration::new(
            u64::try_from(ts.tv_sec).unwrap_or(0),
            u32::try_from(ts.tv_nsec).unwrap_or(0),
        )
    }

    /// How far behind the true wall time a timestamp from this clock may be:
    /// 1 µs of truncation for [`ClockSource::Realtime`]; two kernel ticks plus 1 µs
    /// for [`ClockSource::RealtimeCoarse`] (see the module docs).
    pub fn error_bound(self) -> Duration {
        let truncation = Duration::from_micros(1);
        match self {
            ClockSource::Realtime => truncation,
            ClockSource::RealtimeCoarse => self.resolution() * 2 + truncation,
        }
    }

    /// The name used in configuration and reports: `realtime` or `realtime-coarse`.
    pub const fn name(self) -> &'static str {
        match self {
            ClockSource::Realtime => "realtime",
            ClockSource::RealtimeCoarse => "realtime-coarse",
        }
    }

    /// Parses `realtime`, `realtime-coarse` (also `coarse` or `fast`), ignoring ASCII
    /// case.
    pub fn from_name(name: &str) -> Option<ClockSource> {
        let name = name.trim();
        if name.eq_ignore_ascii_case("realtime") {
            Some(ClockSource::Realtime)
        } else if ["realtime-coarse", "realtime_coarse", "coarse", "fast"]
            .iter()
            .any(|n| n.eq_ignore_ascii_case(name))
        {
            Some(ClockSource::RealtimeCoarse)
        } else {
            None
        }
    }
}

impl fmt::Display for ClockSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl telering_core::Clock for ClockSource {
    #[inline]
    fn now_us(&self) -> u64 {
        ClockSource::now_us(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn realtime_clock_agrees_with_system_time() {
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64;
        let now = ClockSource::Realtime.now_us();
        let after = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64;
        assert!(
            before <= now && now <= after,
            "{before} <= {now} <= {after}"
        );
    }

    #[test]
    fn coarse_clock_stays_within_its_error_bound() {
        let bound = ClockSource::RealtimeCoarse.error_bound().as_micros() as u64;
        assert!(bound >= 1);
        let mut worst_lag = 0;
        for _ in 0..20_000 {
            let before = ClockSource::Realtime.now_us();
            let coarse = ClockSource::RealtimeCoarse.now_us();
            let after = ClockSource::Realtime.now_us();
            // Never ahead of the wall clock read after it ...
            assert!(
                coarse <= after + 1,
                "coarse {coarse} ahead of realtime {after}"
            );
            // ... and never further behind the one read before it than the bound.
            let lag = before.saturating_sub(coarse);
            assert!(lag <= bound, "coarse clock lags {lag} µs; bound {bound} µs");
            worst_lag = worst_lag.max(lag);
        }
        assert!(worst_lag <= bound);
    }

    #[test]
    fn clock_names_round_trip() {
        for c in ClockSource::ALL {
            assert_eq!(ClockSource::from_name(c.name()), Some(c));
            assert_eq!(c.to_string(), c.name());
        }
        assert_eq!(ClockSource::from_name("tsc"), None);
    }
}
