//! `telering top --prometheus URL`: rows from a real Prometheus scraping two
//! `telering serve` nodes (ignored: needs Debian's `prometheus`), and the clear
//! message, never a crash, when the server is down or answers errors (runs anywhere).

mod common;
mod prometheus_server;

use common::*;
use prometheus_server::{Prometheus, SCRAPE_INTERVAL_S};
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use telering_core::{Event, builtin};
use telering_shm::{ShmWriter, WriterOptions};

/// Bytes one agent's ring holds over time: `(when, total tx bytes written)`.
type Written = Arc<Mutex<Vec<(Instant, u64)>>>;

/// Writes `bytes` of `agent_tx_bytes` every 10 ms into `dir/agent` until `stop`.
fn writing(dir: &std::path::Path, agent: &str, bytes: u64, stop: Arc<AtomicBool>) -> Written {
    let mut writer = ShmWriter::create(WriterOptions::new(dir, agent)).unwrap();
    let written: Written = Arc::default();
    let log = written.clone();
    std::thread::spawn(move || {
        let mut total = 0;
        let start = Instant::now();
        let mut n = 0u32;
        while !stop.load(Ordering::SeqCst) {
            let us = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_micros() as u64;
            let tx = builtin::AGENT_TX_BYTES;
            writer.write_batch(&[Event::new(us, tx.category, tx.name, bytes)]);
            total += bytes;
            log.lock().unwrap().push((Instant::now(), total));
            n += 1;
            let next = start + Duration::from_millis(10) * n;
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
        writer.close().unwrap();
    });
    written
}

/// The ring's total at `at` (the last write at or before it).
fn total_at(written: &Written, at: Instant) -> u64 {
    let log = written.lock().unwrap();
    log.iter()
        .take_while(|(t, _)| *t <= at)
        .last()
        .map_or(0, |(_, v)| *v)
}

fn serve(dir: &std::path::Path) -> (Running, SocketAddr) {
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(dir)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    (serve, addr)
}

#[test]
#[ignore = "needs prometheus"]
fn top_lists_every_agent_of_two_nodes_with_the_rates_their_rings_hold() {
    let dir = scratch();
    let stop = Arc::new(AtomicBool::new(false));
    let (a, b) = (dir.path().join("node-a"), dir.path().join("node-b"));
    let agents = [
        (&a, "a-one", 1000u64),
        (&a, "a-two", 3000),
        (&b, "b-one", 5000),
    ];
    let written: Vec<Written> = agents
        .iter()
        .map(|(d, name, bytes)| writing(d, name, *bytes, stop.clone()))
        .collect();
    let (_serve_a, addr_a) = serve(&a);
    let (_serve_b, addr_b) = serve(&b);
    let prometheus = Prometheus::scraping(&[("node-a", addr_a), ("node-b", addr_b)]);
    let nodes = [addr_a.to_string(), addr_a.to_string(), addr_b.to_string()];
    // Two scrapes of every agent with transfers, so that irate() has a value.
    eventually(Duration::from_secs(60), || {
        (prometheus
            .series("irate(agent_tx_bytes_total[1m]) > 0")
            .len()
            == 3)
            .then_some(())
    })
    .expect("Prometheus scrapes the three agents twice");

    let started = Instant::now();
    let o = telering()
        .args(["top", "--once", "--json", "--prometheus", &prometheus.url()])
        .output()
        .unwrap();
    let ended = Instant::now();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = parse_json_lines(&stdout(&o));
    let order: Vec<(String, String)> = rows
        .iter()
        .map(|r| {
            (
                r["node"].as_str().unwrap().into(),
                r["agent"].as_str().unwrap().into(),
            )
        })
        .collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "rows ordered by node, then agent");
    stop.store(true, Ordering::SeqCst);
    // Rows come ordered by node, then agent.
    let mut rows = rows;
    rows.sort_by_key(|r| {
        ["a-one", "a-two", "b-one"]
            .iter()
            .position(|a| r["agent"] == *a)
    });
    let listed: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["node"].as_str().unwrap(), r["agent"].as_str().unwrap()))
        .collect();
    let expected: Vec<(&str, &str)> = nodes
        .iter()
        .zip(&agents)
        .map(|(node, (_, agent, _))| (node.as_str(), *agent))
        .collect();
    assert_eq!(listed, expected, "{}", stdout(&o));
    // What Prometheus holds is at most one scrape interval (and the node's 100 ms
    // poll) older than the query; 1 s more allows for a scrape that is late.
    let oldest = started - Duration::from_millis(SCRAPE_INTERVAL_S * 1000 + 1100);
    for ((row, log), (_, agent, bytes)) in rows.iter().zip(&written).zip(&agents) {
        assert_eq!(
            row["job"],
            if agent.starts_with('a') {
                "node-a"
            } else {
                "node-b"
            }
        );
        let total = row["tx_bytes_total"].as_f64().unwrap() as u64;
        let (low, high) = (total_at(log, oldest), total_at(log, ended));
        assert!(
            low <= total && total <= high,
            "{agent}: Prometheus holds {total} tx bytes; the ring held {low} to {high} in the last scrape interval"
        );
        // The ring's own rate over the last two seconds.
        let ring_rate =
            (total_at(log, ended) - total_at(log, ended - Duration::from_secs(2))) as f64 / 2.0;
        let rate = row["tx_bytes_per_s"].as_f64().unwrap();
        assert!(
            (rate - ring_rate).abs() <= 0.25 * ring_rate,
            "{agent}: top shows {rate} B/s, the ring was written at {ring_rate} B/s ({bytes} B per 10 ms)"
        );
        assert_eq!(row["events_dropped"].as_f64(), Some(0.0), "{row}");
    }
    // The text table has the node column.
    let o = telering()
        .args(["top", "--once", "--prometheus", &prometheus.url()])
        .output()
        .unwrap();
    let text = stdout(&o);
    assert!(text.starts_with("NODE"), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.contains(&addr_b.to_string()))
            .count(),
        1,
        "{text}"
    );
}

#[test]
fn top_says_plainly_when_prometheus_is_down() {
    let port = prometheus_server::free_port();
    let url = format!("http://127.0.0.1:{port}");
    let o = telering()
        .args(["top", "--once", "--json", "--prometheus", &url])
        .output()
        .unwrap();
    assert_fails(
        &o,
        1,
        &[&format!("cannot query Prometheus at {url}"), "refused"],
    );
    assert!(stdout(&o).is_empty());
}

/// A server answering every request with `response`, on a thread.
fn answering(response: &'static str) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let _ = conn.write_all(response.as_bytes());
        }
    });
    addr
}

#[test]
fn top_names_the_error_prometheus_answers() {
    let body = r#"{"status":"error","errorType":"bad_data","error":"1:1: parse error: unexpected end of input"}"#;
    let response: &'static str = Box::leak(
        format!(
            "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .into_boxed_str(),
    );
    let addr = answering(response);
    let o = telering()
        .args(["top", "--once", "--prometheus", &format!("http://{addr}/")])
        .output()
        .unwrap();
    assert_fails(&o, 1, &["HTTP 400, bad_data: 1:1: parse error"]);

    let page = "<html>maintenance</html>";
    let response: &'static str = Box::leak(
        format!(
            "HTTP/1.1 503 Service Unavailable\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        )
        .into_boxed_str(),
    );
    let addr = answering(response);
    let o = telering()
        .args(["top", "--once", "--prometheus", &format!("http://{addr}")])
        .output()
        .unwrap();
    assert_fails(&o, 1, &["HTTP 503, not a query API answer", "maintenance"]);
}
