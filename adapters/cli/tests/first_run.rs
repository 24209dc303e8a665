//! What a new user meets first: `--version` and `--help`, the demo's next steps run
//! exactly as printed, its totals, `serve` and `top` with no arguments, and the page at
//! `/` of the metrics endpoint.

mod common;

use common::*;
use std::io::BufReader;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn version_and_help_name_the_release_and_every_subcommand() {
    let o = telering().arg("--version").output().unwrap();
    assert_eq!(
        stdout(&o).trim(),
        format!("telering {}", env!("CARGO_PKG_VERSION"))
    );
    let o = telering().arg("--help").output().unwrap();
    let help = stdout(&o);
    let about = help.lines().next().unwrap();
    for sub in [
        "demo", "read", "tail", "stat", "top", "serve", "decode", "config",
    ] {
        assert!(about.contains(sub), "`{sub}` missing in: {about}");
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(sub)),
            "`{sub}` not listed: {help}"
        );
    }
}

/// The `read it:` and `inspect:` lines, run by a shell in the same directory with a
/// `PATH` that has no `telering`, do what they say.
#[test]
fn demo_next_steps_run_as_printed_without_telering_on_path() {
    let dir = scratch();
    let o = run_in(
        dir.path(),
        telering()
            .env("PATH", "/usr/bin:/bin")
            .args(["demo", "--events", "300", "--no-serve"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let step = |label: &str| -> String {
        text.lines()
            .find_map(|l| l.strip_prefix(label))
            .unwrap_or_else(|| panic!("no `{label}` line in: {text}"))
            .trim()
            .to_string()
    };
    let read = step("read it:");
    let inspect = step("inspect:");
    assert!(!read.starts_with("telering "), "{read}");
    let shell = |command: &str| {
        Command::new("sh")
            .args(["-c", command])
            .current_dir(dir.path())
            .env("PATH", "/usr/bin:/bin")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let o = shell(&inspect);
    assert_eq!(o.status.code(), Some(0), "{inspect}: {}", stderr(&o));
    let o = shell(&format!("{read} --json"));
    assert_eq!(o.status.code(), Some(0), "{read}: {}", stderr(&o));
    assert_eq!(parse_json_lines(&stdout(&o)).len(), 300);
}

/// With a ring too small for the run and no reader, the exporter refuses events: the
/// summary says how many of the recorded ones reached the ring and how many the full
/// ring refused, and the two add up. Small lanes may refuse some at record time too
/// (the lanes are sized from the same variable); the head line says how many, and
/// with those every one of the 5000 events is accounted for.
#[test]
fn demo_totals_say_what_the_full_ring_refused() {
    let dir = scratch();
    let o = run_in(
        dir.path(),
        telering().env("NIXL_TELEMETRY_BUFFER_SIZE", "64").args([
            "demo",
            "--events",
            "5000",
            "--no-serve",
        ]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let line = |needle: &str| -> &str {
        text.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no `{needle}` line: {text}"))
    };
    let numbers = |line: &str| -> Vec<u64> {
        line.split_whitespace()
            .filter_map(|w| w.trim_end_matches([',', ')']).parse().ok())
            .collect()
    };
    let exported = line("exported: ");
    let [delivered, recorded, refused] = numbers(exported)[..] else {
        panic!("three totals expected in: {exported}");
    };
    assert!(exported.ends_with("refused by the full ring"), "{exported}");
    assert!(refused > 0, "{exported}");
    let head = line(" events recorded in ");
    assert_eq!(numbers(head).first(), Some(&recorded), "{head}");
    let refused_at_record = match head.split_once(" of them refused at record time") {
        Some((before, _)) => *numbers(before).last().unwrap(),
        None => 0,
    };
    assert_eq!(
        delivered + refused + refused_at_record,
        recorded,
        "{exported}"
    );
    assert_eq!(recorded, 5000, "{head}");
}

#[test]
fn serve_and_top_name_the_default_directory_when_it_is_missing() {
    let dir = scratch();
    let o = run_in(dir.path(), telering().arg("serve"));
    assert_fails(&o, 1, &["./telemetry", "default", "--dir DIR"]);
    let o = run_in(dir.path(), telering().args(["top", "--once"]));
    assert_fails(&o, 1, &["./telemetry", "default", "telering top DIR"]);
}

/// `serve` with no arguments serves `./telemetry`, as `demo` writes it, and its
/// endpoint answers `/` with a page linking `/metrics`.
#[test]
fn serve_without_arguments_serves_the_default_directory() {
    let dir = scratch();
    let o = run_in(
        dir.path(),
        telering().args(["demo", "--events", "50", "--no-serve"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut child = Running::spawn(
        telering()
            .current_dir(dir.path())
            .env("NIXL_TELEMETRY_PROMETHEUS_PORT", "0")
            .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "y")
            .arg("serve")
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(child.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    let page = eventually(Duration::from_secs(20), || {
        let page = http_get(addr, "/metrics");
        page.contains("{agent_name=\"demo-agent\"").then_some(page)
    });
    assert!(page.is_some(), "demo-agent not served from ./telemetry");
    let root = http_get(addr, "/");
    assert!(root.starts_with("HTTP/1.1 200"), "{root}");
    assert!(root.contains("<a href=\"/metrics\">"), "{root}");
    signal(&child.child, "-INT");
    assert_eq!(child.wait(), Some(0));
}

/// The demo's own endpoint carries `serve`'s dashboard: `/` is the page, and
/// `/api/agents` lists the demo's agent with its totals.
#[test]
fn the_demo_serves_the_dashboard_beside_its_metrics() {
    let dir = scratch();
    let mut child = Running::spawn(
        telering()
            .current_dir(dir.path())
            .args(["demo", "--duration", "60s", "--port", "0"])
            .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "y")
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(child.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "dashboard: http://"));
    let root = http_get(addr, "/");
    assert!(root.starts_with("HTTP/1.1 200"), "{root}");
    assert!(root.contains("/assets/dashboard.js"), "{root}");
    let agents = eventually(Duration::from_secs(20), || {
        let answer = http_get(addr, "/api/agents");
        answer
            .contains("\"agent\":\"demo-agent\"")
            .then_some(answer)
    })
    .expect("demo-agent listed by /api/agents");
    assert!(agents.contains("agent_tx_bytes_total"), "{agents}");
    signal(&child.child, "-INT");
    assert_eq!(child.wait(), Some(0));
}
