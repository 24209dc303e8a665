//! The flush's route report: each flush takes the interval's slow transfers out of
//! the tally and hands exporters every route's totals with them.

use super::{OTHER_INDEX, Operation, Route, RouteId, RouteReport, RouteStats, SlowXfer};
use crate::flush::{Shared, lock};

impl Shared {
    /// After the lanes are drained: the interval's slow transfers, starts converted by
    /// `micros`, kept for [`route_report`](Self::route_report); the report for the
    /// exporters, `None` while no route was ever recorded.
    pub(crate) fn take_route_interval(&self, micros: impl Fn(u64) -> u64) -> Option<RouteReport> {
        let slow = lock(&self.route_tally).take_slow(micros);
        *lock(&self.route_slow) = slow;
        let report = self.route_report();
        (!report.routes.is_empty()).then_some(report)
    }

    /// Every route's totals and the last interval's slow transfers.
    pub(crate) fn route_report(&self) -> RouteReport {
        let interned = self.routes.routes();
        let label = |index: u16, op: Operation| -> Route {
            match interned.get(usize::from(index)) {
                Some(r) if index != OTHER_INDEX && r.operation == op => r.clone(),
                _ => Route::other(op),
            }
        };
        let routes = lock(&self.route_tally)
            .totals()
            .map(|(index, op, stats)| (label(index, op), stats.clone()))
            .collect();
        let slow = lock(&self.route_slow)
            .iter()
            .map(|x: &SlowXfer| (label(x.route_index, x.operation), *x))
            .collect();
        RouteReport {
            routes,
            slow,
            folded: self.routes.folded(),
        }
    }

    /// One route's totals so far, `None` if nothing was recorded on it.
    pub(crate) fn route_totals(&self, route: RouteId) -> Option<RouteStats> {
        lock(&self.route_tally)
            .totals()
            .find(|&(index, op, _)| index == route.index() && op == route.operation())
            .map(|(_, _, stats)| stats.clone())
    }
}

impl crate::Telemetry {
    /// `route`'s totals so far (what the flushes drained), `None` if nothing was
    /// recorded on it.
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.route(&Route::new(Operation::Read, "GDS", MemoryType::Vram, MemoryType::File, "")).unwrap();
    /// assert!(t.route_totals(r).is_none());
    /// t.add_route_xfer_stats_us(r, 10, 4096, 1, 2);
    /// t.flush().unwrap();
    /// assert_eq!(t.route_totals(r).unwrap().bytes, 4096);
    /// ```
    pub fn route_totals(&self, route: RouteId) -> Option<RouteStats> {
        self.shared.route_totals(route)
    }
}
