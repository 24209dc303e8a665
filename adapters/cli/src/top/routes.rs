//! The route view of `telering top`: each ring's route file (`DIR/.routes/<agent>`,
//! written by the agent's `buffer` exporter, [`telering_std::route::file`]) read when
//! it changed, and per display interval each route's bytes/s, transfers/s and
//! transfer-time p99 (from the difference of the cumulative histograms over the
//! interval), beside its totals.
//!
//! The file is foreign input, read by the bounded, checking reader; a file it refuses
//! is shown as the ring's route problem (escaped), and its last accepted routes stay.
//! Route names are shown through [`Route`]'s `Display`, which escapes them. A file
//! written by another process than the ring's writer (per its trailer) is another
//! run's, and is not shown.

use std::path::{Path, PathBuf};
use telering_std::route::file::{self, Polled, RouteEntry, RouteFile, RouteFileWatch};
use telering_std::route::{Histogram, Route, TIME_BOUNDS_US};

/// One route's figures of the last interval.
#[derive(Clone, Debug, PartialEq)]
pub struct RouteRow {
    /// The route.
    pub route: Route,
    /// Bytes per second over the interval (`None` before the first whole interval).
    pub bytes_per_s: Option<f64>,
    /// Transfers per second over the interval.
    pub transfers_per_s: Option<f64>,
    /// Transfer-time p99 of the interval's transfers (since the start before the
    /// first whole interval), µs.
    pub xfer_p99_us: Option<u64>,
    /// Bytes since the agent started.
    pub bytes: u64,
    /// Transfers since the agent started.
    pub transfers: u64,
    /// Errors since the agent started, all statuses.
    pub errors: u64,
}

/// A ring's routes as the view knows them.
#[derive(Debug, Default)]
pub struct RouteView {
    /// The file last accepted.
    current: Option<RouteFile>,
    /// The file as it was when the last interval closed.
    baseline: Option<RouteFile>,
    /// The file followed across polls.
    watch: RouteFileWatch,
    /// Why the file at the path was refused, while it is.
    pub problem: Option<String>,
    /// Each route's figures of the last interval, in the file's order.
    pub rows: Vec<RouteRow>,
    /// Routes folded into `other` (from the file).
    pub folded: u64,
}

/// The route file of the ring at `ring`: `.routes/<file name>` beside it.
pub fn route_file_of(ring: &Path) -> Option<PathBuf> {
    Some(ring.parent()?.join(file::FOLDER).join(ring.file_name()?))
}

/// The `q`-quantile of the values between two cumulative histograms, linearly
/// interpolated in its bucket (as Prometheus's `histogram_quantile()`); the bucket
/// above the last bound answers that bound.
pub fn quantile(q: f64, now: &Histogram, before: Option<&Histogram>) -> Option<u64> {
    let counts: Vec<u64> = now
        .counts
        .iter()
        .enumerate()
        .map(|(i, c)| c.saturating_sub(before.map_or(0, |b| b.counts[i])))
        .collect();
    let total = counts.iter().fold(0u64, |n, &c| n.saturating_add(c));
    if total == 0 {
        return None;
    }
    let rank = q * total as f64;
    let mut seen = 0.0;
    for (i, &c) in counts.iter().enumerate() {
        let c = c as f64;
        if c > 0.0 && seen + c >= rank {
            let Some(&upper) = TIME_BOUNDS_US.get(i) else {
                return TIME_BOUNDS_US.last().copied();
            };
            let lower = if i == 0 { 0 } else { TIME_BOUNDS_US[i - 1] };
            let at = lower as f64 + (upper - lower) as f64 * ((rank - seen) / c);
            return Some(at.round() as u64);
        }
        seen += c;
    }
    TIME_BOUNDS_US.last().copied()
}

impl RouteView {
    /// Reads the route file of the ring at `ring`, written by `writer_pid` (the ring's
    /// trailer), if it changed.
    pub fn poll(&mut self, ring: &Path, writer_pid: Option<u32>) {
        let Some(path) = route_file_of(ring) else {
            return;
        };
        match self.watch.poll(&path, writer_pid) {
            Polled::Unchanged | Polled::Absent => {}
            Polled::Foreign(_) => {
                *self = RouteView {
                    watch: std::mem::take(&mut self.watch),
                    ..RouteView::default()
                };
            }
            Polled::Read(f) => {
                self.problem = None;
                if self.current.is_none() {
                    // The first file seen starts the first interval.
                    self.folded = f.folded;
                    self.rows = rows(&f, None, 0.0);
                    self.baseline = Some(f.clone());
                }
                self.current = Some(f);
            }
            Polled::Refused(e) => self.problem = Some(format!("route file refused: {e}")),
        }
    }

    /// Ends a display interval of `seconds`: the rows' rates are over it.
    pub fn close_interval(&mut self, seconds: f64) {
        let Some(now) = &self.current else {
            return;
        };
        self.folded = now.folded;
        self.rows = rows(now, self.baseline.as_ref(), seconds);
        self.baseline = Some(now.clone());
    }
}

/// Each route's row: rates against `before` over `seconds`, or totals only without it.
fn rows(now: &RouteFile, before: Option<&RouteFile>, seconds: f64) -> Vec<RouteRow> {
    let s = seconds.max(1e-9);
    now.routes
        .iter()
        .map(|e: &RouteEntry| {
            let prev = before.and_then(|b| b.routes.iter().find(|p| p.route == e.route));
            let rate = |now: u64, then: Option<u64>| {
                before.map(|_| now.saturating_sub(then.unwrap_or(0)) as f64 / s)
            };
            RouteRow {
                route: e.route.clone(),
                bytes_per_s: rate(e.stats.bytes, prev.map(|p| p.stats.bytes)),
                transfers_per_s: rate(e.stats.transfers, prev.map(|p| p.stats.transfers)),
                xfer_p99_us: quantile(0.99, &e.stats.xfer_time, prev.map(|p| &p.stats.xfer_time)),
                bytes: e.stats.bytes,
                transfers: e.stats.transfers,
                errors: e.stats.errors_total(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p99_interpolates_in_its_bucket_and_counts_only_the_interval() {
        let mut before = Histogram::default();
        before.counts[5] = 1000; // 250..500 µs, earlier
        let mut now = before.clone();
        now.counts[2] = 100; // 25..50 µs, this interval
        assert_eq!(quantile(0.99, &now, Some(&before)), Some(50));
        assert_eq!(quantile(0.5, &now, Some(&before)), Some(38));
        assert_eq!(quantile(0.99, &before, Some(&before)), None);
        let mut above = Histogram::default();
        above.counts[TIME_BOUNDS_US.len()] = 3;
        assert_eq!(quantile(0.99, &above, None), Some(1_000_000));
    }
}
