//! A route file whose every count is `u64::MAX` (a crafted or damaged file; every
//! field is in range, so the reader takes it): `serve` answers `/metrics` and
//! `/api/agents` with the values stopped at `u64::MAX`, and `top --once` prints it,
//! rather than an error page or a panic.

mod common;

use common::*;
use std::io::BufReader;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use telering_std::route::{MemoryType, Operation, Route, file};
use telering_std::{Telemetry, TelemetryBuilder};

/// An agent of `dir` whose route file is then rewritten with every count at
/// `u64::MAX` (its writer kept, so readers take it as the agent's).
fn saturated_agent(dir: &Path) -> Telemetry {
    let t = TelemetryBuilder::new("sat")
        .enabled(true)
        .exporter("buffer")
        .dir(dir)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    for (op, peer) in [(Operation::Write, "x"), (Operation::Read, "y")] {
        let r = t
            .route(&Route::new(
                op,
                "UCX",
                MemoryType::Vram,
                MemoryType::Vram,
                peer,
            ))
            .unwrap();
        t.add_route_xfer_stats_us(r, 60, 4096, 3, 1);
    }
    t.flush().unwrap();
    let path = file::path_of(dir, "sat");
    let mut f = file::read(&path).unwrap().unwrap();
    f.folded = u64::MAX;
    for e in &mut f.routes {
        let s = &mut e.stats;
        (s.bytes, s.transfers, s.descriptors) = (u64::MAX, u64::MAX, u64::MAX);
        for h in [&mut s.xfer_time, &mut s.post_time] {
            h.counts = [u64::MAX; 13];
            h.sum_us = u64::MAX;
        }
        s.errors = [u64::MAX; 12];
        e.slowest_xfer_us = u64::MAX;
    }
    file::write(dir, "sat", &f.encode()).unwrap();
    t
}

#[test]
fn serve_answers_metrics_and_api_agents_for_a_route_file_of_u64_max_counts() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let t = saturated_agent(&rings);
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    let max = u64::MAX as f64;
    let page = eventually(Duration::from_secs(30), || {
        let page = http_get(addr, "/metrics");
        page.contains("telering_routes_folded_total")
            .then_some(page)
    })
    .expect("the route families on /metrics");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let prefix = r#"{agent_name="sat",hostname="#;
    for family in [
        "telering_route_bytes_total",
        "telering_route_xfer_time_us_count",
        "telering_route_post_time_us_bucket",
    ] {
        assert_eq!(
            sample(&page, &format!("{family}{prefix}")),
            Some(max),
            "{family}: {page}"
        );
    }
    let agents = http_get(addr, "/api/agents");
    assert!(agents.starts_with("HTTP/1.1 200"), "{agents}");
    let body = agents.split("\r\n\r\n").nth(1).unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    let routes = v["agents"][0]["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 2, "{v}");
    assert!(routes.iter().all(|r| r["bytes"].as_u64() == Some(u64::MAX)));
    signal(&serve.child, "-TERM");
    assert_eq!(serve.wait(), Some(0));
    drop(t);
}

#[test]
fn top_once_prints_a_route_file_of_u64_max_counts() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let t = saturated_agent(&rings);
    let o = run_in(
        dir.path(),
        telering()
            .arg("top")
            .arg(&rings)
            .args(["--interval", "200ms", "--once"]),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let text = stdout(&o);
    let row = text
        .lines()
        .find(|l| l.contains("WRITE UCX VRAM->VRAM x"))
        .unwrap_or_else(|| panic!("no route row: {text}"));
    assert!(row.contains(&u64::MAX.to_string()), "{row}");
    drop(t);
}

#[test]
fn serve_shows_no_slowest_transfer_gauge_for_an_agent_that_keeps_none() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let t = TelemetryBuilder::new("nokeep")
        .enabled(true)
        .exporter("buffer")
        .dir(&rings)
        .slow_xfers_kept(0)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    let r = t
        .route(&Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "p",
        ))
        .unwrap();
    t.add_route_xfer_stats_us(r, 900, 4096, 3, 1);
    t.flush().unwrap();
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    let page = eventually(Duration::from_secs(30), || {
        let page = http_get(addr, "/metrics");
        page.contains("telering_route_transfers_total")
            .then_some(page)
    })
    .expect("the route families on /metrics");
    assert!(
        !page.contains("telering_route_slowest_xfer_time_us"),
        "TELERING_SLOW_XFERS=0 keeps nothing: {page}"
    );
    signal(&serve.child, "-TERM");
    assert_eq!(serve.wait(), Some(0));
    drop(t);
}
