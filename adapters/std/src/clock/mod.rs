//! Host clocks: where event timestamps come from.
//!
//! Timestamps are microseconds since the Unix epoch (`CLOCK_REALTIME`), taken *after*
//! the operation an event describes completed (that is, when it is recorded). The
//! [`ClockSource`] chooses how:
//!
//! - [`ClockSource::Auto`], the default: [`ClockSource::Tsc`] where the CPU counter is
//!   trusted ([`ClockProbe`]), else [`ClockSource::Realtime`]. Exact either way.
//! - [`ClockSource::Tsc`]: recording reads the CPU counter (`rdtsc` on x86-64,
//!   `CNTVCT_EL0` on AArch64, through `quanta`) and stores it raw; the flush converts
//!   it to microseconds against `CLOCK_REALTIME`, re-anchored every flush
//!   (module `timebase`). Building fails with [`ConfigError::ClockUnreliable`] where the
//!   counter is not trusted.
//! - [`ClockSource::Realtime`]: `clock_gettime(CLOCK_REALTIME)` through rustix (the
//!   vDSO, no system call) at every event; exact, the clock NIXL's older events used.
//! - [`ClockSource::RealtimeCoarse`]: `CLOCK_REALTIME_COARSE`, the wall clock at the
//!   last kernel tick: cheap to read, but it advances in ticks (4 ms at `HZ=250`).
//!
//! Chosen with [`TelemetryBuilder::clock`] or `TELERING_CLOCK` = `auto` | `tsc` |
//! `realtime` | `coarse`. Which clock a telemetry uses is logged when it is built and
//! written into the shared-memory file's trailer (`telering_shm::ClockId`, shown by
//! `telering stat`).
//!
//! Durations (per-transfer telemetry, `agent_xfer_time`, `agent_xfer_post_time`) come
//! from the same counter where it is trusted, else from `CLOCK_MONOTONIC` — never from
//! a wall clock, so an NTP step cannot make them negative (module `stamp`).
//!
//! When no sink needs timestamps ([`Exporter::needs_timestamps`], such as a ring
//! layout without a timestamp field), recording reads no clock at all.
//!
//! # Error bounds
//!
//! [`ClockSource::error_bound`]: 1 µs of truncation for `realtime`; 2 µs for `tsc`
//! (truncation plus the anchor's window and interpolation, checked by the test
//! `exported_timestamps_stay_within_2us_of_the_wall_clock`);
//! two kernel ticks plus 1 µs for `coarse` (a timer interrupt delayed by a loaded or
//! virtualised host can stretch a tick; `coarse_clock_stays_within_its_error_bound`).
//!
//! [`TelemetryBuilder::clock`]: crate::TelemetryBuilder::clock
//! [`ConfigError::ClockUnreliable`]: crate::ConfigError::ClockUnreliable
//! [`Exporter::needs_timestamps`]: crate::export::Exporter::needs_timestamps

mod counter;
mod probe;
pub(crate) mod stamp;
pub(crate) mod timebase;

pub use probe::{CLOCKSOURCE_PATH, ClockProbe, CounterUnreliable};

use core::fmt;
use std::time::Duration;

/// Which clock stamps recorded events; the default is [`ClockSource::Auto`]. See the
/// module docs for precision and cost.
///
/// ```
/// use telering_std::ClockSource;
/// let before = ClockSource::Realtime.now_us();
/// let coarse = ClockSource::RealtimeCoarse.now_us();
/// let bound = ClockSource::RealtimeCoarse.error_bound().as_micros() as u64;
/// assert!(coarse + bound >= before);
/// assert_eq!(ClockSource::from_name("COARSE"), Some(ClockSource::RealtimeCoarse));
/// assert_eq!(ClockSource::default(), ClockSource::Auto);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ClockSource {
    /// The CPU counter where it is trusted, else `CLOCK_REALTIME` (the default).
    #[default]
    Auto,
    /// The CPU counter, converted to `CLOCK_REALTIME` microseconds at flush.
    Tsc,
    /// `CLOCK_REALTIME` at every event.
    Realtime,
    /// `CLOCK_REALTIME_COARSE`: the wall clock at the last kernel tick; at most
    /// [`ClockSource::error_bound`] behind.
    RealtimeCoarse,
}

impl ClockSource {
    /// Every choice.
    pub const ALL: [ClockSource; 4] = [
        ClockSource::Auto,
        ClockSource::Tsc,
        ClockSource::Realtime,
        ClockSource::RealtimeCoarse,
    ];

    /// The names [`from_name`](Self::from_name) accepts, for error messages.
    pub const CHOICES: &'static str = "auto, tsc, realtime, coarse";

    /// The clock this choice uses on a machine described by `probe`: `Auto` becomes
    /// `Tsc` or `Realtime`; `Tsc` fails where the counter is not trusted.
    ///
    /// ```
    /// use telering_std::{ClockSource, clock::ClockProbe};
    /// let no_tsc = ClockProbe { invariant_tsc: false, clocksource: Some("hpet".into()) };
    /// assert_eq!(ClockSource::Auto.resolve(&no_tsc), Ok(ClockSource::Realtime));
    /// assert!(ClockSource::Tsc.resolve(&no_tsc).is_err());
    /// ```
    pub fn resolve(self, probe: &ClockProbe) -> Result<ClockSource, CounterUnreliable> {
        match self {
            ClockSource::Auto => Ok(match probe.counter_reliable() {
                Ok(()) => ClockSource::Tsc,
                Err(_) => ClockSource::Realtime,
            }),
            ClockSource::Tsc => probe.counter_reliable().map(|()| ClockSource::Tsc),
            other => Ok(other),
        }
    }

    fn id(self) -> rustix::time::ClockId {
        match self {
            ClockSource::RealtimeCoarse => rustix::time::ClockId::RealtimeCoarse,
            _ => rustix::time::ClockId::Realtime,
        }
    }

    /// Microseconds since the Unix epoch now (0 for a clock set before 1970): the
    /// realtime clock for every choice but [`ClockSource::RealtimeCoarse`] (the counter
    /// is anchored to it).
    ///
    /// ```
    /// use telering_std::ClockSource;
    /// let us = ClockSource::Realtime.now_us();
    /// assert!(us > 1_600_000_000_000_000); // after 2020
    /// ```
    #[inline]
    pub fn now_us(self) -> u64 {
        let ts = rustix::time::clock_gettime(self.id());
        let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
        let micros = u64::try_from(ts.tv_nsec).unwrap_or(0) / 1_000;
        secs.saturating_mul(1_000_000).saturating_add(micros)
    }

    /// The resolution of the underlying wall clock as the kernel reports it
    /// (`clock_getres`).
    ///
    /// ```
    /// use telering_std::ClockSource;
    /// assert!(ClockSource::Realtime.resolution() <= std::time::Duration::from_millis(1));
    /// ```
    pub fn resolution(self) -> Duration {
        let ts = rustix::time::clock_getres(self.id());
        Duration::new(
            u64::try_from(ts.tv_sec).unwrap_or(0),
            u32::try_from(ts.tv_nsec).unwrap_or(0),
        )
    }

    /// How far an exported timestamp from this clock may be from the true wall time
    /// (see the module docs).
    ///
    /// ```
    /// use telering_std::ClockSource;
    /// assert!(ClockSource::RealtimeCoarse.error_bound() >= ClockSource::Realtime.error_bound());
    /// ```
    pub fn error_bound(self) -> Duration {
        let truncation = Duration::from_micros(1);
        match self {
            ClockSource::Realtime => truncation,
            ClockSource::Auto | ClockSource::Tsc => truncation * 2,
            ClockSource::RealtimeCoarse => self.resolution() * 2 + truncation,
        }
    }

    /// The name used in configuration and reports: `auto`, `tsc`, `realtime` or
    /// `realtime-coarse`.
    ///
    /// ```
    /// use telering_std::ClockSource;
    /// assert_eq!(ClockSource::RealtimeCoarse.name(), "realtime-coarse");
    /// assert_eq!(ClockSource::from_name(ClockSource::Tsc.name()), Some(ClockSource::Tsc));
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            ClockSource::Auto => "auto",
            ClockSource::Tsc => "tsc",
            ClockSource::Realtime => "realtime",
            ClockSource::RealtimeCoarse => "realtime-coarse",
        }
    }

    /// Parses `auto`, `tsc`, `realtime`, `coarse` (also `realtime-coarse`), ignoring
    /// ASCII case and surrounding whitespace.
    ///
    /// ```
    /// use telering_std::ClockSource;
    /// assert_eq!(ClockSource::from_name(" TSC "), Some(ClockSource::Tsc));
    /// assert_eq!(ClockSource::from_name("hpet"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<ClockSource> {
        let name = name.trim();
        let is = |names: &[&str]| names.iter().any(|n| n.eq_ignore_ascii_case(name));
        if is(&["auto"]) {
            Some(ClockSource::Auto)
        } else if is(&["tsc", "counter"]) {
            Some(ClockSource::Tsc)
        } else if is(&["realtime"]) {
            Some(ClockSource::Realtime)
        } else if is(&["coarse", "realtime-coarse", "realtime_coarse"]) {
            Some(ClockSource::RealtimeCoarse)
        } else {
            None
        }
    }
}

/// The log line saying which clock stamps a telemetry's events and why.
pub(crate) fn describe(
    asked: ClockSource,
    used: ClockSource,
    probe: &ClockProbe,
    stamps: bool,
) -> String {
    if !stamps {
        return "no sink needs timestamps: recording reads no clock".to_string();
    }
    let mut line = format!("events are stamped by the {used} clock");
    match (asked, probe.counter_reliable()) {
        (ClockSource::Auto, Err(why)) => {
            line.push_str(&format!(" (the CPU counter is not used: {why})"));
        }
        (ClockSource::Auto | ClockSource::Tsc, Ok(())) => {
            line.push_str(" (CPU counter, converted to CLOCK_REALTIME at each flush)");
        }
        _ => line.push_str(&format!(" (chosen: {asked})")),
    }
    line
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
        // Samples spread over about 200 ms, so that a tick a virtual machine delivers
        // late (the coarse clock then lags more than one tick until it comes) spoils a
        // few samples, not the run.
        const SAMPLES: usize = 2_000;
        let (mut within, mut worst_lag) = (0, 0);
        for _ in 0..SAMPLES {
            let before = ClockSource::Realtime.now_us();
            let coarse = ClockSource::RealtimeCoarse.now_us();
            let after = ClockSource::Realtime.now_us();
            // Never ahead of the wall clock read after it ...
            assert!(
                coarse <= after + 1,
                "coarse {coarse} ahead of realtime {after}"
            );
            // ... and behind the one read before it by at most the bound, unless a
            // tick is late.
            let lag = before.saturating_sub(coarse);
            within += usize::from(lag <= bound);
            worst_lag = worst_lag.max(lag);
            let next = std::time::Instant::now() + std::time::Duration::from_micros(100);
            while std::time::Instant::now() < next {
                std::hint::spin_loop();
            }
        }
        assert!(
            within * 10 >= SAMPLES * 9,
            "only {within} of {SAMPLES} coarse reads within {bound} µs (worst lag {worst_lag} µs)"
        );
    }

    #[test]
    fn clock_names_round_trip() {
        for c in ClockSource::ALL {
            assert_eq!(ClockSource::from_name(c.name()), Some(c));
            assert_eq!(c.to_string(), c.name());
        }
        assert_eq!(ClockSource::from_name(" TSC "), Some(ClockSource::Tsc));
        assert_eq!(ClockSource::from_name("fast"), None);
    }
}
