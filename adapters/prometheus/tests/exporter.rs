//! The `prometheus` exporter inside a real telering-std `Telemetry`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use telering_std::export::ExporterContext;
use telering_std::{EnvSource, ExportError, ExporterRegistry, Telemetry};

fn registry() -> ExporterRegistry {
    let mut r = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut r);
    r
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn env(port: u16) -> EnvSource {
    EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "prometheus".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", port.to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true".to_string()),
        (
            "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US",
            "100,1000".to_string(),
        ),
    ])
}

fn scrape(addr: SocketAddr) -> String {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = conn.read_to_string(&mut out);
    out
}

/// Records every log line so the tests can see the warnings.
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

fn capture_logs() {
    let _ = log::set_logger(&LOG);
    log::set_max_level(log::LevelFilter::Debug);
}

#[test]
fn the_registered_exporter_serves_what_the_agent_records() {
    let port = free_port();
    let telemetry = Telemetry::builder("exporting-agent")
        .registry(registry())
        .apply_env(&env(port))
        .unwrap()
        .build()
        .unwrap();
    telemetry.update_tx_bytes(4096);
    telemetry.update_tx_bytes(1000);
    telemetry.update_error_count(telering_core::builtin::ErrorStatus::Canceled);
    telemetry.flush().unwrap();
    let page = scrape(SocketAddr::from(([127, 0, 0, 1], port)));
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(
        page.contains("agent_tx_bytes_total{agent_name=\"exporting-agent\""),
        "{page}"
    );
    assert!(page.contains("} 5096\n"), "{page}");
    assert!(page.contains("status=\"canceled\"} 1"), "{page}");
    // The bucket override applies.
    assert!(page.contains("le=\"1000\""), "{page}");
    assert!(!page.contains("le=\"2500\""), "{page}");
    drop(telemetry);
    // Shutting the agent's telemetry down closes the endpoint.
    let start = Instant::now();
    while TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).is_ok() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "endpoint still open"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_port_in_use_logs_a_warning_and_the_agent_keeps_capturing() {
    capture_logs();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let telemetry = Telemetry::builder("crowded-agent")
        .registry(registry())
        .apply_env(&env(port))
        .unwrap()
        .build()
        .expect("a busy port must not stop the agent");
    let mut xfer = telemetry.start_xfer(true, 1 << 20, 4);
    telemetry.xfer_posted(&mut xfer).unwrap();
    telemetry.xfer_completed(&mut xfer).unwrap();
    let captured = telemetry.get_xfer_telemetry(&xfer).unwrap();
    assert_eq!(captured.total_bytes, 1 << 20);
    telemetry.update_rx_bytes(3);
    telemetry.flush().unwrap();
    let lines = LOG.0.lock().unwrap().clone();
    assert!(
        lines.iter().any(|l| l.starts_with("WARN")
            && l.contains("prometheus")
            && l.contains(&port.to_string())
            && l.contains("keeps running")),
        "{lines:#?}"
    );
    drop(taken);
}

#[test]
fn malformed_variables_are_typed_config_errors_naming_the_variable() {
    for (variable, value) in [
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", "http"),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "sometimes"),
        ("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", "100,50"),
        ("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", "1,two,3"),
    ] {
        let mut context = ExporterContext::new("agent");
        context.env = EnvSource::from_pairs([(variable, value)]);
        let err = telering_prometheus::PrometheusExporter::factory(&context).unwrap_err();
        match &err {
            ExportError::Config {
                variable: v,
                exporter,
                ..
            } => {
                assert_eq!(v, variable);
                assert_eq!(exporter, "prometheus");
            }
            other => panic!("{variable}={value}: expected a config error, got {other:?}"),
        }
        assert!(err.to_string().contains(variable), "{err}");
    }
}
