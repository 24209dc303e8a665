//! The measuring harness shared by every benchmark in `benches/benches/`.
//!
//! These machines are shared and noisy, so absolute times mean little. Each benchmark
//! runs its contenders *interleaved* for several rounds (contender A, B, C, then A, B,
//! C again …), so that a burst of noise hits every contender of a round alike, and
//! reports for each contender the median throughput and, above all, its ratio to a
//! baseline contender computed per round: median and min–max of those ratios. That
//! table is what `BENCHMARKS.md` records.
//!
//! Environment: `TELERING_BENCH_ROUNDS` sets the number of rounds (default 7);
//! `TELERING_BENCH_ONLY=<substring>` keeps only matching contenders and the baseline,
//! for profiling one of them.

#![deny(missing_docs)]

pub mod nixl;
pub mod workload;

use std::time::{Duration, Instant};

/// One contender: a name and a closure that performs a fixed amount of work and
/// returns how long it took (so set-up can be excluded).
pub struct Contender<'a> {
    /// The name shown in the table.
    pub name: String,
    /// Runs one round.
    pub run: Box<dyn FnMut() -> Duration + 'a>,
}

impl std::fmt::Debug for Contender<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contender")
            .field("name", &self.name)
            .finish()
    }
}

impl<'a> Contender<'a> {
    /// A contender whose closure is timed as a whole.
    pub fn timed(name: impl Into<String>, mut work: impl FnMut() + 'a) -> Contender<'a> {
        Contender {
            name: name.into(),
            run: Box::new(move || {
                let start = Instant::now();
                work();
                start.elapsed()
            }),
        }
    }

    /// A contender that times itself (returns the measured duration).
    pub fn self_timed(
        name: impl Into<String>,
        run: impl FnMut() -> Duration + 'a,
    ) -> Contender<'a> {
        Contender {
            name: name.into(),
            run: Box::new(run),
        }
    }
}

/// Median, minimum and maximum of a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// The median.
    pub median: f64,
    /// The smallest value.
    pub min: f64,
    /// The largest value.
    pub max: f64,
}

impl Spread {
    /// Computes the spread of `values` (which must not be empty).
    pub fn of(values: &[f64]) -> Spread {
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Spread {
            median,
            min: v[0],
            max: v[n - 1],
        }
    }
}

/// The result of one comparison.
#[derive(Debug)]
pub struct Comparison {
    /// What was measured.
    pub title: String,
    /// Units of work per round (events, calls, requests).
    pub work_per_round: u64,
    /// Rounds measured (after one warm-up round).
    pub rounds: usize,
    /// Name of the baseline contender.
    pub baseline: String,
    /// Per contender: name, throughput spread (units per second), ratio to baseline.
    pub rows: Vec<(String, Spread, Spread)>,
    /// Per contender (in the order of `rows`): its time in each round, in seconds.
    pub round_secs: Vec<Vec<f64>>,
}

impl Comparison {
    /// The comparison as a Markdown table.
    pub fn to_markdown(&self) -> String {
        let mut out = format!(
            "### {}\n\n{} units per round, {} rounds; ratio = throughput ÷ throughput of `{}` in the same round.\n\n| contender | median M/s | min–max M/s | ratio (median) | ratio min–max |\n|---|---|---|---|---|\n",
            self.title, self.work_per_round, self.rounds, self.baseline
        );
        for (name, thr, ratio) in &self.rows {
            out.push_str(&format!(
                "| {name} | {:.1} | {:.1}–{:.1} | {:.2}× | {:.2}–{:.2}× |\n",
                thr.median / 1e6,
                thr.min / 1e6,
                thr.max / 1e6,
                ratio.median,
                ratio.min,
                ratio.max
            ));
        }
        out
    }

    /// The ratio spread of a contender to the baseline.
    pub fn ratio(&self, name: &str) -> Option<Spread> {
        self.rows.iter().find(|r| r.0 == name).map(|r| r.2)
    }

    /// The spread of `name`'s throughput ÷ `anchor`'s, computed per round like the
    /// ratios to the baseline: a second anchor measured in the same run.
    pub fn ratio_between(&self, name: &str, anchor: &str) -> Option<Spread> {
        let secs = |n: &str| {
            let i = self.rows.iter().position(|r| r.0 == n)?;
            self.round_secs.get(i)
        };
        let (of, to) = (secs(name)?, secs(anchor)?);
        let ratios: Vec<f64> = of.iter().zip(to).map(|(o, t)| t / o).collect();
        (!ratios.is_empty()).then(|| Spread::of(&ratios))
    }
}

/// Runs `contenders` interleaved for `rounds` rounds (after one warm-up round) and
/// compares each to the contender named `baseline`.
pub fn compare(
    title: &str,
    work_per_round: u64,
    rounds: usize,
    baseline: &str,
    mut contenders: Vec<Contender<'_>>,
) -> Comparison {
    assert!(rounds >= 1, "at least one round");
    // For profiling one contender: `TELERING_BENCH_ONLY=<substring>` keeps only the
    // contenders whose name contains it (and the baseline).
    if let Ok(only) = std::env::var("TELERING_BENCH_ONLY") {
        contenders.retain(|c| c.name == baseline || c.name.contains(&only));
    }
    let base = contenders
        .iter()
        .position(|c| c.name == baseline)
        .expect("baseline is one of the contenders");
    for c in contenders.iter_mut() {
        (c.run)();
    }
    let mut secs = vec![Vec::with_capacity(rounds); contenders.len()];
    for _ in 0..rounds {
        for (i, c) in contenders.iter_mut().enumerate() {
            secs[i].push((c.run)().as_secs_f64().max(1e-12));
        }
    }
    let rows = contenders
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let thr: Vec<f64> = secs[i].iter().map(|s| work_per_round as f64 / s).collect();
            let ratio: Vec<f64> = (0..rounds).map(|r| secs[base][r] / secs[i][r]).collect();
            (c.name.clone(), Spread::of(&thr), Spread::of(&ratio))
        })
        .collect();
    Comparison {
        title: title.to_string(),
        work_per_round,
        rounds,
        baseline: baseline.to_string(),
        rows,
        round_secs: secs,
    }
}

/// Rounds to run: `TELERING_BENCH_ROUNDS` or the default (at least 5).
pub fn rounds(default: usize) -> usize {
    std::env::var("TELERING_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_takes_the_middle_of_odd_and_even_samples() {
        assert_eq!(Spread::of(&[3.0, 1.0, 2.0]).median, 2.0);
        assert_eq!(Spread::of(&[4.0, 1.0, 2.0, 3.0]).median, 2.5);
        assert_eq!(Spread::of(&[4.0, 1.0]).min, 1.0);
    }

    #[test]
    fn a_contender_compared_to_itself_has_ratio_one() {
        let c = compare(
            "self",
            1,
            3,
            "a",
            vec![Contender::self_timed("a", || Duration::from_millis(2))],
        );
        assert_eq!(c.ratio("a").unwrap().median, 1.0);
    }

    #[test]
    fn a_ratio_between_two_contenders_is_taken_per_round() {
        let c = compare(
            "pair",
            1,
            3,
            "a",
            vec![
                Contender::self_timed("a", || Duration::from_millis(2)),
                Contender::self_timed("b", || Duration::from_millis(4)),
            ],
        );
        let b_vs_a = c.ratio_between("b", "a").unwrap();
        assert!((b_vs_a.median - 0.5).abs() < 1e-9, "{b_vs_a:?}");
        assert_eq!(c.ratio_between("b", "nobody"), None);
    }
}
