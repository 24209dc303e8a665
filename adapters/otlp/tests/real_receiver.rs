//! The `otlp` exporter inside a real telering-std `Telemetry`, pushing to oteltest's
//! OTLP/HTTP sink from PyPI, whose requests are decoded by the official
//! `opentelemetry-proto` Python package (`tests/otlp_receiver.py`). `.ci/run` installs
//! both into a virtual environment and puts its `python3` first on `PATH`.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::Value;
use telering_std::{EnvSource, ExporterRegistry, Telemetry};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The receiver process and the JSON lines it prints.
struct Sink {
    child: Child,
    lines: Receiver<Value>,
}

impl Sink {
    fn start(port: u16, args: &[&str]) -> Sink {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otlp_receiver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 with oteltest on PATH");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).is_err() {
            assert!(Instant::now() < deadline, "receiver did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Sink { child, lines }
    }

    /// Waits for a request whose sum `key` equals `want`; returns that request and every
    /// line seen before it.
    fn wait_for_sum(&self, key: &str, want: u64) -> (Value, Vec<Value>) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no request with {key} = {want}; saw {seen:?}"));
            if line["sums"][key].as_u64() == Some(want) {
                return (line, seen);
            }
            seen.push(line);
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent(name: &str, port: u16) -> Telemetry {
    let mut registry = ExporterRegistry::with_builtins();
    telering_otlp::register(&mut registry);
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "otlp".to_string()),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        ),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200".to_string()),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2000".to_string()),
        ("OTEL_SERVICE_NAME", "trainer".to_string()),
        (
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=ci".to_string(),
        ),
    ]);
    Telemetry::builder(name)
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .build()
        .unwrap()
}

#[test]
#[ignore = "needs an OTLP receiver from PyPI"]
fn sums_received_equal_the_recorded_totals() {
    let port = free_port();
    let sink = Sink::start(port, &[]);
    let telemetry = agent("otlp-sums", port);
    let mut total = 0;
    for bytes in 1..=1000u64 {
        telemetry.update_tx_bytes(bytes);
        total += bytes;
    }
    telemetry.update_error_count(telering_core::builtin::ErrorStatus::Canceled);
    telemetry.flush().unwrap();
    let (line, _) = sink.wait_for_sum("agent_tx_bytes_total|otlp-sums", total);
    assert_eq!(line["sums"]["agent_errors_total|otlp-sums|canceled"], 1);
    assert_eq!(line["sums"]["__temporality"], 2, "cumulative");
    assert_eq!(line["sums"]["__hostname"], telering_prometheus::hostname());
    assert_eq!(line["content_type"], "application/x-protobuf");
    assert_eq!(line["resource"]["service.name"], "trainer");
    assert_eq!(line["resource"]["deployment.environment"], "ci");
    assert_eq!(telemetry.stats().events_dropped, 0);
}

#[test]
#[ignore = "needs an OTLP receiver from PyPI"]
fn a_receiver_answering_503_then_recovering_receives_the_cumulative_values() {
    let port = free_port();
    let sink = Sink::start(port, &["--unavailable", "3"]);
    let telemetry = agent("otlp-503", port);
    let mut total = 0;
    for round in 0..20u64 {
        for bytes in 0..100u64 {
            telemetry.update_rx_bytes(round * 100 + bytes);
            total += round * 100 + bytes;
        }
        telemetry.flush().unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_, before) = sink.wait_for_sum("agent_rx_bytes_total|otlp-503", total);
    let refused = before.iter().filter(|l| l["answered"] == 503).count();
    assert_eq!(
        refused, 3,
        "the front refused three requests first: {before:?}"
    );
    // Cumulative values never go backwards across the outage.
    let mut last = 0;
    for line in &before {
        if let Some(v) = line["sums"]["agent_rx_bytes_total|otlp-503"].as_u64() {
            assert!(v >= last, "{before:?}");
            last = v;
        }
    }
    assert_eq!(telemetry.stats().events_dropped, 0);
}

#[test]
#[ignore = "needs an OTLP receiver from PyPI"]
fn a_receiver_absent_at_start_is_retried_and_recording_loses_nothing() {
    let port = free_port();
    let telemetry = agent("otlp-late", port);
    let mut total = 0;
    for _ in 0..50 {
        for _ in 0..200 {
            telemetry.update_tx_requests_num(1);
            total += 1;
        }
        telemetry.flush().unwrap();
    }
    let stats = telemetry.stats();
    assert_eq!(stats.events_dropped, 0, "{stats:?}");
    assert_eq!(stats.exporter_dropped, 0, "{stats:?}");
    assert_eq!(stats.events_exported, stats.events_recorded, "{stats:?}");
    let sink = Sink::start(port, &[]);
    sink.wait_for_sum("agent_tx_requests_num_total|otlp-late", total);
}

/// Records every log line so a test can see the refusal.
struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        if let Ok(mut lines) = self.0.lock() {
            lines.push(format!("{} {}", record.level(), record.args()));
        }
    }
    fn flush(&self) {}
}

static LOG: Capture = Capture(Mutex::new(Vec::new()));

#[test]
#[ignore = "needs an OTLP receiver from PyPI"]
fn a_refusing_endpoint_is_logged_with_its_status_and_body() {
    let _ = log::set_logger(&LOG);
    log::set_max_level(log::LevelFilter::Debug);
    let port = free_port();
    let sink = Sink::start(port, &["--refuse"]);
    let telemetry = agent("otlp-refused", port);
    telemetry.update_tx_bytes(1);
    telemetry.flush().unwrap();
    let answered = sink
        .lines
        .recv_timeout(Duration::from_secs(30))
        .expect("a request reached the front");
    assert_eq!(answered["answered"], 400);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = LOG.0.lock().unwrap().iter().any(|l| {
            l.starts_with("ERROR")
                && l.contains("refused: HTTP 400 metric names rejected by policy")
                && l.contains(&format!("127.0.0.1:{port}/v1/metrics"))
        });
        if found {
            break;
        }
        assert!(Instant::now() < deadline, "{:?}", LOG.0.lock().unwrap());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(telemetry.stats().events_dropped, 0);
}
