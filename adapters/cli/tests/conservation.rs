//! The conservation matrix: sources × faults × surfaces, each cell holding the
//! surface to `recorded = delivered + counted as lost`, with each loss charged to its
//! true cause and no "ok" while losing (`docs/LOSS.md`; the ledger is
//! `telering-conservation`).
//!
//! Sources here: the demo (a Rust `Telemetry` on four threads) and a `Telemetry` in
//! this process. Surfaces: the demo's `--json` summary and each exporter's counters,
//! `TelemetryStats`, `telering stat --json`, the ring's in-band loss reports (`read
//! --json`), and `telering serve`'s `/metrics` and `/api/agents`. The C, Python and
//! NIXL plug-in sources hold their own statistics to the same ledger in their crates'
//! tests (`conservation_*`).

mod common;

#[path = "../../otlp/tests/common/failing.rs"]
mod failing;

use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;
use telering_conservation::surfaces::{self, from_api_agent, from_demo_json, from_metrics};
use telering_conservation::{Cause, Ledger};

/// `telering` with no `OTEL_*` variable inherited.
fn clean() -> Command {
    let mut cmd = telering();
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") || name == "TELERING_EXPORTERS" {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// `telering demo --events N --no-serve --json` with `args` (flat out unless they
/// give a `--rate`) and `env`.
fn demo(dir: &Path, events: u64, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = clean();
    cmd.args(["demo", "--no-serve", "--json", "--events"])
        .arg(events.to_string());
    if !args.contains(&"--rate") {
        cmd.args(["--rate", "0"]);
    }
    cmd.args(args).envs(env.iter().copied());
    run_in(dir, &mut cmd)
}

fn summary_of(o: &Output) -> Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_str(stdout(o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

/// Each exporter of the demo's summary as a ledger.
fn exporters_of(summary: &Value) -> Vec<Ledger> {
    summary["exporters"]
        .as_array()
        .expect("exporters")
        .iter()
        .map(|e| {
            let name = e["name"].as_str().expect("name");
            let n = |k: &str| e[k].as_u64().unwrap_or_else(|| panic!("{k} in {e}"));
            let mut l = Ledger::new(format!("demo exporter {name}"));
            l.delivered = n("delivered");
            let before = if n("export_errors") > 0 {
                Cause::ExporterFailed
            } else {
                Cause::AtRecord
            };
            l.charge(before, n("dropped"));
            l.charge(Cause::RingFull, n("exporter_dropped"));
            l.charge(Cause::NotInLayout, n("not_in_layout"));
            l.charge(Cause::Undelivered, n("undelivered"));
            l.state = Some(
                if e["failing"] == true {
                    "failing"
                } else {
                    "ok"
                }
                .into(),
            );
            l
        })
        .collect()
}

/// The ring file's own account: `stat --json` with the in-band reports `read --json`
/// finds (reading drains the ring, so this comes last).
fn ring_ledger(dir: &Path, ring: &Path) -> (Ledger, u64) {
    let read = run_in(dir, clean().args(["read", "--json"]).arg(ring));
    assert_eq!(read.status.code(), Some(0), "{}", stderr(&read));
    let (_, reports, reported) = surfaces::read_json(&stdout(&read));
    let stat = run_in(dir, clean().args(["stat", "--json"]).arg(ring));
    assert_eq!(stat.status.code(), Some(0), "{}", stderr(&stat));
    let v: Value = serde_json::from_str(&stdout(&stat)).expect("stat --json");
    (surfaces::from_stat_json(&v, reports), reported)
}

#[test]
fn demo_with_a_full_ring_and_no_reader_conserves_on_summary_exporter_and_ring() {
    let dir = scratch();
    // 1 s at 2000 events a second: the lanes keep up, the ring of 64 does not.
    let o = demo(
        dir.path(),
        2000,
        &["--rate", "2000"],
        &[("NIXL_TELEMETRY_BUFFER_SIZE", "64")],
    );
    let summary = summary_of(&o);
    let recorded = summary["events_recorded"].as_u64().unwrap();
    assert_eq!(recorded, 2000);
    let ledger = from_demo_json(&summary);
    ledger.assert_conserves(recorded);
    assert!(ledger.lost_to(Cause::ByExporter) > 1000, "{ledger}");
    // Each exporter accounts for what reached it, after the lanes' losses.
    let at_record = ledger.lost_to(Cause::AtRecord);
    for e in exporters_of(&summary) {
        e.assert_conserves(recorded - at_record);
    }
    let (ring, _) = ring_ledger(dir.path(), &dir.path().join("telemetry/demo-agent"));
    ring.assert_conserves(recorded);
    // The buffer exporter's losses are the ring's refusals.
    ring.assert_charged(Cause::RingFull, ledger.lost_to(Cause::ByExporter));
}

#[test]
fn demo_with_its_collector_down_counts_every_event_undelivered_and_says_failing() {
    let dir = scratch();
    let down = failing::down();
    let o = demo(
        dir.path(),
        300,
        &["--exporter", "buffer,otlp"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", down.endpoint.as_str())],
    );
    let summary = summary_of(&o);
    let each = exporters_of(&summary);
    assert_eq!(each.len(), 2);
    each[0].assert_conserves(300);
    assert_eq!(each[0].delivered, 300, "{}", each[0]);
    each[1].assert_conserves(300);
    assert_eq!(
        each[1].lost_to(Cause::Undelivered) + each[1].lost_to(Cause::ExporterFailed),
        300,
        "{}",
        each[1]
    );
    each[1].assert_not_ok_while_losing();
    from_demo_json(&summary).assert_conserves(300);
}

/// A tmpfs of `size` mounted on `dir` for the test's life, when this machine lets the
/// test mount one (as root).
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn demo_writing_csv_to_a_full_disk_charges_the_losses_to_the_exporter() {
    let dir = scratch();
    let small = dir.path().join("small");
    let Some(_mounted) = Tmpfs::mount(&small, "16k") else {
        eprintln!("cannot mount a tmpfs here; the full-disk cell did not run");
        return;
    };
    let o = demo(
        dir.path(),
        5000,
        &["--exporter", "csv", "--dir", path_str(&small)],
        &[],
    );
    let summary = summary_of(&o);
    let ledger = from_demo_json(&summary);
    ledger.assert_conserves(5000);
    let each = exporters_of(&summary);
    each[0].assert_conserves(5000);
    assert!(each[0].lost_to(Cause::ExporterFailed) > 0, "{}", each[0]);
    assert_eq!(each[0].lost_to(Cause::AtRecord), 0, "{}", each[0]);
    // The exporter failed, and says so: its attempts failed (it is no longer failing
    // once a write succeeds again).
    assert!(summary["export_errors"].as_u64().unwrap() >= 1, "{summary}");
    assert_eq!(
        summary["dropped_at_record"], 0,
        "a full disk is not the agent's buffers: {summary}"
    );
}

#[test]
fn a_misconfigured_exporter_list_changes_no_file() {
    let dir = scratch();
    // A ring with unread events.
    let first = demo(dir.path(), 50, &[], &[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let ring = dir.path().join("telemetry/demo-agent");
    let before = std::fs::read(&ring).unwrap();
    let o = demo(
        dir.path(),
        50,
        &["--exporter", "buffer,otlp"],
        &[
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "abc"),
            ("NIXL_TELEMETRY_BUFFER_SIZE", "4096"),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("OTEL_EXPORTER_OTLP_TIMEOUT"),
        "{}",
        stderr(&o)
    );
    assert!(
        std::fs::read(&ring).unwrap() == before,
        "the ring was changed"
    );
}

/// `telering serve --port 0` on `dir`; its address.
fn serve(dir: &Path, args: &[&str]) -> (Running, std::net::SocketAddr) {
    let mut cmd = clean();
    cmd.args(["serve", "--local", "--port", "0", "--dir"])
        .arg(dir)
        .args(args)
        .stdout(std::process::Stdio::piped());
    let mut running = Running::spawn(&mut cmd);
    let mut out = std::io::BufReader::new(running.child.stdout.take().unwrap());
    let line = wait_for_line(&mut out, "/metrics");
    (running, addr_in(&line))
}

#[test]
fn serve_counts_a_full_ring_nothing_drains_as_ring_full_loss_and_never_says_ok() {
    let dir = scratch();
    let o = demo(
        dir.path(),
        1500,
        &[],
        &[("NIXL_TELEMETRY_BUFFER_SIZE", "64")],
    );
    summary_of(&o);
    // The workload recorded exactly --events; the node's surfaces account for each.
    let recorded = 1500;
    let (_serve, addr) = serve(&dir.path().join("telemetry"), &[]);
    let page = eventually(Duration::from_secs(20), || {
        let page = http_get(addr, "/metrics");
        surfaces::sample(
            &page,
            "agent_telemetry_events_delivered_total",
            "demo-agent",
        )
        .map(|_| page)
    })
    .expect("serve lists the agent");
    let metrics = from_metrics(&page, "demo-agent");
    metrics.assert_conserves(recorded);
    assert!(metrics.lost_to(Cause::WriterDropped) > 1000, "{metrics}");
    let body = http_get(addr, "/api/agents");
    let json = body.split("\r\n\r\n").nth(1).expect("a body");
    let v: Value = serde_json::from_str(json).expect("/api/agents JSON");
    let api = from_api_agent(&v, "demo-agent");
    api.assert_conserves(recorded);
    api.assert_not_ok_while_losing();
}

#[test]
fn a_draining_reader_killed_and_restarted_loses_nothing_the_ring_does_not_count() {
    let dir = scratch();
    let rings = dir.path().join("telemetry");
    std::fs::create_dir_all(&rings).unwrap();
    // The agent records for 3 s into a small ring while a draining reader comes and
    // goes.
    let mut agent = clean();
    agent
        .args([
            "demo",
            "--no-serve",
            "--json",
            "--duration",
            "3s",
            "--rate",
            "4000",
        ])
        .env("NIXL_TELEMETRY_BUFFER_SIZE", "256")
        .current_dir(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let agent = agent.spawn().expect("spawn the demo");
    let ring = rings.join("demo-agent");
    let read_metrics = |addr| {
        eventually(Duration::from_secs(20), || {
            let page = http_get(addr, "/metrics");
            surfaces::sample(
                &page,
                "agent_telemetry_events_delivered_total",
                "demo-agent",
            )
            .filter(|n| *n > 0.0)
            .map(|_| page)
        })
        .expect("the reader reads the agent")
    };
    {
        let (mut first, addr) = serve(&rings, &["--drain"]);
        read_metrics(addr);
        signal(&first.child, "-KILL");
        first.wait();
    }
    let (_second, addr) = serve(&rings, &["--drain"]);
    read_metrics(addr);
    let out = agent.wait_with_output().expect("the demo ends");
    let summary = summary_of(&out);
    let recorded = summary["events_recorded"].as_u64().unwrap();
    from_demo_json(&summary).assert_conserves(recorded);
    // The ring's own account covers the whole run, whoever read it.
    let stat = run_in(dir.path(), clean().args(["stat", "--json"]).arg(&ring));
    let v: Value = serde_json::from_str(&stdout(&stat)).expect("stat --json");
    let ring_ledger = surfaces::from_stat_json(&v, 0);
    let demo_ledger = from_demo_json(&summary);
    assert_eq!(
        ring_ledger.lost_total(),
        demo_ledger.lost_to(Cause::ByExporter) + demo_ledger.lost_to(Cause::AtRecord),
        "{ring_ledger} against {demo_ledger}"
    );
    assert!(
        ring_ledger.delivered >= demo_ledger.delivered,
        "{ring_ledger}"
    );
}

#[test]
fn the_csv_file_holds_what_its_exporter_delivered_and_its_loss_reports_what_it_lost() {
    let dir = scratch();
    // 1.5 s at 2000 events a second: the lanes keep up, the ring of 64 does not.
    let o = demo(
        dir.path(),
        3000,
        &["--exporter", "buffer,csv", "--rate", "2000"],
        &[("NIXL_TELEMETRY_BUFFER_SIZE", "64")],
    );
    let summary = summary_of(&o);
    assert_eq!(summary["dropped_at_record"], 0, "{summary}");
    let each = exporters_of(&summary);
    for e in &each {
        e.assert_conserves(3000);
    }
    let csv = std::fs::read_to_string(dir.path().join("telemetry/demo-agent.csv")).unwrap();
    let mut rows = csv.lines();
    assert_eq!(rows.next(), Some("timestamp_us,category,event,value"));
    let (mut events, mut reported) = (0, 0);
    for row in rows {
        let fields: Vec<_> = row.split(',').collect();
        if fields[2] == surfaces::DROP_REPORT {
            reported += fields[3].parse::<u64>().unwrap();
        } else {
            events += 1;
        }
    }
    assert_eq!(events, each[1].delivered, "{}", each[1]);
    assert_eq!(reported, each[1].lost_total(), "{}", each[1]);
    // The ring refused most of them; the CSV file got every one.
    assert!(each[0].lost_to(Cause::RingFull) > 2000, "{}", each[0]);
    assert_eq!(each[1].delivered, 3000, "{}", each[1]);
}

/// The descriptor limit: `serve` under an open-file limit it cannot raise, on more
/// live rings than the limit leaves room for. Each ring it follows conserves on
/// `/api/agents`; the rings it cannot follow are counted there and in its log (their
/// events stay unread in their files, neither delivered nor lost), and the count and
/// the followed rings add up to every ring in the folder.
#[test]
fn serve_at_the_descriptor_limit_conserves_what_it_follows_and_counts_what_it_cannot() {
    const RINGS: usize = 40;
    const EVENTS: u64 = 10;
    let dir = scratch();
    let rings = dir.path().join("telemetry");
    let agents = live_rings(&rings, RINGS, EVENTS);
    // 80 descriptors leave room for fewer than 40 rings.
    let (mut running, addr) = serve_under_fd_limit(&rings, 80);
    let (v, listed) = eventually(Duration::from_secs(30), || {
        let body = http_get(addr, "/api/agents");
        let v: Value = serde_json::from_str(body.split("\r\n\r\n").nth(1)?).ok()?;
        let listed = v["agents"].as_array()?.len();
        let not_followed = v["rings_not_followed"].as_u64()? as usize;
        (listed > 0 && listed + not_followed == RINGS).then_some((v, listed))
    })
    .expect("the followed and the counted rings add up to every ring");
    assert!(listed < RINGS, "the limit leaves room for every ring: {v}");
    // The node page says so too: a scrape never looks complete while rings go unread.
    let page = http_get(addr, "/metrics");
    let unread = page
        .lines()
        .find(|l| {
            l.starts_with("telering_collector_rings_not_followed{") && l.contains("reason=\"fds\"")
        })
        .and_then(|l| l.rsplit(' ').next()?.parse::<usize>().ok());
    assert_eq!(unread, Some(RINGS - listed), "{page}");
    for a in v["agents"].as_array().unwrap() {
        let name = a["agent"].as_str().unwrap();
        from_api_agent(&v, name).assert_conserves(EVENTS);
    }
    signal(&running.child, "-TERM");
    running.wait();
    let log = String::from_utf8_lossy(
        &std::io::Read::bytes(running.child.stderr.take().unwrap())
            .map_while(Result::ok)
            .collect::<Vec<u8>>(),
    )
    .into_owned();
    assert!(
        log.contains(&format!("not following {} ring files", RINGS - listed))
            && log.contains("for want of file descriptors"),
        "{log}"
    );
    drop(agents);
}
