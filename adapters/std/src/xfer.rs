//! Per-transfer telemetry: a transfer's start time, post and transfer durations,
//! bytes and descriptor count, kept in its handle.
//!
//! Each transition reads the duration clock once: [`Telemetry::start_xfer`] the start,
//! [`Telemetry::xfer_posted`] the end of posting, [`Telemetry::xfer_completed`] the
//! completion, which also stamps the transfer's four events (recorded once, as
//! [`Telemetry::add_xfer_stats`] does). With the CPU counter
//! ([`ClockSource::Tsc`](crate::ClockSource::Tsc)) those are three counter reads and
//! nothing else; the start time is converted to wall-clock microseconds only when
//! [`Telemetry::get_xfer_telemetry`] asks for it. Without the counter, durations come
//! from `CLOCK_MONOTONIC` and the start also reads `CLOCK_REALTIME`. [`Telemetry::get_xfer_telemetry`] reads the five
//! fields back, or answers [`NoTelemetry`] when capture is not enabled — as NIXL's
//! `getXferTelemetry` answers `NIXL_ERR_NO_TELEMETRY`.

use crate::clock::ClockSource;
use crate::flush::lock;
use crate::telemetry::Telemetry;
use std::fmt;
use std::time::Duration;
use telering_core::Recorded;
use telering_core::builtin::ErrorStatus;

/// One transfer's telemetry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XferTelemetry {
    /// When the transfer started, µs since the Unix epoch (`CLOCK_REALTIME`).
    pub start_time_us: u64,
    /// How long posting it took.
    pub post_duration: Duration,
    /// How long it took from start to completion (zero until completed).
    pub xfer_duration: Duration,
    /// Bytes it moves.
    pub total_bytes: u64,
    /// Descriptors it covers.
    pub descriptor_count: u64,
}

/// Capture is not enabled, so there is no telemetry for the transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoTelemetry;

impl NoTelemetry {
    /// The matching status, `NIXL_ERR_NO_TELEMETRY`.
    pub const fn status(self) -> ErrorStatus {
        ErrorStatus::NoTelemetry
    }
}

impl fmt::Display for NoTelemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "no telemetry for this transfer: capture is not enabled (set NIXL_TELEMETRY_ENABLE=y or capture_telemetry in the agent configuration)",
        )
    }
}

impl std::error::Error for NoTelemetry {}

/// The telemetry part of a transfer handle, from [`Telemetry::start_xfer`]: the
/// duration-clock ticks of its transitions, converted only when
/// [`Telemetry::get_xfer_telemetry`] asks.
#[derive(Clone, Debug)]
pub struct XferHandle {
    /// Duration-clock ticks at the start, when posted and when completed.
    started: u64,
    posted_at: u64,
    completed_at: u64,
    /// `CLOCK_REALTIME` µs at the start when the ticks are not counter ticks (which
    /// convert to wall time instead).
    start_time_us: u64,
    total_bytes: u64,
    descriptor_count: u64,
    captured: bool,
    is_write: bool,
    posted: bool,
    completed: bool,
}

impl XferHandle {
    /// Whether it is a write (bytes sent).
    pub fn is_write(&self) -> bool {
        self.is_write
    }

    /// Whether [`Telemetry::xfer_completed`] was called.
    pub fn is_completed(&self) -> bool {
        self.completed
    }
}

impl Telemetry {
    /// Starts a transfer's telemetry: `is_write` for bytes sent (`tx`), `false` for
    /// bytes received (`rx`).
    ///
    /// ```
    /// use telering_std::{NoTelemetry, Telemetry};
    /// let telemetry = Telemetry::builder("a").capture_telemetry(true).build().unwrap();
    /// let mut xfer = telemetry.start_xfer(true, 1 << 20, 8);
    /// telemetry.xfer_posted(&mut xfer);
    /// telemetry.xfer_completed(&mut xfer);
    /// let t = telemetry.get_xfer_telemetry(&xfer).unwrap();
    /// assert_eq!((t.total_bytes, t.descriptor_count), (1 << 20, 8));
    /// assert!(t.post_duration <= t.xfer_duration);
    ///
    /// let off = Telemetry::builder("b").build().unwrap();
    /// let xfer = off.start_xfer(true, 1, 1);
    /// assert_eq!(off.get_xfer_telemetry(&xfer), Err(NoTelemetry));
    /// ```
    #[inline]
    pub fn start_xfer(
        &self,
        is_write: bool,
        total_bytes: u64,
        descriptor_count: u64,
    ) -> XferHandle {
        let captured = self.shared.captures;
        let ticks = self.shared.stamper.ticks();
        XferHandle {
            started: if captured { ticks.now() } else { 0 },
            posted_at: 0,
            completed_at: 0,
            // Without the counter, the exact wall clock now, whichever clock stamps
            // events (a counter tick converts later).
            start_time_us: if captured && !ticks.is_counter() {
                ClockSource::Realtime.now_us()
            } else {
                0
            },
            total_bytes,
            descriptor_count,
            captured,
            is_write,
            posted: false,
            completed: false,
        }
    }

    /// Marks the transfer posted: the post duration is the time since its start.
    /// Only the first call counts.
    #[inline]
    pub fn xfer_posted(&self, xfer: &mut XferHandle) {
        if xfer.captured && !xfer.posted {
            xfer.posted_at = self.shared.stamper.ticks().now();
            xfer.posted = true;
        }
    }

    /// Marks the transfer complete: the transfer duration is the time since its start,
    /// and the transfer is recorded once through [`Telemetry::add_xfer_stats`]. A
    /// second call records nothing and returns [`Recorded::Filtered`].
    #[inline]
    pub fn xfer_completed(&self, xfer: &mut XferHandle) -> Recorded {
        if !xfer.captured || xfer.completed {
            return Recorded::Filtered;
        }
        let ticks = self.shared.stamper.ticks();
        let now = ticks.now();
        xfer.completed_at = now;
        xfer.completed = true;
        let posted = if xfer.posted {
            xfer.posted_at
        } else {
            xfer.started
        };
        self.record_xfer(
            Some(now),
            xfer.is_write,
            xfer.total_bytes,
            ticks.micros_between(xfer.started, now),
            ticks.micros_between(xfer.started, posted),
        )
    }

    /// The transfer's telemetry so far, or [`NoTelemetry`] when capture is not
    /// enabled.
    pub fn get_xfer_telemetry(&self, xfer: &XferHandle) -> Result<XferTelemetry, NoTelemetry> {
        if xfer.captured {
            let ticks = self.shared.stamper.ticks();
            let since_start = |done: bool, at: u64| {
                if done {
                    ticks.between(xfer.started, at)
                } else {
                    Duration::ZERO
                }
            };
            let t = XferTelemetry {
                start_time_us: if ticks.is_counter() {
                    let max_age = self.shared.config.run_interval;
                    lock(&self.shared.timebase).micros_fresh(xfer.started, max_age)
                } else {
                    xfer.start_time_us
                },
                post_duration: since_start(xfer.posted, xfer.posted_at),
                xfer_duration: since_start(xfer.completed, xfer.completed_at),
                total_bytes: xfer.total_bytes,
                descriptor_count: xfer.descriptor_count,
            };
            Ok(t)
        } else {
            Err(NoTelemetry)
        }
    }
}
