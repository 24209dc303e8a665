//! `/api/agents`: every agent's series of a node's [`MetricModel`] as JSON, for the
//! dashboard at `/`.
//!
//! The JSON is built from [`MetricModel::families`], the same view the `/metrics` page
//! and the OTLP push are built from, so the dashboard and a scrape of the same moment
//! show the same numbers. Values are cumulative, as on `/metrics`; the page turns two
//! successive answers into rates and percentiles, as Prometheus's `rate()` and
//! `histogram_quantile()` do.
//!
//! ```text
//! {"time_ms":…,"hostname":"node1","agents_total":1000,"agents_matched":12,
//!  "offset":0,"limit":50,"bounds_us":[…],"rings_not_followed":0,
//!  "agents":[{"agent":"a","shown":"a","values":{"agent_tx_bytes_total":…,…},
//!             "errors":{"NIXL_ERR_BACKEND":3},
//!             "histograms":{"agent_xfer_time_us":{"counts":[…],"sum":…,"count":…},…},
//!             "state":"dropping","dropping":["ring_full"],
//!             "losses":{"ring_full":18266,"staging":0,"not_in_layout":0,"missed":0,"unexported":0}}]}
//! ```
//!
//! `agent` is the agent's name as it is (the key to ask for it with `filter`); `shown`
//! is that name as a person may read it, escaped by [`Escaped`] (a control or
//! bidirectional character in a file name cannot reorder or hide what the page shows
//! beside it): the dashboard shows `shown`.
//!
//! `routes` (present when the agent has a route report: an in-process model's, or a
//! node's from the agent's route file) lists each route's cumulative totals, as the
//! `telering_route_*` families have them, with `route_bounds_us` the bounds of their
//! time histograms' buckets and `routes_folded` the agent's folded count; each text
//! (`backend`, `peer`) is given as it is and escaped (`backend_shown`, `peer_shown`):
//!
//! ```text
//! "routes_folded":0,"routes":[{"operation":"WRITE","backend":"UCX","backend_shown":"UCX",
//!   "local_mem":"VRAM","remote_mem":"VRAM","peer":"d-0","peer_shown":"d-0","bytes":…,
//!   "transfers":…,"descriptors":…,"slowest_xfer_us":…,"errors":{"remote_disconnect":1},
//!   "xfer_time_us":{"counts":[…],"sum":…},"post_time_us":{"counts":[…],"sum":…}}]
//! ```
//!
//! `state`, `dropping`, `losses` and `rings_not_followed` come from the node collector
//! ([`NodeStatus`]): `state` is `failing` (the writer is gone without a clean close, or
//! its ring cannot be read), else `dropping` while the agent lost events recently, with
//! the causes in `dropping`, else `ok`; `losses` counts the current series' losses by
//! cause; `rings_not_followed` the ring files the collector cannot follow for want of
//! file descriptors. A model without a collector has none of them.
//!
//! One agent's object is rendered once per collector poll ([`AgentsJson::from_model`]);
//! a request only picks and joins the objects of its page, so answering it on the HTTP
//! connection loop costs a copy of the bytes it sends.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use telering_core::builtin::ErrorStatus;
use telering_core::text::Escaped;
use telering_prometheus::MetricModel;
use telering_prometheus::collector::{AgentLoss, NodeStatus};
use telering_prometheus::model::{FamilyKind, SeriesValue};
use telering_std::route::{Histogram, RouteReport, TIME_BOUNDS_US};

pub use super::query::{AgentsQuery, DEFAULT_LIMIT, MAX_LIMIT};

/// Every agent's JSON object at one moment, in agent-name order.
#[derive(Clone, Debug, Default)]
pub struct AgentsJson {
    time_ms: u128,
    hostname: String,
    bounds_us: String,
    /// `,"rings_not_followed":N` when a collector's status is known.
    not_followed: String,
    agents: Vec<(String, String)>,
}

/// `text` as a JSON string literal.
fn json_string(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len() + 2);
    // Writing into a Vec cannot fail.
    let _ = crate::output::write_json_string(&mut out, text);
    String::from_utf8(out).unwrap_or_default()
}

/// One agent's object, built up family by family.
#[derive(Default)]
struct AgentParts {
    values: String,
    errors: String,
    histograms: String,
}

fn push_member(to: &mut String, name: &str, value: &str) {
    if !to.is_empty() {
        to.push(',');
    }
    let _ = write!(to, "{}:{value}", json_string(name));
}

impl AgentsJson {
    /// Renders every agent of `model` (at `time_ms`, milliseconds since the epoch).
    ///
    /// ```
    /// use telering_core::{builtin, Category, Event};
    /// use telering_prometheus::{Buckets, MetricModel};
    /// use telering_cli::serve::agents_json::{AgentsJson, AgentsQuery};
    /// let mut model = MetricModel::new("node1", Buckets::default());
    /// let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 4096);
    /// model.ingest("agent-a", &[tx]);
    /// let json = AgentsJson::from_model(&model, 7).page(&AgentsQuery::default());
    /// assert!(json.contains(r#""agent_tx_bytes_total":4096"#), "{json}");
    /// assert!(json.starts_with(r#"{"time_ms":7,"hostname":"node1","agents_total":1"#), "{json}");
    /// ```
    pub fn from_model(model: &MetricModel, time_ms: u128) -> AgentsJson {
        AgentsJson::from_model_and_status(model, None, time_ms)
    }

    /// When this JSON was built, in milliseconds since the epoch.
    pub fn time_ms(&self) -> u128 {
        self.time_ms
    }

    /// Renders every agent of `model` with its losses and export state from a node
    /// collector's `status`.
    ///
    /// ```
    /// use telering_prometheus::{Buckets, MetricModel};
    /// use telering_prometheus::collector::{AgentLoss, ExportState, Losses, NodeStatus};
    /// use telering_cli::serve::agents_json::{AgentsJson, AgentsQuery};
    /// let mut model = MetricModel::new("node1", Buckets::default());
    /// model.add_dropped("agent-a", 9);
    /// let mut status = NodeStatus::default();
    /// let losses = Losses { ring_full: 9, ..Losses::default() };
    /// let loss = AgentLoss { losses, state: ExportState::Dropping, dropping: vec!["ring_full"] };
    /// status.agents.insert("agent-a".into(), loss);
    /// let json = AgentsJson::from_model_and_status(&model, Some(&status), 7).page(&AgentsQuery::default());
    /// assert!(json.contains(r#""state":"dropping","dropping":["ring_full"],"losses":{"ring_full":9,"#), "{json}");
    /// ```
    pub fn from_model_and_status(
        model: &MetricModel,
        status: Option<&NodeStatus>,
        time_ms: u128,
    ) -> AgentsJson {
        let mut parts: BTreeMap<String, AgentParts> = model
            .agents()
            .map(|a| (a.to_owned(), AgentParts::default()))
            .collect();
        for family in model.families() {
            for series in family.series {
                let label = |name: &str| {
                    series
                        .labels
                        .iter()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.as_str())
                };
                // Routes are listed per agent below, not as its values.
                if family.name.starts_with("telering_route") {
                    break;
                }
                let Some(agent) = label("agent_name") else {
                    continue;
                };
                let Some(part) = parts.get_mut(agent) else {
                    continue;
                };
                match (&series.value, label("status")) {
                    (SeriesValue::Number(0), Some(_)) => {}
                    (SeriesValue::Number(n), Some(status)) => {
                        push_member(&mut part.errors, status, &n.to_string());
                    }
                    (SeriesValue::Number(n), None) if family.kind != FamilyKind::Histogram => {
                        push_member(&mut part.values, &family.name, &n.to_string());
                    }
                    (SeriesValue::Number(_), None) => {}
                    (SeriesValue::Signed(n), _) => {
                        push_member(&mut part.values, &family.name, &n.to_string());
                    }
                    (
                        SeriesValue::Histogram {
                            bucket_counts,
                            sum,
                            count,
                        },
                        _,
                    ) => {
                        let counts: Vec<String> =
                            bucket_counts.iter().map(u64::to_string).collect();
                        let value = format!(
                            "{{\"counts\":[{}],\"sum\":{sum},\"count\":{count}}}",
                            counts.join(",")
                        );
                        push_member(&mut part.histograms, &family.name, &value);
                    }
                }
            }
        }
        let bounds: Vec<String> = model
            .buckets()
            .bounds()
            .iter()
            .map(|b| b.to_string())
            .collect();
        AgentsJson {
            time_ms,
            hostname: model.hostname().to_owned(),
            bounds_us: format!("[{}]", bounds.join(",")),
            not_followed: status.map_or_else(String::new, |s| {
                format!(",\"rings_not_followed\":{}", s.rings_not_followed)
            }),
            agents: parts
                .into_iter()
                .map(|(agent, p)| {
                    let loss = status
                        .and_then(|s| s.agents.get(&agent))
                        .map_or_else(String::new, loss_members);
                    let routes = model.routes(&agent).map_or_else(String::new, route_members);
                    let object = format!(
                        "{{\"agent\":{},\"shown\":{},\"values\":{{{}}},\"errors\":{{{}}},\"histograms\":{{{}}}{loss}{routes}}}",
                        json_string(&agent),
                        json_string(&Escaped::new(&agent).to_string()),
                        p.values,
                        p.errors,
                        p.histograms
                    );
                    (agent, object)
                })
                .collect(),
        }
    }

    /// The agents `query` asks for, as one JSON object.
    pub fn page(&self, query: &AgentsQuery) -> String {
        let matching: Vec<&String> = self
            .agents
            .iter()
            .filter(|(agent, _)| agent.contains(&query.filter))
            .map(|(_, object)| object)
            .collect();
        let shown = matching.iter().skip(query.offset).take(query.limit);
        let mut out =
            String::with_capacity(256 + shown.clone().map(|o| o.len() + 1).sum::<usize>());
        let _ = write!(
            out,
            "{{\"time_ms\":{},\"hostname\":{},\"agents_total\":{},\"agents_matched\":{},\"offset\":{},\"limit\":{},\"bounds_us\":{}{},\"route_bounds_us\":{},\"agents\":[",
            self.time_ms,
            json_string(&self.hostname),
            self.agents.len(),
            matching.len(),
            query.offset,
            query.limit,
            self.bounds_us,
            self.not_followed,
            route_bounds()
        );
        for (i, object) in shown.enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(object);
        }
        out.push_str("]}");
        out
    }
}

/// `[10,25,…]`: the bounds of the route time histograms' buckets.
fn route_bounds() -> String {
    let bounds: Vec<String> = TIME_BOUNDS_US.iter().map(u64::to_string).collect();
    format!("[{}]", bounds.join(","))
}

/// `,"routes_folded":N,"routes":[…]` of one agent.
fn route_members(report: &RouteReport) -> String {
    let histogram = |h: &Histogram| {
        let counts: Vec<String> = h.counts.iter().map(u64::to_string).collect();
        format!("{{\"counts\":[{}],\"sum\":{}}}", counts.join(","), h.sum_us)
    };
    let routes: Vec<String> = report
        .routes
        .iter()
        .map(|(r, s)| {
            let slowest = report
                .slow
                .iter()
                .filter(|(x, _)| x == r)
                .map(|(_, x)| x.xfer_us)
                .max()
                .unwrap_or(0);
            let errors: Vec<String> = ErrorStatus::ALL
                .iter()
                .zip(s.errors)
                .filter(|(_, n)| *n > 0)
                .map(|(status, n)| format!("{}:{n}", json_string(status.label())))
                .collect();
            format!(
                "{{\"operation\":\"{}\",\"backend\":{},\"backend_shown\":{},\"local_mem\":\"{}\",\"remote_mem\":\"{}\",\"peer\":{},\"peer_shown\":{},\"bytes\":{},\"transfers\":{},\"descriptors\":{},\"slowest_xfer_us\":{slowest},\"errors\":{{{}}},\"xfer_time_us\":{},\"post_time_us\":{}}}",
                r.operation.as_str(),
                json_string(&r.backend),
                json_string(&Escaped::new(&r.backend).to_string()),
                r.local.as_str(),
                r.remote.as_str(),
                json_string(&r.peer),
                json_string(&Escaped::new(&r.peer).to_string()),
                s.bytes,
                s.transfers,
                s.descriptors,
                errors.join(","),
                histogram(&s.xfer_time),
                histogram(&s.post_time),
            )
        })
        .collect();
    format!(
        ",\"routes_folded\":{},\"routes\":[{}]",
        report.folded,
        routes.join(",")
    )
}

/// `,"state":…,"dropping":[…],"losses":{…}` of one agent.
fn loss_members(loss: &AgentLoss) -> String {
    let causes: Vec<String> = loss.dropping.iter().map(|c| json_string(c)).collect();
    let counts: Vec<String> = loss
        .losses
        .by_cause()
        .iter()
        .map(|(cause, n)| format!("{}:{n}", json_string(cause)))
        .collect();
    format!(
        ",\"state\":{},\"dropping\":[{}],\"losses\":{{{}}}",
        json_string(loss.state.as_str()),
        causes.join(","),
        counts.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use telering_core::{Category, Event, builtin};
    use telering_prometheus::Buckets;

    fn model(agents: usize) -> MetricModel {
        let mut model = MetricModel::new("node1", Buckets::default());
        for i in 0..agents {
            let tx = Event::new(
                1,
                Category::Transfer,
                builtin::AGENT_TX_BYTES.name,
                10 + i as u64,
            );
            model.ingest(&format!("agent-{i:02}"), &[tx]);
        }
        model
    }

    fn parsed(json: &str) -> serde_json::Value {
        serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"))
    }

    #[test]
    fn a_page_holds_the_agents_its_offset_limit_and_filter_select() {
        let json = AgentsJson::from_model(&model(30), 1);
        let q = AgentsQuery::parse("/api/agents?offset=5&limit=3").unwrap();
        let v = parsed(&json.page(&q));
        let names: Vec<&str> = v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["agent"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["agent-05", "agent-06", "agent-07"]);
        assert_eq!(
            (v["agents_total"].as_u64(), v["agents_matched"].as_u64()),
            (Some(30), Some(30))
        );
        let q = AgentsQuery::parse("/api/agents?filter=agent-2").unwrap();
        let v = parsed(&json.page(&q));
        assert_eq!(v["agents_matched"].as_u64(), Some(10));
        assert_eq!(
            v["agents"][0]["values"]["agent_tx_bytes_total"].as_u64(),
            Some(30)
        );
    }

    #[test]
    fn histograms_have_one_count_per_bucket_and_errors_only_nonzero_statuses() {
        let mut m = model(1);
        let xfer = Event::new(
            1,
            builtin::AGENT_XFER_TIME.category,
            builtin::AGENT_XFER_TIME.name,
            150,
        );
        m.ingest("agent-00", &[xfer]);
        let v = parsed(&AgentsJson::from_model(&m, 1).page(&AgentsQuery::default()));
        let bounds = v["bounds_us"].as_array().unwrap().len();
        let h = &v["agents"][0]["histograms"]["agent_xfer_time_us"];
        assert_eq!(h["counts"].as_array().unwrap().len(), bounds + 1);
        assert_eq!(h["count"].as_u64(), Some(1));
        assert_eq!(v["agents"][0]["errors"].as_object().unwrap().len(), 0);
    }

    #[test]
    fn a_collectors_exporter_health_reaches_the_json() {
        let mut m = model(2);
        let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 1);
        m.ingest_delivered("agent-00", &[tx, tx, tx]);
        m.set_exporter_failing("agent-00", true);
        let v = parsed(&AgentsJson::from_model(&m, 1).page(&AgentsQuery::default()));
        let values = &v["agents"][0]["values"];
        assert_eq!(
            values["agent_telemetry_events_delivered_total"].as_u64(),
            Some(3)
        );
        assert_eq!(values["agent_telemetry_exporter_failing"].as_u64(), Some(1));
        // An agent nobody reported health for has neither, rather than zeros.
        let other = v["agents"][1]["values"].as_object().unwrap();
        assert!(!other.contains_key("agent_telemetry_events_delivered_total"));
        assert!(!other.contains_key("agent_telemetry_exporter_failing"));
    }

    #[test]
    fn an_agents_routes_are_listed_with_their_totals_and_escaped_names() {
        use telering_std::route::{MemoryType, Operation, Route, RouteReport, RouteStats};
        let mut m = model(1);
        let hostile = "<b>x</b>\u{1b}[2J\n";
        let route = Route::new(
            Operation::Read,
            "GDS",
            MemoryType::Vram,
            MemoryType::File,
            hostile,
        );
        let mut stats = RouteStats {
            bytes: 4096,
            transfers: 2,
            descriptors: 3,
            ..RouteStats::default()
        };
        stats.xfer_time.counts[3] = 2;
        stats.errors[2] = 5;
        let report = RouteReport {
            routes: vec![(route, stats)],
            slow: Vec::new(),
            folded: 4,
        };
        m.set_routes("agent-00", report);
        let v = parsed(&AgentsJson::from_model(&m, 1).page(&AgentsQuery::default()));
        assert_eq!(
            v["route_bounds_us"].as_array().unwrap().len(),
            TIME_BOUNDS_US.len()
        );
        let a = &v["agents"][0];
        assert_eq!(a["routes_folded"].as_u64(), Some(4));
        let r = &a["routes"][0];
        assert_eq!(r["peer"].as_str(), Some(hostile));
        assert_eq!(r["peer_shown"].as_str(), Some("<b>x</b>\\u{1b}[2J\\n"));
        assert_eq!(
            (r["bytes"].as_u64(), r["transfers"].as_u64()),
            (Some(4096), Some(2))
        );
        assert_eq!(r["xfer_time_us"]["counts"][3].as_u64(), Some(2));
        assert_eq!(r["errors"][ErrorStatus::ALL[2].label()].as_u64(), Some(5));
        // The route families are not mixed into the agent's own values and errors.
        let values = a["values"].as_object().unwrap();
        assert!(
            values.keys().all(|k| !k.starts_with("telering_route")),
            "{a}"
        );
        assert_eq!(a["errors"].as_object().unwrap().len(), 0, "{a}");
        // An agent without routes has no `routes` member.
        let v = parsed(&AgentsJson::from_model(&model(1), 1).page(&AgentsQuery::default()));
        assert!(v["agents"][0].get("routes").is_none());
    }

    #[test]
    fn bad_parameters_name_themselves() {
        for (target, needle) in [
            ("/api/agents?limit=1001", "limit=1001"),
            ("/api/agents?offset=x", "offset=x"),
            ("/api/agents?page=2", "\"page\""),
            ("/api/agents?filter=%zz", "filter=%zz"),
            ("/api/agents?filter=%+1", "filter=%+1"),
            ("/api/agents?filter=%-1", "filter=%-1"),
            ("/api/agents?limit=%+5", "limit=%+5"),
        ] {
            let e = AgentsQuery::parse(target).unwrap_err();
            assert!(e.contains(needle), "{target}: {e}");
        }
    }
}
