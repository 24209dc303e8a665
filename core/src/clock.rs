//! Where timestamps come from.
//!
//! The core does not know what time it is: the platform supplies a [`Clock`]
//! (a realtime clock on Linux, a cycle counter or timer on firmware). Timestamps are
//! microseconds and are taken *after* the operation they describe completed.

/// A source of microsecond timestamps.
///
/// # What a platform clock must guarantee
///
/// - **Unit and epoch.** [`now_us`](Clock::now_us) is in microseconds since a fixed
///   epoch: the Unix epoch for host clocks (readers show those as dates), or the
///   clock's own start (boot, reset) for firmware clocks, which readers show as plain
///   numbers. The ring-file trailer records which (`telering_shm::ClockId`).
/// - **Never backwards.** Two reads on one thread never decrease: events of one
///   producer are then in timestamp order, which exporters and readers rely on when
///   they merge streams. A clock that can be stepped back (a wall clock under NTP)
///   must be clamped by its platform layer, as telering-std's flush does per lane.
/// - **Resolution.** It advances at least once per microsecond, or documents its
///   tick: a clock that moves in milliseconds gives events recorded within one
///   millisecond the same timestamp. The Cortex-M example combines SysTick's
///   millisecond count with its down-counter and reaches 6–7 µs steps under QEMU.
/// - **Cheap and safe to call from the recording path**: no lock, no allocation, no
///   blocking; callable from an interrupt handler on firmware if events are recorded
///   there. A read that can fail returns its last good value rather than panicking.
/// - **Range.** 64 bits of microseconds last 584 000 years; a 32-bit hardware counter
///   must be extended (an overflow count kept by its interrupt, as the SysTick clock
///   does) so that it does not wrap within the device's uptime.
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

/// The x86-64 time-stamp counter, raw: the `rdtsc` instruction, inlined (3
/// instructions: the read, a shift and an or). Whether the counter is trustworthy as
/// a clock (invariant, synchronised across CPUs) is for the platform layer to decide;
/// telering-std asks the CPU and the kernel before it uses it.
///
/// ```
/// # #[cfg(all(target_arch = "x86_64", not(miri)))] { // Miri cannot execute `rdtsc`
/// let a = telering_core::clock::tsc();
/// let b = telering_core::clock::tsc();
/// assert!(b >= a || a - b > u64::MAX / 2); // it ticks forward (modulo wrap)
/// # }
/// ```
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn tsc() -> u64 {
    // SAFETY: `rdtsc` reads the time-stamp counter into two registers and accesses no
    // memory; every x86-64 CPU implements it (CPUID.01H:EDX.TSC is architecturally set
    // on x86-64), and user mode may execute it unless the kernel set CR4.TSD, which
    // Linux does only for processes that asked for it with `prctl(PR_SET_TSC)`.
    unsafe { core::arch::x86_64::_rdtsc() }
}
