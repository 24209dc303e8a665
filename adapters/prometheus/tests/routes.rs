//! Routes through the in-process `prometheus` exporter: per-route series with exact
//! sums on a real scrape, the folded count, and hostile route text labelled safely.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use telering_core::builtin::ErrorStatus;
use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{EnvSource, ExporterRegistry, Telemetry};

fn telemetry(agent: &str, routes_max: u16) -> (Telemetry, SocketAddr) {
    telemetry_keeping(agent, routes_max, 8)
}

/// [`telemetry`] keeping `slow_kept` slow transfers per route and interval.
fn telemetry_keeping(agent: &str, routes_max: u16, slow_kept: u16) -> (Telemetry, SocketAddr) {
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "prometheus".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", port.to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true".to_string()),
    ]);
    let t = Telemetry::builder(agent)
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .routes_max(routes_max)
        .slow_xfers_kept(slow_kept)
        .build()
        .unwrap();
    (t, SocketAddr::from(([127, 0, 0, 1], port)))
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

/// The value of the one sample line starting with `series` followed by a space.
fn sample(page: &str, series: &str) -> u64 {
    let lines: Vec<&str> = page
        .lines()
        .filter(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .collect();
    assert_eq!(lines.len(), 1, "{series} in\n{page}");
    let value: f64 = lines[0][series.len() + 1..].trim().parse().unwrap();
    value as u64
}

const DECODE: &str = r#"{agent_name="prefill-0",hostname="#;

fn labels(page: &str, rest: &str) -> String {
    // hostname is the machine's; take its quoted value from the page.
    let start = page.find(DECODE).expect("agent series") + DECODE.len();
    let value_end = start + 1 + page[start + 1..].find('"').unwrap();
    format!("{DECODE}{},{rest}", &page[start..=value_end])
}

#[test]
fn each_route_is_a_series_with_exact_sums() {
    let (t, addr) = telemetry("prefill-0", 64);
    let vram = t
        .route(&Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "decode-0",
        ))
        .unwrap();
    let file = t
        .route(&Route::new(
            Operation::Read,
            "POSIX",
            MemoryType::Dram,
            MemoryType::File,
            "",
        ))
        .unwrap();
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for i in 0..500u64 {
                    t.add_route_xfer_stats_us(vram, 40 + i % 7, 1 << 20, 3, 4);
                    t.add_route_xfer_stats_us(file, 2000, 4096, 5, 1);
                }
            });
        }
    });
    t.update_route_error_count(vram, ErrorStatus::RemoteDisconnect);
    t.flush().unwrap();
    let page = scrape(addr);
    let w = labels(
        &page,
        r#"operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="decode-0"}"#,
    );
    let r = labels(
        &page,
        r#"operation="READ",backend="POSIX",local_mem="DRAM",remote_mem="FILE",peer=""}"#,
    );
    assert_eq!(
        sample(&page, &format!("telering_route_bytes_total{w}")),
        1500 << 20
    );
    assert_eq!(
        sample(&page, &format!("telering_route_transfers_total{w}")),
        1500
    );
    assert_eq!(
        sample(&page, &format!("telering_route_descriptors_total{w}")),
        6000
    );
    assert_eq!(
        sample(&page, &format!("telering_route_bytes_total{r}")),
        1500 * 4096
    );
    assert_eq!(
        sample(&page, &format!("telering_route_xfer_time_us_count{r}")),
        1500
    );
    assert_eq!(
        sample(&page, &format!("telering_route_xfer_time_us_sum{r}")),
        1500 * 2000
    );
    assert_eq!(
        sample(&page, &format!("telering_route_slowest_xfer_time_us{r}")),
        2000
    );
    assert_eq!(
        sample(&page, &format!("telering_route_slowest_xfer_time_us{w}")),
        46
    );
    let err = w.replacen('}', r#",status="remote_disconnect"}"#, 1);
    assert_eq!(
        sample(&page, &format!("telering_route_errors_total{err}")),
        1
    );
    // The route-less families carry the same totals.
    assert!(
        page.contains("agent_tx_requests_num_total{agent_name=\"prefill-0\""),
        "{page}"
    );
}

#[test]
fn folded_routes_count_on_other_and_hostile_text_stays_one_label() {
    let (t, addr) = telemetry("prefill-0", 1);
    let first = t
        .route(&Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "a\"b\\c\nd",
        ))
        .unwrap();
    for p in 0..5 {
        let r = t
            .route(&Route::new(
                Operation::Write,
                "UCX",
                MemoryType::Vram,
                MemoryType::Vram,
                format!("p{p}"),
            ))
            .unwrap();
        assert!(r.is_other());
        t.add_route_xfer_stats_us(r, 10, 100, 1, 1);
    }
    t.add_route_xfer_stats_us(first, 10, 7, 1, 1);
    t.flush().unwrap();
    let page = scrape(addr);
    let other = labels(
        &page,
        r#"operation="WRITE",backend="other",local_mem="DRAM",remote_mem="DRAM",peer="other"}"#,
    );
    assert_eq!(
        sample(&page, &format!("telering_route_bytes_total{other}")),
        500
    );
    let hostile = labels(
        &page,
        r#"operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="a\"b\\c\nd"}"#,
    );
    assert_eq!(
        sample(&page, &format!("telering_route_bytes_total{hostile}")),
        7
    );
    let folded = page
        .lines()
        .find(|l| l.starts_with("telering_routes_folded_total{agent_name=\"prefill-0\""))
        .unwrap();
    assert!(folded.ends_with(" 5"), "{folded}");
}

#[test]
fn the_slowest_transfer_stays_served_through_intervals_without_transfers() {
    let (t, addr) = telemetry("prefill-0", 64);
    let r = t
        .route(&Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "decode-0",
        ))
        .unwrap();
    t.add_route_xfer_stats_us(r, 900, 1, 1, 1);
    t.flush().unwrap();
    t.flush().unwrap(); // an interval with no transfer on the route
    let page = scrape(addr);
    let w = labels(
        &page,
        r#"operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="decode-0"}"#,
    );
    assert_eq!(
        sample(&page, &format!("telering_route_slowest_xfer_time_us{w}")),
        900
    );
    t.add_route_xfer_stats_us(r, 30, 1, 1, 1);
    t.flush().unwrap();
    let page = scrape(addr);
    assert_eq!(
        sample(&page, &format!("telering_route_slowest_xfer_time_us{w}")),
        30
    );
}

#[test]
fn with_no_slow_transfer_kept_the_slowest_gauge_is_absent_not_zero() {
    let (t, addr) = telemetry_keeping("prefill-0", 64, 0);
    let r = t
        .route(&Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "decode-0",
        ))
        .unwrap();
    t.add_route_xfer_stats_us(r, 900, 1, 1, 1);
    t.flush().unwrap();
    let page = scrape(addr);
    let w = labels(
        &page,
        r#"operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="decode-0"}"#,
    );
    assert_eq!(
        sample(&page, &format!("telering_route_transfers_total{w}")),
        1
    );
    assert!(
        !page.contains("telering_route_slowest_xfer_time_us"),
        "TELERING_SLOW_XFERS=0 keeps nothing, so no slowest figure: {page}"
    );
}
