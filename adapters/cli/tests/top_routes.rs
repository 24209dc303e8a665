//! `telering top`'s route view: `--once` prints each agent's routes (from its route
//! file) with exact totals, rates over the interval, the folded count, hostile names
//! escaped and a refused route file named; `--json` carries them too.

mod common;

use common::*;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{Telemetry, TelemetryBuilder};

fn agent(dir: &Path, name: &str, routes_max: u16) -> Telemetry {
    TelemetryBuilder::new(name)
        .enabled(true)
        .exporter("buffer")
        .dir(dir)
        .routes_max(routes_max)
        .run_interval(Duration::from_millis(50))
        .build()
        .unwrap()
}

fn ucx(peer: &str) -> Route {
    Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        peer,
    )
}

const HOSTILE: &str = "<b>\u{1b}[2J\u{202e}\nforged";

/// A ring directory: `routed` (finished: exact totals, a hostile peer, two routes
/// folded), `live` (recording while `top` looks) and `bad` (a damaged route file).
fn run_top(args: &[&str]) -> (std::process::Output, u64) {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let routed = agent(&rings, "routed", 3);
    let w = routed.route(&ucx("decode-0")).unwrap();
    let mut sum = 0;
    for i in 0..100u64 {
        routed.add_route_xfer_stats_us(w, 40, 4096 + i, 2, 1);
        sum += 4096 + i;
    }
    let h = routed.route(&ucx(HOSTILE)).unwrap();
    routed.add_route_xfer_stats_us(h, 40, 7, 2, 1);
    for i in 0..3 {
        let id = routed.route(&ucx(&format!("p{i}"))).unwrap();
        routed.add_route_xfer_stats_us(id, 40, 10, 2, 1);
    }
    drop(routed);
    // A route file another run left beside a ring of another writer: not shown.
    let stale = agent(&rings, "stale", 3);
    let id = stale.route(&ucx("old-peer")).unwrap();
    stale.add_route_xfer_stats_us(id, 40, 1, 2, 1);
    stale.flush().unwrap();
    let path = telering_std::route::file::path_of(&rings, "stale");
    let mut left = telering_std::route::file::read(&path).unwrap().unwrap();
    left.writer_pid = std::process::id() + 1;
    telering_std::route::file::write(&rings, "stale", &left.encode()).unwrap();
    let bad = agent(&rings, "bad", 3);
    std::fs::write(rings.join(".routes").join("bad"), b"TLRROUTE\x01\0\0\0 cut").unwrap();
    let live = Arc::new(agent(&rings, "live", 8));
    let stop = Arc::new(AtomicBool::new(false));
    let recording = {
        let (live, stop) = (Arc::clone(&live), Arc::clone(&stop));
        std::thread::spawn(move || {
            let r = live.route(&ucx("decode-1")).unwrap();
            while !stop.load(Ordering::SeqCst) {
                live.add_route_xfer_stats_us(r, 300, 1 << 20, 5, 1);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let o = run_in(
        dir.path(),
        telering()
            .arg("top")
            .arg(&rings)
            .args(["--interval", "700ms"])
            .args(args),
    );
    stop.store(true, Ordering::SeqCst);
    recording.join().unwrap();
    drop((bad, stale));
    (o, sum)
}

#[test]
fn once_prints_each_routes_totals_rates_and_folded_count_with_names_escaped() {
    let (o, sum) = run_top(&["--once"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let text = stdout(&o);
    let routes = text
        .split("\nAGENT  ")
        .nth(1)
        .unwrap_or_else(|| panic!("no route table: {text}"));
    assert!(routes.trim_start().starts_with("ROUTE"), "{text}");
    let row = |needle: &str| -> Vec<String> {
        let line = routes
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no route {needle}: {text}"));
        line.split("  ")
            .filter(|c| !c.trim().is_empty())
            .map(|c| c.trim().to_owned())
            .collect()
    };
    // AGENT, ROUTE, BYTES/S, XFERS/S, XFER P99, BYTES, XFERS, ERRORS
    let decode = row("decode-0");
    assert_eq!(decode[0], "routed");
    assert_eq!(decode[1], "WRITE UCX VRAM->VRAM decode-0");
    assert_eq!(
        (decode[5].as_str(), decode[6].as_str()),
        (sum.to_string().as_str(), "100")
    );
    assert_eq!(decode[2], "0", "a finished agent moves nothing: {text}");
    let other = row("->DRAM other");
    assert_eq!(
        (other[5].as_str(), other[6].as_str()),
        ("20", "2"),
        "{text}"
    );
    assert!(
        text.contains("routed: 2 routes folded into route `other`"),
        "{text}"
    );
    // The hostile peer is one escaped line: no control character reaches the terminal.
    let hostile = row("forged");
    assert_eq!(
        hostile[1],
        "WRITE UCX VRAM->VRAM <b>\\u{1b}[2J\\u{202e}\\nforged"
    );
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{202e}'),
        "{text:?}"
    );
    // A live agent's route has rates over the interval and a p99 in its bucket.
    let live = row("decode-1");
    let bytes_per_s = live[2]
        .trim_end_matches(['K', 'M', 'G'])
        .parse::<f64>()
        .unwrap();
    assert!(bytes_per_s > 0.0, "{text}");
    let p99: u64 = live[4].trim_end_matches("us").parse().unwrap();
    assert!(
        (251..=500).contains(&p99),
        "p99 of 300 µs transfers, in the 250–500 µs bucket: {text}"
    );
    assert!(text.contains("bad: route file refused:"), "{text}");
    assert!(!text.contains("old-peer"), "another run's routes: {text}");
}

#[test]
fn json_carries_each_rings_routes() {
    let (o, sum) = run_top(&["--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let rings = parse_json_lines(&stdout(&o));
    let routed = rings.iter().find(|r| r["agent"] == "routed").unwrap();
    assert_eq!(routed["routes_folded"].as_u64(), Some(2));
    let routes = routed["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 4, "{routed}");
    let decode = routes.iter().find(|r| r["peer"] == "decode-0").unwrap();
    assert_eq!(decode["bytes"].as_u64(), Some(sum));
    assert_eq!(decode["transfers"].as_u64(), Some(100));
    assert!(routes.iter().any(|r| r["peer"] == HOSTILE), "{routed}");
    let bad = rings.iter().find(|r| r["agent"] == "bad").unwrap();
    assert!(
        bad["routes_error"].as_str().unwrap().contains("route file"),
        "{bad}"
    );
}
