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
//! from `CLOCK_MONOTONIC` and the start also reads `CLOCK_REALTIME`.
//! [`Telemetry::xfer_telemetry`] (NIXL's name, [`Telemetry::get_xfer_telemetry`], is
//! an alias) reads the five fields back, or answers [`XferError::NoTelemetry`] when
//! capture is not enabled — as NIXL's `getXferTelemetry` answers
//! `NIXL_ERR_NO_TELEMETRY`.
//!
//! A handle belongs to the [`Telemetry`] that started it: its ticks are that
//! instance's clock, its events go into that instance's lanes. Passing it to another
//! instance's methods changes nothing and answers [`XferError::OtherTelemetry`].

use crate::Recorded;
use crate::clock::ClockSource;
use crate::flush::{Shared, lock};
use crate::push::{LaneAccess, ThreadLane};
use crate::telemetry::Telemetry;
use std::fmt;
use std::time::Duration;
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

/// Why per-transfer telemetry cannot answer.
///
/// ```
/// use telering_std::{Telemetry, XferError};
/// let off = Telemetry::disabled("a");
/// let xfer = off.start_xfer(true, 1, 1);
/// let e = off.xfer_telemetry(&xfer).unwrap_err();
/// assert_eq!(e, XferError::NoTelemetry);
/// assert!(e.to_string().contains("NIXL_TELEMETRY_ENABLE"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum XferError {
    /// Capture is not enabled, so there is no telemetry for the transfer.
    NoTelemetry,
    /// The transfer was started by another [`Telemetry`]; it is left unchanged.
    OtherTelemetry,
}

impl XferError {
    /// The matching status: `NIXL_ERR_NO_TELEMETRY`, or `NIXL_ERR_INVALID_PARAM` for
    /// a handle of another telemetry.
    ///
    /// ```
    /// use telering_core::builtin::ErrorStatus;
    /// use telering_std::XferError;
    /// assert_eq!(XferError::NoTelemetry.status(), ErrorStatus::NoTelemetry);
    /// assert_eq!(XferError::OtherTelemetry.status(), ErrorStatus::InvalidParam);
    /// ```
    pub const fn status(self) -> ErrorStatus {
        match self {
            XferError::NoTelemetry => ErrorStatus::NoTelemetry,
            XferError::OtherTelemetry => ErrorStatus::InvalidParam,
        }
    }
}

impl fmt::Display for XferError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            XferError::NoTelemetry => {
                "no telemetry for this transfer: capture is not enabled (set NIXL_TELEMETRY_ENABLE=y or capture_telemetry in the agent configuration)"
            }
            XferError::OtherTelemetry => {
                "this transfer was started by another telemetry instance; pass it to the one that started it"
            }
        })
    }
}

impl std::error::Error for XferError {}

/// The telemetry part of a transfer handle, from [`Telemetry::start_xfer`]: the
/// duration-clock ticks of its transitions, converted only when
/// [`Telemetry::get_xfer_telemetry`] asks.
#[derive(Clone, Debug)]
pub struct XferHandle {
    /// The [`Telemetry`] that started it (its instance id).
    owner: u64,
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
    ///
    /// ```
    /// let telemetry = telering_std::Telemetry::disabled("a");
    /// assert!(telemetry.start_xfer(true, 1, 1).is_write());
    /// ```
    pub fn is_write(&self) -> bool {
        self.is_write
    }

    /// Whether [`Telemetry::xfer_completed`] was called.
    ///
    /// ```
    /// let telemetry = telering_std::Telemetry::builder("a").capture_telemetry(true).build().unwrap();
    /// let mut xfer = telemetry.start_xfer(true, 1, 1);
    /// assert!(!xfer.is_completed());
    /// telemetry.xfer_completed(&mut xfer).unwrap();
    /// assert!(xfer.is_completed());
    /// ```
    pub fn is_completed(&self) -> bool {
        self.completed
    }

    /// Whether `telemetry` started this transfer (and so may post, complete and read
    /// it).
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// let (a, b) = (Telemetry::disabled("a"), Telemetry::disabled("b"));
    /// let xfer = a.start_xfer(true, 1, 1);
    /// assert!(xfer.belongs_to(&a) && !xfer.belongs_to(&b));
    /// ```
    pub fn belongs_to(&self, telemetry: &Telemetry) -> bool {
        self.owner == telemetry.shared.id
    }
}

impl Telemetry {
    /// Starts a transfer's telemetry: `is_write` for bytes sent (`tx`), `false` for
    /// bytes received (`rx`).
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry, XferError};
    /// let telemetry = Telemetry::builder("a").capture_telemetry(true).build().unwrap();
    /// let mut xfer = telemetry.start_xfer(true, 1 << 20, 8);
    /// telemetry.xfer_posted(&mut xfer).unwrap();
    /// assert_eq!(telemetry.xfer_completed(&mut xfer), Ok(Recorded::CaptureOnly));
    /// let t = telemetry.xfer_telemetry(&xfer).unwrap();
    /// assert_eq!((t.total_bytes, t.descriptor_count), (1 << 20, 8));
    /// assert!(t.post_duration <= t.xfer_duration);
    ///
    /// let off = Telemetry::builder("b").build().unwrap();
    /// let xfer = off.start_xfer(true, 1, 1);
    /// assert_eq!(off.xfer_telemetry(&xfer), Err(XferError::NoTelemetry));
    /// // A transfer belongs to the telemetry that started it.
    /// assert_eq!(telemetry.xfer_telemetry(&xfer), Err(XferError::OtherTelemetry));
    /// ```
    #[inline]
    pub fn start_xfer(
        &self,
        is_write: bool,
        total_bytes: u64,
        descriptor_count: u64,
    ) -> XferHandle {
        self.shared
            .start_xfer(is_write, total_bytes, descriptor_count)
    }

    /// Marks the transfer posted: the post duration is the time since its start.
    /// Only the first call counts. A transfer started by another telemetry is left
    /// unchanged: [`XferError::OtherTelemetry`].
    ///
    /// ```
    /// use telering_std::{Telemetry, XferError};
    /// let a = Telemetry::builder("a").capture_telemetry(true).build().unwrap();
    /// let b = Telemetry::builder("b").capture_telemetry(true).build().unwrap();
    /// let mut xfer = a.start_xfer(false, 64, 1);
    /// assert_eq!(b.xfer_posted(&mut xfer), Err(XferError::OtherTelemetry));
    /// assert_eq!(a.xfer_posted(&mut xfer), Ok(()));
    /// ```
    #[inline]
    pub fn xfer_posted(&self, xfer: &mut XferHandle) -> Result<(), XferError> {
        self.shared.xfer_posted(xfer)
    }

    /// Marks the transfer complete: the transfer duration is the time since its start,
    /// and the transfer is recorded once through [`Telemetry::add_xfer_stats`]. A
    /// second call records nothing and returns [`Recorded::AlreadyCompleted`]; with
    /// telemetry disabled it is [`Recorded::Disabled`], capturing only
    /// [`Recorded::CaptureOnly`] (the transfer's own telemetry is still kept). A
    /// transfer started by another telemetry is left unchanged:
    /// [`XferError::OtherTelemetry`].
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry, XferError};
    /// let a = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let b = Telemetry::disabled("b");
    /// let mut xfer = a.start_xfer(true, 4096, 1);
    /// assert_eq!(b.xfer_completed(&mut xfer), Err(XferError::OtherTelemetry));
    /// assert_eq!(a.xfer_completed(&mut xfer), Ok(Recorded::Written));
    /// assert_eq!(a.xfer_completed(&mut xfer), Ok(Recorded::AlreadyCompleted));
    /// let mut off = b.start_xfer(true, 1, 1);
    /// assert_eq!(b.xfer_completed(&mut off), Ok(Recorded::Disabled));
    /// ```
    #[inline]
    pub fn xfer_completed(&self, xfer: &mut XferHandle) -> Result<Recorded, XferError> {
        self.shared.xfer_completed(ThreadLane, xfer)
    }

    /// The transfer's telemetry so far, or [`XferError::NoTelemetry`] when capture is
    /// not enabled ([`XferError::OtherTelemetry`] for a transfer another telemetry
    /// started).
    ///
    /// ```
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::builder("a").capture_telemetry(true).build().unwrap();
    /// let xfer = telemetry.start_xfer(false, 512, 2);
    /// let t = telemetry.xfer_telemetry(&xfer).unwrap();
    /// assert_eq!((t.total_bytes, t.descriptor_count), (512, 2));
    /// assert_eq!(t.xfer_duration, std::time::Duration::ZERO); // not completed yet
    /// ```
    pub fn xfer_telemetry(&self, xfer: &XferHandle) -> Result<XferTelemetry, XferError> {
        if xfer.owner != self.shared.id {
            return Err(XferError::OtherTelemetry);
        }
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
            Err(XferError::NoTelemetry)
        }
    }

    /// NIXL's name (`getXferTelemetry`) for [`xfer_telemetry`](Self::xfer_telemetry),
    /// kept for parity with NIXL's API.
    ///
    /// ```
    /// use telering_std::{Telemetry, XferError};
    /// let telemetry = Telemetry::disabled("a");
    /// let xfer = telemetry.start_xfer(true, 1, 1);
    /// assert_eq!(telemetry.get_xfer_telemetry(&xfer), Err(XferError::NoTelemetry));
    /// ```
    #[inline]
    pub fn get_xfer_telemetry(&self, xfer: &XferHandle) -> Result<XferTelemetry, XferError> {
        self.xfer_telemetry(xfer)
    }
}

/// The transitions, shared by [`Telemetry`] and [`Recorder`](crate::Recorder).
impl Shared {
    /// See [`Telemetry::start_xfer`].
    #[inline(always)]
    pub(crate) fn start_xfer(
        &self,
        is_write: bool,
        total_bytes: u64,
        descriptor_count: u64,
    ) -> XferHandle {
        let captured = self.captures;
        let ticks = self.stamper.ticks();
        XferHandle {
            owner: self.id,
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

    /// See [`Telemetry::xfer_posted`].
    #[inline(always)]
    pub(crate) fn xfer_posted(&self, xfer: &mut XferHandle) -> Result<(), XferError> {
        if xfer.owner != self.id {
            return Err(XferError::OtherTelemetry);
        }
        if xfer.captured && !xfer.posted {
            xfer.posted_at = self.stamper.ticks().now();
            xfer.posted = true;
        }
        Ok(())
    }

    /// See [`Telemetry::xfer_completed`]; the events go into the lane `lane` reaches.
    #[inline(always)]
    pub(crate) fn xfer_completed(
        &self,
        lane: impl LaneAccess,
        xfer: &mut XferHandle,
    ) -> Result<Recorded, XferError> {
        if xfer.owner != self.id {
            return Err(XferError::OtherTelemetry);
        }
        if !xfer.captured {
            return Ok(Recorded::Disabled);
        }
        if xfer.completed {
            return Ok(Recorded::AlreadyCompleted);
        }
        let ticks = self.stamper.ticks();
        let now = ticks.now();
        xfer.completed_at = now;
        xfer.completed = true;
        let posted = if xfer.posted {
            xfer.posted_at
        } else {
            xfer.started
        };
        Ok(self.record_xfer(
            lane,
            Some(now),
            xfer.is_write,
            xfer.total_bytes,
            ticks.micros_between(xfer.started, now),
            ticks.micros_between(xfer.started, posted),
        ))
    }

    /// [`xfer_completed`](Self::xfer_completed) recording the transfer on `route`.
    #[inline(always)]
    pub(crate) fn route_xfer_completed(
        &self,
        lane: impl LaneAccess,
        xfer: &mut XferHandle,
        route: crate::route::RouteId,
    ) -> Result<Recorded, XferError> {
        if xfer.owner != self.id {
            return Err(XferError::OtherTelemetry);
        }
        if !xfer.captured {
            return Ok(Recorded::Disabled);
        }
        if xfer.completed {
            return Ok(Recorded::AlreadyCompleted);
        }
        let ticks = self.stamper.ticks();
        let now = ticks.now();
        xfer.completed_at = now;
        xfer.completed = true;
        let posted = if xfer.posted {
            xfer.posted_at
        } else {
            xfer.started
        };
        Ok(self.record_route_xfer(
            lane,
            Some(now),
            route,
            xfer.total_bytes,
            xfer.descriptor_count,
            ticks.micros_between(xfer.started, now),
            ticks.micros_between(xfer.started, posted),
        ))
    }
}
