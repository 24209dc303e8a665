//! Maps a device's clock to the host's wall clock from (device time, host arrival
//! time) pairs.
//!
//! For a pair, `h − d = offset + delay` with a one-way delay that is never negative and
//! smallest when the link was idle. Pairs are taken in windows of [`WINDOW`]; each
//! window keeps its minimum-delay pair (smallest `h − b·d`, `b` the current fit's
//! slope, so that a drifting clock does not favour one end of the window). A least-squares line
//! `h = a + b·d` through the last [`POINTS`] minimum-delay pairs (and the current
//! window's, until it closes) gives the offset and the drift `b − 1`. The error
//! bound is the largest distance of those points from the line, plus 1 µs of
//! rounding: a mapped time is the true time plus the link's constant minimum delay
//! (which no one-way measurement can see; for a UART at least one frame's
//! transmission time) within ± the bound.

use std::collections::VecDeque;

/// Pairs per window; the window's minimum-delay pair is kept.
pub const WINDOW: usize = 8;
/// Minimum-delay pairs the line is fitted through.
pub const POINTS: usize = 16;

/// A fitted mapping from device microseconds to host microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// Device microseconds of the reference point.
    d0: f64,
    /// Host microseconds at `d0`.
    h0: f64,
    /// Host microseconds per device microsecond.
    slope: f64,
    /// Largest distance of a fitted point from the line, in µs, rounded up, plus 1.
    pub bound_us: u64,
}

impl Fit {
    /// Host microseconds for device microseconds `d`.
    pub fn map(&self, d: f64) -> u64 {
        let h = self.h0 + (d - self.d0) * self.slope;
        if h <= 0.0 { 0 } else { h.round() as u64 }
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

/// The estimator. `ticks_per_second` converts device ticks to microseconds.
#[derive(Debug)]
pub struct ClockAlign {
    ticks_per_second: u32,
    points: VecDeque<(f64, f64)>,
    window_min: Option<(f64, f64)>,
    window_len: usize,
    fit: Option<Fit>,
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
        let base = (pair.0, 0.0);
        let delay = |p: (f64, f64)| p.1 - (p.0 - base.0) * slope;
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

    fn refit(&self) -> Option<Fit> {
        let points: Vec<(f64, f64)> = self.points.iter().copied().chain(self.window_min).collect();
        let &(d0, h0) = points.last()?;
        // Centred on the newest point: the values are ~1e15 µs, their squares would
        // lose the microseconds in an f64.
        let n = points.len() as f64;
        let (mut sx, mut sy) = (0.0, 0.0);
        for &(d, h) in &points {
            sx += d - d0;
            sy += h - h0;
        }
        let (mx, my) = (sx / n, sy / n);
        let (mut sxx, mut sxy) = (0.0, 0.0);
        for &(d, h) in &points {
            let (x, y) = (d - d0 - mx, h - h0 - my);
            sxx += x * x;
            sxy += x * y;
        }
        // One point, or all at one device time: assume the nominal rate.
        let slope = if sxx > 0.0 { sxy / sxx } else { 1.0 };
        // Device times a hostile or broken clock makes absurd: keep the nominal rate.
        let slope = if slope.is_finite() && slope > 0.0 {
            slope
        } else {
            1.0
        };
        let h_at_d0 = h0 + my - mx * slope;
        let mut fit = Fit {
            d0,
            h0: h_at_d0,
            slope,
            bound_us: 0,
        };
        let worst = points
            .iter()
            .map(|&(d, h)| (h - (fit.h0 + (d - d0) * slope)).abs())
            .fold(0.0, f64::max);
        fit.bound_us = worst.ceil() as u64 + 1;
        Some(fit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pairs from a device clock running at `rate` × real time, with delays from a
    /// deterministic sequence: one in four near the minimum, the rest up to 5 ms.
    fn run(rate: f64, ticks_per_second: u32) -> (ClockAlign, Vec<(u64, u64)>) {
        let mut align = ClockAlign::new(ticks_per_second);
        let start = 1_700_000_000_000_000u64;
        let min_delay = 900u64;
        let mut state = 0x1234_5678u64;
        let mut truth = Vec::new();
        for i in 0..400u64 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let jitter = if i % 4 == 0 {
                state >> 62
            } else {
                (state >> 40) % 5000
            };
            let real = i * 10_000; // one clock frame every 10 ms
            let ticks = (real as f64 * rate * f64::from(ticks_per_second) / 1e6) as u64;
            align.add(ticks, start + real + min_delay + jitter);
            truth.push((ticks, start + real));
        }
        (align, truth)
    }

    #[test]
    fn a_device_clock_fast_or_slow_by_a_known_factor_maps_within_the_bound() {
        for (rate, tps) in [
            (1.0, 1_000_000),
            (1.0005, 1_000_000),
            (0.998, 32_768),
            (1.02, 80_000_000),
        ] {
            let (align, truth) = run(rate, tps);
            let fit = align.fit().unwrap();
            assert!(fit.bound_us < 50, "rate {rate}: bound {}", fit.bound_us);
            let expected_ppb = ((1.0 / rate - 1.0) * 1e9) as i64;
            assert!(
                (fit.drift_ppb() - expected_ppb).abs() < 20_000,
                "rate {rate}: {} ppb",
                fit.drift_ppb()
            );
            // The last 100 frames (the fit's span): mapped = true + minimum delay ± bound.
            for &(ticks, real) in &truth[300..] {
                let mapped = align.map(ticks).unwrap() as i64;
                let error = mapped - (real as i64 + 900);
                assert!(
                    error.unsigned_abs() <= fit.bound_us + 2,
                    "rate {rate}: error {error} µs, bound {}",
                    fit.bound_us
                );
            }
        }
    }

    #[test]
    fn absurd_device_times_never_give_an_absurd_rate() {
        let mut align = ClockAlign::new(1);
        for (ticks, host) in [(u64::MAX, 5u64), (0, 10), (u64::MAX / 2, 15), (1, u64::MAX)] {
            align.add(ticks, host);
            let fit = align.fit().unwrap();
            assert!(fit.slope.is_finite() && fit.slope > 0.0, "{fit:?}");
            let _ = align.map(ticks);
        }
    }

    #[test]
    fn one_pair_maps_at_the_nominal_rate() {
        let mut align = ClockAlign::new(1_000);
        assert_eq!(align.map(5), None);
        align.add(5, 1_000_000);
        assert_eq!(align.map(5), Some(1_000_000));
        assert_eq!(align.map(6), Some(1_001_000));
        assert_eq!(align.fit().unwrap().drift_ppb(), 0);
    }
}
