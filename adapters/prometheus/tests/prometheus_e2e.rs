//! End to end: a real Prometheus server on loopback scrapes the endpoint, and its HTTP
//! API must report exactly the bytes the test recorded, scraping gzip-compressed pages,
//! and the kept slow transfers as exemplars (needs `prometheus`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use telering_core::{Category, Event, builtin};
use telering_prometheus::collector::{CollectorOptions, run_collector};
use telering_shm::{ShmWriter, WriterOptions};

/// A Prometheus server with its own config and data directory, killed on drop.
struct Prometheus {
    child: Child,
    dir: PathBuf,
    api: SocketAddr,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Prometheus {
    fn start(tag: &str, target: SocketAddr) -> Prometheus {
        Prometheus::start_with(tag, target, &[])
    }

    /// `start` with more command-line flags.
    fn start_with(tag: &str, target: SocketAddr, flags: &[&str]) -> Prometheus {
        let dir =
            std::env::temp_dir().join(format!("telering-prom-e2e-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: telering\n    static_configs:\n      - targets: ['{target}']\n"
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let api: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={api}"))
            .args(flags)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("prometheus is installed (Debian package `prometheus`)");
        Prometheus { child, dir, api }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    /// The value of an instant query with one result, if Prometheus has it.
    fn query_value(&self, query: &str) -> Option<String> {
        let mut conn = TcpStream::connect(self.api).ok()?;
        conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let request = format!(
            "GET /api/v1/query?query={} HTTP/1.0\r\nHost: {}\r\n\r\n",
            percent_encode(query),
            self.api
        );
        conn.write_all(request.as_bytes()).ok()?;
        let mut response = String::new();
        conn.read_to_string(&mut response).ok()?;
        // {"status":"success","data":{"resultType":"vector","result":[{"metric":{…},"value":[1700000000.1,"6456"]}]}}
        let value = response.split("\"value\":[").nth(1)?;
        let value = value.split(',').nth(1)?;
        Some(value.split('"').nth(1)?.to_owned())
    }

    /// The body of a `GET` of `path_and_query` on the API, if it answers.
    fn get(&self, path_and_query: &str) -> Option<String> {
        let mut conn = TcpStream::connect(self.api).ok()?;
        conn.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let request = format!(
            "GET {path_and_query} HTTP/1.0\r\nHost: {}\r\n\r\n",
            self.api
        );
        conn.write_all(request.as_bytes()).ok()?;
        let mut response = String::new();
        conn.read_to_string(&mut response).ok()?;
        Some(response.split_once("\r\n\r\n")?.1.to_owned())
    }

    /// Polls until `query` yields `want`; panics with Prometheus' log after `timeout`.
    fn wait_for(&self, query: &str, want: &str, timeout: Duration) {
        let start = Instant::now();
        let mut last = None;
        while start.elapsed() < timeout {
            last = self.query_value(query);
            if last.as_deref() == Some(want) {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!(
            "{query} is {last:?}, expected {want:?} after {timeout:?}\n--- prometheus log ---\n{}",
            self.log()
        );
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A TCP relay between Prometheus and the endpoint that keeps the head of every request
/// and response, to check what went over the wire.
struct WireTap {
    addr: SocketAddr,
    heads: Arc<Mutex<Vec<(String, String)>>>,
}

impl WireTap {
    fn start(upstream: SocketAddr) -> WireTap {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let record = heads.clone();
        // Runs until the test process ends.
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let record = record.clone();
                std::thread::spawn(move || relay(client, upstream, &record));
            }
        });
        WireTap { addr, heads }
    }

    fn heads(&self) -> Vec<(String, String)> {
        self.heads.lock().unwrap().clone()
    }
}

fn relay(mut client: TcpStream, upstream: SocketAddr, record: &Mutex<Vec<(String, String)>>) {
    let Ok(mut server) = TcpStream::connect(upstream) else {
        return;
    };
    let mut request = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    // Prometheus sends the whole head, then waits for the response.
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match client.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    if server.write_all(&request).is_err() {
        return;
    }
    let mut response = Vec::new();
    loop {
        match server.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if response.len() < 4096 {
                    response.extend_from_slice(&buf[..n.min(4096)]);
                }
                if client.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
    let head = |bytes: &[u8]| {
        let end = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    };
    record
        .lock()
        .unwrap()
        .push((head(&request), head(&response)));
}

fn tx(bytes: u64) -> Event {
    Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, bytes)
}

#[test]
#[ignore = "needs prometheus"]
fn prometheus_scrapes_the_collector_and_reports_the_recorded_bytes() {
    let dir = std::env::temp_dir().join(format!("telering-prom-e2e-rings-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut writer = ShmWriter::create(WriterOptions::new(&dir, "e2e-agent")).unwrap();
    let mut other = ShmWriter::create(WriterOptions::new(&dir, "other-agent")).unwrap();
    let recorded = [1000u64, 2000, 3456];
    for bytes in recorded {
        assert_eq!(writer.write_batch(&[tx(bytes)]), 1);
    }
    let xfer = Event::new(2, Category::Performance, builtin::AGENT_XFER_TIME.name, 300);
    writer.write_batch(&[xfer]);
    other.write_batch(&[tx(1)]);
    let shutdown = AtomicBool::new(false);
    std::thread::scope(|s| {
        let (ready, bound) = mpsc::channel();
        let mut options = CollectorOptions::new(&dir).port(0).local(true);
        options.poll_interval = Duration::from_millis(50);
        let collector =
            s.spawn(|| run_collector(options, &shutdown, move |addr| ready.send(addr).unwrap()));
        let addr = bound.recv_timeout(Duration::from_secs(10)).unwrap();
        let tap = WireTap::start(addr);
        let prometheus = Prometheus::start("collector", tap.addr);
        let total: u64 = recorded.iter().sum();
        prometheus.wait_for(
            r#"agent_tx_bytes_total{agent_name="e2e-agent"}"#,
            &total.to_string(),
            Duration::from_secs(60),
        );
        // Events recorded later arrive too.
        writer.write_batch(&[tx(44)]);
        prometheus.wait_for(
            r#"agent_tx_bytes_total{agent_name="e2e-agent"}"#,
            &(total + 44).to_string(),
            Duration::from_secs(30),
        );
        prometheus.wait_for(
            r#"agent_tx_bytes_total{agent_name="other-agent"}"#,
            "1",
            Duration::from_secs(30),
        );
        // The histogram and the error families arrive intact as well.
        prometheus.wait_for(
            r#"count(agent_errors_total{agent_name="e2e-agent"})"#,
            "12",
            Duration::from_secs(30),
        );
        prometheus.wait_for(
            r#"agent_xfer_time_us_count{agent_name="e2e-agent"}"#,
            "1",
            Duration::from_secs(30),
        );
        prometheus.wait_for(
            r#"agent_xfer_time{agent_name="e2e-agent"}"#,
            "300",
            Duration::from_secs(30),
        );
        // Prometheus asked for gzip, and got it.
        let heads = tap.heads();
        assert!(!heads.is_empty());
        for (request, response) in &heads {
            assert!(
                request
                    .to_ascii_lowercase()
                    .contains("accept-encoding: gzip"),
                "{request}"
            );
            assert!(response.starts_with("HTTP/1.1 200"), "{response}");
            assert!(response.contains("Content-Encoding: gzip"), "{response}");
        }
        shutdown.store(true, Ordering::SeqCst);
        collector.join().unwrap().unwrap();
    });
    writer.close().unwrap();
    other.close().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "needs prometheus"]
fn prometheus_scrapes_the_agent_exporter_and_reports_the_recorded_bytes() {
    use telering_std::{EnvSource, ExporterRegistry, Telemetry};
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    let port = free_port();
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "prometheus".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", port.to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true".to_string()),
    ]);
    let telemetry = Telemetry::builder("e2e-exporter")
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .build()
        .unwrap();
    let recorded = [512u64, 1 << 20, 77];
    for bytes in recorded {
        telemetry.update_tx_bytes(bytes);
    }
    telemetry.flush().unwrap();
    let prometheus = Prometheus::start("exporter", SocketAddr::from(([127, 0, 0, 1], port)));
    let total: u64 = recorded.iter().sum();
    let query = r#"agent_tx_bytes_total{agent_name="e2e-exporter"}"#;
    prometheus.wait_for(query, &total.to_string(), Duration::from_secs(60));
    telemetry.update_tx_bytes(1);
    telemetry.flush().unwrap();
    prometheus.wait_for(query, &(total + 1).to_string(), Duration::from_secs(30));
}

#[test]
#[ignore = "needs prometheus"]
fn prometheus_stores_each_route_of_the_agent_exporter_with_exact_sums() {
    use telering_std::route::{MemoryType, Operation, Route};
    use telering_std::{EnvSource, ExporterRegistry, Telemetry};
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    let port = free_port();
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "prometheus".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", port.to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true".to_string()),
    ]);
    let telemetry = Telemetry::builder("e2e-routes")
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .build()
        .unwrap();
    let decode = |peer: &str| {
        Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            peer,
        )
    };
    let fast = telemetry.route(&decode("decode-0")).unwrap();
    let slow = telemetry.route(&decode("decode-1")).unwrap();
    for i in 0..100u64 {
        telemetry.add_route_xfer_stats_us(fast, 40, 1 << 20, 3, 1);
        telemetry.add_route_xfer_stats_us(slow, 20_000 + i, 1 << 16, 9, 2);
    }
    telemetry.flush().unwrap();
    let prometheus = Prometheus::start("routes", SocketAddr::from(([127, 0, 0, 1], port)));
    let bytes = |peer: &str| {
        format!(
            r#"telering_route_bytes_total{{agent_name="e2e-routes",peer="{peer}",operation="WRITE",local_mem="VRAM",remote_mem="VRAM",backend="UCX"}}"#
        )
    };
    prometheus.wait_for(
        &bytes("decode-0"),
        &(100u64 << 20).to_string(),
        Duration::from_secs(60),
    );
    prometheus.wait_for(
        &bytes("decode-1"),
        &(100u64 << 16).to_string(),
        Duration::from_secs(30),
    );
    prometheus.wait_for(
        r#"sum(telering_route_xfer_time_us_bucket{agent_name="e2e-routes",peer="decode-1",le=~"10000(\\.0)?"})"#,
        "0",
        Duration::from_secs(30),
    );
    prometheus.wait_for(
        r#"telering_route_xfer_time_us_count{agent_name="e2e-routes",peer="decode-1"}"#,
        "100",
        Duration::from_secs(30),
    );
    prometheus.wait_for(
        r#"telering_route_slowest_xfer_time_us{agent_name="e2e-routes",peer="decode-1"}"#,
        "20099",
        Duration::from_secs(30),
    );
}

#[test]
#[ignore = "needs prometheus"]
fn prometheus_stores_each_kept_slow_transfer_as_the_exemplar_of_its_bucket() {
    use telering_std::route::{MemoryType, Operation, Route};
    use telering_std::{EnvSource, ExporterRegistry, Telemetry};
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    let port = free_port();
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "prometheus".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", port.to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true".to_string()),
        ("TELERING_SLOW_XFERS", "1".to_string()),
        // Flushes only when told: `route_report` is then the flush's interval.
        ("NIXL_TELEMETRY_RUN_INTERVAL", "3600000".to_string()),
    ]);
    let telemetry = Telemetry::builder("e2e-exemplars")
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .build()
        .unwrap();
    let slow = Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        "decode-1",
    );
    let id = telemetry.route(&slow).unwrap();
    for us in [40, 7_300, 90] {
        telemetry.add_route_xfer_stats_us(id, us, 1 << 16, 9, 2);
    }
    telemetry.flush().unwrap();
    let report = telemetry.route_report();
    assert_eq!(report.slow.len(), 1, "{report:?}");
    let (route, kept) = &report.slow[0];
    assert_eq!(kept.xfer_us, 7_300);
    let ids = kept.trace_ids("e2e-exemplars", route, 0);
    let prometheus = Prometheus::start_with(
        "exemplars",
        SocketAddr::from(([127, 0, 0, 1], port)),
        &["--enable-feature=exemplar-storage"],
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let path = format!(
        "/api/v1/query_exemplars?query={}&start={}&end={}",
        percent_encode(r#"telering_route_xfer_time_us_bucket{agent_name="e2e-exemplars"}"#),
        now - 3600,
        now + 3600
    );
    let start = Instant::now();
    let mut last = None;
    while start.elapsed() < Duration::from_secs(60) {
        last = prometheus.get(&path);
        if last
            .as_deref()
            .is_some_and(|b| b.contains(&ids.trace_hex()))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let body = last.unwrap_or_default();
    // One exemplar, on the `le="10000"` bucket of the route, with the span's ids.
    let exemplar = format!(
        r#"{{"labels":{{"span_id":"{}","trace_id":"{}"}},"value":"7300","timestamp":"#,
        ids.span_hex(),
        ids.trace_hex()
    );
    assert!(
        body.contains(&exemplar),
        "{body}\n--- prometheus log ---\n{}",
        prometheus.log()
    );
    assert_eq!(body.matches("\"trace_id\"").count(), 1, "{body}");
    assert!(
        body.contains(r#""le":"10000.0""#) || body.contains(r#""le":"10000""#),
        "{body}"
    );
    let end_s = (kept.start_us + kept.xfer_us) as f64 / 1e6;
    let ts: f64 = body
        .split(r#""timestamp":"#)
        .nth(1)
        .and_then(|t| t.split(['}', ',']).next())
        .and_then(|t| t.parse().ok())
        .expect("a timestamp");
    assert!((ts - end_s).abs() < 0.002, "{ts} against {end_s}");
}
