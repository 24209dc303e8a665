//! OpenMetrics exemplars on the route transfer-time histograms: each kept slow
//! transfer ([`RouteReport::slow`]) becomes the exemplar of the
//! `telering_route_xfer_time_us` bucket it falls in, labelled with the `trace_id` and
//! `span_id` of the span the `otlp` exporter pushes for it ([`SlowXfer::trace_ids`]),
//! its value the transfer time (µs) and its timestamp the transfer's end, so that a
//! person can go from a latency bucket in Grafana to the span.
//!
//! Exemplars exist only in the OpenMetrics text format: the Prometheus text format
//! 0.0.4 page is left exactly as the model renders it. A bucket keeps its exemplar
//! until a later kept transfer falls in it (within one flush interval, the slowest);
//! a bucket no kept transfer fell in has none.
//!
//! The model renders the page; the exemplars are then added at the end of the bucket
//! lines of the routes this exporter reported. A bucket line is found by its exact
//! label text, encoded by `prometheus-client` as the model encodes it, so a route
//! name holding quotes, backslashes or newlines matches as it is escaped there.

use std::collections::HashMap;
use std::fmt::Write as _;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use telering_std::route::{Route, RouteReport, SlowXfer, TIME_BOUNDS_US, TraceIds};

/// The histogram family that carries the exemplars.
const FAMILY: &str = "telering_route_xfer_time_us";

/// Buckets of a route histogram: the bounds, then `+Inf`.
const BUCKETS: usize = TIME_BOUNDS_US.len() + 1;

/// One bucket's exemplar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Exemplar {
    ids: TraceIds,
    xfer_us: u64,
    /// The transfer's end, µs since the epoch (0: unknown, no timestamp written).
    end_us: u64,
}

/// The exemplars of one agent's routes (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct RouteExemplars {
    buckets: HashMap<Route, [Option<Exemplar>; BUCKETS]>,
}

impl RouteExemplars {
    /// Takes `agent`'s report: each kept transfer becomes its bucket's exemplar
    /// (the slowest of the report when several fall in one bucket).
    pub(crate) fn record(&mut self, agent: &str, report: &RouteReport) {
        let mut taken: HashMap<(&Route, usize), ()> = HashMap::new();
        // `slow` is slowest first, so a bucket's first transfer is its slowest.
        let mut slow: Vec<(usize, &(Route, SlowXfer))> = report.slow.iter().enumerate().collect();
        slow.sort_by_key(|(_, (_, x))| std::cmp::Reverse(x.xfer_us));
        for (position, (route, x)) in slow {
            let bucket = TIME_BOUNDS_US.partition_point(|&b| b < x.xfer_us);
            if taken.insert((route, bucket), ()).is_some() {
                continue;
            }
            let end_us = if x.start_us == 0 {
                0
            } else {
                x.start_us.saturating_add(x.xfer_us)
            };
            self.buckets.entry(route.clone()).or_insert([None; BUCKETS])[bucket] = Some(Exemplar {
                ids: x.trace_ids(agent, route, position),
                xfer_us: x.xfer_us,
                end_us,
            });
        }
    }

    /// `page` (OpenMetrics text rendered by the model) with the exemplars added to
    /// the bucket lines of `agent`'s routes on `hostname`.
    pub(crate) fn splice(&self, page: String, agent: &str, hostname: &str) -> String {
        if self.buckets.is_empty() {
            return page;
        }
        let encoded: Vec<_> = self
            .buckets
            .iter()
            .filter_map(|(route, buckets)| Some((encoded_labels(agent, hostname, route)?, buckets)))
            .collect();
        let by_labels: HashMap<&str, _> = encoded.iter().map(|(l, b)| (l.as_str(), *b)).collect();
        let mut out = String::with_capacity(page.len() + by_labels.len() * 256);
        for line in page.split_inclusive('\n') {
            let body = line.strip_suffix('\n').unwrap_or(line);
            let exemplar = bucket_of(body, &by_labels);
            match exemplar {
                Some(e) => {
                    out.push_str(body);
                    let _ = write!(
                        out,
                        " # {{trace_id=\"{}\",span_id=\"{}\"}} {}",
                        e.ids.trace_hex(),
                        e.ids.span_hex(),
                        e.xfer_us
                    );
                    if e.end_us > 0 {
                        let _ =
                            write!(out, " {}.{:06}", e.end_us / 1_000_000, e.end_us % 1_000_000);
                    }
                    out.push('\n');
                }
                None => out.push_str(line),
            }
        }
        out
    }
}

/// The exemplar for a bucket line of one of the routes, if it has one. The line is
/// `…_bucket{le="<bound>",<route labels>} <count>`.
fn bucket_of<'a>(
    line: &str,
    by_labels: &HashMap<&str, &'a [Option<Exemplar>; BUCKETS]>,
) -> Option<&'a Exemplar> {
    let rest = line.strip_prefix(FAMILY)?.strip_prefix("_bucket{le=\"")?;
    let (le, rest) = rest.split_once("\",")?;
    let labels = &rest[..rest.rfind("} ")?];
    let buckets = by_labels.get(labels)?;
    let bucket = if le == "+Inf" {
        TIME_BOUNDS_US.len()
    } else {
        let bound = le.parse::<f64>().ok()?;
        TIME_BOUNDS_US.iter().position(|&b| b as f64 == bound)?
    };
    buckets[bucket].as_ref()
}

/// The route's label text as `prometheus-client`'s OpenMetrics encoder writes it
/// between `{` and `}` (the model's labels, in the model's order).
fn encoded_labels(agent: &str, hostname: &str, route: &Route) -> Option<String> {
    #[derive(Debug)]
    struct One(Vec<(String, String)>);
    impl Collector for One {
        fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
            let mut family = encoder.encode_descriptor("x", "x", None, MetricType::Counter)?;
            family
                .encode_family(&self.0)?
                .encode_counter::<NoLabelSet, _, u64>(&0u64, None)
        }
    }
    let pairs = [
        ("agent_name", agent),
        ("hostname", hostname),
        ("operation", route.operation.as_str()),
        ("backend", &route.backend),
        ("local_mem", route.local.as_str()),
        ("remote_mem", route.remote.as_str()),
        ("peer", &route.peer),
    ];
    let mut registry = Registry::default();
    registry.register_collector(Box::new(One(pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect())));
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).ok()?;
    let line = text.lines().find(|l| l.starts_with("x_total{"))?;
    let labels = line.strip_prefix("x_total{")?;
    Some(labels[..labels.rfind("} ")?].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Buckets, Format, MetricModel};
    use telering_std::route::{MemoryType, Operation, RouteStats};

    fn xfer(xfer_us: u64, start_us: u64) -> SlowXfer {
        SlowXfer {
            xfer_us,
            start_us,
            post_us: 1,
            bytes: 4096,
            descriptors: 1,
            route_index: 0,
            operation: Operation::Write,
        }
    }

    fn page(route: &Route, slow: Vec<SlowXfer>) -> (String, String, RouteReport) {
        let stats = RouteStats {
            transfers: slow.len() as u64,
            ..Default::default()
        };
        let report = RouteReport {
            routes: vec![(route.clone(), stats)],
            slow: slow.into_iter().map(|x| (route.clone(), x)).collect(),
            folded: 0,
        };
        let mut model = MetricModel::new("node1", Buckets::default());
        model.add_agent("agent");
        model.set_routes("agent", report.clone());
        let shared = model.into_shared();
        let mut exemplars = RouteExemplars::default();
        exemplars.record("agent", &report);
        let open = exemplars.splice(shared.render(Format::OpenMetrics), "agent", "node1");
        (open, shared.render(Format::OpenMetrics), report)
    }

    #[test]
    fn each_kept_transfer_is_the_exemplar_of_its_bucket() {
        let route = Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "decode-0",
        );
        let (open, plain, report) = page(
            &route,
            vec![xfer(7_000, 1_700_000_000_000_001), xfer(30, 0)],
        );
        let ids: Vec<_> = report
            .slow
            .iter()
            .enumerate()
            .map(|(i, (r, x))| x.trace_ids("agent", r, i))
            .collect();
        let labels = r#"agent_name="agent",hostname="node1",operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="decode-0""#;
        let slow_line = format!(
            "telering_route_xfer_time_us_bucket{{le=\"10000.0\",{labels}}} 0 # {{trace_id=\"{}\",span_id=\"{}\"}} 7000 1700000000.007001\n",
            ids[0].trace_hex(),
            ids[0].span_hex()
        );
        assert!(open.contains(&slow_line), "{open}");
        let fast_line = format!(
            "telering_route_xfer_time_us_bucket{{le=\"50.0\",{labels}}} 0 # {{trace_id=\"{}\",span_id=\"{}\"}} 30\n",
            ids[1].trace_hex(),
            ids[1].span_hex()
        );
        assert!(open.contains(&fast_line), "{open}");
        assert_eq!(open.matches(" # {trace_id=").count(), 2, "{open}");
        // Nothing else changed, and the page still ends with `# EOF`.
        let without: String = open
            .lines()
            .map(|l| l.split(" # {trace_id").next().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
            + "\n";
        assert_eq!(without, plain);
        assert!(open.ends_with("# EOF\n"));
    }

    #[test]
    fn hostile_route_names_match_their_escaped_bucket_lines() {
        let route = Route::new(
            Operation::Read,
            "G\"D\\S",
            MemoryType::Vram,
            MemoryType::File,
            "p\nq}",
        );
        let (open, _, _) = page(&route, vec![xfer(2_000_000, 5)]);
        let line = open
            .lines()
            .find(|l| l.contains("trace_id"))
            .expect("an exemplar");
        assert!(
            line.contains(r#"backend="G\"D\\S""#) && line.contains(r#"peer="p\nq}""#),
            "{line}"
        );
        assert!(
            line.starts_with(r#"telering_route_xfer_time_us_bucket{le="+Inf","#),
            "{line}"
        );
        assert!(line.contains(r#"peer="p\nq}"} 0 # {trace_id=""#), "{line}");
    }

    #[test]
    fn a_later_transfer_replaces_its_buckets_exemplar_only() {
        let route = Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "d",
        );
        let one = |x: SlowXfer| RouteReport {
            routes: vec![(route.clone(), RouteStats::default())],
            slow: vec![(route.clone(), x)],
            folded: 0,
        };
        let mut e = RouteExemplars::default();
        e.record("a", &one(xfer(30, 1)));
        e.record("a", &one(xfer(7_000, 2)));
        e.record("a", &one(xfer(40, 3)));
        let b = &e.buckets[&route];
        assert_eq!(b[2].unwrap().xfer_us, 40);
        assert_eq!(b[9].unwrap().xfer_us, 7_000);
        assert_eq!(b.iter().flatten().count(), 2);
    }
}
