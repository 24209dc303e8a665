//! Recording on a route: [`Telemetry`] and [`Recorder`] methods, and the push they
//! share (see the parent module for the record ids).

use super::{Route, RouteError, RouteId, RouteReport, part};
use crate::builtins::idx;
use crate::flush::Shared;
use crate::push::{LaneAccess, ThreadLane};
use crate::telemetry::micros;
use crate::{Recorded, Recorder, Telemetry, XferError, XferHandle};
use std::time::Duration;
use telering_core::builtin::ErrorStatus;

/// A transfer started on a route ([`Telemetry::start_route_xfer`]): its handle and
/// its route.
#[derive(Clone, Debug)]
pub struct RouteXfer {
    xfer: XferHandle,
    route: RouteId,
}

impl RouteXfer {
    /// The transfer's handle, for [`Telemetry::xfer_telemetry`].
    pub fn xfer(&self) -> &XferHandle {
        &self.xfer
    }

    /// The transfer's route.
    pub fn route(&self) -> RouteId {
        self.route
    }
}

impl Shared {
    /// The four events of one transfer on `route` (see [`Shared::record_xfer`]): the
    /// route's record ids, the descriptor count in the request record.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn record_route_xfer(
        &self,
        lane: impl LaneAccess,
        completed: Option<u64>,
        route: RouteId,
        bytes: u64,
        descriptors: u64,
        xfer_us: u64,
        post_us: u64,
    ) -> Recorded {
        // A recorder of a closed telemetry finds its gates shut: refused and counted
        // (a `Telemetry` reads the plain filter here, see `LaneAccess`).
        if !lane.on(self) {
            return lane.refusal(self, || self.filter.on, 4);
        }
        // One flag for both operations: the operation is looked at only when the
        // allowlist leaves parts out.
        if !self.filter.route_xfer_all {
            let values = [bytes, descriptors, xfer_us, post_us];
            return self.record_route_xfer_filtered(lane, completed, route, values);
        }
        let now = self.xfer_stamp(completed);
        let id = route.0;
        let part = move |i: usize| match i {
            0 => (id, bytes),
            1 => (id + 1, descriptors),
            2 => (id + 2, xfer_us),
            _ => (id + 3, post_us),
        };
        let pushed = lane.with(
            self,
            #[inline(always)]
            |l| l.push_all_with(4, now, part),
        );
        self.outcome(pushed, 4)
    }

    /// [`record_route_xfer`](Self::record_route_xfer) when the allowlist leaves some
    /// parts out.
    #[cold]
    #[inline(never)]
    fn record_route_xfer_filtered(
        &self,
        lane: impl LaneAccess,
        completed: Option<u64>,
        route: RouteId,
        values: [u64; 4],
    ) -> Recorded {
        let builtins = if route.0 & part::WRITE != 0 {
            [idx::TX_BYTES, idx::TX_REQUESTS_NUM]
        } else {
            [idx::RX_BYTES, idx::RX_REQUESTS_NUM]
        };
        let builtins = [
            builtins[0],
            builtins[1],
            idx::XFER_TIME,
            idx::XFER_POST_TIME,
        ];
        let mut allowed = [(0u16, 0u64); 4];
        let mut n = 0;
        for (p, (&b, &v)) in builtins.iter().zip(&values).enumerate() {
            if self.filter.builtin[b] {
                allowed[n] = (route.0 + p as u16, v);
                n += 1;
            }
        }
        if n == 0 {
            return self.filter.refusal();
        }
        let now = self.xfer_stamp(completed);
        let pushed = lane.with(self, |l| l.push_all_with(n, now, |i| allowed[i]));
        self.outcome(pushed, n as u64)
    }

    /// One error of `status` on `route`.
    #[inline(always)]
    pub(crate) fn record_route_error(
        &self,
        lane: impl LaneAccess,
        route: RouteId,
        status: ErrorStatus,
    ) -> Recorded {
        let index = idx::FIRST_ERROR + status as usize;
        if !lane.builtin_open(self, index) {
            return lane.refusal(self, || self.filter.builtin[index], 1);
        }
        let now = self.stamper.stamp();
        self.push_record(lane, route.0 + part::ERROR, now, status as u64)
    }

    /// See [`Telemetry::start_route_xfer`].
    #[inline(always)]
    fn start_route_xfer(&self, route: RouteId, bytes: u64, descriptors: u64) -> RouteXfer {
        let is_write = route.0 & part::WRITE != 0;
        RouteXfer {
            xfer: self.start_xfer(is_write, bytes, descriptors),
            route,
        }
    }
}

impl Telemetry {
    /// The id of `route`, interned now if it is new. Beyond the bound
    /// ([`RouteLimits::max`](super::RouteLimits::max)) the answer is the `other` route
    /// of its operation, and the route is counted as folded. A route whose labels are
    /// those of the `other` route of its operation ([`Route::other`]) is that route
    /// (not counted as folded, and not taking a place under the bound), so the two
    /// are one series.
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// use telering_std::Telemetry;
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").routes_max(1).build().unwrap();
    /// let ucx = Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "decode-0");
    /// let gds = Route::new(Operation::Read, "GDS", MemoryType::Vram, MemoryType::File, "");
    /// let a = t.route(&ucx).unwrap();
    /// assert_eq!(t.route(&ucx).unwrap(), a); // interned once
    /// assert!(t.route(&gds).unwrap().is_other()); // beyond the bound of 1
    /// assert_eq!(t.routes_folded(), 1);
    /// ```
    pub fn route(&self, route: &Route) -> Result<RouteId, RouteError> {
        self.shared.routes.intern(route)
    }

    /// The route id `raw` ([`RouteId::raw`]) if a [`route`](Self::route) call of
    /// this telemetry answered it, `None` otherwise: for an API that receives ids as
    /// numbers (C, Python) and refuses one no `route` call returned.
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// use telering_std::Telemetry;
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.route(&Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "p")).unwrap();
    /// assert_eq!(t.route_id(r.raw()), Some(r));
    /// assert_eq!(t.route_id(r.raw() - 8), None); // index 0 is a write route here
    /// assert_eq!(t.route_id(0xE108), None); // no route of index 16
    /// ```
    #[inline]
    pub fn route_id(&self, raw: u16) -> Option<RouteId> {
        RouteId::from_raw(raw).filter(|&id| self.shared.routes.issued(id))
    }

    /// Routes folded into `other` because the bound was reached.
    pub fn routes_folded(&self) -> u64 {
        self.shared.routes.folded()
    }

    /// Every route's totals so far (what the flushes drained) and the slow transfers
    /// of the last flush interval.
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// use telering_std::Telemetry;
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.route(&Route::new(Operation::Write, "UCX", MemoryType::Dram, MemoryType::Vram, "p")).unwrap();
    /// t.add_route_xfer_stats_us(r, 120, 4096, 4, 2);
    /// t.flush().unwrap();
    /// let report = t.route_report();
    /// assert_eq!((report.routes[0].1.bytes, report.routes[0].1.transfers), (4096, 1));
    /// assert_eq!(report.slow[0].1.descriptors, 2);
    /// ```
    pub fn route_report(&self) -> RouteReport {
        self.shared.route_report()
    }

    /// Records one completed transfer on `route` (as
    /// [`add_xfer_stats`](Self::add_xfer_stats), the operation being the route's),
    /// covering `descriptors` descriptors.
    ///
    /// ```
    /// use std::time::Duration;
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.route(&Route::new(Operation::Read, "UCX", MemoryType::Vram, MemoryType::Dram, "p")).unwrap();
    /// let rec = t.add_route_xfer_stats(r, Duration::from_micros(40), 4096, Duration::from_micros(3), 1);
    /// assert_eq!((rec, t.stats().events_recorded), (Recorded::Written, 4));
    /// ```
    #[inline]
    pub fn add_route_xfer_stats(
        &self,
        route: RouteId,
        xfer_time: Duration,
        bytes: u64,
        post_time: Duration,
        descriptors: u64,
    ) -> Recorded {
        let (xfer_us, post_us) = (micros(xfer_time), micros(post_time));
        self.shared.record_route_xfer(
            ThreadLane,
            None,
            route,
            bytes,
            descriptors,
            xfer_us,
            post_us,
        )
    }

    /// [`add_route_xfer_stats`](Self::add_route_xfer_stats) with both times in
    /// microseconds.
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.route(&Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "p")).unwrap();
    /// assert_eq!(t.add_route_xfer_stats_us(r, 120, 4096, 4, 1), Recorded::Written);
    /// ```
    #[inline]
    pub fn add_route_xfer_stats_us(
        &self,
        route: RouteId,
        xfer_time_us: u64,
        bytes: u64,
        post_time_us: u64,
        descriptors: u64,
    ) -> Recorded {
        self.shared.record_route_xfer(
            ThreadLane,
            None,
            route,
            bytes,
            descriptors,
            xfer_time_us,
            post_time_us,
        )
    }

    /// Records one error of `status` on `route` (the same `NIXL_ERR_*` event as
    /// [`update_error_count`](Self::update_error_count), counted for the route too).
    ///
    /// ```
    /// use telering_core::builtin::ErrorStatus;
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.route(&Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "p")).unwrap();
    /// assert_eq!(t.update_route_error_count(r, ErrorStatus::RemoteDisconnect), Recorded::Written);
    /// ```
    #[inline]
    pub fn update_route_error_count(&self, route: RouteId, status: ErrorStatus) -> Recorded {
        self.shared.record_route_error(ThreadLane, route, status)
    }

    /// Starts a transfer's telemetry on `route` (as [`start_xfer`](Self::start_xfer),
    /// the operation being the route's).
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.route(&Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "p")).unwrap();
    /// let mut xfer = t.start_route_xfer(r, 1 << 20, 8);
    /// t.route_xfer_posted(&mut xfer).unwrap();
    /// assert_eq!(t.route_xfer_completed(&mut xfer), Ok(Recorded::Written));
    /// assert_eq!(t.route_xfer_completed(&mut xfer), Ok(Recorded::AlreadyCompleted));
    /// assert_eq!(t.xfer_telemetry(xfer.xfer()).unwrap().descriptor_count, 8);
    /// ```
    #[inline]
    pub fn start_route_xfer(
        &self,
        route: RouteId,
        total_bytes: u64,
        descriptors: u64,
    ) -> RouteXfer {
        self.shared
            .start_route_xfer(route, total_bytes, descriptors)
    }

    /// Marks a route transfer posted ([`xfer_posted`](Self::xfer_posted)).
    #[inline]
    pub fn route_xfer_posted(&self, xfer: &mut RouteXfer) -> Result<(), XferError> {
        self.shared.xfer_posted(&mut xfer.xfer)
    }

    /// Marks a route transfer complete and records it once on its route
    /// ([`xfer_completed`](Self::xfer_completed)).
    #[inline]
    pub fn route_xfer_completed(&self, xfer: &mut RouteXfer) -> Result<Recorded, XferError> {
        self.shared
            .route_xfer_completed(ThreadLane, &mut xfer.xfer, xfer.route)
    }
}

impl Recorder {
    /// [`Telemetry::add_route_xfer_stats_us`] on this recorder's lane.
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.route(&Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "p")).unwrap();
    /// assert_eq!(t.recorder().add_route_xfer_stats_us(r, 120, 4096, 4, 1), Recorded::Written);
    /// ```
    #[inline]
    pub fn add_route_xfer_stats_us(
        &self,
        route: RouteId,
        xfer_time_us: u64,
        bytes: u64,
        post_time_us: u64,
        descriptors: u64,
    ) -> Recorded {
        self.shared.record_route_xfer(
            self.lane(),
            None,
            route,
            bytes,
            descriptors,
            xfer_time_us,
            post_time_us,
        )
    }

    /// [`Telemetry::add_route_xfer_stats`] on this recorder's lane.
    #[inline]
    pub fn add_route_xfer_stats(
        &self,
        route: RouteId,
        xfer_time: Duration,
        bytes: u64,
        post_time: Duration,
        descriptors: u64,
    ) -> Recorded {
        let (xfer_us, post_us) = (micros(xfer_time), micros(post_time));
        self.shared.record_route_xfer(
            self.lane(),
            None,
            route,
            bytes,
            descriptors,
            xfer_us,
            post_us,
        )
    }

    /// [`Telemetry::update_route_error_count`] on this recorder's lane.
    #[inline]
    pub fn update_route_error_count(&self, route: RouteId, status: ErrorStatus) -> Recorded {
        self.shared.record_route_error(self.lane(), route, status)
    }

    /// [`Telemetry::start_route_xfer`].
    #[inline]
    pub fn start_route_xfer(
        &self,
        route: RouteId,
        total_bytes: u64,
        descriptors: u64,
    ) -> RouteXfer {
        self.shared
            .start_route_xfer(route, total_bytes, descriptors)
    }

    /// [`Telemetry::route_xfer_posted`].
    #[inline]
    pub fn route_xfer_posted(&self, xfer: &mut RouteXfer) -> Result<(), XferError> {
        self.shared.xfer_posted(&mut xfer.xfer)
    }

    /// [`Telemetry::route_xfer_completed`] on this recorder's lane.
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.route(&Route::new(Operation::Read, "GDS", MemoryType::Vram, MemoryType::File, "")).unwrap();
    /// let rec = t.recorder();
    /// let mut xfer = rec.start_route_xfer(r, 4096, 1);
    /// assert_eq!(rec.route_xfer_completed(&mut xfer), Ok(Recorded::Written));
    /// ```
    #[inline]
    pub fn route_xfer_completed(&self, xfer: &mut RouteXfer) -> Result<Recorded, XferError> {
        self.shared
            .route_xfer_completed(self.lane(), &mut xfer.xfer, xfer.route)
    }
}
