//! Per-agent statistics of `telering top`: incremental, and bounded in memory.
//!
//! Each event updates the current interval's tallies (counters and two
//! [`LogHistogram`]s); at every display tick [`AgentStats::close_interval`] turns them
//! into a [`Snapshot`] of rates and percentiles, appends the few figures the sparklines
//! need to a fixed-length history and starts the next interval. Memory per agent is fixed: two histograms of
//! [`LogHistogram::BUCKETS`] counters, [`HISTORY_LEN`] history points, at most
//! [`MAX_NAMES`] custom/backend names and the twelve error statuses (plus one
//! "other" entry each) — a 64-agent view for an hour uses what it used after a minute.
//!
//! Rates are per second of arrival time (the view's own clock between two ticks), so
//! they work the same for rings whose writers leave timestamps out.

use std::collections::VecDeque;
use telering_core::Category;
use telering_core::builtin::ErrorStatus;

/// Points kept for the sparklines: at a 1 s interval, the last five minutes.
pub const HISTORY_LEN: usize = 300;
/// Custom and backend event names tracked per agent; further names count as "(other)".
pub const MAX_NAMES: usize = 32;

/// A histogram with logarithmic buckets of bounded relative width: values below
/// `2^SUB_BITS` have a bucket each; above, each power of two is split into
/// `2^SUB_BITS` equal buckets. A quantile is reported as its bucket's midpoint, so it
/// is within `2^-(SUB_BITS+1)` (1.6 %) of the exact order statistic.
///
/// ```
/// use telering_cli::top::stats::LogHistogram;
/// let mut h = LogHistogram::new();
/// for v in 1..=1000 { h.record(v); }
/// let p50 = h.quantile(0.5).unwrap() as f64;
/// assert!((p50 - 500.0).abs() <= 500.0 / 64.0 + 1.0, "{p50}");
/// ```
#[derive(Clone, Debug)]
pub struct LogHistogram {
    counts: Box<[u32; LogHistogram::BUCKETS]>,
    total: u64,
}

const SUB_BITS: u32 = 5;
const SUB: usize = 1 << SUB_BITS;

impl LogHistogram {
    /// Buckets per histogram: exact below 32, then 32 per power of two up to 2^64.
    pub const BUCKETS: usize = SUB + (64 - SUB_BITS as usize) * SUB;

    /// An empty histogram.
    pub fn new() -> LogHistogram {
        LogHistogram {
            counts: Box::new([0; LogHistogram::BUCKETS]),
            total: 0,
        }
    }

    fn index(value: u64) -> usize {
        if value < SUB as u64 {
            return value as usize;
        }
        let exp = 63 - value.leading_zeros(); // >= SUB_BITS
        let shift = exp - SUB_BITS;
        let mantissa = ((value >> shift) as usize) & (SUB - 1);
        SUB + (exp - SUB_BITS) as usize * SUB + mantissa
    }

    /// The lowest value and the width of bucket `index`.
    fn bounds(index: usize) -> (u64, u64) {
        if index < SUB {
            return (index as u64, 1);
        }
        let group = (index - SUB) / SUB;
        let mantissa = ((index - SUB) % SUB) as u64;
        let shift = group as u32;
        let low = ((SUB as u64) | mantissa) << shift;
        (low, 1u64 << shift)
    }

    /// Counts one value.
    pub fn record(&mut self, value: u64) {
        let i = LogHistogram::index(value);
        self.counts[i] = self.counts[i].saturating_add(1);
        self.total += 1;
    }

    /// Values counted.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The `q`-quantile (0 ≤ q ≤ 1) as the midpoint of the bucket holding the
    /// `ceil(q·n)`-th smallest value, or `None` when empty.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += u64::from(c);
            if seen >= rank {
                let (low, width) = LogHistogram::bounds(i);
                return Some(low.saturating_add((width - 1) / 2));
            }
        }
        None
    }

    /// Empties the histogram.
    pub fn clear(&mut self) {
        if self.total != 0 {
            self.counts.fill(0);
            self.total = 0;
        }
    }
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram::new()
    }
}

/// A count per key for a bounded set of keys, with an overflow count.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    entries: Vec<(String, u64, u64)>, // name, this interval, total
    /// Events whose key did not fit.
    pub other: u64,
    limit: usize,
}

impl Tally {
    fn with_limit(limit: usize) -> Tally {
        Tally {
            limit,
            ..Tally::default()
        }
    }

    fn add(&mut self, key: &str, n: u64) {
        if let Some(e) = self.entries.iter_mut().find(|e| e.0 == key) {
            e.1 += n;
            e.2 += n;
        } else if self.entries.len() < self.limit {
            self.entries.push((key.to_owned(), n, n));
        } else {
            self.other += n;
        }
    }

    /// `(key, count in the last interval, total)` for every key, most frequent total first.
    pub fn sorted(&self) -> Vec<(String, u64, u64)> {
        let mut v = self.entries.clone();
        v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        v
    }

    fn close(&mut self) -> Vec<(String, u64)> {
        let mut now: Vec<(String, u64)> = self
            .entries
            .iter()
            .filter(|e| e.1 > 0)
            .map(|e| (e.0.clone(), e.1))
            .collect();
        now.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        for e in &mut self.entries {
            e.1 = 0;
        }
        now
    }
}

/// What one interval accumulates.
#[derive(Clone, Debug, Default)]
struct Interval {
    events: u64,
    tx_bytes: u64,
    rx_bytes: u64,
    requests: u64,
    errors: u64,
    xfer_time: LogHistogram,
    post_time: LogHistogram,
    timestamped: bool,
}

/// Rates and percentiles of one closed interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Seconds the interval lasted.
    pub seconds: f64,
    /// Events per second.
    pub events_per_s: f64,
    /// `agent_tx_bytes` per second.
    pub tx_bytes_per_s: f64,
    /// `agent_rx_bytes` per second.
    pub rx_bytes_per_s: f64,
    /// `agent_tx_requests_num` + `agent_rx_requests_num` per second.
    pub requests_per_s: f64,
    /// Transfer time (`agent_xfer_time`, µs) median.
    pub xfer_p50_us: Option<u64>,
    /// Transfer time 99th percentile.
    pub xfer_p99_us: Option<u64>,
    /// Post time (`agent_xfer_post_time`, µs) median.
    pub post_p50_us: Option<u64>,
    /// Error counts per second (the events' values are counts).
    pub errors_per_s: f64,
    /// The status with the highest count in the interval.
    pub top_error: Option<String>,
    /// Custom and backend names with their rate in the interval.
    pub names_per_s: Vec<(String, f64)>,
    /// Whether any event in the interval carried a timestamp (non-zero).
    pub timestamped: bool,
}

/// The statistics of one agent.
#[derive(Clone, Debug)]
pub struct AgentStats {
    current: Interval,
    errors: Tally,
    names: Tally,
    last: Snapshot,
    /// Total events seen.
    pub events_total: u64,
    /// `(tx bytes/s, rx bytes/s, xfer p99 µs)` per past interval, oldest first.
    pub history: VecDeque<(u64, u64, u64)>,
}

impl Default for AgentStats {
    fn default() -> Self {
        AgentStats::new()
    }
}

impl AgentStats {
    /// Empty statistics.
    pub fn new() -> AgentStats {
        AgentStats {
            current: Interval::default(),
            errors: Tally::with_limit(ErrorStatus::ALL.len() + 4),
            names: Tally::with_limit(MAX_NAMES),
            last: Snapshot::default(),
            events_total: 0,
            history: VecDeque::with_capacity(HISTORY_LEN),
        }
    }

    /// Counts one event: `category` and `name` as decoded, `value` its value.
    pub fn record(&mut self, timestamp_us: u64, category: Category, name: &str, value: u64) {
        let c = &mut self.current;
        c.events += 1;
        c.timestamped |= timestamp_us != 0;
        self.events_total += 1;
        match (category, name) {
            (Category::Transfer, "agent_tx_bytes") => c.tx_bytes += value,
            (Category::Transfer, "agent_rx_bytes") => c.rx_bytes += value,
            (Category::Transfer, "agent_tx_requests_num" | "agent_rx_requests_num") => {
                c.requests += value
            }
            (Category::Performance, "agent_xfer_time") => c.xfer_time.record(value),
            (Category::Performance, "agent_xfer_post_time") => c.post_time.record(value),
            (Category::Error, _) => {
                c.errors += value;
                self.errors.add(name, value);
            }
            (Category::Custom | Category::Backend, _) => self.names.add(name, 1),
            _ => {}
        }
    }

    /// Ends the interval that lasted `seconds`, returning its snapshot (also kept as
    /// [`AgentStats::last`]).
    pub fn close_interval(&mut self, seconds: f64) -> &Snapshot {
        let s = seconds.max(1e-9);
        let c = &mut self.current;
        let names = self.names.close();
        let errors = self.errors.close();
        self.last = Snapshot {
            seconds,
            events_per_s: c.events as f64 / s,
            tx_bytes_per_s: c.tx_bytes as f64 / s,
            rx_bytes_per_s: c.rx_bytes as f64 / s,
            requests_per_s: c.requests as f64 / s,
            xfer_p50_us: c.xfer_time.quantile(0.5),
            xfer_p99_us: c.xfer_time.quantile(0.99),
            post_p50_us: c.post_time.quantile(0.5),
            errors_per_s: c.errors as f64 / s,
            top_error: errors.first().map(|e| e.0.clone()),
            names_per_s: names.into_iter().map(|(n, k)| (n, k as f64 / s)).collect(),
            timestamped: c.timestamped,
        };
        if self.history.len() == HISTORY_LEN {
            self.history.pop_front();
        }
        self.history.push_back((
            self.last.tx_bytes_per_s as u64,
            self.last.rx_bytes_per_s as u64,
            self.last.xfer_p99_us.unwrap_or(0),
        ));
        c.events = 0;
        c.tx_bytes = 0;
        c.rx_bytes = 0;
        c.requests = 0;
        c.errors = 0;
        c.timestamped = false;
        c.xfer_time.clear();
        c.post_time.clear();
        &self.last
    }

    /// The last closed interval.
    pub fn last(&self) -> &Snapshot {
        &self.last
    }

    /// Error statuses with `(count last interval, total)`, most frequent first.
    pub fn error_counts(&self) -> Vec<(String, u64, u64)> {
        self.errors.sorted()
    }

    /// Custom/backend names beyond [`MAX_NAMES`], counted together.
    pub fn other_names(&self) -> u64 {
        self.names.other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).max(1);
        sorted[rank - 1]
    }

    #[test]
    fn bucket_bounds_contain_their_values() {
        for v in (0..5000u64).chain([u64::MAX, 1 << 40, (1 << 40) - 1, 123_456_789]) {
            let (low, width) = LogHistogram::bounds(LogHistogram::index(v));
            assert!(low <= v && v - low < width, "{v}: {low}+{width}");
        }
        assert!(LogHistogram::index(u64::MAX) < LogHistogram::BUCKETS);
    }

    #[test]
    fn quantiles_match_a_sort_within_the_bucket_width() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for round in 0..20 {
            let mut h = LogHistogram::new();
            let mut values = Vec::new();
            let n = 1 + round * 537;
            for _ in 0..n {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Log-uniform between 1 and ~10^7 µs, as transfer times spread.
                let v = (seed % 10_000_000) >> (seed % 20);
                h.record(v);
                values.push(v);
            }
            values.sort_unstable();
            for q in [0.0, 0.01, 0.5, 0.9, 0.99, 1.0] {
                let want = exact(&values, q);
                let got = h.quantile(q).unwrap();
                let bound = (want as f64 / SUB as f64 / 2.0).max(0.5);
                assert!(
                    (got as f64 - want as f64).abs() <= bound,
                    "n={n} q={q}: {got} vs {want}"
                );
            }
        }
    }

    #[test]
    fn empty_histogram_has_no_quantile_and_clear_empties() {
        let mut h = LogHistogram::new();
        assert_eq!(h.quantile(0.5), None);
        h.record(7);
        assert_eq!(h.quantile(0.5), Some(7));
        h.clear();
        assert!(h.is_empty());
    }

    #[test]
    fn rates_are_counts_over_the_interval() {
        let mut a = AgentStats::new();
        for i in 0..500 {
            a.record(i, Category::Transfer, "agent_tx_bytes", 1000);
            a.record(i, Category::Transfer, "agent_rx_bytes", 10);
            a.record(i, Category::Transfer, "agent_tx_requests_num", 1);
            a.record(i, Category::Performance, "agent_xfer_time", i);
            a.record(i, Category::Performance, "agent_xfer_post_time", 5);
        }
        a.record(1, Category::Error, "NIXL_ERR_BACKEND", 3);
        a.record(1, Category::Error, "NIXL_ERR_CANCELED", 1);
        a.record(1, Category::Backend, "ucx_retries", 9);
        let s = a.close_interval(0.5).clone();
        assert_eq!(s.events_per_s, 5006.0);
        assert_eq!(s.tx_bytes_per_s, 1_000_000.0);
        assert_eq!(s.rx_bytes_per_s, 10_000.0);
        assert_eq!(s.requests_per_s, 1000.0);
        assert_eq!(s.errors_per_s, 8.0);
        assert_eq!(s.top_error.as_deref(), Some("NIXL_ERR_BACKEND"));
        assert_eq!(s.post_p50_us, Some(5));
        let p50 = s.xfer_p50_us.unwrap() as f64;
        assert!((p50 - 249.0).abs() <= 249.0 / 64.0 + 0.5, "{p50}");
        assert_eq!(s.names_per_s, vec![("ucx_retries".to_string(), 2.0)]);
        assert!(s.timestamped);
        // The next interval starts from zero; totals remain.
        let s = a.close_interval(1.0).clone();
        assert_eq!(s.events_per_s, 0.0);
        assert_eq!(s.xfer_p99_us, None);
        assert_eq!(a.events_total, 2503);
        assert_eq!(a.error_counts()[0], ("NIXL_ERR_BACKEND".to_string(), 0, 3));
    }

    #[test]
    fn memory_stays_bounded_over_many_intervals_and_names() {
        let mut a = AgentStats::new();
        for tick in 0..(HISTORY_LEN as u64 * 3) {
            for k in 0..100 {
                a.record(0, Category::Custom, &format!("name_{tick}_{k}"), 1);
                a.record(0, Category::Error, &format!("STATUS_{k}"), 1);
            }
            a.close_interval(1.0);
        }
        assert_eq!(a.history.len(), HISTORY_LEN);
        assert_eq!(a.names.entries.len(), MAX_NAMES);
        assert!(a.errors.entries.len() <= ErrorStatus::ALL.len() + 4);
        assert!(a.other_names() > 0);
        assert!(!a.last().timestamped, "all timestamps were 0");
    }
}
