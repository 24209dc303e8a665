//! `telering serve` of a ring directory whose agents write route files: `/metrics`
//! has each route's exact sums under the in-process exporter's families and labels,
//! with the folded count, and `/api/agents` lists the same routes per agent, hostile
//! names given as they are and escaped.

mod common;

use common::*;
use std::io::BufReader;
use std::process::Stdio;
use std::time::Duration;
use telering_core::builtin::ErrorStatus;
use telering_std::TelemetryBuilder;
use telering_std::route::{MemoryType, Operation, Route};

fn json(response: &str) -> serde_json::Value {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

#[test]
fn serve_shows_each_routes_exact_sums_on_metrics_and_api_agents() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let t = TelemetryBuilder::new("prefill-0")
        .enabled(true)
        .exporter("buffer")
        .dir(&rings)
        .routes_max(2)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    let hostile = "d<script>\u{1b}[2J\n\"0\"";
    let route = |peer: &str| {
        t.route(&Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            peer,
        ))
        .unwrap()
    };
    let (plain, evil) = (route("decode-0"), route(hostile));
    let mut sum = 0;
    for i in 0..250u64 {
        t.add_route_xfer_stats_us(plain, 60, 8192 + i, 3, 2);
        sum += 8192 + i;
    }
    t.add_route_xfer_stats_us(evil, 60, 99, 3, 1);
    t.update_route_error_count(plain, ErrorStatus::Backend);
    for peer in ["x", "y", "z"] {
        let folded = route(peer);
        t.add_route_xfer_stats_us(folded, 60, 1, 3, 1);
    }
    t.flush().unwrap();

    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    let labels = r#"agent_name="prefill-0",hostname="#;
    let page = eventually(Duration::from_secs(30), || {
        let page = http_get(addr, "/metrics");
        page.contains("telering_routes_folded_total")
            .then_some(page)
    })
    .expect("the route families on /metrics");
    let value = |family: &str, peer: &str| -> Option<f64> {
        page.lines()
            .find(|l| {
                l.starts_with(&format!("{family}{{{labels}"))
                    && l.contains(&format!(",peer=\"{peer}\""))
            })
            .and_then(|l| l.rsplit(' ').next()?.parse().ok())
    };
    assert_eq!(
        value("telering_route_bytes_total", "decode-0"),
        Some(sum as f64),
        "{page}"
    );
    assert_eq!(
        value("telering_route_transfers_total", "decode-0"),
        Some(250.0)
    );
    assert_eq!(
        value("telering_route_descriptors_total", "decode-0"),
        Some(500.0)
    );
    assert_eq!(
        value("telering_route_xfer_time_us_count", "decode-0"),
        Some(250.0)
    );
    assert_eq!(
        value(
            "telering_route_bytes_total",
            "d<script>\u{1b}[2J\\n\\\"0\\\""
        ),
        Some(99.0),
        "{page}"
    );
    assert_eq!(value("telering_route_transfers_total", "other"), Some(3.0));
    assert!(
        page.contains(r#"telering_route_errors_total{agent_name="prefill-0""#)
            && page.contains(r#"peer="decode-0",status="backend"} 1"#),
        "{page}"
    );
    assert_eq!(
        sample(
            &page,
            "telering_routes_folded_total{agent_name=\"prefill-0\""
        ),
        Some(3.0)
    );
    // The ring's own family holds every route's bytes, as without routes.
    assert_eq!(
        sample(&page, "agent_tx_bytes_total{agent_name=\"prefill-0\""),
        Some((sum + 99 + 3) as f64)
    );

    let v = json(&http_get(addr, "/api/agents"));
    let agent = &v["agents"][0];
    assert_eq!(agent["agent"], "prefill-0");
    assert_eq!(agent["routes_folded"].as_u64(), Some(3));
    let routes = agent["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 3, "{agent}");
    let by_peer = |peer: &str| routes.iter().find(|r| r["peer"] == peer).unwrap();
    let plain = by_peer("decode-0");
    assert_eq!(plain["bytes"].as_u64(), Some(sum));
    assert_eq!(plain["transfers"].as_u64(), Some(250));
    assert_eq!(plain["errors"]["backend"].as_u64(), Some(1));
    assert_eq!(
        plain["xfer_time_us"]["counts"].as_array().unwrap().len(),
        13
    );
    let evil = by_peer(hostile);
    assert_eq!(evil["peer_shown"], "d<script>\\u{1b}[2J\\n\"0\"");
    assert_eq!(evil["bytes"].as_u64(), Some(99));
    assert_eq!(by_peer("other")["transfers"].as_u64(), Some(3));
    assert!(
        !agent["values"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.starts_with("telering_route")),
        "{agent}"
    );
    signal(&serve.child, "-TERM");
    assert_eq!(serve.wait(), Some(0));
    drop(t);
}
