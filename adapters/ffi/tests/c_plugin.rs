//! A C agent (libtelering) with an exporter plug-in: `examples/exporter-plugin/jsonl.c`
//! built with the system's C compiler and loaded from `NIXL_PLUGIN_DIR`, next to the
//! ring file in one list (`NIXL_TELEMETRY_EXPORTER=buffer,jsonl`). The plug-in's JSON
//! lines hold every event the ring holds. The same run under valgrind is ignored
//! unless asked for (`.ci/run` installs valgrind and runs it with `--ignored`).

mod common;

use common::{Tally, clean_env, compile, run_ok, telering_read};
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Builds the sample plug-in into `dir` as `libtelemetry_exporter_jsonl.so`.
fn build_jsonl(dir: &Path) -> PathBuf {
    let out = dir.join("libtelemetry_exporter_jsonl.so");
    let output = Command::new("gcc")
        .args([
            "-std=c11", "-shared", "-fPIC", "-g", "-O1", "-Wall", "-Wextra",
        ])
        .args(["-Werror", "-pedantic", "-I"])
        .arg(format!("{ROOT}/adapters/std/include"))
        .arg("-o")
        .arg(&out)
        .arg(format!("{ROOT}/examples/exporter-plugin/jsonl.c"))
        .output()
        .expect("run the C compiler");
    assert!(
        output.status.success(),
        "compiling jsonl.c failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// `(category, count, sum)` per event name of the plug-in's JSON lines; the loss
/// reports it got through `add_dropped` are counted under `add_dropped`.
fn tally_jsonl(path: &Path) -> Tally {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("the plug-in's file {}: {e}", path.display()));
    let mut tally = Tally::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
        let (name, category, value) = match v.get("dropped") {
            Some(n) => ("add_dropped", "", n.as_u64().expect("a count")),
            None => (
                v["name"].as_str().expect("name"),
                v["category"].as_str().expect("category"),
                v["value"].as_u64().expect("value"),
            ),
        };
        let entry = tally
            .entry(name.to_string())
            .or_insert((category.to_string(), 0, 0));
        assert_eq!(entry.0, category, "one category per name");
        entry.1 += 1;
        entry.2 += value;
    }
    tally
}

/// Runs `record.c` (through `wrapper`, if any) with the ring and the plug-in, and
/// checks that the plug-in got exactly the ring's events.
fn run_and_compare(wrapper: Option<&[&str]>) {
    let scratch = tempfile::tempdir().unwrap();
    let plugins = scratch.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    build_jsonl(&plugins);
    let exe = compile("record.c", scratch.path());
    let dir = scratch.path().join("rings");
    let mut cmd = match wrapper {
        Some([tool, args @ ..]) => {
            let mut cmd = Command::new(tool);
            cmd.args(args).arg(&exe);
            cmd
        }
        _ => Command::new(&exe),
    };
    clean_env(&mut cmd);
    run_ok(
        cmd.env("NIXL_TELEMETRY_ENABLE", "y")
            .env("NIXL_TELEMETRY_EXPORTER", "buffer,jsonl")
            .env("NIXL_TELEMETRY_DIR", &dir)
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "16384")
            .env("NIXL_TELEMETRY_RUN_INTERVAL", "60000")
            .env("NIXL_PLUGIN_DIR", &plugins),
    );
    let ring = telering_read(&dir.join("c-agent"));
    let plugin = tally_jsonl(&dir.join("c-agent.jsonl"));
    let events: u64 = ring.values().map(|(_, n, _)| n).sum();
    assert!(events > 7000, "the ring holds {events} events: {ring:?}");
    assert_eq!(plugin, ring, "the plug-in's events are the ring's");
}

#[test]
fn a_c_agent_loads_a_c_plugin_and_it_gets_every_event_the_ring_gets() {
    run_and_compare(None);
}

#[test]
#[ignore = "needs valgrind"]
fn a_c_agent_with_a_c_plugin_under_valgrind_leaks_nothing_and_loses_nothing() {
    run_and_compare(Some(&[
        "valgrind",
        "--leak-check=full",
        "--error-exitcode=1",
        "--errors-for-leak-kinds=definite,possible",
        "--quiet",
    ]));
}

#[test]
fn a_c_agent_reads_each_exporters_counters_plugin_included() {
    let scratch = tempfile::tempdir().unwrap();
    let plugins = scratch.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    build_jsonl(&plugins);
    let exe = compile("exporters.c", scratch.path());
    let mut cmd = Command::new(&exe);
    clean_env(&mut cmd);
    let out = run_ok(
        cmd.env("NIXL_TELEMETRY_ENABLE", "y")
            .env("NIXL_TELEMETRY_EXPORTER", "buffer,csv,jsonl")
            .env("NIXL_TELEMETRY_DIR", scratch.path().join("out"))
            .env("NIXL_PLUGIN_DIR", &plugins),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "exporter buffer 100 0 0 0",
            "exporter csv 100 0 0 0",
            "exporter jsonl 100 0 0 0"
        ],
        "{stdout}"
    );
}
