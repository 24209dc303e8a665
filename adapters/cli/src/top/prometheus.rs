//! `telering top --prometheus URL`: the rows of `top` from a Prometheus server's HTTP
//! query API, for every agent of every node that server scrapes.
//!
//! Each refresh runs one instant query per column (`/api/v1/query`), all at once, grouped by the
//! scrape target's `instance` and `job` labels and the series' `agent_name`; the
//! `instance` is the row's node. Rates are `irate()` over the last two samples of a
//! series, so a figure is the rate of the last scrape interval, whatever that interval
//! is (up to half of `--window`). Percentiles are `histogram_quantile()` of the same
//! per-bucket rates. Totals (`tx_bytes_total`, drops) are the last scraped values.
//!
//! An answer that is not a success (Prometheus down, refusing, timing out, a query
//! error) is a [`PromError`] naming the URL and the cause; the live view shows it and
//! keeps retrying, `--once` reports it and exits 1.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// One agent of one node, as Prometheus last saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PromRow {
    /// The scrape target (`instance` label): the node.
    pub node: String,
    /// The scrape job (`job` label).
    pub job: String,
    /// The agent (`agent_name` label).
    pub agent: String,
    /// Bytes sent per second.
    pub tx_bytes_per_s: f64,
    /// Bytes received per second.
    pub rx_bytes_per_s: f64,
    /// Send and receive requests per second.
    pub requests_per_s: f64,
    /// Transfer time p50 in microseconds (`None`: no transfer in the interval).
    pub xfer_p50_us: Option<f64>,
    /// Transfer time p99 in microseconds.
    pub xfer_p99_us: Option<f64>,
    /// Post time p50 in microseconds.
    pub post_p50_us: Option<f64>,
    /// Errors per second, all statuses.
    pub errors_per_s: f64,
    /// The status with the most errors in the window, if any.
    pub top_error: Option<String>,
    /// Bytes sent in all (last scraped value).
    pub tx_bytes_total: f64,
    /// Bytes received in all.
    pub rx_bytes_total: f64,
    /// Events the agent lost before export, in all.
    pub events_dropped: f64,
    /// Events the node's collector missed, in all.
    pub events_missed: f64,
}

/// Why Prometheus gave no rows.
#[derive(Debug)]
pub struct PromError {
    /// The server's base URL.
    pub url: String,
    /// What went wrong.
    pub reason: String,
}

impl fmt::Display for PromError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot query Prometheus at {}: {}",
            self.url, self.reason
        )
    }
}

impl std::error::Error for PromError {}

/// A Prometheus server's query API.
#[derive(Debug)]
pub struct PromSource {
    url: String,
    window: Duration,
    agent: ureq::Agent,
}

/// One series of a query's answer: its labels and value.
pub type Sample = (BTreeMap<String, String>, f64);

const BY: &str = "instance, job, agent_name";

impl PromSource {
    /// The server at `url` (`http://host:9090`, with or without a trailing `/`),
    /// asked for rates over at most `window` and answering within `timeout`.
    pub fn new(url: &str, window: Duration, timeout: Duration) -> PromSource {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build()
            .into();
        PromSource {
            url: url.trim_end_matches('/').to_owned(),
            window,
            agent,
        }
    }

    /// The server's base URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn error(&self, reason: String) -> PromError {
        PromError {
            url: self.url.clone(),
            reason,
        }
    }

    /// The result of one instant query: `(labels, value)` per series.
    pub fn query(&self, promql: &str) -> Result<Vec<Sample>, PromError> {
        let url = format!("{}/api/v1/query", self.url);
        let mut response = self
            .agent
            .get(&url)
            .query("query", promql)
            .call()
            .map_err(|e| self.error(e.to_string()))?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(256 << 20)
            .read_to_string()
            .map_err(|e| self.error(format!("reading the answer: {e}")))?;
        let json: Value = serde_json::from_str(&body).map_err(|_| {
            let start: String = body.chars().take(120).collect();
            self.error(format!(
                "HTTP {status}, not a query API answer: {:?}",
                start.trim()
            ))
        })?;
        if json["status"] != "success" {
            return Err(self.error(format!(
                "HTTP {status}, {}: {}",
                json["errorType"].as_str().unwrap_or("error"),
                json["error"].as_str().unwrap_or("no reason given")
            )));
        }
        let result = json["data"]["result"]
            .as_array()
            .ok_or_else(|| self.error("the answer has no data.result vector".into()))?;
        Ok(result
            .iter()
            .map(|series| {
                let labels = series["metric"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                            .collect()
                    })
                    .unwrap_or_default();
                let value = series["value"][1]
                    .as_str()
                    .and_then(|v| v.parse::<f64>().ok())
                    .unwrap_or(f64::NAN);
                (labels, value)
            })
            .collect())
    }

    /// Every agent of every node, ordered by node then agent.
    pub fn rows(&self) -> Result<Vec<PromRow>, PromError> {
        let w = format!("{}s", self.window.as_secs().max(1));
        let irate = |m: &str| format!("sum by ({BY}) (irate({m}[{w}]))");
        let quantile = |q: f64, h: &str| {
            format!("histogram_quantile({q}, sum by ({BY}, le) (irate({h}_bucket[{w}])))")
        };
        let last = |m: &str| format!("sum by ({BY}) ({m})");
        type Set = fn(&mut PromRow, f64);
        let columns: [(String, Set); 11] = [
            (last("agent_tx_bytes_total"), |r, v| r.tx_bytes_total = v),
            (irate("agent_tx_bytes_total"), |r, v| r.tx_bytes_per_s = v),
            (irate("agent_rx_bytes_total"), |r, v| r.rx_bytes_per_s = v),
            (irate("agent_tx_requests_num_total"), |r, v| {
                r.requests_per_s += v
            }),
            (irate("agent_rx_requests_num_total"), |r, v| {
                r.requests_per_s += v
            }),
            (quantile(0.5, "agent_xfer_time_us"), |r, v| {
                r.xfer_p50_us = finite(v)
            }),
            (quantile(0.99, "agent_xfer_time_us"), |r, v| {
                r.xfer_p99_us = finite(v)
            }),
            (quantile(0.5, "agent_xfer_post_time_us"), |r, v| {
                r.post_p50_us = finite(v)
            }),
            (irate("agent_errors_total"), |r, v| r.errors_per_s = v),
            (last("agent_telemetry_events_dropped_total"), |r, v| {
                r.events_dropped = v
            }),
            (last("agent_telemetry_events_missed_total"), |r, v| {
                r.events_missed = v
            }),
        ];
        let top_error = format!(
            "topk by ({BY}) (1, sum by ({BY}, status) (increase(agent_errors_total[{w}])) > 0)"
        );
        let rx_total = last("agent_rx_bytes_total");
        // The queries are independent: asked at once, a refresh takes about as long as
        // the slowest one rather than their sum (Prometheus runs up to 20 at a time).
        let answers: Vec<Result<Vec<Sample>, PromError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = columns
                .iter()
                .map(|(promql, _)| promql.as_str())
                .chain([rx_total.as_str(), top_error.as_str()])
                .map(|promql| scope.spawn(move || self.query(promql)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(self.error("a query thread panicked".into())))
                })
                .collect()
        });
        let mut answers = answers.into_iter();
        let mut rows: BTreeMap<(String, String, String), PromRow> = BTreeMap::new();
        let key = |labels: &BTreeMap<String, String>| {
            let get = |k: &str| labels.get(k).cloned().unwrap_or_default();
            (get("instance"), get("agent_name"), get("job"))
        };
        for ((_, set), answer) in columns.iter().zip(answers.by_ref()) {
            for (labels, value) in answer? {
                let k = key(&labels);
                let row = rows.entry(k.clone()).or_insert_with(|| PromRow {
                    node: k.0,
                    agent: k.1,
                    job: k.2,
                    ..PromRow::default()
                });
                set(row, value);
            }
        }
        rows.retain(|_, r| !r.agent.is_empty());
        let (Some(rx_total), Some(top)) = (answers.next(), answers.next()) else {
            return Err(self.error("a query went unanswered".into()));
        };
        for (labels, value) in rx_total? {
            if let Some(row) = rows.get_mut(&key(&labels)) {
                row.rx_bytes_total = value;
            }
        }
        for (labels, _) in top? {
            if let Some(row) = rows.get_mut(&key(&labels)) {
                row.top_error = labels.get("status").cloned();
            }
        }
        Ok(rows.into_values().collect())
    }
}

fn finite(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}
