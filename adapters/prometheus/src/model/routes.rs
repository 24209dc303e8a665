//! Route families: each agent's per-route totals ([`telering_std::route`]) as
//! counters and histograms labelled by the route, and the slowest transfer time of
//! the last flush interval as a gauge.
//!
//! Routes reach the model from an in-process exporter
//! ([`Exporter::export_routes`](telering_std::Exporter::export_routes)), and, for a
//! model fed from rings (`telering serve`, `prometheus_mp`'s node page), from each
//! agent's route file ([`telering_std::route::file`]): ring files carry no routes.
//!
//! Labels: `agent_name`, `hostname`, the agent's other series labels (the
//! multi-process exporter's `pid`, `agent_instance`, `local_rank`), then `operation`
//! (`READ`/`WRITE`), `backend`, `local_mem`, `remote_mem`, `peer`. The route bound
//! keeps their number at most `TELERING_ROUTES_MAX` + 2 per agent.

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use telering_core::builtin::ErrorStatus;
use telering_std::route::{Histogram, Route, RouteReport, RouteStats, TIME_BOUNDS_US};

use super::MetricModel;
use super::families::{FamilyKind, FamilyView, SeriesValue, SeriesView};
use super::labels::EncodedLabels;

/// Counter families: name (the encoder adds `_total`), help, value of a route.
type CounterOf = fn(&RouteStats) -> u64;
const COUNTERS: [(&str, &str, CounterOf); 3] = [
    ("telering_route_bytes", "Bytes moved on the route", |s| {
        s.bytes
    }),
    (
        "telering_route_transfers",
        "Transfers completed on the route",
        |s| s.transfers,
    ),
    (
        "telering_route_descriptors",
        "Descriptors of the route's transfers",
        |s| s.descriptors,
    ),
];

/// Histogram families: name, help, the route's histogram.
type HistogramOf = fn(&RouteStats) -> &Histogram;
const HISTOGRAMS: [(&str, &str, HistogramOf); 2] = [
    (
        "telering_route_xfer_time_us",
        "Transfer durations on the route in microseconds",
        |s| &s.xfer_time,
    ),
    (
        "telering_route_post_time_us",
        "Post durations on the route in microseconds",
        |s| &s.post_time,
    ),
];

const SLOWEST_HELP: &str = "The slowest transfer on the route in the latest flush interval that had transfers on it, microseconds (a route has no series before one of its transfers was kept; none with TELERING_SLOW_XFERS=0)";

/// The slowest transfer of `route` the report keeps, µs; `None` when none was kept
/// (none yet, or `TELERING_SLOW_XFERS=0`): then the route has no gauge series, rather
/// than a 0 that reads as a measured time.
fn slowest_of(report: &RouteReport, route: &Route) -> Option<u64> {
    report
        .slow
        .iter()
        .filter(|(r, _)| r == route)
        .map(|(_, x)| x.xfer_us)
        .max()
}

impl MetricModel {
    /// Takes `agent`'s latest route report (totals are cumulative: it replaces the
    /// previous one).
    ///
    /// ```
    /// use telering_prometheus::{Buckets, Format, MetricModel};
    /// use telering_std::route::{MemoryType, Operation, Route, RouteReport, RouteStats};
    /// let mut model = MetricModel::new("node1", Buckets::default());
    /// let route = Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "decode-0");
    /// let stats = RouteStats { bytes: 4096, transfers: 1, ..Default::default() };
    /// model.set_routes("prefill-0", RouteReport { routes: vec![(route, stats)], ..Default::default() });
    /// let text = model.into_shared().render(Format::PrometheusText);
    /// assert!(text.contains(r#"telering_route_bytes_total{agent_name="prefill-0",hostname="node1",operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="decode-0"} 4096"#), "{text}");
    /// ```
    pub fn set_routes(&mut self, agent: &str, mut report: RouteReport) {
        // A route with no transfer in this interval keeps the slow transfers of its
        // latest interval that had some, so a scrape between flushes still sees them.
        if let Some(previous) = self.routes.remove(agent) {
            for (route, x) in previous.slow {
                if !report.slow.iter().any(|(r, _)| *r == route) {
                    report.slow.push((route, x));
                }
            }
        }
        self.routes.insert(agent.to_string(), report);
    }

    /// Forgets `agent`'s routes (its other series stay).
    pub fn remove_routes(&mut self, agent: &str) {
        self.routes.remove(agent);
    }

    /// `agent`'s latest route report, `None` if it has none.
    ///
    /// ```
    /// use telering_prometheus::{Buckets, MetricModel};
    /// let mut model = MetricModel::new("node1", Buckets::default());
    /// assert!(model.routes("a").is_none());
    /// model.set_routes("a", Default::default());
    /// assert_eq!(model.routes("a").unwrap().folded, 0);
    /// ```
    pub fn routes(&self, agent: &str) -> Option<&RouteReport> {
        self.routes.get(agent)
    }

    /// Counts a route file of `agent` that was refused (malformed, truncated,
    /// oversized) into `telering_route_files_rejected_total`.
    pub fn count_route_file_rejected(&mut self, agent: &str) {
        let n = self
            .route_files_rejected
            .entry(agent.to_owned())
            .or_insert(0);
        *n = n.saturating_add(1);
    }

    /// Sets `agent`'s `telering_route_files_rejected_total` to `total`, for a reader
    /// that keeps the count itself and builds a fresh model for each scrape (the
    /// `prometheus_mp` node page).
    ///
    /// ```
    /// use telering_prometheus::{Buckets, Format, MetricModel};
    /// let mut model = MetricModel::new("node1", Buckets::default());
    /// model.set_route_files_rejected("a", 3);
    /// let text = model.into_shared().render(Format::PrometheusText);
    /// assert!(text.contains(r#"telering_route_files_rejected_total{agent_name="a",hostname="node1"} 3"#), "{text}");
    /// ```
    pub fn set_route_files_rejected(&mut self, agent: &str, total: u64) {
        self.route_files_rejected.insert(agent.to_owned(), total);
    }

    /// The labels before a route's of the agent under `key`: its `agent_name`,
    /// `hostname` and its other series labels.
    fn agent_labels<'a>(&'a self, key: &'a str) -> Vec<(&'a str, &'a str)> {
        let mut out = vec![("agent_name", key), ("hostname", self.hostname.as_str())];
        if let Some(m) = self.agents.get(key) {
            if let Some(name) = &m.labels.agent_name {
                out[0].1 = name;
            }
            out.extend(m.labels.extra.iter().map(|(k, v)| (*k, v.as_str())));
        }
        out
    }

    fn route_labels<'a>(&'a self, key: &'a str, r: &'a Route) -> Vec<(&'a str, &'a str)> {
        let mut out = self.agent_labels(key);
        out.extend([
            ("operation", r.operation.as_str()),
            ("backend", r.backend.as_str()),
            ("local_mem", r.local.as_str()),
            ("remote_mem", r.remote.as_str()),
            ("peer", r.peer.as_str()),
        ]);
        out
    }

    /// The route families, after the agent families.
    pub(super) fn encode_routes(
        &self,
        encoder: &mut DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        if !self.route_files_rejected.is_empty() {
            let mut family = encoder.encode_descriptor(
                "telering_route_files_rejected",
                "Route files of the agent a node reader refused (malformed, truncated or oversized); its routes are the last accepted file's",
                None,
                MetricType::Counter,
            )?;
            for (agent, n) in &self.route_files_rejected {
                family
                    .encode_family(&EncodedLabels::new(self.agent_labels(agent)))?
                    .encode_counter::<NoLabelSet, _, u64>(n, None)?;
            }
        }
        if self.routes.values().all(|r| r.routes.is_empty()) {
            return Ok(());
        }
        let labels = |agent: &str, r: &Route| EncodedLabels::new(self.route_labels(agent, r));
        let series: Vec<_> = self
            .routes
            .iter()
            .flat_map(|(agent, report)| {
                report
                    .routes
                    .iter()
                    .map(move |(route, stats)| (agent.as_str(), route, stats))
            })
            .map(|(agent, route, stats)| (labels(agent, route), agent, route, stats))
            .collect();
        for (name, help, value) in COUNTERS {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (l, _, _, stats) in &series {
                family
                    .encode_family(l)?
                    .encode_counter::<NoLabelSet, _, u64>(&value(stats), None)?;
            }
        }
        {
            let mut family = encoder.encode_descriptor(
                "telering_route_errors",
                "Errors on the route, by status",
                None,
                MetricType::Counter,
            )?;
            for (l, _, _, stats) in &series {
                for (i, status) in ErrorStatus::ALL.iter().enumerate() {
                    if stats.errors[i] > 0 {
                        family
                            .encode_family(&(l, [("status", status.label())]))?
                            .encode_counter::<NoLabelSet, _, u64>(&stats.errors[i], None)?;
                    }
                }
            }
        }
        for (name, help, of) in HISTOGRAMS {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
            for (l, _, _, stats) in &series {
                let h = of(stats);
                // The encoder adds the counts up: saturated first, so that a route
                // file's counts (any number) stop at `u64::MAX` rather than overflow.
                let buckets: Vec<(f64, u64)> = TIME_BOUNDS_US
                    .iter()
                    .map(|&b| b as f64)
                    .chain(std::iter::once(f64::INFINITY))
                    .zip(h.counts_saturated())
                    .collect();
                family.encode_family(l)?.encode_histogram::<NoLabelSet>(
                    h.sum_us as f64,
                    h.count(),
                    &buckets,
                    None,
                )?;
            }
        }
        let slowest: Vec<_> = series
            .iter()
            .filter_map(|(l, agent, route, _)| Some((l, slowest_of(&self.routes[*agent], route)?)))
            .collect();
        if !slowest.is_empty() {
            let mut family = encoder.encode_descriptor(
                "telering_route_slowest_xfer_time_us",
                SLOWEST_HELP,
                None,
                MetricType::Gauge,
            )?;
            for (l, slowest) in slowest {
                family.encode_family(l)?.encode_gauge(&slowest)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "telering_routes_folded",
            "Routes folded into the route `other` because the agent's bound was reached",
            None,
            MetricType::Counter,
        )?;
        for (agent, report) in &self.routes {
            let l = EncodedLabels::new(self.agent_labels(agent));
            family
                .encode_family(&l)?
                .encode_counter::<NoLabelSet, _, u64>(&report.folded, None)?;
        }
        Ok(())
    }

    /// The route families as structured views ([`MetricModel::families`]), for OTLP:
    /// counters, errors by status, the slowest transfer gauge and the folded count.
    /// The time histograms, whose buckets are not the model's, are left to the
    /// Prometheus text formats.
    pub(super) fn route_families(&self) -> Vec<FamilyView> {
        let owned = |pairs: Vec<(&str, &str)>| -> Vec<(String, String)> {
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect()
        };
        let labels = |agent: &str, r: &Route| owned(self.route_labels(agent, r));
        let series: Vec<_> = self
            .routes
            .iter()
            .flat_map(|(agent, report)| {
                report
                    .routes
                    .iter()
                    .map(move |(route, stats)| (agent.as_str(), report, route, stats))
            })
            .collect();
        if series.is_empty() {
            return Vec::new();
        }
        let number = |labels: Vec<(String, String)>, v: u64| SeriesView {
            labels,
            value: SeriesValue::Number(v),
        };
        let mut out: Vec<FamilyView> = COUNTERS
            .iter()
            .map(|(name, help, value)| FamilyView {
                name: format!("{name}_total"),
                help: (*help).to_owned(),
                kind: FamilyKind::Counter,
                series: series
                    .iter()
                    .map(|(agent, _, route, stats)| number(labels(agent, route), value(stats)))
                    .collect(),
            })
            .collect();
        let mut errors = Vec::new();
        for (agent, _, route, stats) in &series {
            for (i, status) in ErrorStatus::ALL.iter().enumerate() {
                if stats.errors[i] > 0 {
                    let mut l = labels(agent, route);
                    l.push(("status".to_owned(), status.label().to_owned()));
                    errors.push(number(l, stats.errors[i]));
                }
            }
        }
        if !errors.is_empty() {
            out.push(FamilyView {
                name: "telering_route_errors_total".to_owned(),
                help: "Errors on the route, by status".to_owned(),
                kind: FamilyKind::Counter,
                series: errors,
            });
        }
        let slowest: Vec<SeriesView> = series
            .iter()
            .filter_map(|(agent, report, route, _)| {
                Some(number(labels(agent, route), slowest_of(report, route)?))
            })
            .collect();
        if !slowest.is_empty() {
            out.push(FamilyView {
                name: "telering_route_slowest_xfer_time_us".to_owned(),
                help: SLOWEST_HELP.to_owned(),
                kind: FamilyKind::Gauge,
                series: slowest,
            });
        }
        out.push(FamilyView {
            name: "telering_routes_folded_total".to_owned(),
            help: "Routes folded into the route `other` because the agent's bound was reached"
                .to_owned(),
            kind: FamilyKind::Counter,
            series: self
                .routes
                .iter()
                .map(|(agent, report)| number(owned(self.agent_labels(agent)), report.folded))
                .collect(),
        });
        out
    }
}
