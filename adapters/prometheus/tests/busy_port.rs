//! A metrics port already in use: the agent runs on, the warning is logged, and its
//! statistics show the exporter as failing, with nothing counted as exported.

use std::net::TcpListener;
use std::sync::Mutex;
use telering_std::{EnvSource, ExporterRegistry, Telemetry};

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

fn agent(port: u16) -> Telemetry {
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "prometheus".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", port.to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true".to_string()),
    ]);
    Telemetry::builder("busy")
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .build()
        .unwrap()
}

#[test]
fn a_busy_metrics_port_shows_as_a_failing_exporter_that_delivers_nothing() {
    let _ = log::set_logger(&LOG);
    log::set_max_level(log::LevelFilter::Debug);
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let telemetry = agent(port);
    assert_eq!(telemetry.exporter_endpoint(), None);
    telemetry.update_tx_bytes(64);
    telemetry.update_rx_bytes(64);
    telemetry.flush().unwrap();
    let s = telemetry.stats();
    assert!(s.exporter_failing, "{s:?}");
    assert_eq!(s.export_errors, 1, "{s:?}");
    assert_eq!((s.events_exported, s.events_undelivered), (0, 2), "{s:?}");
    assert!(
        LOG.0
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("WARN") && l.contains("no metrics are served")),
        "{:?}",
        LOG.0.lock().unwrap()
    );
}

#[test]
fn a_served_port_delivers_every_event_folded_in() {
    let telemetry = agent(0);
    assert!(telemetry.exporter_endpoint().is_some());
    telemetry.update_tx_bytes(64);
    telemetry.flush().unwrap();
    let s = telemetry.stats();
    assert!(!s.exporter_failing, "{s:?}");
    assert_eq!(
        (s.events_exported, s.events_undelivered, s.export_errors),
        (1, 0, 0)
    );
}
