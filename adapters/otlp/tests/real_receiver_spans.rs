//! The kept slow transfers as spans on a real OTLP receiver (oteltest's sink from
//! PyPI, decoding with the official `opentelemetry-proto`; `tests/otlp_receiver.py`):
//! the exact span count per route, the attributes, start and end, and ids equal to
//! the Prometheus exemplars of the same transfers, scraped from the in-process
//! `prometheus` exporter running beside `otlp` on the same agent.

#[path = "common/sink.rs"]
mod sink;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;
use sink::{Sink, free_port};
use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{EnvSource, ExporterRegistry, Telemetry};

/// The OpenMetrics page of the `prometheus` exporter on `port`.
fn scrape_openmetrics(port: u16) -> String {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: application/openmetrics-text;version=1.0.0\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    let mut response = String::new();
    conn.read_to_string(&mut response).unwrap();
    response.split_once("\r\n\r\n").unwrap().1.to_owned()
}

#[test]
#[ignore = "needs an OTLP receiver from PyPI"]
fn kept_transfers_arrive_as_spans_with_the_ids_of_their_exemplars() {
    let sink = Sink::start_any(&[]);
    let prom_port = free_port();
    let mut registry = ExporterRegistry::with_builtins();
    telering_otlp::register(&mut registry);
    telering_prometheus::register(&mut registry);
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "otlp,prometheus".to_string()),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{}", sink.port),
        ),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", prom_port.to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true".to_string()),
        ("TELERING_SLOW_XFERS", "2".to_string()),
        // Flushes only when told: `route_report` is then the flush's interval.
        ("NIXL_TELEMETRY_RUN_INTERVAL", "3600000".to_string()),
    ]);
    let t = Telemetry::builder("prefill-0")
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .build()
        .unwrap();
    let to = |peer: &str| {
        Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            peer,
        )
    };
    let fast = t.route(&to("decode-0")).unwrap();
    let slow = t.route(&to("decode-1")).unwrap();
    // The two kept of each route fall in distinct buckets, so each is an exemplar.
    for us in [20, 40, 200, 8, 700] {
        t.add_route_xfer_stats_us(fast, us, 1 << 20, 3, 1);
    }
    for us in [30_000, 300_000, 50] {
        t.add_route_xfer_stats_us(slow, us, 1 << 16, 9, 4);
    }
    t.flush().unwrap();
    let report = t.route_report();
    assert_eq!(report.slow.len(), 4, "{report:?}");

    // Every span line until four spans arrived; no more may follow.
    let mut spans: Vec<Value> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while spans.len() < 4 {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = sink
            .lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("spans so far: {spans:?}"));
        if let Some(s) = line["spans"].as_array() {
            spans.extend(s.iter().cloned());
        }
    }
    let page = scrape_openmetrics(prom_port);
    t.flush().unwrap();
    drop(t);
    while let Ok(line) = sink.lines.recv_timeout(Duration::from_millis(500)) {
        assert!(
            line["spans"].as_array().is_none_or(|s| s.is_empty()),
            "a span sent twice: {line}"
        );
    }
    assert_eq!(spans.len(), 4, "{spans:?}");
    let mut per_peer = BTreeMap::new();
    for s in &spans {
        *per_peer
            .entry(
                s["attributes"]["telering.peer"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            )
            .or_insert(0) += 1;
    }
    assert_eq!(
        per_peer,
        BTreeMap::from([("decode-0".into(), 2), ("decode-1".into(), 2)])
    );

    for (position, (route, x)) in report.slow.iter().enumerate() {
        let ids = x.trace_ids("prefill-0", route, position);
        let span = spans
            .iter()
            .find(|s| s["trace_id"] == ids.trace_hex())
            .unwrap_or_else(|| panic!("no span for {x:?}: {spans:?}"));
        assert_eq!(span["span_id"], ids.span_hex());
        assert_eq!(span["name"], "telering.transfer");
        assert_eq!(span["kind"], 3, "SPAN_KIND_CLIENT");
        assert_eq!(span["scope"], "telering");
        assert_eq!(span["start"].as_u64(), Some(x.start_us * 1000));
        assert_eq!(span["end"].as_u64(), Some((x.start_us + x.xfer_us) * 1000));
        let a = &span["attributes"];
        assert_eq!(a["telering.agent_name"], "prefill-0");
        assert_eq!(a["telering.operation"], "WRITE");
        assert_eq!(a["telering.backend"], "UCX");
        assert_eq!(a["telering.local_mem"], "VRAM");
        assert_eq!(a["telering.remote_mem"], "VRAM");
        assert_eq!(a["telering.peer"], route.peer.as_str());
        // OTLP/JSON-style ints: the proto's int_value.
        assert_eq!(a["telering.xfer_time_us"].as_u64(), Some(x.xfer_us));
        assert_eq!(a["telering.bytes"].as_u64(), Some(x.bytes));
        assert_eq!(a["telering.descriptors"].as_u64(), Some(x.descriptors));
        assert_eq!(a["telering.post_time_us"].as_u64(), Some(x.post_us));
        // The same transfer's exemplar names the same trace and span.
        let exemplar = format!(
            r#" # {{trace_id="{}",span_id="{}"}} {} "#,
            ids.trace_hex(),
            ids.span_hex(),
            x.xfer_us
        );
        let line = page
            .lines()
            .find(|l| l.contains(&exemplar))
            .unwrap_or_else(|| panic!("no exemplar {exemplar:?} in\n{page}"));
        assert!(
            line.starts_with("telering_route_xfer_time_us_bucket{"),
            "{line}"
        );
        assert!(
            line.contains(&format!(r#"peer="{}""#, route.peer)),
            "{line}"
        );
    }
    assert_eq!(page.matches(" # {trace_id=").count(), 4, "{page}");
}
