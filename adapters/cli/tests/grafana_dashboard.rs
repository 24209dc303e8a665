//! `dashboards/telering.json` against a real Prometheus: it scrapes `telering serve`
//! of a running demo and the node page of a `prometheus_mp` demo, and every PromQL
//! expression of the dashboard (each panel's targets, each template variable's
//! query) must parse and return at least one series, with the variables set to a real
//! node and agent of each kind of page. The exporter-health series are `serve`'s
//! alone. The route panels are checked with an agent that records routes on each
//! node (the demo records none): one writing a ring and its route file for `serve`,
//! one `prometheus_mp` rank beside the demo's.
//!
//! Ignored in a plain `cargo test`; `.ci/run` runs it with `--ignored` after
//! installing Debian's `prometheus`.

mod common;
mod prometheus_server;

use common::*;
use prometheus_server::Prometheus;
use serde_json::Value;
use std::io::BufReader;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dashboards/telering.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(panel title, expression)` of every panel target, rows' nested panels included.
fn panel_exprs(panels: &Value, out: &mut Vec<(String, String)>) {
    for panel in panels.as_array().into_iter().flatten() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("every target has an expr");
            out.push((
                panel["title"].as_str().unwrap_or("?").to_owned(),
                expr.to_owned(),
            ));
        }
        panel_exprs(&panel["panels"], out);
    }
}

/// The metric selector inside a variable's `label_values(SELECTOR, LABEL)`, and the label.
fn label_values(query: &str) -> (String, String) {
    let inner = query
        .strip_prefix("label_values(")
        .and_then(|q| q.strip_suffix(')'))
        .unwrap_or_else(|| panic!("variable query {query} is not label_values(…)"));
    let (selector, label) = inner.rsplit_once(',').unwrap();
    (selector.trim().to_owned(), label.trim().to_owned())
}

/// Grafana's substitutions: the variables, and the interval macros as durations a
/// 1-second scrape fills.
fn substitute(expr: &str, node: &str, agent: &str) -> String {
    let escape = |v: &str| v.replace('.', "\\\\.");
    expr.replace("$__rate_interval", "10s")
        .replace("$__interval", "5s")
        .replace("$__range", "1m")
        .replace("$node", &escape(node))
        .replace("$agent", &escape(agent))
}

#[test]
#[ignore = "needs prometheus"]
fn every_query_of_the_grafana_dashboard_returns_series() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let _demo = Running::spawn(
        telering()
            .args([
                "demo",
                "--no-serve",
                "--duration",
                "120s",
                "--agent",
                "ring-agent",
                "--dir",
            ])
            .arg(&rings)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    eventually(Duration::from_secs(30), || {
        rings.join("ring-agent").exists().then_some(())
    })
    .expect("the demo creates its ring");
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let serve_addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    // The demo's stdout is a pipe, so block-buffered: its port is chosen here instead.
    let mp_addr: std::net::SocketAddr = ([127, 0, 0, 1], prometheus_server::free_port()).into();
    let _mp = Running::spawn(
        telering()
            .current_dir(dir.path())
            .args([
                "demo",
                "--exporter",
                "prometheus_mp",
                "--no-serve",
                "--port",
            ])
            .arg(mp_addr.port().to_string())
            .args(["--duration", "120s", "--agent", "mp-agent", "--dir", "mp"])
            .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    eventually(Duration::from_secs(30), || {
        try_http_get(mp_addr, "/metrics")
            .ok()
            .filter(|page| page.contains("mp-agent"))
    })
    .expect("the prometheus_mp node page serves its agent");
    // Agents recording routes, with an error, on each node until the test ends.
    let route_agents =
        RouteAgents::start(&rings, &dir.path().join("mp/prometheus_mp"), mp_addr.port());
    let prometheus = Prometheus::scraping(&[("serve", serve_addr), ("mp", mp_addr)]);

    let nodes = [
        (serve_addr.to_string(), "ring-agent", "route-agent"),
        (mp_addr.to_string(), "mp-agent", "mp-route-agent"),
    ];
    // Rates need two scrapes of each node.
    for (node, agent, _) in &nodes {
        let q = format!(
            "rate(agent_tx_bytes_total{{instance=\"{node}\",agent_name=\"{agent}\"}}[10s]) > 0"
        );
        eventually(Duration::from_secs(60), || {
            (!prometheus.series(&q).is_empty()).then_some(())
        })
        .unwrap_or_else(|| panic!("Prometheus never saw {agent} on {node} transfer"));
    }

    let dashboard = dashboard();
    let mut exprs = Vec::new();
    panel_exprs(&dashboard["panels"], &mut exprs);
    assert!(exprs.len() >= 15, "{exprs:?}");
    let variables = dashboard["templating"]["list"].as_array().unwrap();
    let names: Vec<&str> = variables
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert!(
        names.contains(&"node") && names.contains(&"agent"),
        "{names:?}"
    );

    let mut failures = Vec::new();
    for (node, agent, route_agent) in &nodes {
        let q = format!(
            "rate(telering_route_bytes_total{{instance=\"{node}\",agent_name=\"{route_agent}\"}}[10s]) > 0"
        );
        eventually(Duration::from_secs(60), || {
            (!prometheus.series(&q).is_empty()).then_some(())
        })
        .unwrap_or_else(|| panic!("Prometheus never saw {route_agent}'s routes on {node}"));
        for variable in variables.iter().filter(|v| v["type"] == "query") {
            let query = variable["query"]["query"].as_str().unwrap();
            let (selector, label) = label_values(query);
            let selector = substitute(&selector, node, agent);
            let values: Vec<String> = prometheus
                .series(&selector)
                .iter()
                .filter_map(|s| s["metric"][label.as_str()].as_str().map(str::to_owned))
                .collect();
            let wanted = if label == "instance" {
                node.as_str()
            } else {
                *agent
            };
            if !values.iter().any(|v| v == wanted) {
                failures.push(format!(
                    "variable {query} on {node}: {values:?} lacks {wanted}"
                ));
            }
        }
        for (title, expr) in &exprs {
            let agent = if expr.contains("telering_route") {
                route_agent
            } else {
                agent
            };
            let promql = substitute(expr, node, agent);
            match prometheus.query(&promql) {
                Some(answer) if answer["status"] == "success" => {
                    let n = answer["data"]["result"].as_array().map_or(0, Vec::len);
                    if n == 0 {
                        failures.push(format!("{title}: {promql} returns no series on {node}"));
                    }
                }
                answer => failures.push(format!("{title}: {promql} fails: {answer:?}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // The exporter-health panels read the collector's series: `serve` reports a live
    // demo's export delivering and not failing; a prometheus_mp rank, its own
    // exporter, reports no exporter health at all.
    let serve = format!("instance=\"{serve_addr}\",agent_name=\"ring-agent\"");
    let failing = prometheus.series(&format!("agent_telemetry_exporter_failing{{{serve}}}"));
    assert_eq!(failing.len(), 1, "{failing:?}");
    assert_eq!(failing[0]["value"][1], "0", "{failing:?}");
    let delivered = format!("agent_telemetry_events_delivered_total{{{serve}}} > 0");
    assert_eq!(prometheus.series(&delivered).len(), 1, "{delivered}");
    let mp = format!(
        "{{instance=\"{mp_addr}\",__name__=~\"agent_telemetry_(events_delivered_total|exporter_failing)\"}}"
    );
    assert_eq!(prometheus.series(&mp), Vec::<Value>::new(), "{mp}");
    drop(route_agents);
}

/// Two agents recording on two routes (one with an error each round) until dropped:
/// `route-agent` into the ring directory (`buffer`), `mp-route-agent` as a
/// `prometheus_mp` rank of the multiproc directory.
struct RouteAgents {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RouteAgents {
    fn start(rings: &Path, mp_dir: &Path, mp_port: u16) -> RouteAgents {
        use telering_std::route::{MemoryType, Operation, Route};
        use telering_std::{EnvSource, ExporterRegistry, Telemetry};
        let ring = Telemetry::builder("route-agent")
            .enabled(true)
            .exporter("buffer")
            .dir(rings)
            .run_interval(Duration::from_millis(200))
            .build()
            .unwrap();
        let mut registry = ExporterRegistry::with_builtins();
        telering_prometheus::register(&mut registry);
        let env = EnvSource::from_pairs([
            ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
            ("NIXL_TELEMETRY_EXPORTER", "prometheus_mp".to_string()),
            ("NIXL_TELEMETRY_MULTIPROC_DIR", mp_dir.display().to_string()),
            ("NIXL_TELEMETRY_PROMETHEUS_PORT", mp_port.to_string()),
            ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "1".to_string()),
        ]);
        let rank = Telemetry::builder("mp-route-agent")
            .registry(registry)
            .apply_env(&env)
            .unwrap()
            .run_interval(Duration::from_millis(200))
            .build()
            .unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let routes: Vec<_> = [&ring, &rank]
                    .iter()
                    .flat_map(|t| {
                        ["decode-0", "decode-1"].map(|peer| {
                            let r = Route::new(
                                Operation::Write,
                                "UCX",
                                MemoryType::Vram,
                                MemoryType::Vram,
                                peer,
                            );
                            (*t, t.route(&r).unwrap())
                        })
                    })
                    .collect();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for (t, id) in &routes {
                        t.add_route_xfer_stats_us(*id, 120, 1 << 16, 8, 4);
                        t.update_route_error_count(
                            *id,
                            telering_core::builtin::ErrorStatus::RemoteDisconnect,
                        );
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        RouteAgents {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for RouteAgents {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
