//! Where timestamps come from.
//!
//! The core does not know what time it is: the platform supplies a [`Clock`]
//! (a realtime clock on Linux, a cycle counter or timer on firmware). Timestamps are
//! microseconds and are taken *after* the operation they describe completed.

/// A source of microsecond timestamps.
///
/// ```
/// use telering_core::Clock;
/// struct Ticks(u64);
/// impl Clock for Ticks {
///     fn now_us(&self) -> u64 { self.0 }
/// }
/// assert_eq!(Ticks(5).now_us(), 5);
/// ```
pub trait Clock {
    /// Microseconds since the clock's epoch (the Unix epoch for host clocks).
    fn now_us(&self) -> u64;
}

impl<F: Fn() -> u64> Clock for F {
    fn now_us(&self) -> u64 {
        self()
    }
}

/// A clock stuck at one instant: for tests and for measuring the ring without a clock.
///
/// ```
/// use telering_core::{Clock, clock::FixedClock};
/// assert_eq!(FixedClock(42).now_us(), 42);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedClock(pub u64);

impl Clock for FixedClock {
    fn now_us(&self) -> u64 {
        self.0
    }
}
