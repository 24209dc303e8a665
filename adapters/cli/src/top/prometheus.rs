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
//! keeps retrying, `--once` reports it and exits 1. A URL that cannot be a Prometheus
//! server's (not `http://`, a port past 65535, a query) is refused before any request
//! ([`check_url`]; exit 2).
//!
//! # Limits
//!
//! - Each refresh must be answered within `--timeout` (default [`DEFAULT_TIMEOUT`]),
//!   whatever `--interval` is; past it the refresh fails with "no answer within N s".
//! - The [`QUERIES`] answers of a refresh hold at most [`MAX_REFRESH_ANSWER_BYTES`] in
//!   all: each query's answer is cut off past its share, and the refresh fails saying
//!   so, so a server (or something posing as one) cannot make `top` buffer gigabytes.
//! - A redirect is not followed: the error names the status and where it points, so
//!   that the URL to give is clear.
//!
//! Label values and the server's error texts are foreign text: they are shown through
//! [`Escaped`], so a terminal never acts on them.

use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;
use telering_core::text::Escaped;

/// How long a refresh waits for its answers when `--timeout` is not given.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Instant queries in one refresh, asked at once.
pub const QUERIES: usize = 13;

/// Most bytes of answers one refresh holds: 32 MiB, 2.5 MiB per query, room for about
/// 20 000 series per query (an agent's series is about 130 bytes of JSON).
pub const MAX_REFRESH_ANSWER_BYTES: u64 = 32 << 20;

/// Most bytes of one query's answer: its share of [`MAX_REFRESH_ANSWER_BYTES`].
const MAX_ANSWER_BYTES: u64 = MAX_REFRESH_ANSWER_BYTES / QUERIES as u64;

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
    /// The URL and the reason, escaped: the reason may quote the server.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot query Prometheus at {}: {}",
            Escaped::new(&self.url),
            Escaped::new(&self.reason)
        )
    }
}

impl std::error::Error for PromError {}

/// A Prometheus server's query API.
#[derive(Debug)]
pub struct PromSource {
    url: String,
    window: Duration,
    timeout: Duration,
    agent: ureq::Agent,
}

/// One series of a query's answer: its labels and value.
pub type Sample = (BTreeMap<String, String>, f64);

const BY: &str = "instance, job, agent_name";

impl PromSource {
    /// The server at `url` (`http://host:9090`, with or without a trailing `/`),
    /// asked for rates over at most `window`, each refresh answered within `timeout`;
    /// `Err` with the reason when `url` is not one ([`check_url`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use telering_cli::top::prometheus::PromSource;
    /// let s = Duration::from_secs(1);
    /// assert_eq!(PromSource::new("http://localhost:9090/", s, s).unwrap().url(), "http://localhost:9090");
    /// assert!(PromSource::new("http://localhost:99999", s, s).unwrap_err().contains("port 99999"));
    /// ```
    pub fn new(url: &str, window: Duration, timeout: Duration) -> Result<PromSource, String> {
        check_url(url)?;
        if timeout.is_zero() {
            return Err("--timeout 0s leaves no time for an answer; give 1s or more".into());
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .build()
            .into();
        Ok(PromSource {
            url: url.trim_end_matches('/').to_owned(),
            window,
            timeout,
            agent,
        })
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

    /// What a failed request says: the time limit or the size limit in words.
    fn failure(&self, e: ureq::Error) -> PromError {
        self.error(match e {
            ureq::Error::Timeout(_) => format!(
                "no answer within {} s (--timeout)",
                self.timeout.as_secs_f64()
            ),
            ureq::Error::BodyExceedsLimit(_) => format!(
                "an answer is larger than {:.1} MiB, the most each of a refresh's {QUERIES} queries may hold",
                MAX_ANSWER_BYTES as f64 / f64::from(1 << 20)
            ),
            e => e.to_string(),
        })
    }

    /// The result of one instant query: `(labels, value)` per series.
    pub fn query(&self, promql: &str) -> Result<Vec<Sample>, PromError> {
        let url = format!("{}/api/v1/query", self.url);
        let mut response = self
            .agent
            .get(&url)
            .query("query", promql)
            .call()
            .map_err(|e| self.failure(e))?;
        let status = response.status().as_u16();
        if response.status().is_redirection() {
            let to = response.headers().get("location").map_or_else(
                || "nowhere".into(),
                |v| String::from_utf8_lossy(v.as_bytes()).into_owned(),
            );
            return Err(self.error(format!(
                "HTTP {status}, a redirect to {to}; redirects are not followed: give --prometheus the server's own URL"
            )));
        }
        let body = response
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_string()
            .map_err(|e| self.failure(e))?;
        let json: Value = serde_json::from_str(&body).map_err(|_| {
            let start: String = body.chars().take(120).collect();
            self.error(format!(
                "HTTP {status}, not a query API answer: \"{}\"",
                start.trim()
            ))
        })?;
        drop(body);
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
        let columns: [(String, Set); QUERIES - 2] = [
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
                r.xfer_p50_us = percentile(v)
            }),
            (quantile(0.99, "agent_xfer_time_us"), |r, v| {
                r.xfer_p99_us = percentile(v)
            }),
            (quantile(0.5, "agent_xfer_post_time_us"), |r, v| {
                r.post_p50_us = percentile(v)
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

/// A percentile: `None` when NaN (no transfer in the window); `+Inf` stays (the
/// percentile lies past the largest bucket bound).
fn percentile(v: f64) -> Option<f64> {
    (!v.is_nan()).then_some(v)
}

/// Refuses a `--prometheus` URL that cannot be a Prometheus server's: not `http://`
/// (https is not supported), no host, a port that is not 1 to 65535, a query or
/// fragment, spaces or control characters. A path is kept (a server behind a prefix).
///
/// ```
/// use telering_cli::top::prometheus::check_url;
/// assert!(check_url("http://[::1]:9090/prom").is_ok());
/// assert!(check_url("http://host:0").unwrap_err().contains("port 0"));
/// assert!(check_url("https://host").unwrap_err().contains("http://"));
/// ```
pub fn check_url(url: &str) -> Result<(), String> {
    let refuse = |why: &str| {
        Err(format!(
            "--prometheus {}: {why}; give the server's http:// URL, e.g. http://localhost:9090",
            Escaped::new(url)
        ))
    };
    let Some(rest) = url.strip_prefix("http://") else {
        return refuse("not an http:// URL (https is not supported)");
    };
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return refuse("the URL holds a space or a control character");
    }
    if url.contains(['?', '#']) {
        return refuse("the URL has a query or fragment");
    }
    let authority = rest.split('/').next().unwrap_or("");
    if authority.contains('@') {
        return refuse("user names in the URL are not supported");
    }
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, "")) => (host, None),
            Some((host, port)) => match port.strip_prefix(':') {
                Some(port) => (host, Some(port)),
                None => return refuse("text follows the IPv6 address's `]`"),
            },
            None => return refuse("the IPv6 address has no closing `]`"),
        },
        None => match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        return refuse("no host");
    }
    if let Some(port) = port {
        if !port.parse::<u16>().is_ok_and(|p| p != 0) {
            return refuse(&format!("port {port} is not a port (1 to 65535)"));
        }
    }
    if url.parse::<ureq::http::Uri>().is_err() {
        return refuse("not a valid URL");
    }
    Ok(())
}
