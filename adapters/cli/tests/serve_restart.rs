//! `telering serve` across an agent's restarts under the same name: with the same
//! ring size (the ring is reused in place), a larger one and a smaller one (the ring
//! is replaced and its unread events carried). At every scrape, `/metrics` and
//! `/api/agents` hold `recorded = delivered + lost` over both runs, no counter goes
//! down, and the route totals add up to the plain transfer totals (`docs/LOSS.md`,
//! `docs/ROUTES.md`).

mod common;

use common::*;
use serde_json::Value;
use std::io::BufReader;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use telering_core::Category;

const AGENT: &str = "demo-agent";
/// Longer than two of serve's directory scans (one a second).
const RESCANS: Duration = Duration::from_millis(2500);

/// `telering` with no exporter or OTLP variable inherited.
fn clean() -> Command {
    let mut cmd = telering();
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if text.starts_with("OTEL_")
            || text.starts_with("NIXL_TELEMETRY")
            || text == "TELERING_EXPORTERS"
        {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// Runs the demo to its end: `events` events into a ring of `size` slots. Returns
/// the events it recorded (its summary's count).
fn demo(dir: &Path, size: u32, events: u64) -> u64 {
    let mut cmd = clean();
    cmd.args([
        "demo",
        "--no-serve",
        "--json",
        "--exporter",
        "buffer",
        "--rate",
        "0",
    ])
    .args(["--threads", "2", "--events"])
    .arg(events.to_string())
    .env("NIXL_TELEMETRY_BUFFER_SIZE", size.to_string());
    let o = run_in(dir, &mut cmd);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let recorded = s["events_recorded"].as_u64().unwrap();
    assert_eq!(recorded, events, "{s}");
    recorded
}

/// What serve says of the agent at one scrape.
#[derive(Clone, Debug, Default, PartialEq)]
struct Seen {
    delivered: u64,
    dropped: u64,
    missed: u64,
    unexported: u64,
    /// `/api/agents`' losses (every cause but `not_in_layout`).
    api_lost: u64,
    api_delivered: u64,
    /// Plain transfer totals: requests and bytes, tx + rx.
    transfers: u64,
    bytes: u64,
    /// The same, summed over the routes, on `/metrics` and on `/api/agents`.
    route_transfers: u64,
    route_bytes: u64,
    api_route_transfers: u64,
    api_route_bytes: u64,
}

impl Seen {
    fn lost(&self) -> u64 {
        self.dropped + self.missed + self.unexported
    }

    fn counters(&self) -> [(&'static str, u64); 8] {
        [
            ("delivered", self.delivered),
            ("dropped", self.dropped),
            ("missed", self.missed),
            ("unexported", self.unexported),
            ("transfers", self.transfers),
            ("bytes", self.bytes),
            ("route transfers", self.route_transfers),
            ("route bytes", self.route_bytes),
        ]
    }
}

fn scrape(addr: SocketAddr) -> (Seen, String) {
    let page = http_get(addr, "/metrics");
    let plain = |family: &str| {
        sample(&page, &format!("{family}{{agent_name=\"{AGENT}\"")).map_or(0, |v| v as u64)
    };
    let routes = |family: &str| -> u64 {
        page.lines()
            .filter(|l| l.starts_with(&format!("{family}{{agent_name=\"{AGENT}\"")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .map(|v| v as u64)
            .sum()
    };
    let api = http_get(addr, "/api/agents");
    let body = api.split("\r\n\r\n").nth(1).unwrap_or("");
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {api}"));
    let agent = v["agents"]
        .as_array()
        .and_then(|a| a.iter().find(|a| a["agent"] == AGENT))
        .cloned()
        .unwrap_or(Value::Null);
    let api_lost = agent["losses"]
        .as_object()
        .map(|l| {
            l.iter()
                .filter(|(cause, _)| *cause != "not_in_layout")
                .map(|(_, n)| n.as_u64().unwrap())
                .sum()
        })
        .unwrap_or(0);
    let api_routes = |key: &str| -> u64 {
        agent["routes"]
            .as_array()
            .map(|r| r.iter().map(|r| r[key].as_u64().unwrap()).sum())
            .unwrap_or(0)
    };
    let seen = Seen {
        delivered: plain("agent_telemetry_events_delivered_total"),
        dropped: plain("agent_telemetry_events_dropped_total"),
        missed: plain("agent_telemetry_events_missed_total"),
        unexported: plain("agent_telemetry_events_unexported_total"),
        api_lost,
        api_delivered: agent["values"]["agent_telemetry_events_delivered_total"]
            .as_u64()
            .unwrap_or(0),
        transfers: plain("agent_tx_requests_num_total") + plain("agent_rx_requests_num_total"),
        bytes: plain("agent_tx_bytes_total") + plain("agent_rx_bytes_total"),
        route_transfers: routes("telering_route_transfers_total"),
        route_bytes: routes("telering_route_bytes_total"),
        api_route_transfers: api_routes("transfers"),
        api_route_bytes: api_routes("bytes"),
    };
    (seen, format!("{page}\n{api}"))
}

/// Serve on one directory, scraped until a condition holds; every scrape is checked
/// against the previous one: no counter goes down.
struct Serve {
    serve: Running,
    addr: SocketAddr,
    last: Seen,
}

/// A scratch folder with a ring directory `telemetry` in it, and serve on that with
/// `args`.
fn node(args: &[&str]) -> (tempfile::TempDir, PathBuf, Serve) {
    let dir = scratch();
    let rings = dir.path().join("telemetry");
    std::fs::create_dir_all(&rings).unwrap();
    let serve = Serve::start_with(&rings, args);
    (dir, rings, serve)
}

impl Serve {
    fn start_with(dir: &Path, args: &[&str]) -> Serve {
        let mut serve = Running::spawn(
            clean()
                .args(["serve", "--port", "0", "--local"])
                .args(args)
                .arg("--dir")
                .arg(dir)
                .stdout(Stdio::piped()),
        );
        let mut out = BufReader::new(serve.child.stdout.take().unwrap());
        let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
        Serve {
            serve,
            addr,
            last: Seen::default(),
        }
    }

    /// Scrapes until `done` holds (to a deadline), checking that nothing goes down.
    fn until(&mut self, what: &str, done: impl Fn(&Seen) -> bool) -> Seen {
        let mut text = String::new();
        let found = eventually(Duration::from_secs(60), || {
            let (seen, page) = scrape(self.addr);
            for ((name, before), (_, now)) in self.last.counters().iter().zip(seen.counters()) {
                assert!(
                    now >= *before,
                    "{name} went down from {before} to {now}: {:?} then {seen:?}\n{page}",
                    self.last
                );
            }
            self.last = seen.clone();
            text = page;
            done(&seen).then_some(seen)
        });
        found.unwrap_or_else(|| panic!("{what}: last {:?}\n{text}", self.last))
    }

    /// Waits until serve accounts for `recorded` events, then holds it to the ledger
    /// on both surfaces and, with `routes`, the route totals to the plain ones.
    fn accounts_for(&mut self, recorded: u64, routes: bool) -> Seen {
        let seen = self.until(&format!("{recorded} events accounted for"), |s| {
            s.delivered + s.lost() >= recorded && (!routes || s.route_transfers == s.transfers)
        });
        // Serve notices a replaced file at its directory scans (every second):
        // what it said must still hold after a few of them.
        let until = std::time::Instant::now() + RESCANS;
        let mut seen = seen;
        while std::time::Instant::now() < until {
            assert_eq!(seen.delivered + seen.lost(), recorded, "{seen:?}");
            seen = self.until("a scrape", |_| true);
        }
        assert_eq!(seen.delivered + seen.lost(), recorded, "{seen:?}");
        assert_eq!(seen.api_delivered + seen.api_lost, recorded, "{seen:?}");
        if routes {
            assert_eq!(seen.route_transfers, seen.transfers, "{seen:?}");
            assert_eq!(seen.route_bytes, seen.bytes, "{seen:?}");
            assert_eq!(seen.api_route_transfers, seen.transfers, "{seen:?}");
            assert_eq!(seen.api_route_bytes, seen.bytes, "{seen:?}");
        }
        seen
    }

    fn stop(mut self) {
        signal(&self.serve.child, "-TERM");
        assert_eq!(self.serve.wait(), Some(0));
    }
}

#[test]
fn a_restart_with_the_same_ring_size_carries_route_totals_with_the_plain_counters() {
    let (dir, _, mut serve) = node(&[]);
    let first = demo(dir.path(), 4096, 1500);
    let one = serve.accounts_for(first, true);
    assert_eq!((one.delivered, one.lost()), (first, 0), "{one:?}");
    let second = demo(dir.path(), 4096, 1500);
    let two = serve.accounts_for(first + second, true);
    assert_eq!(two.delivered, first + second, "{two:?}");
    assert!(two.route_transfers > one.route_transfers, "{one:?} {two:?}");
    serve.stop();
}

#[test]
fn a_run_without_routes_keeps_the_earlier_runs_route_totals_for_the_next_run() {
    let (dir, rings, mut serve) = node(&[]);
    let first = demo(dir.path(), 4096, 1500);
    let one = serve.accounts_for(first, true);
    // A run that records no route: its exporter removes the route file.
    let t = telering_std::TelemetryBuilder::new(AGENT)
        .enabled(true)
        .exporter("buffer")
        .dir(&rings)
        .buffer_size(4096)
        .build()
        .unwrap();
    for i in 0..100 {
        t.record(Category::Custom, "queue_depth", i).unwrap();
    }
    t.flush().unwrap();
    drop(t);
    assert!(!rings.join(".routes").join(AGENT).exists());
    let two = serve.accounts_for(first + 100, true);
    assert_eq!(two.route_transfers, one.route_transfers, "{one:?} {two:?}");
    // The next run's routes add to the first run's: nothing goes back.
    let third = demo(dir.path(), 4096, 1500);
    let three = serve.accounts_for(first + 100 + third, true);
    assert!(
        three.route_transfers > one.route_transfers,
        "{one:?} {three:?}"
    );
    serve.stop();
}

#[test]
fn a_restart_with_a_larger_ring_counts_each_event_once_and_never_goes_down() {
    let (dir, _, mut serve) = node(&[]);
    let first = demo(dir.path(), 4096, 1500);
    serve.accounts_for(first, true);
    // The ring is replaced by one of 8192 slots, which starts with the first run's
    // 1500 events (carried): read already, they are not delivered again.
    let second = demo(dir.path(), 8192, 1500);
    let two = serve.accounts_for(first + second, true);
    assert_eq!((two.delivered, two.lost()), (first + second, 0), "{two:?}");
    serve.stop();
}

#[test]
fn a_restart_with_a_smaller_ring_charges_no_replaced_event_serve_delivered() {
    let (dir, _, mut serve) = node(&[]);
    let first = demo(dir.path(), 8192, 3000);
    serve.accounts_for(first, true);
    // The ring of 1024 slots takes the newest 1022 of them and a report of the 1978
    // others ("replaced", in its trailer's dropped_staging): serve delivered all 3000
    // already. Full of them, it refuses every event of the second run (nothing drains
    // it), so the route totals (what was recorded) are above the delivered ones.
    let second = demo(dir.path(), 1024, 300);
    let two = serve.accounts_for(first + second, false);
    assert_eq!(
        (two.delivered, two.dropped, two.missed, two.unexported),
        (first, second, 0, 0),
        "{two:?}"
    );
    serve.stop();
}

#[test]
fn a_draining_serve_reads_the_replaced_ring_to_its_end_before_the_new_one() {
    let (dir, _, mut serve) = node(&["--drain"]);
    let first = demo(dir.path(), 4096, 1500);
    serve.accounts_for(first, true);
    // The new writer leaves the old ring's events to the draining reader that holds
    // it (nothing is carried); serve reads them there, then takes up the new ring.
    let second = demo(dir.path(), 8192, 1500);
    let two = serve.accounts_for(first + second, true);
    assert_eq!((two.delivered, two.lost()), (first + second, 0), "{two:?}");
    serve.stop();
}

/// What the writer of the ring at `path` recorded, by its trailer: published (loss
/// reports aside, there are none here) and dropped.
fn recorded_by_trailer(dir: &Path, path: &Path) -> u64 {
    let o = run_in(dir, telering().args(["stat", "--json"]).arg(path));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    let t = &v["trailer"];
    let n = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    assert_eq!(n("dropped_ring_full") + n("dropped_staging"), 0, "{v}");
    n("published")
}

#[test]
fn a_writer_killed_and_restarted_with_a_larger_ring_is_one_series_counted_once() {
    let (dir, rings, mut serve) = node(&[]);
    let mut running = Running::spawn(
        clean()
            .args([
                "demo",
                "--no-serve",
                "--exporter",
                "buffer",
                "--duration",
                "60s",
            ])
            .args(["--rate", "1000", "--threads", "2"])
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "4096")
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    serve.until("the running demo's events", |s| s.delivered >= 500);
    signal(&running.child, "-KILL");
    running.wait();
    let first = recorded_by_trailer(dir.path(), &rings.join(AGENT));
    serve.accounts_for(first, false);
    let second = demo(dir.path(), 8192, 1500);
    let two = serve.accounts_for(first + second, false);
    assert_eq!((two.delivered, two.lost()), (first + second, 0), "{two:?}");
    serve.stop();
}
