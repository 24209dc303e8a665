//! The flush's side of routes: each route record drained from a lane becomes the
//! built-in event NIXL's format carries, and is added to its route's totals; each
//! route keeps its slowest transfers of the flush interval whole.
//!
//! The four records of one transfer are pushed in one batch, so a lane holds them
//! next to each other; the tally assembles them as they are drained (a part not
//! following its predecessor of the same route and stamp starts a new transfer, so
//! a transfer whose parts the allowlist left out is counted with what it has).
//!
//! Choosing the slowest costs the recording thread nothing: the flush sees every
//! transfer time anyway. Per route it keeps a min-heap of at most K transfers; a
//! transfer is compared with the heap's fastest (one comparison) and replaces it
//! only when slower.

use super::{OTHER_INDEX, Operation, ROUTE_BASE, SLOTS, part};
use crate::builtins::idx;
use crate::names::Named;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use telering_core::Event;
use telering_core::builtin::ErrorStatus;

/// Upper bounds (µs) of the per-route time histograms' buckets; a last bucket
/// holds everything above.
pub const TIME_BOUNDS_US: [u64; 12] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 100_000, 1_000_000,
];

/// A time histogram: per-bucket (not cumulative) counts, the bucket above the last
/// bound last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Histogram {
    /// Counts per bucket of [`TIME_BOUNDS_US`], then above.
    pub counts: [u64; TIME_BOUNDS_US.len() + 1],
    /// The sum of the values, µs.
    pub sum_us: u64,
}

impl Histogram {
    fn add(&mut self, us: u64) {
        let bucket = TIME_BOUNDS_US.partition_point(|&b| b < us);
        self.counts[bucket] = self.counts[bucket].saturating_add(1);
        self.sum_us = self.sum_us.saturating_add(us);
    }

    /// How many values, stopping at `u64::MAX` (a histogram read from a route file
    /// may hold any counts).
    ///
    /// ```
    /// use telering_std::route::Histogram;
    /// assert_eq!(Histogram::default().count(), 0);
    /// let full = Histogram { counts: [u64::MAX; 13], sum_us: 0 };
    /// assert_eq!(full.count(), u64::MAX);
    /// ```
    pub fn count(&self) -> u64 {
        self.counts.iter().fold(0, |n, &c| n.saturating_add(c))
    }

    /// Whether it holds no value.
    ///
    /// ```
    /// assert!(telering_std::route::Histogram::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }

    /// The counts per bucket as cumulative counts, each stopping at `u64::MAX`, made
    /// per-bucket again: for an encoder that adds them up (a cumulative count that
    /// reached `u64::MAX` stays there rather than wrapping).
    ///
    /// ```
    /// use telering_std::route::Histogram;
    /// let mut h = Histogram::default();
    /// h.counts[0] = u64::MAX;
    /// h.counts[1] = 5;
    /// let c = h.counts_saturated();
    /// assert_eq!((c[0], c[1]), (u64::MAX, 0));
    /// ```
    pub fn counts_saturated(&self) -> [u64; TIME_BOUNDS_US.len() + 1] {
        let mut out = self.counts;
        let mut cumulative = 0u64;
        for c in &mut out {
            let next = cumulative.saturating_add(*c);
            *c = next - cumulative;
            cumulative = next;
        }
        out
    }
}

/// One route's totals since the telemetry started (what the flush drained).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RouteStats {
    /// Bytes moved.
    pub bytes: u64,
    /// Transfers completed.
    pub transfers: u64,
    /// Descriptors those transfers covered.
    pub descriptors: u64,
    /// Transfer times.
    pub xfer_time: Histogram,
    /// Post times.
    pub post_time: Histogram,
    /// Errors per status, in [`ErrorStatus::ALL`] order.
    pub errors: [u64; ErrorStatus::ALL.len()],
}

impl RouteStats {
    /// Errors of every status, stopping at `u64::MAX`.
    ///
    /// ```
    /// use telering_std::route::RouteStats;
    /// let s = RouteStats { errors: [u64::MAX; 12], ..Default::default() };
    /// assert_eq!(s.errors_total(), u64::MAX);
    /// ```
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().fold(0, |n, &e| n.saturating_add(e))
    }

    /// Adds `other`'s totals to these (each stopping at `u64::MAX`): two slots that
    /// are one route in a report.
    pub(crate) fn merge(&mut self, other: &RouteStats) {
        self.bytes = self.bytes.saturating_add(other.bytes);
        self.transfers = self.transfers.saturating_add(other.transfers);
        self.descriptors = self.descriptors.saturating_add(other.descriptors);
        for (h, o) in [
            (&mut self.xfer_time, &other.xfer_time),
            (&mut self.post_time, &other.post_time),
        ] {
            for (c, oc) in h.counts.iter_mut().zip(o.counts) {
                *c = c.saturating_add(oc);
            }
            h.sum_us = h.sum_us.saturating_add(o.sum_us);
        }
        for (e, oe) in self.errors.iter_mut().zip(other.errors) {
            *e = e.saturating_add(oe);
        }
    }
}

/// One transfer kept whole because it was among its route's slowest of an interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SlowXfer {
    /// Transfer time, µs (first: the ordering is by it).
    pub xfer_us: u64,
    /// Start, µs since the Unix epoch (completion less the transfer time; 0 when the
    /// telemetry stamps no events).
    pub start_us: u64,
    /// Post time, µs.
    pub post_us: u64,
    /// Bytes.
    pub bytes: u64,
    /// Descriptors.
    pub descriptors: u64,
    /// The route's index ([`RouteId::index`](super::RouteId::index)).
    pub route_index: u16,
    /// The route's operation.
    pub operation: Operation,
}

/// What the flush hands exporters about routes: every route's totals and the slow
/// transfers of the interval.
#[derive(Clone, Debug, Default)]
pub struct RouteReport {
    /// Each route with its totals, in index order, then `other` of each operation
    /// when it was used.
    pub routes: Vec<(super::Route, RouteStats)>,
    /// The slowest transfers of the interval, at most K per route, slowest first.
    pub slow: Vec<(super::Route, SlowXfer)>,
    /// Routes folded into `other` so far.
    pub folded: u64,
}

/// A transfer being assembled from its records.
#[derive(Clone, Copy, Debug)]
struct Pending {
    key: usize,
    stamp: u64,
    last_part: u16,
    xfer: SlowXfer,
    has_time: bool,
}

/// Totals and slow transfers per route slot (index × operation).
#[derive(Debug)]
pub(crate) struct Tally {
    stats: Vec<RouteStats>,
    slow: Vec<BinaryHeap<Reverse<(SlowXfer, u64)>>>,
    keep: usize,
    pending: Option<Pending>,
}

/// The slot of a route record: index × 2 + operation.
fn key_of(id: u16) -> (usize, u16, Operation, u16) {
    let offset = id - ROUTE_BASE;
    let index = offset / SLOTS;
    let op = if offset & part::WRITE != 0 {
        Operation::Write
    } else {
        Operation::Read
    };
    let part = offset & (part::WRITE - 1);
    (usize::from(index) * 2 + (op as usize), index, op, part)
}

impl Tally {
    pub(crate) fn new(keep: u16) -> Tally {
        Tally {
            stats: Vec::new(),
            slow: Vec::new(),
            keep: usize::from(keep),
            pending: None,
        }
    }

    /// Takes route record `id` (≥ `ROUTE_BASE`, not the epoch marker) stamped `stamp`
    /// with `value`: its event (if it stands for one) into `out`, its values into the
    /// route's totals.
    pub(crate) fn take(
        &mut self,
        id: u16,
        stamp: u64,
        value: u64,
        names: &[Named],
        out: &mut Vec<Event>,
    ) {
        let (key, _, op, part) = key_of(id);
        if self.stats.len() <= key {
            self.stats.resize_with(key + 1, RouteStats::default);
        }
        let write = op == Operation::Write;
        let stats = &mut self.stats[key];
        let (builtin, event_value) = match part {
            part::BYTES => {
                stats.bytes = stats.bytes.saturating_add(value);
                (if write { idx::TX_BYTES } else { idx::RX_BYTES }, value)
            }
            part::REQUEST => {
                stats.transfers = stats.transfers.saturating_add(1);
                stats.descriptors = stats.descriptors.saturating_add(value);
                let requests = if write {
                    idx::TX_REQUESTS_NUM
                } else {
                    idx::RX_REQUESTS_NUM
                };
                (requests, 1)
            }
            part::XFER_TIME => {
                stats.xfer_time.add(value);
                (idx::XFER_TIME, value)
            }
            part::POST_TIME => {
                stats.post_time.add(value);
                (idx::XFER_POST_TIME, value)
            }
            part::ERROR => {
                // The status number was checked when it was recorded.
                let Some(status) = usize::try_from(value)
                    .ok()
                    .filter(|&s| s < ErrorStatus::ALL.len())
                else {
                    return;
                };
                stats.errors[status] = stats.errors[status].saturating_add(1);
                (idx::FIRST_ERROR + status, 1)
            }
            _ => return,
        };
        if part != part::ERROR {
            self.assemble(key, id, part, stamp, value);
        }
        if let Some(&(name, category)) = names.get(builtin) {
            out.push(Event::new(stamp, category, name, event_value));
        }
    }

    fn assemble(&mut self, key: usize, id: u16, part: u16, stamp: u64, value: u64) {
        let continues = self
            .pending
            .as_ref()
            .is_some_and(|p| p.key == key && p.stamp == stamp && p.last_part < part);
        if !continues {
            self.settle();
            let (_, index, operation, _) = key_of(id);
            self.pending = Some(Pending {
                key,
                stamp,
                last_part: part,
                xfer: SlowXfer {
                    xfer_us: 0,
                    start_us: 0,
                    post_us: 0,
                    bytes: 0,
                    descriptors: 0,
                    route_index: index,
                    operation,
                },
                has_time: false,
            });
        }
        let Some(p) = self.pending.as_mut() else {
            return;
        };
        p.last_part = part;
        match part {
            part::BYTES => p.xfer.bytes = value,
            part::REQUEST => p.xfer.descriptors = value,
            part::XFER_TIME => {
                p.xfer.xfer_us = value;
                p.has_time = true;
            }
            _ => p.xfer.post_us = value,
        }
        if part == part::POST_TIME {
            self.settle();
        }
    }

    /// Ends the transfer being assembled: kept if it is among its route's slowest.
    pub(crate) fn settle(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        if !p.has_time || self.keep == 0 {
            return;
        }
        if self.slow.len() <= p.key {
            self.slow.resize_with(p.key + 1, BinaryHeap::new);
        }
        let heap = &mut self.slow[p.key];
        // The raw stamp rides along; the flush converts it when it reports.
        let entry = Reverse((p.xfer, p.stamp));
        if heap.len() < self.keep {
            heap.push(entry);
        } else if heap.peek().is_some_and(|fastest| entry < *fastest) {
            // A kept transfer takes the fastest's place and sinks once (`PeekMut`
            // restores the heap when dropped), rather than a pop and a push.
            if let Some(mut fastest) = heap.peek_mut() {
                *fastest = entry;
            }
        }
    }

    /// The totals of every slot used, as (index, operation, totals).
    pub(crate) fn totals(&self) -> impl Iterator<Item = (u16, Operation, &RouteStats)> {
        self.stats.iter().enumerate().filter_map(|(key, s)| {
            // Tested without adding: every value may be as large as `u64::MAX`.
            let used = s.transfers > 0
                || s.bytes > 0
                || s.errors.iter().any(|&e| e > 0)
                || !s.xfer_time.is_empty()
                || !s.post_time.is_empty();
            let op = if key % 2 == 1 {
                Operation::Write
            } else {
                Operation::Read
            };
            used.then_some(((key / 2) as u16, op, s))
        })
    }

    /// Takes the interval's slow transfers, slowest first, their start converted by
    /// `micros` (raw stamp → µs since the epoch).
    pub(crate) fn take_slow(&mut self, micros: impl Fn(u64) -> u64) -> Vec<SlowXfer> {
        self.settle();
        let mut all = Vec::new();
        for heap in &mut self.slow {
            for Reverse((mut x, stamp)) in heap.drain() {
                x.start_us = micros(stamp).saturating_sub(x.xfer_us);
                all.push(x);
            }
        }
        all.sort_by(|a, b| b.cmp(a));
        all
    }
}

/// Whether lane-record `id` is a route record.
#[inline(always)]
pub(crate) fn is_route_record(id: u16) -> bool {
    id >= ROUTE_BASE
}

const _: () = assert!(OTHER_INDEX as usize * 2 + 1 < 1024);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::RouteId;

    #[test]
    fn histogram_buckets_take_values_up_to_their_bound() {
        let mut h = Histogram::default();
        for us in [0, 10, 11, 1_000_000, 1_000_001] {
            h.add(us);
        }
        assert_eq!(h.counts[0], 2);
        assert_eq!(h.counts[1], 1);
        assert_eq!(h.counts[TIME_BOUNDS_US.len() - 1], 1);
        assert_eq!(h.counts[TIME_BOUNDS_US.len()], 1);
        assert_eq!(h.count(), 5);
    }

    #[test]
    fn only_the_k_slowest_transfers_of_a_route_are_kept() {
        let mut tally = Tally::new(2);
        let route = RouteId::new(3, Operation::Write);
        let mut out = Vec::new();
        for (stamp, us) in [(1, 50), (2, 900), (3, 20), (4, 700), (5, 60)] {
            for (p, v) in [(0, 10), (1, 1), (2, us), (3, 2)] {
                tally.take(route.0 + p, stamp, v, &[], &mut out);
            }
        }
        let slow = tally.take_slow(|s| s * 1000);
        let times: Vec<u64> = slow.iter().map(|x| x.xfer_us).collect();
        assert_eq!(times, [900, 700]);
        assert_eq!(slow[0].start_us, 2000 - 900);
        assert_eq!(
            (slow[0].route_index, slow[0].operation),
            (3, Operation::Write)
        );
        assert!(
            tally.take_slow(|s| s).is_empty(),
            "one interval's transfers"
        );
    }
}
