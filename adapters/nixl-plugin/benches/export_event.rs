//! The cost per event of the plug-in's `exportEvent` path, in the NIXL-shaped host
//! (`host/nixl_host.cpp`, g++ -O2) as NIXL's flush calls it: batches of 4096 events,
//! a few milliseconds apart, into `TELERING_EXPORTERS=nop` (the exporters run on
//! telering's own flush thread, not on NIXL's, so which one is listed does not change
//! this path). Side by side, the baseline `nixl-null`: a plug-in whose exportEvent
//! only adds the value to a member (NIXL's virtual call and nothing else).
//!
//! Time: ns per event of the timed exportEvent loops, one figure per round, median
//! and min–max over the rounds. Instructions: `valgrind --tool=callgrind` collecting
//! inside exportEvent only (`--toggle-collect`), divided by the events exported, over
//! the same number of rounds (skipped when valgrind is not installed).
//!
//! `cargo bench -p telering-nixl-plugin --bench export_event` (ROUNDS, default 9).

use std::path::{Path, PathBuf};
use std::process::Command;

const CRATE: &str = env!("CARGO_MANIFEST_DIR");
const EVENTS: u64 = 4096;

fn plugin_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    let name = "libtelemetry_exporter_telering.so";
    [deps.join(name), deps.parent().unwrap().join(name)]
        .into_iter()
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no {name} next to {}", deps.display()))
}

fn gpp(args: &[&str], source: &str, out: &Path) {
    let status = Command::new("g++")
        .args(["-std=c++17", "-O2", "-g", "-I"])
        .arg(format!("{CRATE}/include"))
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(format!("{CRATE}/{source}"))
        .arg("-ldl")
        .status()
        .expect("run g++");
    assert!(status.success(), "compiling {source} failed");
}

fn host(dir: &Path, name: &str, tool: &[&str], args: &[&str]) -> String {
    let exe = dir.join("nixl_host");
    let mut cmd = match tool {
        [tool, rest @ ..] => {
            let mut c = Command::new(tool);
            c.args(rest).arg(&exe);
            c
        }
        [] => Command::new(&exe),
    };
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("NIXL_") || k.starts_with("TELERING_") {
            cmd.env_remove(k);
        }
    }
    let output = cmd
        .args(["--name", name])
        .args(args)
        .env("NIXL_PLUGIN_DIR", dir)
        .env("NIXL_TELEMETRY_ENABLE", "y")
        .env("NIXL_TELEMETRY_EXPORTER", name)
        .env("NIXL_TELEMETRY_RUN_INTERVAL", "2")
        .env("TELERING_EXPORTERS", "nop")
        .output()
        .expect("run the host");
    assert!(
        output.status.success(),
        "host: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn spread(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() {
    let rounds: u64 = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(9);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        plugin_library(),
        dir.path().join("libtelemetry_exporter_telering.so"),
    )
    .unwrap();
    gpp(&[], "host/nixl_host.cpp", &dir.path().join("nixl_host"));
    gpp(
        &["-shared", "-fPIC"],
        "benches/cpp/null_plugin.cpp",
        &dir.path().join("libtelemetry_exporter_null.so"),
    );
    let contenders = [
        ("telering", "telering plug-in"),
        ("null", "nixl-null (baseline)"),
    ];
    let (r, e) = (rounds.to_string(), EVENTS.to_string());
    let timed = [
        "--bench",
        &r,
        "--batches",
        "25",
        "--events",
        &e,
        "--interval-ms",
        "5",
    ];
    println!(
        "exportEvent in the NIXL-shaped host, {rounds} rounds of 25 batches of {EVENTS} events"
    );
    let mut medians = Vec::new();
    for (name, label) in contenders {
        let out = host(dir.path(), name, &[], &timed);
        let ns: Vec<f64> = out
            .lines()
            .filter(|l| l.starts_with("round "))
            .map(|l| {
                assert!(l.ends_with("not_successful 0"), "events not recorded: {l}");
                l.split_whitespace().nth(3).unwrap().parse().unwrap()
            })
            .collect();
        let (median, min, max) = spread(ns);
        medians.push(median);
        println!("  {label:<22} {median:>7.2} ns/event (min {min:.2}, max {max:.2})");
    }
    println!(
        "  ratio telering / nixl-null: {:.1}×",
        medians[0] / medians[1]
    );

    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("valgrind not installed: no instruction counts");
        return;
    }
    let batches = 2u64;
    let events = batches * EVENTS;
    println!("callgrind, inside exportEvent, {rounds} rounds of {events} events");
    for (name, label) in contenders {
        let mut per_event = Vec::new();
        for round in 0..rounds {
            let out_file = dir.path().join(format!("callgrind.{name}.{round}"));
            let tool = [
                "valgrind".to_string(),
                "--tool=callgrind".into(),
                "--toggle-collect=*exportEvent*".into(),
                format!("--callgrind-out-file={}", out_file.display()),
            ];
            let tool: Vec<&str> = tool.iter().map(String::as_str).collect();
            let b = batches.to_string();
            host(dir.path(), name, &tool, &["--batches", &b, "--events", &e]);
            let text = std::fs::read_to_string(&out_file).unwrap();
            let total: u64 = text
                .lines()
                .find_map(|l| {
                    l.strip_prefix("totals: ")
                        .or_else(|| l.strip_prefix("summary: "))
                })
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .expect("callgrind's totals");
            per_event.push(total as f64 / events as f64);
        }
        let (median, min, max) = spread(per_event);
        println!("  {label:<22} {median:>7.1} instructions/event (min {min:.1}, max {max:.1})");
    }
}
