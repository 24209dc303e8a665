//! Cells of the conservation matrix whose surface is the agent's own `/metrics` page
//! (the in-process `prometheus` exporter): what the page counts plus the losses it
//! reports is every event recorded.

use std::io::{Read, Write};
use std::time::Duration;
use telering_conservation::surfaces::sample;
use telering_std::{EnvSource, ExporterRegistry, TelemetryBuilder};

/// The page at `url` (`http://127.0.0.1:PORT/metrics`).
fn get(url: &str) -> String {
    try_get(url).expect("the exporter's page")
}

/// The page at `url`, or the error of connecting or reading (`prometheus_mp`'s
/// endpoint is bound by whichever rank wins it, a moment after the rank starts).
fn try_get(url: &str) -> std::io::Result<String> {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_once('/').expect("a path");
    let mut conn = std::net::TcpStream::connect(host)?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        conn,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )?;
    let mut page = String::new();
    conn.read_to_string(&mut page)?;
    Ok(page)
}

#[test]
fn the_in_process_metrics_page_counts_every_event_delivered_or_dropped() {
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "yes"),
        ("NIXL_TELEMETRY_EXPORTER", "prometheus"),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", "0"),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "yes"),
    ]);
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    let t = TelemetryBuilder::from_env("page", &env)
        .unwrap()
        .registry(registry)
        .lane_capacity(16)
        .early_flush(false)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    let url = t.exporter_endpoint().expect("the endpoint's URL");
    let mut recorded = 0;
    for _ in 0..3 {
        // 40 into a lane of 16: 15 are taken, 25 dropped at record time.
        for _ in 0..40 {
            t.update_tx_requests_num(1);
        }
        recorded += 40;
        t.flush().unwrap();
        let page = get(&url);
        let delivered = sample(&page, "agent_tx_requests_num_total", "page").expect(&page);
        let dropped = sample(&page, "agent_telemetry_events_dropped_total", "page").expect(&page);
        assert_eq!(
            delivered + dropped,
            recorded as f64,
            "delivered {delivered}, dropped {dropped}:\n{page}"
        );
        assert_eq!(dropped, (recorded / 40 * 25) as f64, "{page}");
    }
    telering_conservation::surfaces::from_stats(&t.stats()).assert_conserves(recorded);
}

/// `prometheus_mp`'s node page (one port for many ranks, merged through the
/// multiprocess folder), scraped after each flush: a rank's deliveries plus the losses
/// the page reports for it are every event it recorded.
#[test]
fn the_multiprocess_metrics_page_counts_every_event_delivered_or_dropped() {
    let scratch = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "yes".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "prometheus_mp".to_string()),
        (
            "NIXL_TELEMETRY_MULTIPROC_DIR",
            scratch.path().to_str().unwrap().to_string(),
        ),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", port.to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "yes".to_string()),
    ]);
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    let t = TelemetryBuilder::from_env("rank-ledger", &env)
        .unwrap()
        .registry(registry)
        .lane_capacity(16)
        .early_flush(false)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/metrics");
    let mut recorded = 0u32;
    for round in 1..=3u32 {
        for _ in 0..40 {
            t.update_tx_requests_num(1);
        }
        recorded += 40;
        t.flush().unwrap();
        // The page merges the rank's file: poll until this flush is on it.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let page = loop {
            let page = try_get(&url).unwrap_or_else(|e| e.to_string());
            if sample(&page, "agent_tx_requests_num_total", "rank-ledger")
                == Some(f64::from(15 * round))
            {
                break page;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the page never showed this flush:\n{page}"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        let dropped =
            sample(&page, "agent_telemetry_events_dropped_total", "rank-ledger").expect(&page);
        assert_eq!(
            f64::from(15 * round) + dropped,
            f64::from(recorded),
            "{page}"
        );
    }
    telering_conservation::surfaces::from_stats(&t.stats()).assert_conserves(u64::from(recorded));
}
