//! Reading the CPU counter on the recording path.
//!
//! `quanta` calibrates the counter, and reads it on every architecture but x86-64.
//! On x86-64 the read is `telering_core::clock::tsc`, the `rdtsc` intrinsic inlined:
//! `quanta::Clock::raw` is an out-of-line call that matches on the clock kind before
//! it reads, 9 instructions plus the call and the registers spilled around it under
//! callgrind, where the inlined read is 3 (`rdtsc`, a shift and an or). That is the
//! same instruction `quanta` executes, so the ticks are the same.

/// The counter, raw (x86-64: the time-stamp counter).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn read(_calibrated: &quanta::Clock) -> u64 {
    telering_core::clock::tsc()
}

/// The counter, raw (AArch64: `CNTVCT_EL0`, through `quanta`).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn read(calibrated: &quanta::Clock) -> u64 {
    calibrated.raw()
}

/// Whether `quanta` reads the same counter as [`read`] (it falls back to the
/// monotonic clock on CPUs it does not trust, and then its calibration does not
/// apply to our ticks).
pub(crate) fn quanta_reads_it(calibrated: &quanta::Clock) -> bool {
    // Two reads microseconds apart; the monotonic fallback's nanoseconds since boot
    // differ from counter ticks since boot by far more than this.
    const NEAR: u64 = 50_000_000;
    let a = read(calibrated);
    let q = calibrated.raw();
    let b = read(calibrated);
    q >= a.saturating_sub(NEAR) && q <= b.saturating_add(NEAR)
}
