//! The node's live dashboard: `/` (a page and its script, in the binary), the
//! vendored charting library under `/assets/`, and the data at `/api/agents`.
//!
//! [`Dashboard`] is the [`MetricsSource`] that `serve` hands to the metrics server:
//! `/metrics` renders the model as before; the other pages are bytes prepared
//! elsewhere, since they are answered on the server's connection loop. The agents'
//! JSON is rebuilt from the model, the only thing that changes it being a collector
//! poll: by [`Dashboard::update_if_requested`] after a poll when it was asked for since,
//! and by the request itself when the JSON it would answer with is older than the
//! collector's poll interval (the first request after an idle spell), so an answer is
//! never more than one poll old and shows exactly the values a scrape of `/metrics` of
//! the same moment shows. Beside the model's series, each agent carries the collector's
//! verdict on its export
//! ([`NodeStatus`](telering_prometheus::collector::NodeStatus)): its losses by cause
//! and `ok`, `dropping` or `failing`. An agent with routes (from its route file) gets
//! a table of them (`assets/dashboard_routes.js`): bytes/s, transfers/s and the
//! transfer-time p50/p99 per route, sortable by clicking a column header.
//!
//! The charts are drawn with uPlot (MIT, <https://github.com/leeoniya/uPlot>,
//! vendored from the npm registry in `assets/uplot/` with its licence): 50 KB
//! minified, no dependencies, and it draws a hundred small time-series charts to a
//! canvas each second without stalling the page, which is what a page of agents with
//! several charts each needs. Heavier libraries (Chart.js, ECharts) are 4–20 times
//! larger for features the page does not use.

use super::agents_json::{AgentsJson, AgentsQuery};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use telering_prometheus::collector::{NodeCollector, SharedStatus};
use telering_prometheus::{Format, MetricsSource, Page, SharedModel};

const INDEX_HTML: &str = include_str!("../../assets/dashboard.html");
const DASHBOARD_JS: &str = include_str!("../../assets/dashboard.js");
const DASHBOARD_ROUTES_JS: &str = include_str!("../../assets/dashboard_routes.js");
const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
const UPLOT_LICENSE: &str = include_str!("../../assets/uplot/LICENSE");

/// The metrics model with its dashboard pages.
#[derive(Clone, Debug)]
pub struct Dashboard {
    model: SharedModel,
    /// The collector's verdict on each agent's export, when a collector feeds the model.
    status: Option<SharedStatus>,
    agents: Arc<Mutex<Arc<AgentsJson>>>,
    /// Oldest JSON a request is answered with; older is rebuilt first.
    max_age_ms: u128,
    /// `/api/agents` was asked for since the JSON was last built.
    requested: Arc<AtomicBool>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Dashboard {
    /// A dashboard of `model`; call [`Dashboard::update`] once the model has values.
    pub fn new(model: SharedModel) -> Dashboard {
        Dashboard::with_status(model, None, Duration::from_millis(100))
    }

    /// The dashboard of a node collector: its model, each agent's losses and export
    /// state, and answers at most `poll_interval` old.
    pub fn of_collector(collector: &NodeCollector, poll_interval: Duration) -> Dashboard {
        Dashboard::with_status(collector.model(), Some(collector.status()), poll_interval)
    }

    fn with_status(
        model: SharedModel,
        status: Option<SharedStatus>,
        max_age: Duration,
    ) -> Dashboard {
        let dashboard = Dashboard {
            model,
            status,
            agents: Arc::default(),
            max_age_ms: max_age.as_millis(),
            requested: Arc::default(),
        };
        dashboard.update();
        dashboard
    }

    /// Whether `/api/agents` was asked for since the last call; the collector's loop
    /// then calls [`Dashboard::update`].
    pub fn take_request(&self) -> bool {
        self.requested.swap(false, Ordering::Relaxed)
    }

    /// After a collector poll: rebuilds the agents' JSON if `/api/agents` was asked
    /// for since the last rebuild (so nobody watching costs nothing).
    pub fn update_if_requested(&self) {
        if self.take_request() {
            self.update();
        }
    }

    /// Rebuilds the agents' JSON from the model as it is now.
    pub fn update(&self) {
        let json = {
            let model = self.model.lock();
            let status = self.status.as_ref().map(SharedStatus::lock);
            AgentsJson::from_model_and_status(&model, status.as_deref(), u128::from(now_ms()))
        };
        *self.agents.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(json);
    }

    /// The agents' JSON, rebuilt first if it is older than the poll interval.
    fn fresh_agents(&self) -> Arc<AgentsJson> {
        let current = self
            .agents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if u128::from(now_ms()).saturating_sub(current.time_ms()) <= self.max_age_ms {
            return current;
        }
        self.update();
        self.agents
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The answer to `GET /api/agents?…`: `200` with a page of agents, or `400` with a
    /// JSON `{"error": …}` naming the bad parameter.
    ///
    /// ```
    /// use telering_cli::serve::dashboard::Dashboard;
    /// use telering_prometheus::{Buckets, MetricModel};
    /// let d = Dashboard::new(MetricModel::new("n", Buckets::default()).into_shared());
    /// assert!(!d.take_request());
    /// assert_eq!(d.agents_page("/api/agents?limit=10").status, "200 OK");
    /// assert!(d.take_request());
    /// let bad = d.agents_page("/api/agents?limit=-1");
    /// assert_eq!(bad.status, "400 Bad Request");
    /// assert!(String::from_utf8(bad.body).unwrap().contains("limit=-1"));
    /// ```
    pub fn agents_page(&self, target: &str) -> Page {
        self.requested.store(true, Ordering::Relaxed);
        let json = "application/json";
        match AgentsQuery::parse(target) {
            Ok(query) => {
                let agents = self.fresh_agents();
                Page {
                    status: "200 OK",
                    content_type: json,
                    body: agents.page(&query).into_bytes(),
                }
            }
            Err(message) => {
                let mut body = b"{\"error\":".to_vec();
                let _ = crate::output::write_json_string(&mut body, &message);
                body.push(b'}');
                Page {
                    status: "400 Bad Request",
                    content_type: json,
                    body,
                }
            }
        }
    }
}

fn asset(content_type: &'static str, body: &str) -> Option<Page> {
    Some(Page {
        status: "200 OK",
        content_type,
        body: body.as_bytes().to_vec(),
    })
}

impl MetricsSource for Dashboard {
    fn render(&self, format: Format) -> String {
        self.model.render(format)
    }

    fn page(&self, target: &str) -> Option<Page> {
        let path = target.split_once('?').map_or(target, |(path, _)| path);
        match path {
            "/" | "/index.html" => asset("text/html; charset=utf-8", INDEX_HTML),
            "/assets/dashboard.js" => asset("text/javascript; charset=utf-8", DASHBOARD_JS),
            "/assets/dashboard_routes.js" => {
                asset("text/javascript; charset=utf-8", DASHBOARD_ROUTES_JS)
            }
            "/assets/uPlot.iife.min.js" => asset("text/javascript; charset=utf-8", UPLOT_JS),
            "/assets/uPlot.min.css" => asset("text/css; charset=utf-8", UPLOT_CSS),
            "/assets/uPlot.LICENSE" => asset("text/plain; charset=utf-8", UPLOT_LICENSE),
            "/api/agents" => Some(self.agents_page(target)),
            _ => None,
        }
    }
}
