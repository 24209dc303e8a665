//! Statistics and logs against three real failing collectors (a 500 to every push,
//! one that is down, one that never answers): nothing counts as exported, every
//! failed attempt is an export error, the warning is logged, and shutdown is bounded.

#[path = "common/failing.rs"]
mod failing;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use failing::Failing;
use telering_std::{EnvSource, ExporterRegistry, Telemetry, TelemetryStats};

/// Records every log line so a test can see the warning.
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

fn agent(name: &str, collector: &Failing, extra: &[(&str, &str)]) -> Telemetry {
    let _ = log::set_logger(&LOG);
    log::set_max_level(log::LevelFilter::Debug);
    let mut registry = ExporterRegistry::with_builtins();
    telering_otlp::register(&mut registry);
    let mut pairs = vec![
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "otlp".to_string()),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "20".to_string()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint.clone()),
        ("OTEL_METRIC_EXPORT_INTERVAL", "50".to_string()),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "300".to_string()),
    ];
    pairs.extend(extra.iter().map(|(k, v)| (*k, (*v).to_string())));
    Telemetry::builder(name)
        .registry(registry)
        .apply_env(&EnvSource::from_pairs(pairs))
        .unwrap()
        .build()
        .unwrap()
}

fn logged(needle: &str) -> bool {
    LOG.0.lock().unwrap().iter().any(|l| l.contains(needle))
}

/// Records 10 events, waits (with a deadline) for two failed attempts and the logged
/// warning naming the collector, and checks the live statistics.
fn fails_visibly(name: &str, collector: &Failing, warning: &str) -> TelemetryStats {
    let telemetry = agent(name, collector, &[]);
    for _ in 0..10 {
        telemetry.update_tx_bytes(64);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let url = format!("{}/v1/metrics", collector.endpoint);
    loop {
        let s = telemetry.stats();
        if s.export_errors >= 2 && logged(&url) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{s:?} {:?}",
            LOG.0.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let live = telemetry.stats();
    assert_eq!(live.events_recorded, 10, "{live:?}");
    assert_eq!(live.events_exported, 0, "nothing was delivered: {live:?}");
    assert_eq!(live.events_undelivered, 10, "{live:?}");
    assert!(live.exporter_failing, "{live:?}");
    assert!(
        LOG.0
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.contains(&url) && l.contains(warning)),
        "{:?}",
        LOG.0.lock().unwrap()
    );
    let last = telemetry.close();
    assert_eq!(
        (last.events_exported, last.events_undelivered),
        (0, 10),
        "{last:?}"
    );
    assert!(
        last.export_errors > live.export_errors,
        "the last push failed too: {last:?}"
    );
    assert!(logged(&format!(
        "{url}: 10 events were not delivered by shutdown"
    )));
    last
}

#[test]
fn a_collector_answering_500_to_every_push_counts_errors_and_delivers_nothing() {
    let collector = failing::answering_500();
    fails_visibly("otlp-500", &collector, "HTTP 500 collector failure");
    assert!(collector.hits() >= 2);
}

#[test]
fn a_collector_that_is_down_counts_errors_and_delivers_nothing() {
    let collector = failing::down();
    fails_visibly("otlp-down", &collector, "cannot reach the collector");
}

#[test]
fn a_collector_that_never_answers_counts_timeouts_and_delivers_nothing() {
    let collector = failing::never_answering();
    fails_visibly("otlp-silent", &collector, "cannot reach the collector");
    assert!(collector.hits() >= 1);
}

#[test]
fn shutdown_with_a_collector_that_never_answers_is_bounded_by_the_shutdown_timeout() {
    let collector = failing::never_answering();
    // A request may take 60 s; shutting down may take 300 ms.
    let telemetry = agent(
        "otlp-bounded",
        &collector,
        &[
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "60000"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "3600000"),
            ("TELERING_OTLP_SHUTDOWN_TIMEOUT", "300"),
        ],
    );
    telemetry.update_rx_bytes(1);
    telemetry.update_tx_bytes(1);
    let started = Instant::now();
    let last = telemetry.close();
    // Far below the 60 s request timeout, whatever the machine's load.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        (last.events_exported, last.events_undelivered),
        (0, 2),
        "{last:?}"
    );
    assert!(last.export_errors >= 1 && last.exporter_failing, "{last:?}");
    let url = format!("{}/v1/metrics", collector.endpoint);
    assert!(
        logged(&format!("{url}: 2 events were not delivered by shutdown")),
        "{:?}",
        LOG.0.lock().unwrap()
    );
}

#[test]
fn a_push_under_way_at_shutdown_is_abandoned_at_the_shutdown_timeout() {
    let collector = failing::never_answering();
    let telemetry = agent(
        "otlp-abandoned",
        &collector,
        &[
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "60000"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "20"),
            ("TELERING_OTLP_SHUTDOWN_TIMEOUT", "300"),
        ],
    );
    telemetry.update_rx_bytes(1);
    // Wait until a regular push is hanging on the collector.
    let deadline = Instant::now() + Duration::from_secs(30);
    while collector.hits() == 0 {
        assert!(Instant::now() < deadline, "no push reached the collector");
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    let last = telemetry.close();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(last.events_undelivered, 1, "{last:?}");
    let url = format!("{}/v1/metrics", collector.endpoint);
    assert!(
        logged(&format!(
            "{url}: 1 events were not delivered by shutdown (no answer within"
        )),
        "{:?}",
        LOG.0.lock().unwrap()
    );
}
