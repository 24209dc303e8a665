//! The conservation matrix's OTLP cell: what a real receiver (oteltest's sink from
//! PyPI, decoded with `opentelemetry-proto`; `tests/otlp_receiver.py`) gets is every
//! event recorded, delivered or counted as lost. An agent whose lane refuses events at
//! record time pushes the events it delivered and the count it dropped; the two add up
//! to what it recorded after every push, and the agent's own statistics agree.

#[path = "common/sink.rs"]
mod sink;

use std::time::Duration;

use sink::Sink;
use telering_std::{EnvSource, ExporterRegistry, Telemetry};

#[test]
#[ignore = "needs an OTLP receiver from PyPI"]
fn the_receiver_gets_every_event_delivered_or_counted_as_dropped() {
    let sink = Sink::start_any(&[]);
    let mut registry = ExporterRegistry::with_builtins();
    telering_otlp::register(&mut registry);
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "otlp".to_string()),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", sink.port),
        ),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200".to_string()),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "2000".to_string()),
    ]);
    let telemetry = Telemetry::builder("otlp-ledger")
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .lane_capacity(16)
        .early_flush(false)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    let mut recorded = 0u64;
    for round in 1..=3u64 {
        // 40 into a lane of 16: 15 are taken, 25 dropped at record time.
        for _ in 0..40 {
            telemetry.update_tx_requests_num(1);
        }
        recorded += 40;
        telemetry.flush().unwrap();
        let (line, _) = sink.wait_for_sum("agent_tx_requests_num_total|otlp-ledger", 15 * round);
        let dropped = line["sums"]["agent_telemetry_events_dropped_total|otlp-ledger"]
            .as_u64()
            .unwrap_or_else(|| panic!("no dropped count in {line}"));
        assert_eq!(15 * round + dropped, recorded, "{line}");
        assert_eq!(dropped, 25 * round, "{line}");
    }
    let stats = telemetry.stats();
    assert_eq!(
        (stats.events_recorded, stats.events_dropped),
        (recorded, 75),
        "{stats:?}"
    );
    assert_eq!(stats.exporter_dropped, 0, "{stats:?}");
}
