//! `telering serve` and `telering demo` keep counting while the agent records: a full
//! ring nobody drains shows on `/metrics` and `/api/agents` as loss with its cause
//! (`ring_full`) and a `dropping` state; `/api/agents` is never older than a poll after
//! an idle spell; and a node of more rings than the open-file limit allows is served
//! as far as it goes, with the rest counted, rather than not at all.

mod common;

use common::*;
use std::io::BufReader;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;
use telering_core::{Category, Event, builtin};
use telering_shm::{ShmWriter, WriterOptions};

fn json(response: &str) -> serde_json::Value {
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

fn metric(addr: std::net::SocketAddr, series: &str) -> Option<f64> {
    try_http_get(addr, "/metrics")
        .ok()
        .and_then(|page| sample(&page, series))
}

#[test]
fn demo_on_a_small_ring_nobody_drains_keeps_counting_ring_full_losses_while_it_runs() {
    let dir = scratch();
    let mut demo = Running::spawn(
        telering()
            .current_dir(dir.path())
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "64")
            .args(["demo", "--duration", "60s", "--port", "0", "--rate", "2000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    let mut out = BufReader::new(demo.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "dashboard:"));
    let dropped = r#"agent_telemetry_events_dropped_total{agent_name="demo-agent""#;
    let first = eventually(Duration::from_secs(30), || {
        metric(addr, dropped).filter(|&n| n > 0.0)
    })
    .expect("the full ring's losses reach /metrics while the demo runs");
    // It keeps moving: the ring stays full, the writer keeps refusing.
    eventually(Duration::from_secs(30), || {
        metric(addr, dropped).filter(|&n| n > first)
    })
    .expect("the loss count keeps growing");
    let agent = eventually(Duration::from_secs(30), || {
        let v = json(&http_get(addr, "/api/agents"));
        let agent = v["agents"][0].clone();
        (agent["state"] == "dropping").then_some(agent)
    })
    .expect("/api/agents says dropping");
    // Under load the agent's own buffers may overflow too (`staging`): each cause is
    // named, the full ring among them, and /metrics' dropped total is their sum.
    let causes = agent["dropping"].as_array().unwrap();
    assert!(causes.iter().any(|c| c == "ring_full"), "{agent}");
    let losses = &agent["losses"];
    let lost = |cause: &str| losses[cause].as_u64().unwrap();
    assert!(lost("ring_full") > 0, "{agent}");
    assert_eq!(
        agent["values"]["agent_telemetry_events_dropped_total"].as_u64(),
        Some(lost("ring_full") + lost("staging")),
        "{agent}"
    );
    signal(&demo.child, "-INT");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert_eq!(demo.wait(), Some(0), "{rest}");
    // The summary says where the losses are counted, and does not claim an in-band
    // report the full ring has no room for.
    assert!(
        rest.contains("counted in the ring file's trailer"),
        "{rest}"
    );
    assert!(
        !rest.contains("each loss is also reported in-band"),
        "{rest}"
    );
}

/// A 64-slot ring file with three events, closed cleanly, as bytes to copy.
fn ring_template(dir: &Path) -> Vec<u8> {
    let made = dir.join("template");
    let mut o = WriterOptions::new(&made, "t");
    o.capacity = 64;
    let mut writer = ShmWriter::create(o).unwrap();
    let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 64);
    writer.write_batch(&[tx; 3]);
    writer.close().unwrap();
    std::fs::read(made.join("t")).unwrap()
}

/// Starts `serve` on `rings` under the shell's `ulimit` arguments.
fn serve_limited(rings: &Path, ulimit: &str, err_file: &Path) -> (Running, std::net::SocketAddr) {
    let mut serve = Running::spawn(
        Command::new("sh")
            .args([
                "-c",
                &format!("ulimit {ulimit} || exit 99; exec \"$0\" \"$@\""),
            ])
            .arg(telering().get_program())
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(rings)
            .env("TELERING_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(err_file).unwrap()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving"));
    (serve, addr)
}

const RINGS: usize = 320;

fn rings_in(dir: &Path) -> std::path::PathBuf {
    let rings = dir.join("rings");
    std::fs::create_dir(&rings).unwrap();
    let template = ring_template(dir);
    for i in 0..RINGS {
        std::fs::write(rings.join(format!("r{i:03}")), &template).unwrap();
    }
    rings
}

#[test]
fn serve_under_a_hard_open_file_limit_below_its_rings_serves_what_it_can_and_counts_the_rest() {
    let dir = scratch();
    let rings = rings_in(dir.path());
    let err_file = dir.path().join("err.txt");
    let (mut serve, addr) = serve_limited(&rings, "-n 256", &err_file);
    let page = eventually(Duration::from_secs(30), || {
        let v = json(&try_http_get(addr, "/api/agents?limit=1000").ok()?);
        (v["agents_total"].as_u64()? > 0 && v["rings_not_followed"].as_u64()? > 0).then_some(v)
    })
    .expect("some rings served, the rest counted");
    let served = page["agents_total"].as_u64().unwrap() as usize;
    let not_followed = page["rings_not_followed"].as_u64().unwrap() as usize;
    assert_eq!(served + not_followed, RINGS, "{page}");
    assert!(
        metric(addr, r#"agent_tx_bytes_total{agent_name="r000""#).is_some() || served < RINGS,
        "/metrics answers"
    );
    assert_eq!(serve.child.try_wait().unwrap(), None, "serve exited");
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert!(
        err.contains(&format!("not following {not_followed} ring files"))
            && err.contains("ulimit -n"),
        "the log says what is not followed and why: {err}"
    );
    signal(&serve.child, "-INT");
    assert_eq!(serve.wait(), Some(0));
}

#[test]
fn serve_raises_a_low_soft_open_file_limit_and_follows_every_ring() {
    let dir = scratch();
    let rings = rings_in(dir.path());
    let err_file = dir.path().join("err.txt");
    // Only the soft limit is low; the hard one (this machine's) leaves room.
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
    if hard.is_some_and(|h| h < 2 * RINGS as u64) {
        eprintln!("skipped: the hard open-file limit {hard:?} is too low to raise into");
        return;
    }
    let (mut serve, addr) = serve_limited(&rings, "-Sn 256", &err_file);
    eventually(Duration::from_secs(30), || {
        let v = json(&try_http_get(addr, "/api/agents?limit=1").ok()?);
        (v["agents_total"].as_u64()? == RINGS as u64).then_some(())
    })
    .expect("every ring followed");
    let v = json(&http_get(addr, "/api/agents?limit=1"));
    assert_eq!(v["rings_not_followed"].as_u64(), Some(0), "{v}");
    signal(&serve.child, "-INT");
    assert_eq!(serve.wait(), Some(0));
}

#[test]
fn the_first_api_agents_answer_after_an_idle_spell_includes_an_agent_that_appeared_since() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving"));
    let before = json(&http_get(addr, "/api/agents"));
    assert_eq!(before["agents_total"].as_u64(), Some(0), "{before}");
    // An agent appears while nobody asks for /api/agents.
    let mut o = WriterOptions::new(&rings, "late");
    o.capacity = 64;
    let mut writer = ShmWriter::create(o).unwrap();
    writer.write_batch(&[Event::new(
        1,
        Category::Transfer,
        builtin::AGENT_TX_BYTES.name,
        5,
    )]);
    eventually(Duration::from_secs(30), || {
        metric(addr, r#"agent_tx_bytes_total{agent_name="late""#)
    })
    .expect("the collector follows the new ring");
    // One request: the answer is as fresh as /metrics, not the snapshot of the
    // request before.
    let after = json(&http_get(addr, "/api/agents"));
    assert_eq!(after["agents_total"].as_u64(), Some(1), "{after}");
    assert_eq!(after["agents"][0]["agent"], "late", "{after}");
    assert_eq!(after["agents"][0]["state"], "ok", "{after}");
    writer.close().unwrap();
    signal(&serve.child, "-INT");
    assert_eq!(serve.wait(), Some(0));
}
