//! Maps a device's clock to the host's wall clock from (device time, host arrival
//! time) pairs, with an error bound the data itself holds to.
//!
//! # Method: the lower envelope
//!
//! For a pair, `h = a + b·d + D + e`: the true line `a + b·d` (host time of device
//! time `d`), the link's minimum one-way delay `D` (constant; one direction alone
//! cannot see it) and an excess delay `e ≥ 0` (queueing, a busy host, a burst of late
//! frames). Every pair lies on or above the line `a + b·d + D`, and the pairs that met
//! an idle link lie on it. So the mapping is the line that lies below every pair and
//! as high as it can: a supporting line of the pairs' lower convex hull (as in Moon,
//! Skelly and Towsley's skew estimation, *maximise the line at the pairs' mean device
//! time subject to lying below all of them*). Late frames, however many, sit above the
//! hull and move nothing; a least-squares line would be pulled up by them.
//!
//! Pairs are taken in windows of [`WINDOW`]; each window keeps its lowest pair
//! (smallest `h − b·d`, `b` the current slope), and the hull is built over the last
//! [`POINTS`] of them and the open window's, so memory and work stay bounded and the
//! line follows a drift that changes slowly. `b − 1` is the drift.
//!
//! # The error bound
//!
//! A mapped time is the true time plus `D` within ± the bound. At each fit:
//!
//! - the *spread* `S` is the largest height of a kept pair above the line: a window
//!   whose every frame came late (load) stands out by that much, and until it ages
//!   out of the fit the bound keeps it (the bound grows with the measured spread);
//! - the base bound is `2·S + 1 tick + 2 µs`: the line's own points are off by their
//!   excess delay, which the spread of the others measures;
//! - beyond the pairs' device-time span the slope's uncertainty adds: `2·(S + 1)/span`
//!   per µs of distance, and [`MAX_DRIFT`] while fewer than [`MIN_POINTS`] windows are
//!   in (one pair says nothing about the rate).
//!
//! Each mapped event is kept until the next [`ClockAlign::report`]; the bound reported
//! covers every one of them *as mapped* against the fit of the report: its distance
//! from the current line plus the current bound there. An event mapped early, through
//! a line later data showed to be off, widens the bound reported for its second, so
//! the bound written never claims what the data contradicts. An event is never mapped
//! later than it arrived (its true time plus `D` is before its arrival).

use std::collections::VecDeque;

/// Pairs per window; the window's lowest pair is kept.
pub const WINDOW: usize = 8;
/// Windows' lowest pairs the envelope is built over.
pub const POINTS: usize = 16;
/// Windows needed before the slope's uncertainty is measured rather than assumed.
pub const MIN_POINTS: usize = 4;
/// The rate error assumed until then (and the most ever assumed): 10 %.
pub const MAX_DRIFT: f64 = 0.1;
/// Events kept for the next report; beyond, the kept ones are settled against the
/// fit of the moment and their worst distance kept.
const MAX_PENDING: usize = 1 << 16;

/// A fitted mapping from device microseconds to host microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// Device microseconds of the reference point.
    d0: f64,
    /// Host microseconds at `d0`.
    h0: f64,
    /// Host microseconds per device microsecond.
    slope: f64,
    /// The device-time span of the fit's pairs.
    first_d: f64,
    last_d: f64,
    /// Rate uncertainty beyond the span (host µs per device µs).
    slope_error: f64,
    /// Largest height of a kept pair above the line, in µs.
    pub spread_us: f64,
    /// The bound inside the span, in µs: `2·S + 1 tick + 2`, rounded up.
    pub bound_us: u64,
}

impl Fit {
    /// Host microseconds for device microseconds `d`.
    pub fn map(&self, d: f64) -> u64 {
        let h = self.line(d);
        if h <= 0.0 { 0 } else { h.round() as u64 }
    }

    fn line(&self, d: f64) -> f64 {
        self.h0 + (d - self.d0) * self.slope
    }

    /// The error bound of a time mapped from device microseconds `d`.
    pub fn bound_at(&self, d: f64) -> u64 {
        let outside = (d - self.last_d).max(self.first_d - d).max(0.0);
        let extra = (outside * self.slope_error).ceil();
        self.bound_us.saturating_add(if extra.is_finite() {
            extra as u64
        } else {
            u64::MAX
        })
    }

    /// Drift of the device clock against the host's, in parts per billion: positive
    /// when the device clock runs slow (the host sees more time pass).
    pub fn drift_ppb(&self) -> i64 {
        ((self.slope - 1.0) * 1e9).round() as i64
    }

    /// Host minus device time at device time `d`, in µs.
    pub fn offset_at(&self, d: f64) -> i64 {
        (self.map(d) as f64 - d).round() as i64
    }
}

/// What the bridge writes about the mapping: offset, drift, and a bound that holds
/// for every event mapped since the previous report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockReport {
    /// Host minus device µs at the newest pair.
    pub offset_us: i64,
    /// Drift in parts per billion.
    pub drift_ppb: i64,
    /// The bound, in µs.
    pub bound_us: u64,
}

/// The estimator. `ticks_per_second` converts device ticks to microseconds.
#[derive(Debug)]
pub struct ClockAlign {
    ticks_per_second: u32,
    points: VecDeque<(f64, f64)>,
    window_min: Option<(f64, f64)>,
    window_len: usize,
    fit: Option<Fit>,
    /// Events mapped since the last report: (device µs, host µs as mapped).
    pending: Vec<(f64, u64)>,
    /// The worst bound of events settled early (see [`MAX_PENDING`]).
    settled_bound: u64,
}

impl ClockAlign {
    /// An estimator with no pairs yet.
    pub fn new(ticks_per_second: u32) -> ClockAlign {
        ClockAlign {
            ticks_per_second: ticks_per_second.max(1),
            points: VecDeque::new(),
            window_min: None,
            window_len: 0,
            fit: None,
            pending: Vec::new(),
            settled_bound: 0,
        }
    }

    /// Device ticks in microseconds.
    pub fn ticks_to_us(&self, ticks: u64) -> f64 {
        ticks as f64 * 1e6 / f64::from(self.ticks_per_second)
    }

    /// Adds a pair: device `ticks`, seen on the host at `host_us`.
    pub fn add(&mut self, ticks: u64, host_us: u64) {
        let pair = (self.ticks_to_us(ticks), host_us as f64);
        // The delay up to a constant, along the current fit's slope: with a drifting
        // device clock, plain `h − d` would favour one end of every window.
        let slope = self.fit.map_or(1.0, |f| f.slope);
        let delay = |p: (f64, f64)| p.1 - (p.0 - pair.0) * slope;
        if self.window_min.is_none_or(|m| delay(pair) < delay(m)) {
            self.window_min = Some(pair);
        }
        self.window_len += 1;
        if self.window_len == WINDOW {
            if let Some(min) = self.window_min.take() {
                self.points.push_back(min);
                if self.points.len() > POINTS {
                    self.points.pop_front();
                }
            }
            self.window_len = 0;
        }
        self.fit = self.refit();
    }

    /// The current mapping, once a pair arrived.
    pub fn fit(&self) -> Option<Fit> {
        self.fit
    }

    /// Host microseconds for device `ticks`: through the fit, or `None` before the
    /// first pair.
    pub fn map(&self, ticks: u64) -> Option<u64> {
        self.fit.map(|f| f.map(self.ticks_to_us(ticks)))
    }

    /// Maps an event's device `ticks` that arrived at `arrived_us` (never later than
    /// that), and keeps it for the next [`report`](Self::report)'s bound. `None`
    /// before the first pair.
    pub fn map_event(&mut self, ticks: u64, arrived_us: u64) -> Option<u64> {
        let d = self.ticks_to_us(ticks);
        let mapped = self.fit?.map(d).min(arrived_us);
        if self.pending.len() >= MAX_PENDING {
            self.settled_bound = self.settled_bound.max(self.worst_pending());
            self.pending.clear();
        }
        self.pending.push((d, mapped));
        Some(mapped)
    }

    /// The bound that holds, by the current fit, for every event kept.
    fn worst_pending(&self) -> u64 {
        let Some(fit) = self.fit else { return 0 };
        self.pending
            .iter()
            .map(|&(d, mapped)| {
                let off = (mapped as f64 - fit.line(d)).abs().ceil();
                let off = if off.is_finite() {
                    off as u64
                } else {
                    u64::MAX
                };
                fit.bound_at(d).saturating_add(off)
            })
            .fold(fit.bound_us, u64::max)
    }

    /// Offset, drift, and a bound holding for every event mapped since the previous
    /// report (then forgotten); `None` before the first pair.
    pub fn report(&mut self) -> Option<ClockReport> {
        let fit = self.fit?;
        let bound_us = self.worst_pending().max(self.settled_bound);
        self.pending.clear();
        self.settled_bound = 0;
        Some(ClockReport {
            offset_us: fit.offset_at(fit.last_d),
            drift_ppb: fit.drift_ppb(),
            bound_us,
        })
    }

    fn refit(&self) -> Option<Fit> {
        let mut points: Vec<(f64, f64)> =
            self.points.iter().copied().chain(self.window_min).collect();
        let &(d0, h0) = points.last()?;
        let prior = self.fit.map_or(1.0, |f| f.slope);
        // Centred on the newest point: the values are ~1e15 µs, their products would
        // lose the microseconds in an f64.
        for p in &mut points {
            *p = (p.0 - d0, p.1 - h0);
        }
        points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        // One point per device time, the lowest.
        points.dedup_by(|later, earlier| later.0 == earlier.0);
        let hull = lower_hull(&points);
        let mean = points.iter().map(|p| p.0).sum::<f64>() / points.len() as f64;
        // The hull's edge over the mean device time.
        let edge = hull
            .windows(2)
            .find(|e| e[0].0 <= mean && mean <= e[1].0)
            .map(|e| (e[0], e[1]));
        let mut slope = match edge {
            Some((p, q)) => (q.1 - p.1) / (q.0 - p.0),
            None => prior,
        };
        // The edge can be short, and its two ends' excess delays differ: refine the
        // slope by least squares over the points near the envelope (within twice the
        // lower quartile of heights above it, and a tick and 2 µs), which spread over
        // the span; late windows stand far above and are left out.
        let tick_us = 1e6 / f64::from(self.ticks_per_second);
        if slope.is_finite() && slope > 0.0 {
            let base = points
                .iter()
                .map(|p| p.1 - slope * p.0)
                .fold(f64::INFINITY, f64::min);
            let mut heights: Vec<f64> = points.iter().map(|p| p.1 - slope * p.0 - base).collect();
            heights.sort_by(f64::total_cmp);
            let near = 2.0 * heights[heights.len() / 4] + tick_us + 2.0;
            let chosen: Vec<(f64, f64)> = points
                .iter()
                .copied()
                .filter(|p| p.1 - slope * p.0 - base <= near)
                .collect();
            if let Some(refined) =
                least_squares_slope(&chosen, points[points.len() - 1].0 - points[0].0)
            {
                slope = refined;
            }
        }
        // Device times a hostile or broken clock makes absurd: keep the nominal rate.
        if !(slope.is_finite() && slope > 0.0) {
            slope = 1.0;
        }
        // The highest line of this slope below every point.
        let intercept = points
            .iter()
            .map(|p| p.1 - slope * p.0)
            .fold(f64::INFINITY, f64::min);
        let spread = points
            .iter()
            .map(|p| p.1 - (intercept + slope * p.0))
            .fold(0.0, f64::max);
        let (first_d, last_d) = (points[0].0, points[points.len() - 1].0);
        let span = last_d - first_d;
        let slope_error = if self.points.len() >= MIN_POINTS && span > 0.0 {
            (2.0 * (spread + 1.0) / span).min(MAX_DRIFT)
        } else {
            MAX_DRIFT
        };
        let bound = (2.0 * spread + tick_us + 2.0).ceil();
        Some(Fit {
            d0,
            h0: h0 + intercept,
            slope,
            first_d: first_d + d0,
            last_d: last_d + d0,
            slope_error,
            spread_us: spread,
            bound_us: if bound.is_finite() {
                bound as u64
            } else {
                u64::MAX
            },
        })
    }
}

/// The least-squares slope through `points` (centred values), if they span at least a
/// quarter of `span`.
fn least_squares_slope(points: &[(f64, f64)], span: f64) -> Option<f64> {
    let (first, last) = (points.first()?, points.last()?);
    if points.len() < 2 || last.0 - first.0 < span / 4.0 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for p in points {
        sxx += (p.0 - mx) * (p.0 - mx);
        sxy += (p.0 - mx) * (p.1 - my);
    }
    let slope = sxy / sxx;
    (slope.is_finite() && slope > 0.0).then_some(slope)
}

/// The lower convex hull of `points` (sorted by x, one per x), left to right.
fn lower_hull(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut hull: Vec<(f64, f64)> = Vec::with_capacity(points.len());
    for &p in points {
        while let [.., o, a] = hull[..] {
            let cross = (a.0 - o.0) * (p.1 - o.1) - (a.1 - o.1) * (p.0 - o.0);
            // Not a left turn: `a` is on or above the segment from `o` to `p`.
            if cross <= 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    hull
}

#[cfg(test)]
#[path = "clock_tests.rs"]
mod tests;
