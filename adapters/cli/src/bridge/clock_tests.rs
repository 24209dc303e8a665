use super::*;

/// A deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const START: u64 = 1_700_000_000_000_000;
/// The link's minimum one-way delay.
const MIN_DELAY: u64 = 900;

/// A device whose clock runs at `rate` × real time, sending a batch of 16 events and
/// then a clock frame every 10 ms, over a link whose delays are drawn from `seed`:
/// one frame in two near the minimum, the rest up to 2 ms more, and bursts of late
/// frames (2 to 30 frames, 1 to 25 ms late) starting on one frame in 80, plus one
/// long burst (60 frames, 20 ms late) at frames 1000 to 1060. Frames arrive in order
/// (a late frame holds up those after it). The bridge's order: each batch is mapped as
/// it arrives, then its clock frame is added; before the first clock frame, event
/// arrivals are pairs.
///
/// Returns each report (every 100 frames) with, for the events mapped since the one
/// before, their largest error against true time + the minimum delay.
fn run(rate: f64, ticks_per_second: u32, seed: u64) -> Vec<(ClockReport, u64, u64)> {
    let mut rng = Rng(seed | 1);
    let mut align = ClockAlign::new(ticks_per_second);
    let ticks = |real_us: u64| {
        (7_000_000.0 + real_us as f64 * rate * f64::from(ticks_per_second) / 1e6) as u64
    };
    let mut arrived_last = 0u64;
    let mut burst = (0u64, 0u64); // frames left, extra delay
    let mut clock_frames = false;
    let mut worst = 0u64;
    let mut reports = Vec::new();
    let mut delay = |rng: &mut Rng, frame: u64| {
        if (1000..1060).contains(&frame) {
            burst = (1, 20_000);
        } else if burst.0 == 0 && rng.below(80) == 0 {
            burst = (2 + rng.below(29), 1_000 + rng.below(24_000));
        }
        let extra = if burst.0 > 0 {
            burst.0 -= 1;
            burst.1
        } else {
            0
        };
        let jitter = if rng.below(2) == 0 {
            rng.below(4)
        } else {
            rng.below(2_000)
        };
        MIN_DELAY + extra + jitter
    };
    for frame in 0..2_000u64 {
        let sent = frame * 10_000 + 10_000;
        // The batch: 16 events recorded over the last 10 ms, sent just before the
        // clock frame; it arrives when the line lets it.
        let arrived = (START + sent + delay(&mut rng, frame)).max(arrived_last);
        arrived_last = arrived;
        for i in 0..16u64 {
            let real = sent - 10_000 + i * 600 + rng.below(600);
            let t = ticks(real);
            if !clock_frames {
                align.add(t, arrived);
            }
            let mapped = align.map_event(t, arrived).unwrap();
            let error = mapped.abs_diff(START + real + MIN_DELAY);
            worst = worst.max(error);
        }
        let clock_at = (START + sent + delay(&mut rng, frame)).max(arrived_last);
        arrived_last = clock_at;
        align.add(ticks(sent), clock_at);
        clock_frames = true;
        if frame % 100 == 99 {
            reports.push((align.report().unwrap(), worst, frame));
            worst = 0;
        }
    }
    reports
}

#[test]
fn every_events_mapped_time_is_within_the_reported_bound_under_load_and_drift() {
    for (rate, tps, seed) in [
        (1.0, 1_000_000, 1),
        (1.0001, 1_000_000, 2),
        (0.9999, 32_768, 3),
        (1.02, 80_000_000, 4),
        (0.98, 1_000_000, 5),
        (1.02, 32_768, 6),
    ] {
        let reports = run(rate, tps, seed);
        for &(report, worst, frame) in &reports {
            assert!(
                worst <= report.bound_us,
                "rate {rate}, seed {seed}, up to frame {frame}: an event {worst} µs off, bound {}",
                report.bound_us
            );
        }
        // The drift is measured: within 100 ppm of the truth at the end.
        let (last, _, _) = reports[reports.len() - 1];
        let expected = (1.0 / rate - 1.0) * 1e9;
        assert!(
            (last.drift_ppb as f64 - expected).abs() < 100_000.0,
            "rate {rate}: {} ppb, expected {expected}",
            last.drift_ppb
        );
    }
}

#[test]
fn the_bound_grows_with_the_measured_spread() {
    let reports = run(1.0001, 1_000_000, 7);
    let bound_after = |frame: u64| reports.iter().find(|r| r.2 >= frame).unwrap().0.bound_us;
    // A calm second before the long burst, and the second it ends in: its windows of
    // frames all 20 ms late stand 20 ms above the envelope.
    let calm = reports.iter().map(|r| r.0.bound_us).min().unwrap();
    assert!(calm < 10_000, "calm bound {calm}");
    assert!(bound_after(1060) > 20_000, "{}", bound_after(1060));
    assert!(bound_after(1060) > 2 * calm);
}

#[test]
fn a_device_clock_fast_or_slow_by_a_known_factor_maps_within_the_bound() {
    for (rate, tps) in [
        (1.0, 1_000_000),
        (1.0005, 1_000_000),
        (0.998, 32_768),
        (1.02, 80_000_000),
    ] {
        let mut align = ClockAlign::new(tps);
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
            let real = i * 10_000;
            let ticks = (real as f64 * rate * f64::from(tps) / 1e6) as u64;
            align.add(ticks, START + real + MIN_DELAY + jitter);
            truth.push((ticks, START + real));
        }
        let fit = align.fit().unwrap();
        // Within 50 µs, and two ticks of a coarse clock (its times are truncated).
        let ticks_us = 2e6 / f64::from(tps);
        assert!(
            (fit.bound_us as f64) < 50.0 + ticks_us,
            "rate {rate}: bound {}",
            fit.bound_us
        );
        let expected_ppb = ((1.0 / rate - 1.0) * 1e9) as i64;
        assert!(
            (fit.drift_ppb() - expected_ppb).abs() < 20_000,
            "rate {rate}: {} ppb",
            fit.drift_ppb()
        );
        // The fit's span: mapped = true + minimum delay ± bound.
        for &(ticks, real) in &truth[300..] {
            let mapped = align.map(ticks).unwrap() as i64;
            let error = mapped - (real as i64 + MIN_DELAY as i64);
            assert!(
                error.unsigned_abs() <= fit.bound_us,
                "rate {rate}: error {error} µs, bound {}",
                fit.bound_us
            );
        }
    }
}

#[test]
fn late_frames_do_not_move_the_envelope() {
    let mut align = ClockAlign::new(1_000_000);
    for i in 0..200u64 {
        // Every other window's frames all 30 ms late.
        let late = if (i / 8) % 2 == 1 { 30_000 } else { 0 };
        align.add(i * 10_000, START + i * 10_000 + MIN_DELAY + late);
    }
    let fit = align.fit().unwrap();
    assert_eq!(fit.drift_ppb(), 0);
    assert_eq!(align.map(5_000), Some(START + 5_000 + MIN_DELAY));
    // The late windows are the spread: the bound says so.
    assert!(fit.bound_us >= 30_000, "{}", fit.bound_us);
}

#[test]
fn an_event_is_never_mapped_after_it_arrived() {
    let mut align = ClockAlign::new(1_000_000);
    align.add(1_000, START);
    // A device time well ahead of the clock frame, arriving soon after it.
    assert_eq!(align.map_event(500_000, START + 10), Some(START + 10));
}

#[test]
fn absurd_device_times_never_give_an_absurd_rate() {
    let mut align = ClockAlign::new(1);
    for (ticks, host) in [(u64::MAX, 5u64), (0, 10), (u64::MAX / 2, 15), (1, u64::MAX)] {
        align.add(ticks, host);
        let fit = align.fit().unwrap();
        assert!(fit.slope.is_finite() && fit.slope > 0.0, "{fit:?}");
        let _ = align.map(ticks);
        let _ = align.map_event(ticks, host);
        let _ = align.report();
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
