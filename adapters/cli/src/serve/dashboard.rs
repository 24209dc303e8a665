//! The node's live dashboard: `/` (a page and its script, in the binary), the
//! vendored charting library under `/assets/`, and the data at `/api/agents`.
//!
//! [`Dashboard`] is the [`MetricsSource`] that `serve` hands to the metrics server:
//! `/metrics` renders the model as before; the other pages are bytes prepared
//! elsewhere, since they are answered on the server's connection loop. The agents'
//! JSON is rebuilt by [`Dashboard::update`] after each collector poll, the only time
//! the model changes, so a request made between two polls sees exactly the values a
//! scrape of `/metrics` shows.
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
use std::time::{SystemTime, UNIX_EPOCH};
use telering_prometheus::{Format, MetricsSource, Page, SharedModel};

const INDEX_HTML: &str = include_str!("../../assets/dashboard.html");
const DASHBOARD_JS: &str = include_str!("../../assets/dashboard.js");
const UPLOT_JS: &str = include_str!("../../assets/uplot/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../../assets/uplot/uPlot.min.css");
const UPLOT_LICENSE: &str = include_str!("../../assets/uplot/LICENSE");

/// The metrics model with its dashboard pages.
#[derive(Clone, Debug)]
pub struct Dashboard {
    model: SharedModel,
    agents: Arc<Mutex<Arc<AgentsJson>>>,
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
        let dashboard = Dashboard {
            model,
            agents: Arc::default(),
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
        let json = AgentsJson::from_model(&self.model.lock(), u128::from(now_ms()));
        *self.agents.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(json);
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
                let agents = self
                    .agents
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
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
            "/assets/uPlot.iife.min.js" => asset("text/javascript; charset=utf-8", UPLOT_JS),
            "/assets/uPlot.min.css" => asset("text/css; charset=utf-8", UPLOT_CSS),
            "/assets/uPlot.LICENSE" => asset("text/plain; charset=utf-8", UPLOT_LICENSE),
            "/api/agents" => Some(self.agents_page(target)),
            _ => None,
        }
    }
}
