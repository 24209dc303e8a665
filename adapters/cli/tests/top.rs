//! `telering top`: the `--once` / `--json` tables over every kind of file a ring
//! directory can hold, and the live screen in a real terminal (tmux), with its route
//! view (`r`).

mod common;

use common::*;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use telering_core::{Category, Event, event_name};
use telering_shm::{ShmWriter, WriterOptions};

/// A ring file as NIXL's own writer lays it out: header and unstamped slots, no trailer.
fn nixl_ring(path: &Path, events: &[Event], capacity: u64) {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&(events.len() as u64).to_le_bytes()); // write_pos
    bytes.extend_from_slice(&0u64.to_le_bytes()); // read_pos
    bytes.extend_from_slice(&1i32.to_le_bytes()); // version
    bytes.extend_from_slice(&1i32.to_le_bytes()); // expected_version
    bytes.extend_from_slice(&capacity.to_le_bytes());
    bytes.extend_from_slice(&(capacity - 1).to_le_bytes()); // mask
    for i in 0..capacity as usize {
        match events.get(i) {
            Some(e) => bytes.extend_from_slice(&e.to_wire_bytes()),
            None => bytes.extend_from_slice(&[0; 56]),
        }
    }
    std::fs::write(path, bytes).unwrap();
}

fn tx(value: u64) -> Event {
    Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), value)
}

/// A directory with a live ring (written by a thread while `top` looks), a dead
/// writer's ring, a NIXL-written ring and a corrupt file; runs `top` with `args`.
fn run_on_mixed_dir(args: &[&str]) -> (std::process::Output, Vec<(String, Vec<u8>)>) {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let mut dead = ShmWriter::create(WriterOptions::new(&rings, "dead")).unwrap();
    dead.write_batch(&[tx(10), tx(20)]);
    dead.close().unwrap();
    nixl_ring(&rings.join("nixl"), &[tx(1), tx(2), tx(3)], 8);
    let mut corrupt = vec![0u8; 4096];
    corrupt[16..20].copy_from_slice(&1i32.to_le_bytes());
    corrupt[20..24].copy_from_slice(&1i32.to_le_bytes());
    corrupt[24..32].copy_from_slice(&7u64.to_le_bytes()); // capacity not a power of two
    std::fs::write(rings.join("corrupt"), &corrupt).unwrap();

    let mut live = ShmWriter::create(WriterOptions::new(&rings, "live")).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writing = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                live.write_batch(&[tx(1000), tx(1000)]);
                std::thread::sleep(Duration::from_millis(2));
            }
            live
        })
    };
    let before: Vec<(String, Vec<u8>)> = ["dead", "nixl", "corrupt"]
        .iter()
        .map(|n| (n.to_string(), std::fs::read(rings.join(n)).unwrap()))
        .collect();
    let o = run_in(
        dir.path(),
        telering()
            .arg("top")
            .arg(&rings)
            .args(["--interval", "500ms"])
            .args(args),
    );
    stop.store(true, Ordering::SeqCst);
    writing.join().unwrap().close().unwrap();
    for (name, bytes) in &before {
        assert_eq!(
            &std::fs::read(rings.join(name)).unwrap(),
            bytes,
            "{name} was changed"
        );
    }
    (o, before)
}

#[test]
fn once_shows_live_dead_nixl_and_corrupt_rings_as_rows() {
    let (o, _) = run_on_mixed_dir(&["--once"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let text = stdout(&o);
    let row = |agent: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(agent))
            .unwrap_or_else(|| panic!("no row {agent}: {text}"))
            .to_string()
    };
    assert!(text.starts_with("AGENT"), "{text}");
    let me = std::process::id().to_string();
    let live = row("live");
    assert!(live.contains(&format!("alive {me}")), "{live}");
    let cells: Vec<&str> = live.split_whitespace().collect();
    let events_per_s: f64 = cells[3].parse().unwrap();
    assert!(events_per_s > 50.0, "{live}");
    assert!(row("dead").contains(&format!("gone {me}")), "{text}");
    assert!(row("nixl").contains("stampless version 1"), "{text}");
    assert!(row("nixl").contains("observe not possible"), "{text}");
    assert!(row("corrupt").contains("error:"), "{text}");
}

#[test]
fn json_has_one_object_per_ring_with_errors_named() {
    let (o, _) = run_on_mixed_dir(&["--json"]);
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let lines = parse_json_lines(&stdout(&o));
    let by = |agent: &str| {
        lines
            .iter()
            .find(|l| l["agent"] == agent)
            .unwrap_or_else(|| panic!("no {agent}: {lines:?}"))
            .clone()
    };
    assert_eq!(lines.len(), 4);
    let live = by("live");
    assert_eq!(live["writer_alive"], true);
    assert_eq!(live["writer_pid"], std::process::id());
    assert!(live["events_per_s"].as_f64().unwrap() > 50.0, "{live}");
    // Each event carries 1000 bytes.
    let ratio = live["tx_bytes_per_s"].as_f64().unwrap() / live["events_per_s"].as_f64().unwrap();
    assert!((ratio - 1000.0).abs() < 1e-3, "{live}");
    assert_eq!(live["events_missed"], 0);
    assert_eq!(live["writer_dropped"], 0);
    assert!(live["error"].is_null());
    let dead = by("dead");
    assert_eq!(dead["writer_alive"], false);
    assert_eq!(dead["events_per_s"], 0.0);
    let nixl = by("nixl");
    assert!(nixl["writer_dropped"].is_null(), "no trailer: {nixl}");
    assert!(nixl["error"].as_str().unwrap().contains("stampless"));
    assert!(!by("corrupt")["error"].is_null());
}

/// A tmux server on a private socket, killed when the test ends.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.socket]);
        c
    }

    fn capture(&self) -> String {
        let o = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "top"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn keys(&self, keys: &str) {
        assert!(
            self.cmd()
                .args(["send-keys", "-t", "top", keys])
                .status()
                .unwrap()
                .success()
        );
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

/// The table rows on screen: `(agent, events/s)` in screen order.
fn screen_rows(screen: &str, agents: &[&str]) -> Vec<(String, f64)> {
    screen
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .split(|c: char| c.is_whitespace() || c == '│')
                .filter(|c| !c.is_empty())
                .collect();
            let agent = *cells.first()?;
            if !agents.contains(&agent) || cells.get(1) != Some(&"alive") {
                return None;
            }
            Some((agent.to_string(), cells.get(3)?.parse().ok()?))
        })
        .collect()
}

fn hashes(dir: &Path) -> Vec<Vec<u8>> {
    ["alpha", "beta"]
        .iter()
        .map(|n| std::fs::read(dir.join(n)).unwrap())
        .collect()
}

#[test]
#[ignore = "needs tmux"]
fn live_screen_shows_both_agents_sorts_and_quits_without_changing_the_rings() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let demo = |agent: &str, rate: &str| {
        Running::spawn(
            telering()
                .args(["demo", "--no-serve", "--threads", "1", "--duration", "6s"])
                .args(["--agent", agent, "--rate", rate])
                .arg("--dir")
                .arg(&rings)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        )
    };
    let mut alpha = demo("alpha", "300");
    let mut beta = demo("beta", "3000");
    let rc_file = dir.path().join("rc");
    let tmux = Tmux {
        socket: format!("telering-top-{}", std::process::id()),
    };
    let script = format!(
        "'{}' top --interval 500ms '{}'; echo $? > '{}'",
        env!("CARGO_BIN_EXE_telering"),
        rings.display(),
        rc_file.display()
    );
    assert!(
        tmux.cmd()
            .args([
                "new-session",
                "-d",
                "-s",
                "top",
                "-x",
                "200",
                "-y",
                "50",
                &script
            ])
            .status()
            .unwrap()
            .success()
    );
    let agents = ["alpha", "beta"];
    // Both rows, by agent name, with rates near the demos' (300 and 3000 events/s,
    // plus the demo's own drop and heartbeat events).
    let rows = eventually(Duration::from_secs(10), || {
        let rows = screen_rows(&tmux.capture(), &agents);
        (rows.len() == 2 && rows[0].1 > 150.0 && rows[1].1 > 1500.0).then_some(rows)
    })
    .unwrap_or_else(|| panic!("screen:\n{}", tmux.capture()));
    assert_eq!(rows[0].0, "alpha");
    assert!(rows[0].1 < 600.0 && rows[1].1 < 6000.0, "{rows:?}");
    // `s` sorts by events/s, descending: beta first.
    tmux.keys("s");
    eventually(Duration::from_secs(5), || {
        let s = tmux.capture();
        let rows = screen_rows(&s, &agents);
        (s.contains("sort: events/s") && rows.len() == 2 && rows[0].0 == "beta").then_some(())
    })
    .unwrap_or_else(|| panic!("screen after s:\n{}", tmux.capture()));
    // `r` shows the selected agent's routes (the demo records its transfers on
    // routes, which its `buffer` exporter writes to its route file), `r` again hides them.
    tmux.keys("r");
    eventually(Duration::from_secs(5), || {
        let s = tmux.capture();
        (s.contains("beta — routes") && s.contains("WRITE UCX VRAM->VRAM decode-1")).then_some(())
    })
    .unwrap_or_else(|| panic!("screen after r:\n{}", tmux.capture()));
    tmux.keys("r");
    eventually(Duration::from_secs(5), || {
        (!tmux.capture().contains("— routes")).then_some(())
    })
    .unwrap_or_else(|| panic!("screen after r again:\n{}", tmux.capture()));

    // Once the writers are done, the files must not change while the view goes on.
    assert_eq!(alpha.wait(), Some(0));
    assert_eq!(beta.wait(), Some(0));
    let after_writers = hashes(&rings);
    eventually(Duration::from_secs(10), || {
        let s = tmux.capture();
        (s.matches("gone ").count() >= 2).then_some(())
    })
    .unwrap_or_else(|| panic!("writers not shown gone:\n{}", tmux.capture()));
    tmux.keys("q");
    let rc = eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&rc_file)
            .ok()
            .filter(|s| s.ends_with('\n'))
    })
    .expect("top did not exit after q");
    assert_eq!(rc.trim(), "0");
    assert_eq!(
        hashes(&rings),
        after_writers,
        "the view changed a ring file"
    );
}

#[test]
fn a_timestampless_v4_ring_gets_rates_from_arrival_and_says_so() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let _demo = Running::spawn(
        telering()
            .env("TELERING_RING_LAYOUT", "v4")
            .args(["demo", "--no-serve", "--threads", "1", "--duration", "20s"])
            .args(["--agent", "compact", "--rate", "2000", "--dir"])
            .arg(&rings)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let row = eventually(Duration::from_secs(15), || {
        let o = run_in(
            dir.path(),
            telering()
                .args(["top", "--json", "--interval", "300ms"])
                .arg(&rings),
        );
        let rows = parse_json_lines(&stdout(&o));
        rows.into_iter()
            .find(|r| r["events_per_s"].as_f64().is_some_and(|v| v > 100.0))
    })
    .expect("no rates for the v4 ring");
    assert_eq!(row["rates_from_arrival"], true, "{row}");
    assert!(row["error"].is_null(), "{row}");
    assert!(row["tx_bytes_per_s"].as_f64().unwrap() > 0.0, "{row}");
}
