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
    ///
    /// A slot that is no interned route (an index this telemetry never handed out, a
    /// route id of another telemetry, the other operation's twin of an index) counts
    /// on `other`: its totals are merged into the `other` route of its operation, so
    /// no two routes of a report have the same labels.
    pub(crate) fn route_report(&self) -> RouteReport {
        let interned = self.routes.routes();
        let label = |index: u16, op: Operation| -> Option<Route> {
            match interned.get(usize::from(index)) {
                Some(r) if index != OTHER_INDEX && r.operation == op => Some(r.clone()),
                _ => None,
            }
        };
        let mut routes = Vec::new();
        let mut others: [Option<RouteStats>; 2] = [None, None];
        for (index, op, stats) in lock(&self.route_tally).totals() {
            match label(index, op) {
                Some(route) => routes.push((route, stats.clone())),
                None => match &mut others[op as usize] {
                    Some(other) => other.merge(stats),
                    slot => *slot = Some(stats.clone()),
                },
            }
        }
        for (op, stats) in [Operation::Read, Operation::Write].into_iter().zip(others) {
            if let Some(stats) = stats {
                routes.push((Route::other(op), stats));
            }
        }
        let label = |index: u16, op: Operation| label(index, op).unwrap_or(Route::other(op));
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

    /// One route's totals so far, `None` if nothing was recorded on it (`other`: as
    /// the report merges it).
    pub(crate) fn route_totals(&self, route: RouteId) -> Option<RouteStats> {
        if route.is_other() {
            let other = Route::other(route.operation());
            return self
                .route_report()
                .routes
                .into_iter()
                .find(|(r, _)| *r == other)
                .map(|(_, stats)| stats);
        }
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
