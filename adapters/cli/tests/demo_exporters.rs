//! The demo takes every exporter of the README's table — `otlp` (from `--exporter`
//! or `NIXL_TELEMETRY_EXPORTER`) and `prometheus_mp` included — and its summary says
//! where the events went and what was not delivered; with a version-4 ring, the events
//! the layout cannot hold are counted under their own names, never as dropped.

mod common;

#[path = "../../otlp/tests/common/failing.rs"]
mod failing;

use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::{Command, Output};

/// `telering` with no `OTEL_*` variable inherited.
fn clean() -> Command {
    let mut cmd = telering();
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            cmd.env_remove(name);
        }
    }
    cmd
}

/// `telering demo --events N --no-serve --json` with `args` and `env`.
fn demo(dir: &std::path::Path, events: u64, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = clean();
    cmd.args(["demo", "--no-serve", "--json", "--events"])
        .arg(events.to_string())
        .args(args)
        .envs(env.iter().copied());
    run_in(dir, &mut cmd)
}

fn summary_of(o: &Output) -> Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_str(stdout(o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

fn n(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

#[test]
fn the_demo_pushes_to_an_otlp_collector_named_by_flag_or_variable() {
    let dir = scratch();
    let collector = failing::accepting();
    let endpoint = collector.endpoint.clone();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];
    for (args, env) in [
        (&["--exporter", "otlp"][..], &env[..]),
        (&[][..], &[env[0], ("NIXL_TELEMETRY_EXPORTER", "otlp")][..]),
    ] {
        let before = collector.hits();
        let o = demo(dir.path(), 300, args, env);
        let s = summary_of(&o);
        assert_eq!(s["exporter"], "otlp", "{s}");
        assert_eq!(n(&s, "events_recorded"), 300, "{s}");
        assert_eq!(n(&s, "events_exported"), 300, "{s}");
        assert_eq!(n(&s, "events_undelivered"), 0, "{s}");
        assert_eq!(n(&s, "export_errors"), 0, "{s}");
        assert!(collector.hits() > before, "no push arrived");
        assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
    }
    // The text summary names the collector.
    let mut cmd = clean();
    cmd.args(["demo", "--no-serve", "--events", "50", "--exporter", "otlp"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint);
    let o = run_in(dir.path(), &mut cmd);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("exported:  50 of the 50 recorded delivered by the otlp exporter"),
        "{text}"
    );
    assert!(
        text.contains(&format!("exporter:  otlp, to {endpoint}/v1/metrics")),
        "{text}"
    );
}

#[test]
fn the_demo_against_a_collector_that_is_down_says_nothing_was_delivered() {
    let dir = scratch();
    let down = failing::down();
    let o = demo(
        dir.path(),
        200,
        &["--exporter", "otlp"],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", down.endpoint.as_str())],
    );
    let s = summary_of(&o);
    assert_eq!(n(&s, "events_recorded"), 200, "{s}");
    assert_eq!(n(&s, "events_exported"), 0, "{s}");
    assert_eq!(n(&s, "events_undelivered"), 200, "{s}");
    assert!(n(&s, "export_errors") >= 1, "{s}");
    assert!(
        stderr(&o).contains("telering: warning: OTLP export to"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn with_a_list_the_demo_counts_a_down_collector_apart_from_the_ring() {
    let dir = scratch();
    let down = failing::down();
    let o = demo(
        dir.path(),
        200,
        &["--exporter", "buffer,otlp,prometheus_mp"],
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", down.endpoint.as_str()),
            ("NIXL_TELEMETRY_PROMETHEUS_PORT", "0"),
        ],
    );
    let s = summary_of(&o);
    let each = s["exporters"].as_array().unwrap();
    let names: Vec<_> = each.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["buffer", "otlp", "prometheus_mp"], "{s}");
    assert_eq!(n(&each[0], "delivered"), 200, "{s}");
    assert_eq!(n(&each[1], "delivered"), 0, "{s}");
    assert_eq!(n(&each[1], "undelivered"), 200, "{s}");
    assert!(n(&each[1], "export_errors") >= 1, "{s}");
    assert_eq!(each[1]["failing"], true, "{s}");
    assert_eq!(n(&each[2], "delivered"), 200, "{s}");
    // The totals are the down collector's: nothing counts as exported by the list.
    assert_eq!(n(&s, "events_exported"), 0, "{s}");
    assert_eq!(n(&s, "events_undelivered"), 200, "{s}");
    assert!(
        n(&s, "export_errors") >= n(&each[1], "export_errors"),
        "{s}"
    );
    assert!(
        dir.path()
            .join("telemetry/prometheus_mp/owner.lock")
            .exists()
    );
}

#[test]
fn the_demo_runs_prometheus_mp_with_a_store_directory_of_its_own() {
    let dir = scratch();
    let o = demo(
        dir.path(),
        200,
        &["--exporter", "prometheus_mp", "--dir", "tel"],
        &[("NIXL_TELEMETRY_PROMETHEUS_PORT", "0")],
    );
    let s = summary_of(&o);
    assert_eq!(s["exporter"], "prometheus_mp", "{s}");
    assert_eq!(n(&s, "events_exported"), 200, "{s}");
    let stores: Vec<_> = std::fs::read_dir(dir.path().join("tel/prometheus_mp"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".store"))
        .collect();
    assert_eq!(stores.len(), 1, "{stores:?}");

    // A directory given by the variable is used as it is, and the text says where.
    let mut cmd = clean();
    cmd.args([
        "demo",
        "--no-serve",
        "--events",
        "20",
        "--exporter",
        "prometheus_mp",
    ])
    .env("NIXL_TELEMETRY_MULTIPROC_DIR", "node")
    .env("NIXL_TELEMETRY_PROMETHEUS_PORT", "0");
    let o = run_in(dir.path(), &mut cmd);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("exporter:  prometheus_mp, to node (node metrics served by the rank holding node/owner.lock)"),
        "{}",
        stdout(&o)
    );
    assert!(dir.path().join("node/owner.lock").exists());
}

#[test]
fn the_demo_names_a_prometheus_mp_address_only_while_it_serves_it() {
    // Another server holds the port: the demo's rank is elected but cannot bind, so
    // the summary names no address (before, it named the other server's).
    let dir = scratch();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = other.local_addr().unwrap().port().to_string();
    let env = [
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", port.as_str()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true"),
    ];
    for exporters in ["prometheus_mp", "buffer,prometheus_mp"] {
        let o = demo(dir.path(), 50, &["--exporter", exporters], &env);
        let s = summary_of(&o);
        assert_eq!(s["metrics_url"], Value::Null, "{exporters}: {s}");
    }
    drop(other);

    // A port it can bind: the address it serves the node page on, alone or in a list.
    for exporters in ["prometheus_mp", "buffer,prometheus_mp"] {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port().to_string();
        drop(free);
        let env = [
            ("NIXL_TELEMETRY_PROMETHEUS_PORT", port.as_str()),
            ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true"),
        ];
        let o = demo(dir.path(), 50, &["--exporter", exporters], &env);
        let s = summary_of(&o);
        let url = format!("http://127.0.0.1:{port}/metrics");
        assert_eq!(s["metrics_url"], url.as_str(), "{exporters}: {s}");
    }
}

#[test]
fn a_version_4_demo_counts_what_the_layout_cannot_hold_under_its_own_names() {
    let dir = scratch();
    let o = demo(
        dir.path(),
        1000,
        &[
            "--layout", "v4", "--dir", "rep", "--agent", "a", "--seed", "1",
        ],
        &[],
    );
    let s = summary_of(&o);
    let not_in_layout = n(&s, "events_not_in_layout");
    assert!(not_in_layout > 0, "{s}");
    assert_eq!(
        n(&s, "events_exported") + n(&s, "events_dropped") + not_in_layout,
        1000,
        "{s}"
    );

    let o = run_in(dir.path(), telering().args(["read", "--json", "rep/a"]));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut in_file: BTreeMap<String, u64> = BTreeMap::new();
    for event in parse_json_lines(&stdout(&o)) {
        *in_file
            .entry(event["event"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let mut summed = 0;
    for (name, t) in s["names"].as_object().unwrap() {
        let (count, dropped, left_out) = (n(t, "count"), n(t, "dropped"), n(t, "not_in_layout"));
        summed += left_out;
        let custom_or_backend = matches!(t["category"].as_str(), Some("CUSTOM" | "BACKEND"));
        // Only events without a version-4 type are left out, all of them.
        assert_eq!(
            left_out,
            if custom_or_backend { count } else { 0 },
            "{name}: {s}"
        );
        // Version 4 names an error event `NIXL_ERR_<STATUS>` by its type,
        // `agent_err_<status>`.
        let stored = match name.strip_prefix("NIXL_ERR_") {
            Some(status) => format!("agent_err_{}", status.to_ascii_lowercase()),
            None => name.clone(),
        };
        assert_eq!(
            in_file.get(&stored).copied().unwrap_or(0),
            count - dropped - left_out,
            "{name}: the file against the summary {s}"
        );
    }
    assert_eq!(summed, not_in_layout, "{s}");
}
