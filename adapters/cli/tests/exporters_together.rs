//! Several exporters on one agent (`NIXL_TELEMETRY_EXPORTER=buffer,prometheus,otlp`),
//! each against the real thing: the ring file read back, the `/metrics` page over
//! HTTP (and scraped by a real Prometheus server) and an OTLP collector (oteltest's
//! sink from PyPI, as in `serve_otlp.rs`), all with exact counts; then the OTLP
//! collector down while the ring and the metrics go on. `.ci/run` runs the ignored
//! one (`together_otlp_*`) in its OTLP step, where both tools are installed.

mod common;
#[path = "../../otlp/tests/common/failing.rs"]
mod failing;
#[path = "../../otlp/tests/common/sink.rs"]
mod sink;

use common::{http_get, sample};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use telering_std::{EnvSource, ExporterRegistry, ExporterStats, Telemetry};

const EVENTS: u64 = 1000;
const TOTAL: u64 = EVENTS * (EVENTS + 1) / 2;

/// An agent running the ring, the metrics endpoint and OTLP pushes to `collector`.
fn agent(name: &str, dir: &Path, collector: &str) -> Telemetry {
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    telering_otlp::register(&mut registry);
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        (
            "NIXL_TELEMETRY_EXPORTER",
            "buffer,prometheus,otlp".to_string(),
        ),
        ("NIXL_TELEMETRY_DIR", dir.display().to_string()),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "50".to_string()),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "4096".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", "0".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true".to_string()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.to_string()),
        ("OTEL_METRIC_EXPORT_INTERVAL", "100".to_string()),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "1000".to_string()),
        ("TELERING_OTLP_SHUTDOWN_TIMEOUT", "1000".to_string()),
    ]);
    Telemetry::builder(name)
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .build()
        .unwrap()
}

/// Records `agent_tx_bytes` 1, 2, …, `EVENTS` and flushes.
fn record(t: &Telemetry) {
    for bytes in 1..=EVENTS {
        t.update_tx_bytes(bytes);
    }
    t.flush().unwrap();
}

fn of<'a>(stats: &'a [ExporterStats], name: &str) -> &'a ExporterStats {
    stats
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no {name} in {stats:?}"))
}

/// The metrics endpoint's address, from the `prometheus` exporter's entry.
fn metrics_addr(t: &Telemetry) -> SocketAddr {
    let stats = t.exporter_stats();
    let url = of(&stats, "prometheus").endpoint.clone().expect("serving");
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("{url}"));
    addr.parse().unwrap()
}

/// Polls `f` every 20 ms until it holds; panics with `what` after 60 s.
fn until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `agent_tx_bytes` values in the ring file `path`, drained.
fn ring_values(path: &Path) -> Vec<u64> {
    let mut reader = telering_shm::DrainingReader::open(path).unwrap();
    let mut values = Vec::new();
    while let Some(e) = reader.pop().unwrap() {
        if e.name().ok() == Some("agent_tx_bytes") {
            values.push(e.value());
        }
    }
    values
}

#[test]
fn with_the_collector_down_the_ring_and_the_metrics_get_every_event_and_otlp_counts_its_own() {
    let collector = failing::down();
    let dir = tempfile::tempdir().unwrap();
    let t = agent("agent-down", dir.path(), &collector.endpoint);
    record(&t);
    let metrics = metrics_addr(&t);
    let series = "agent_tx_bytes_total{agent_name=\"agent-down\"";
    until("the metrics page's total", || {
        sample(&http_get(metrics, "/metrics"), series) == Some(TOTAL as f64)
    });
    until("a failed push", || {
        of(&t.exporter_stats(), "otlp").exporter_failing
    });
    let (stats, each) = t.close_with_exporter_stats();
    assert_eq!(stats.events_recorded, EVENTS);
    let (ring, prom, otlp) = (
        of(&each, "buffer"),
        of(&each, "prometheus"),
        of(&each, "otlp"),
    );
    assert_eq!((ring.events_delivered, ring.events_dropped), (EVENTS, 0));
    assert_eq!((prom.events_delivered, prom.events_dropped), (EVENTS, 0));
    assert_eq!(prom.export_errors, 0);
    assert_eq!(
        (
            otlp.events_delivered,
            otlp.events_undelivered,
            otlp.events_dropped
        ),
        (0, EVENTS, 0),
        "{otlp:?}"
    );
    assert!(otlp.exporter_failing && otlp.export_errors >= 1, "{otlp:?}");
    assert_eq!(
        ring_values(&dir.path().join("agent-down")),
        (1..=EVENTS).collect::<Vec<_>>()
    );
}

/// A Prometheus server scraping `target` every second.
struct Prometheus {
    child: Child,
    dir: tempfile::TempDir,
    api: SocketAddr,
}

impl Prometheus {
    fn start(target: SocketAddr) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: telering\n    static_configs:\n      - targets: ['{target}']\n"
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let api = SocketAddr::from(([127, 0, 0, 1], port));
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={api}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus is installed (Debian package `prometheus`)");
        Prometheus { child, dir, api }
    }

    /// The value of the instant query `agent_tx_bytes_total{agent_name="AGENT"}`.
    fn tx_total(&self, agent: &str) -> Option<String> {
        let mut conn = TcpStream::connect(self.api).ok()?;
        conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let request = format!(
            "GET /api/v1/query?query=agent_tx_bytes_total%7Bagent_name%3D%22{agent}%22%7D HTTP/1.0\r\nHost: {}\r\n\r\n",
            self.api
        );
        conn.write_all(request.as_bytes()).ok()?;
        let mut response = String::new();
        conn.read_to_string(&mut response).ok()?;
        let value = response.split("\"value\":[").nth(1)?.split(',').nth(1)?;
        Some(value.split('"').nth(1)?.to_owned())
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = &self.dir;
    }
}

#[test]
#[ignore = "needs prometheus and an OTLP receiver from PyPI"]
fn together_otlp_ring_prometheus_and_collector_each_get_every_event() {
    let sink = sink::Sink::start_any(&[]);
    let dir = tempfile::tempdir().unwrap();
    let t = agent(
        "agent-all",
        dir.path(),
        &format!("http://127.0.0.1:{}", sink.port),
    );
    record(&t);
    let prometheus = Prometheus::start(metrics_addr(&t));
    until("Prometheus' scraped total", || {
        prometheus.tx_total("agent-all").as_deref() == Some(&TOTAL.to_string())
    });
    sink.wait_for_sum("agent_tx_bytes_total|agent-all", TOTAL);
    let (stats, each) = t.close_with_exporter_stats();
    assert_eq!((stats.events_recorded, stats.events_dropped), (EVENTS, 0));
    for name in ["buffer", "prometheus", "otlp"] {
        let s = of(&each, name);
        assert_eq!(
            (s.events_delivered, s.events_dropped, s.events_undelivered),
            (EVENTS, 0, 0),
            "{s:?}"
        );
        assert!(!s.exporter_failing, "{s:?}");
    }
    assert_eq!(
        ring_values(&dir.path().join("agent-all")),
        (1..=EVENTS).collect::<Vec<_>>()
    );
}

#[test]
fn demo_takes_a_list_and_its_summary_says_what_each_exporter_did() {
    let dir = common::scratch();
    let demo = |json: bool| {
        let mut cmd = common::telering();
        cmd.args(["demo", "--exporter", "buffer,csv,prometheus", "--events"])
            .args(["3000", "--rate", "0"])
            .env("NIXL_TELEMETRY_PROMETHEUS_PORT", "0");
        if json {
            cmd.arg("--json");
        }
        let o = common::run_in(dir.path(), &mut cmd);
        assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
        common::stdout(&o)
    };
    let summary: serde_json::Value = serde_json::from_str(&demo(true)).expect("JSON summary");
    let recorded = summary["events_recorded"].as_u64().unwrap();
    assert!(recorded > 0, "{summary}");
    assert_eq!(summary["exporter"], "buffer,csv,prometheus");
    assert_eq!(summary["ring_file"], "./telemetry/demo-agent");
    assert_eq!(summary["csv_file"], "./telemetry/demo-agent.csv");
    assert!(
        summary["metrics_url"]
            .as_str()
            .is_some_and(|u| u.starts_with("http://127.0.0.1:")),
        "{summary}"
    );
    let each = summary["exporters"].as_array().unwrap();
    let names: Vec<&str> = each.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["buffer", "csv", "prometheus"]);
    for e in each {
        assert_eq!(e["delivered"], recorded, "{e}");
        assert_eq!(
            (&e["dropped"], &e["failing"]),
            (&0.into(), &false.into()),
            "{e}"
        );
    }
    let text = demo(false);
    for name in ["buffer", "csv", "prometheus"] {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(name) && l.contains(" delivered, "))
            .unwrap_or_else(|| panic!("no line for {name}:\n{text}"));
        assert!(line.ends_with(" delivered, 0 lost"), "{line}");
    }
}
