//! The in-process exporter's route exemplars over real HTTP: an OpenMetrics scrape
//! gets them on the transfer-time buckets, a classic scrape gets the page it got
//! before (no exemplar, no `# EOF`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{EnvSource, ExporterRegistry, Telemetry};

fn scrape(addr: SocketAddr, accept: Option<&str>) -> (String, String) {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let accept = accept.map_or(String::new(), |a| format!("Accept: {a}\r\n"));
    let request = format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{accept}Connection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    conn.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

#[test]
fn an_openmetrics_scrape_gets_the_kept_transfers_as_exemplars_and_a_classic_one_does_not() {
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "prometheus".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", "0".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true".to_string()),
        // Flushes only when told: `route_report` is then the flush's interval.
        ("NIXL_TELEMETRY_RUN_INTERVAL", "3600000".to_string()),
    ]);
    let telemetry = Telemetry::builder("ex-agent")
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .build()
        .unwrap();
    let route = Route::new(
        Operation::Read,
        "GDS",
        MemoryType::Vram,
        MemoryType::File,
        "a\"b\nc",
    );
    let id = telemetry.route(&route).unwrap();
    for us in [20, 400, 3_000] {
        telemetry.add_route_xfer_stats_us(id, us, 4096, 1, 1);
    }
    telemetry.flush().unwrap();
    let report = telemetry.route_report();
    assert_eq!(report.slow.len(), 3, "{report:?}");
    let url = telemetry.exporter_endpoint().unwrap();
    let addr: SocketAddr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/metrics"))
        .unwrap()
        .parse()
        .unwrap();

    let (head, open) = scrape(
        addr,
        Some("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
    );
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(open.ends_with("# EOF\n"), "{open}");
    let exemplar_lines: Vec<_> = open
        .lines()
        .filter(|l| l.contains(" # {trace_id="))
        .collect();
    assert_eq!(exemplar_lines.len(), 3, "{open}");
    for (position, (r, x)) in report.slow.iter().enumerate() {
        let ids = x.trace_ids("ex-agent", r, position);
        let line = exemplar_lines
            .iter()
            .find(|l| l.contains(&ids.trace_hex()))
            .unwrap_or_else(|| panic!("no exemplar for {x:?}: {open}"));
        assert!(
            line.starts_with("telering_route_xfer_time_us_bucket{"),
            "{line}"
        );
        assert!(line.contains(r#"peer="a\"b\nc""#), "{line}");
        assert!(
            line.contains(&format!(r#"span_id="{}"}} {} "#, ids.span_hex(), x.xfer_us)),
            "{line}"
        );
    }

    let (head, classic) = scrape(addr, None);
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert!(
        !classic.contains("trace_id") && !classic.contains("# EOF"),
        "{classic}"
    );
    assert!(
        classic.contains("telering_route_xfer_time_us_bucket{"),
        "{classic}"
    );
}
