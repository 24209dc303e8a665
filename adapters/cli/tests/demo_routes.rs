//! The demo records its transfers on routes: reads from a prefill peer, writes to two
//! decode peers and to a file. The slow peer's route is the slowest in the demo's
//! route report, the route totals add up to the transfer events the summary counts,
//! and the summary's loss identity still holds.

mod common;
use common::*;
use std::time::Duration;

fn demo_json(dir: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let mut cmd = telering();
    cmd.args([
        "demo",
        "--events",
        "6000",
        "--rate",
        "0",
        "--threads",
        "2",
        "--no-serve",
        "--json",
    ])
    .args(extra);
    let o = run_in(dir, &mut cmd);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn the_slow_peers_route_is_the_slowest_in_the_demos_route_report() {
    let dir = scratch();
    let s = demo_json(dir.path(), &[]);
    let routes = s["routes"].as_array().unwrap_or_else(|| panic!("{s}"));
    let label = |r: &serde_json::Value| {
        format!(
            "{} {} {}->{} {}",
            r["operation"].as_str().unwrap(),
            r["backend"].as_str().unwrap(),
            r["local_mem"].as_str().unwrap(),
            r["remote_mem"].as_str().unwrap(),
            r["peer"].as_str().unwrap()
        )
    };
    let mut labels: Vec<String> = routes.iter().map(label).collect();
    labels.sort();
    assert_eq!(
        labels,
        [
            "READ UCX VRAM->VRAM prefill-0",
            "WRITE POSIX DRAM->FILE ",
            "WRITE UCX VRAM->VRAM decode-0",
            "WRITE UCX VRAM->VRAM decode-1",
        ]
    );
    let mean = |r: &serde_json::Value| r["xfer_time_mean_us"].as_f64().unwrap();
    let slowest = routes
        .iter()
        .max_by(|a, b| mean(a).total_cmp(&mean(b)))
        .unwrap();
    assert_eq!(slowest["peer"], "decode-1", "{routes:?}");
    assert_eq!(slowest["slowest"], true, "{routes:?}");
    assert_eq!(routes.iter().filter(|r| r["slowest"] == true).count(), 1);
    let healthy = routes.iter().find(|r| r["peer"] == "decode-0").unwrap();
    assert!(mean(slowest) > 5.0 * mean(healthy), "{routes:?}");
}

#[test]
fn route_totals_add_up_to_the_transfer_events_and_the_loss_identity_holds() {
    let dir = scratch();
    let s = demo_json(dir.path(), &["--exporter", "buffer,csv"]);
    let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} in {s}"));
    assert_eq!(n("events_recorded"), 6000, "{s}");
    assert_eq!(
        n("events_recorded"),
        n("events_exported")
            + n("events_dropped")
            + n("events_not_in_layout")
            + n("events_undelivered"),
        "{s}"
    );
    let routes = s["routes"].as_array().unwrap();
    let sum = |op: &str, key: &str| -> u64 {
        routes
            .iter()
            .filter(|r| r["operation"] == op)
            .map(|r| r[key].as_u64().unwrap())
            .sum()
    };
    for (op, bytes, requests) in [
        ("WRITE", "agent_tx_bytes", "agent_tx_requests_num"),
        ("READ", "agent_rx_bytes", "agent_rx_requests_num"),
    ] {
        let name = |k: &str, f: &str| s["names"][k][f].as_u64().unwrap();
        // Route totals count what the flushes drained: every transfer written into
        // a lane (the `count`s), none refused at record time.
        assert_eq!(sum(op, "bytes"), name(bytes, "sum"), "{op}: {s}");
        assert_eq!(sum(op, "transfers"), name(requests, "count"), "{op}: {s}");
    }
    // The csv exporter's route file holds the same totals, row by row.
    let text = std::fs::read_to_string(dir.path().join("telemetry/demo-agent.routes.csv")).unwrap();
    let mut csv_bytes = 0u64;
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        csv_bytes += f[6].parse::<u64>().unwrap();
    }
    assert_eq!(
        csv_bytes,
        sum("WRITE", "bytes") + sum("READ", "bytes"),
        "{text}"
    );
}

#[test]
fn the_text_summary_has_a_route_table_marking_the_slow_peer() {
    let dir = scratch();
    let mut cmd = telering();
    cmd.args([
        "demo",
        "--events",
        "3000",
        "--rate",
        "0",
        "--threads",
        "1",
        "--no-serve",
    ]);
    let o = run_in(dir.path(), &mut cmd);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let marked: Vec<_> = text
        .lines()
        .filter(|l| l.contains("<- slowest route"))
        .collect();
    assert_eq!(marked.len(), 1, "{text}");
    assert!(
        marked[0]
            .trim_start()
            .starts_with("WRITE UCX VRAM->VRAM decode-1"),
        "{text}"
    );
    assert!(text.contains("WRITE POSIX DRAM->FILE"), "{text}");
}

/// Per peer label: the mean transfer time from `telering_route_xfer_time_us_sum` and
/// `_count` of a classic page.
fn mean_per_peer(page: &str) -> std::collections::BTreeMap<String, (f64, f64)> {
    let mut out = std::collections::BTreeMap::<String, (f64, f64)>::new();
    for line in page.lines() {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Some(peer) = series
            .split("peer=\"")
            .nth(1)
            .and_then(|p| p.split('"').next())
        else {
            continue;
        };
        let value: f64 = value.parse().unwrap_or(0.0);
        let entry = out.entry(peer.to_owned()).or_default();
        if series.starts_with("telering_route_xfer_time_us_sum{") {
            entry.0 = value;
        } else if series.starts_with("telering_route_xfer_time_us_count{") {
            entry.1 = value;
        }
    }
    out
}

#[test]
fn the_demos_metrics_show_the_slow_peers_route_as_slowest_with_exemplars() {
    use std::io::{BufReader, Read, Write};
    let dir = scratch();
    let mut cmd = telering();
    cmd.current_dir(dir.path())
        .args([
            "demo",
            "--exporter",
            "prometheus",
            "--port",
            "0",
            "--duration",
            "120s",
        ])
        .args(["--threads", "2", "--rate", "4000"])
        .stdout(std::process::Stdio::piped());
    let mut demo = Running::spawn(&mut cmd);
    let mut out = BufReader::new(demo.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "metrics:"));
    // Enough transfers on every route for the means to settle.
    let page = eventually(Duration::from_secs(60), || {
        let page = try_http_get(addr, "/metrics").ok()?;
        let means = mean_per_peer(&page);
        (means.len() == 4 && means.values().all(|&(_, count)| count >= 300.0)).then_some(page)
    })
    .expect("every route on the page with 300 transfers");
    let means = mean_per_peer(&page);
    let slowest = means
        .iter()
        .max_by(|a, b| (a.1.0 / a.1.1).total_cmp(&(b.1.0 / b.1.1)))
        .unwrap();
    assert_eq!(slowest.0, "decode-1", "{means:?}");
    assert!(
        !page.contains("trace_id"),
        "no exemplar on the classic page"
    );

    let mut conn = std::net::TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        conn,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: application/openmetrics-text;version=1.0.0\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut open = String::new();
    conn.read_to_string(&mut open).unwrap();
    assert!(
        open.lines()
            .any(|l| l.starts_with("telering_route_xfer_time_us_bucket{")
                && l.contains("peer=\"decode-1\"")
                && l.contains(" # {trace_id=\"")),
        "{open}"
    );
    signal(&demo.child, "-INT");
    assert_eq!(demo.wait(), Some(0));
}
