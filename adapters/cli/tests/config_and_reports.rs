//! What the `telering` binary tells its user: the one parsing rule of every
//! variable, errors about the telemetry directory, `stat`'s count of problems, the
//! demo's metrics URL and its summary of what was exported.

mod common;

use common::*;
use std::net::{Ipv4Addr, TcpListener};

fn demo_json(dir: &std::path::Path, extra: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = telering();
    cmd.args(["demo", "--events", "20", "--no-serve", "--json"])
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_in(dir, &mut cmd)
}

#[test]
fn every_variable_follows_the_one_parsing_rule() {
    let dir = scratch();
    // Trimmed, and blank is unset — for every variable, the buckets too.
    let accepted: [(&str, &str); 9] = [
        ("NIXL_TELEMETRY_BUFFER_SIZE", " 1024"),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "1024\n"),
        ("NIXL_TELEMETRY_BUFFER_SIZE", ""),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "\t50 "),
        ("NIXL_TELEMETRY_RUN_INTERVAL", " "),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", " 0\n"),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", " TRUE "),
        ("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", ""),
        ("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", " 10, 100 ,"),
    ];
    for (var, value) in accepted {
        let o = demo_json(dir.path(), &[], &[(var, value)]);
        assert_eq!(o.status.code(), Some(0), "{var}={value:?}: {}", stderr(&o));
    }
    // A sign, a fraction, an exponent or an overflow where an integer is meant.
    let refused: [(&str, &str); 12] = [
        ("NIXL_TELEMETRY_BUFFER_SIZE", "+1024"),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "1024.0"),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "1e3"),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "18446744073709551616"),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "+50"),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "0.5"),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", "+9090"),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", "9e3"),
        ("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", "1e3"),
        ("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", "0.5"),
        (
            "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US",
            "10,18446744073709551616",
        ),
        ("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", "+10"),
    ];
    for (var, value) in refused {
        let o = demo_json(dir.path(), &[], &[(var, value)]);
        assert_fails(&o, 2, &[var]);
    }
}

#[test]
fn serve_refuses_a_variable_that_is_not_utf8_naming_it() {
    use std::os::unix::ffi::OsStringExt;
    let dir = scratch();
    let not_utf8 = std::ffi::OsString::from_vec(vec![b'9', 0xff]);
    let o = run_in(
        dir.path(),
        telering()
            .args(["serve", "--dir", "."])
            .env("NIXL_TELEMETRY_PROMETHEUS_PORT", &not_utf8),
    );
    assert_fails(
        &o,
        2,
        &["NIXL_TELEMETRY_PROMETHEUS_PORT", "not valid UTF-8"],
    );
}

#[test]
fn an_unknown_log_level_warns_and_keeps_the_default() {
    let dir = scratch();
    let missing = dir.path().join("missing");
    let o = run_in(
        dir.path(),
        telering()
            .arg("stat")
            .arg(&missing)
            .env("TELERING_LOG", "garbage"),
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("telering: warning: TELERING_LOG=garbage is not a log level")),
        "{err}"
    );
    // A known level, trimmed, does not warn.
    let o = run_in(
        dir.path(),
        telering()
            .arg("stat")
            .arg(&missing)
            .env("TELERING_LOG", " error\n"),
    );
    assert_fails(&o, 1, &[path_str(&missing)]);
}

#[test]
fn a_telemetry_dir_that_is_a_file_or_a_dangling_link_says_what_is_wrong() {
    let dir = scratch();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"keep me").unwrap();
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("gone"), &dangling).unwrap();
    for (path, needle) in [
        (&file, "is a regular file, not a directory"),
        (&dangling, "does not exist (a dangling link)"),
    ] {
        let o = demo_json(dir.path(), &[], &[("NIXL_TELEMETRY_DIR", path_str(path))]);
        let value = format!("NIXL_TELEMETRY_DIR={}", path.display());
        assert_fails(&o, 2, &[&value, needle]);
        assert!(!stderr(&o).contains("File exists"), "{}", stderr(&o));
    }
    assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
    assert!(!dir.path().join("gone").exists());
}

#[test]
fn stat_of_a_directory_counts_every_problem_it_reported() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let o = demo_json(dir.path(), &[], &[("NIXL_TELEMETRY_DIR", path_str(&rings))]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // One file that is not a ring, and one ring whose trailer is damaged.
    std::fs::write(rings.join("notes.txt"), b"not a ring").unwrap();
    let mut bytes = std::fs::read(rings.join("demo-agent")).unwrap();
    let trailer = bytes.len() - 64;
    bytes[trailer + 8] = 9; // the trailer's layout_version
    std::fs::write(rings.join("damaged"), &bytes).unwrap();

    let o = run_in(dir.path(), telering().arg("stat").arg(&rings));
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(stdout(&o).contains("demo-agent\n"), "{}", stdout(&o));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 3, "{err}");
    assert!(lines[..2].iter().any(|l| l.contains("damaged")), "{err}");
    assert!(lines[..2].iter().any(|l| l.contains("notes.txt")), "{err}");
    assert!(
        lines[2].contains(
            "2 problems were reported above: 1 file could not be reported, 1 is not a ring"
        ),
        "{err}"
    );
}

#[test]
fn the_demo_prints_no_metrics_url_it_does_not_serve() {
    let dir = scratch();
    // Another process holds the port.
    let taken = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let o = run_in(
        dir.path(),
        telering().args([
            "demo",
            "--events",
            "20",
            "--exporter",
            "prometheus",
            "--port",
            &port,
        ]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no metrics are served"),
        "{}",
        stderr(&o)
    );
    assert!(!stdout(&o).contains("http://"), "{}", stdout(&o));
    let o = demo_json(
        dir.path(),
        &["--exporter", "prometheus", "--port", &port],
        &[],
    );
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["metrics_url"], serde_json::Value::Null);

    // Port 0: the URL printed is the one the exporter bound.
    let mut child = Running::spawn(
        telering()
            .args([
                "demo",
                "--duration",
                "60s",
                "--exporter",
                "prometheus",
                "--port",
                "0",
            ])
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped()),
    );
    let mut out = std::io::BufReader::new(child.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "metrics:"));
    assert_ne!(addr.port(), 0);
    assert!(http_get(addr, "/metrics").contains("agent_name=\"demo-agent\""));
    signal(&child.child, "-INT");
    assert_eq!(child.wait(), Some(0));
}

#[test]
fn the_demo_summary_counts_as_exported_only_what_reached_the_ring() {
    let dir = scratch();
    // A ring of 64 slots, no reader, flat out: the exporter drops most events.
    let o = run_in(
        dir.path(),
        telering()
            .args([
                "demo",
                "--events",
                "5000",
                "--rate",
                "0",
                "--no-serve",
                "--json",
            ])
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "64"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} in {s}"));
    let ring = dir.path().join("telemetry/demo-agent");
    let read = run_in(dir.path(), telering().args(["read", "--json"]).arg(&ring));
    let in_ring = parse_json_lines(&stdout(&read))
        .iter()
        .filter(|l| l["event"] != "agent_telemetry_events_dropped")
        .count() as u64;
    assert!(n("dropped_by_exporter") > 0, "{s}");
    assert_eq!(n("events_exported"), in_ring, "{s}");
    assert_eq!(
        n("events_recorded"),
        n("events_exported") + n("events_dropped"),
        "{s}"
    );
    assert_eq!(n("events_recorded"), 5000, "{s}");
    // Per name, the losses are the real ones: they add up to the total, and every
    // event of a name that is not in the ring is among its losses.
    let names = s["names"].as_object().unwrap();
    let per_name: u64 = names.values().map(|t| t["dropped"].as_u64().unwrap()).sum();
    assert_eq!(per_name, n("events_dropped"), "{s}");
    let lines = parse_json_lines(&stdout(&read));
    for (name, t) in names {
        let in_ring = lines.iter().filter(|l| l["event"] == name.as_str()).count() as u64;
        let (count, dropped) = (t["count"].as_u64().unwrap(), t["dropped"].as_u64().unwrap());
        assert!(
            count - in_ring <= dropped,
            "{name}: {count} recorded, {in_ring} in the ring, {dropped} dropped"
        );
    }
}
