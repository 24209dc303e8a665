//! The `telering` binary, run as a user runs it: every subcommand, its output, its
//! exit codes and its one-line errors.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::io::BufReader;
use std::process::Stdio;
use std::time::Duration;
use telering_core::{Category, Event, EventName};
use telering_embedded_io::FrameExporter;
use telering_shm::{ShmWriter, WriterOptions};

fn event(ts: u64, category: Category, name: &str, value: u64) -> Event {
    Event::new(ts, category, EventName::new(name).unwrap(), value)
}

fn sample_events() -> Vec<Event> {
    vec![
        event(
            1_700_000_000_000_001,
            Category::Memory,
            "agent_memory_registered",
            1 << 26,
        ),
        event(
            1_700_000_000_000_002,
            Category::Transfer,
            "agent_tx_bytes",
            1_048_576,
        ),
        event(
            1_700_000_000_000_003,
            Category::Performance,
            "agent_xfer_time",
            52,
        ),
        event(
            1_700_000_000_000_004,
            Category::Error,
            "NIXL_ERR_BACKEND",
            1,
        ),
        event(
            1_700_000_000_000_005,
            Category::Custom,
            "quoted \"name\"",
            7,
        ),
    ]
}

fn assert_json_matches(line: &serde_json::Value, e: &Event) {
    assert_eq!(line["timestamp_us"], e.timestamp_us());
    assert_eq!(line["category"], e.category().unwrap().short_name());
    assert_eq!(line["event"], e.name().unwrap());
    assert_eq!(line["value"], e.value());
}

/// Per event name: (count, sum) of a `read --json` stream.
fn tally(lines: &[serde_json::Value]) -> BTreeMap<String, (String, u64, u64)> {
    let mut t: BTreeMap<String, (String, u64, u64)> = BTreeMap::new();
    for l in lines {
        let entry = t
            .entry(l["event"].as_str().unwrap().to_string())
            .or_insert_with(|| (l["category"].as_str().unwrap().to_string(), 0, 0));
        entry.1 += 1;
        entry.2 += l["value"].as_u64().unwrap();
    }
    t
}

#[test]
fn demo_of_a_fixed_event_count_reads_back_with_matching_counts_and_sums() {
    let dir = scratch();
    let o = run_in(
        dir.path(),
        telering().args([
            "demo",
            "--events",
            "6000",
            "--rate",
            "0",
            "--no-serve",
            "--json",
        ]),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON summary");
    assert_eq!(summary["events_recorded"], 6000);
    assert_eq!(summary["events_dropped"], 0);
    assert_eq!(summary["exporter"], "buffer");
    assert_eq!(summary["ring_file"], "./telemetry/demo-agent");
    // The start lines went to stderr, keeping stdout for the JSON.
    assert!(stderr(&o).contains("ring file: ./telemetry/demo-agent"));

    let o = run_in(
        dir.path(),
        telering().args(["read", "--json", "telemetry/demo-agent"]),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let lines = parse_json_lines(&stdout(&o));
    assert_eq!(lines.len(), 6000);
    let read_back = tally(&lines);
    let names = summary["names"].as_object().unwrap();
    assert_eq!(read_back.len(), names.len(), "{read_back:?} vs {names:?}");
    for (name, recorded) in names {
        let (category, count, sum) = &read_back[name];
        assert_eq!(recorded["category"], category.as_str(), "{name}");
        assert_eq!(recorded["count"], *count, "{name}");
        assert_eq!(recorded["sum"], *sum, "{name}");
    }
    // Every kind of activity happened: transfers, memory, errors, custom, backend.
    for name in [
        "agent_tx_bytes",
        "agent_rx_bytes",
        "agent_xfer_time",
        "agent_memory_registered",
        "demo_queue_depth",
        "ucx_rndv_bytes",
    ] {
        assert!(read_back.contains_key(name), "{name} missing");
    }
    assert!(read_back.keys().any(|n| n.starts_with("NIXL_ERR_")));

    // The ring is drained now, and the writer closed it cleanly.
    let o = run_in(dir.path(), telering().args(["stat", "--json", "telemetry"]));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let info: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(info["fill"], 0);
    assert_eq!(info["writer_alive"], false);
    assert_eq!(info["trailer"]["clean_close"], true);
    assert_eq!(info["trailer"]["published"], 6000);
}

#[test]
fn demo_honours_the_environment_over_its_embedded_defaults() {
    let dir = scratch();
    let o = run_in(
        dir.path(),
        telering()
            .args([
                "demo",
                "--events",
                "500",
                "--rate",
                "0",
                "--no-serve",
                "--json",
            ])
            .env("NIXL_TELEMETRY_DIR", "rings")
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "1024")
            .env("NIXL_TELEMETRY_ENABLED_METRICS", "agent_*")
            .env("NIXL_TELEMETRY_RUN_INTERVAL", "5"),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let summary: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(summary["ring_file"], "rings/demo-agent");
    assert!(
        summary["names"]
            .as_object()
            .unwrap()
            .keys()
            .all(|n| n.starts_with("agent_"))
    );
    let o = run_in(
        dir.path(),
        telering().args(["stat", "--json", "rings/demo-agent"]),
    );
    let info: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(info["capacity"], 1024);
    assert_eq!(info["fill"], 500);
}

#[test]
fn demo_with_the_csv_exporter_writes_the_csv_file() {
    let dir = scratch();
    let o = run_in(
        dir.path(),
        telering().args([
            "demo",
            "--events",
            "100",
            "--rate",
            "0",
            "--exporter",
            "csv",
            "--dir",
            "out",
        ]),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let csv = std::fs::read_to_string(dir.path().join("out/demo-agent.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 100);
    assert!(
        stdout(&o).contains("csv file:  out/demo-agent.csv"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn demo_stops_cleanly_on_ctrl_c_with_everything_flushed() {
    let dir = scratch();
    let mut child = Running::spawn(
        telering()
            .args(["demo", "--duration", "60s", "--rate", "1000", "--port", "0"])
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let mut out = BufReader::new(child.child.stdout.take().unwrap());
    let line = wait_for_line(&mut out, "metrics:");
    let addr = addr_in(&line);
    // The node collector serves the demo's ring while it runs.
    let page = eventually(Duration::from_secs(20), || {
        let page = http_get(addr, "/metrics");
        sample(
            &page,
            "agent_tx_requests_num_total{agent_name=\"demo-agent\"",
        )
        .filter(|v| *v > 0.0)
        .map(|_| page)
    });
    assert!(page.is_some(), "no transfers served on {addr}");
    signal(&child.child, "-INT");
    assert_eq!(child.wait(), Some(0));
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(rest.contains("stopped by Ctrl-C"), "{rest}");
    let recorded: u64 = rest
        .lines()
        .find(|l| l.contains(" events recorded in "))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok())
        .expect("summary line");
    // Everything recorded is in the ring, and the file was closed cleanly.
    let o = run_in(
        dir.path(),
        telering().args(["stat", "--json", "telemetry/demo-agent"]),
    );
    let info: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(info["trailer"]["clean_close"], true);
    assert_eq!(info["trailer"]["published"], recorded);
    assert_eq!(info["fill"], recorded);
}

#[test]
fn demo_with_the_prometheus_exporter_serves_the_agent() {
    let dir = scratch();
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
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    let mut out = BufReader::new(child.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "metrics:"));
    let served = eventually(Duration::from_secs(20), || {
        sample(
            &http_get(addr, "/metrics"),
            "agent_tx_bytes_total{agent_name=\"demo-agent\"",
        )
        .filter(|v| *v > 0.0)
    });
    signal(&child.child, "-TERM");
    assert_eq!(child.wait(), Some(0));
    assert!(
        served.is_some(),
        "the prometheus exporter served no bytes on {addr}"
    );
}

#[test]
fn read_prints_the_nixl_text_block_and_json_and_drains_the_ring() {
    let dir = scratch();
    let mut writer = ShmWriter::create(WriterOptions::new(dir.path(), "agent")).unwrap();
    let events = sample_events();
    assert_eq!(writer.write_batch(&events), events.len());
    let path = writer.path().to_path_buf();

    let o = run_in(dir.path(), telering().arg("read").arg(&path));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let text = stdout(&o);
    let blocks: Vec<&str> = text.split("\n\n").filter(|b| !b.is_empty()).collect();
    assert_eq!(blocks.len(), events.len());
    let lines: Vec<&str> = blocks[1].lines().collect();
    assert_eq!(lines[0], "=== Telemetry Event ===");
    assert!(lines[1].starts_with("Timestamp: 2023-11-1"), "{}", lines[1]);
    assert_eq!(
        lines[1].len(),
        "Timestamp: 2023-11-14 22:13:20.000002".len()
    );
    assert!(lines[1].ends_with(".000002"));
    assert_eq!(lines[2], "Category: TRANSFER");
    assert_eq!(lines[3], "Event: agent_tx_bytes");
    assert_eq!(lines[4], "Value: 1048576");
    assert_eq!(lines[5], "=======================");
    assert_eq!(telering_shm::stat(&path).unwrap().fill, 0);

    writer.write_batch(&events);
    let o = run_in(dir.path(), telering().arg("read").arg("--json").arg(&path));
    let lines = parse_json_lines(&stdout(&o));
    assert_eq!(lines.len(), events.len());
    for (line, e) in lines.iter().zip(&events) {
        assert_json_matches(line, e);
    }
    // Drained: a second read prints nothing.
    let o = run_in(dir.path(), telering().arg("read").arg(&path));
    assert_eq!((o.status.code(), stdout(&o).as_str()), (Some(0), ""));
    writer.close().unwrap();
}

#[test]
fn read_follow_prints_events_as_they_arrive_until_ctrl_c() {
    let dir = scratch();
    let mut writer = ShmWriter::create(WriterOptions::new(dir.path(), "agent")).unwrap();
    let mut child = Running::spawn(
        telering()
            .args(["read", "--json", "--follow", "--interval", "10"])
            .arg(writer.path())
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(child.child.stdout.take().unwrap());
    let events = sample_events();
    for e in &events {
        writer.write_batch(std::slice::from_ref(e));
        let line = wait_for_line(&mut out, "\"timestamp_us\"");
        assert_json_matches(&serde_json::from_str(&line).unwrap(), e);
    }
    signal(&child.child, "-INT");
    assert_eq!(child.wait(), Some(0));
    writer.close().unwrap();
}

#[test]
fn tail_leaves_the_file_byte_identical() {
    let dir = scratch();
    let mut writer = ShmWriter::create(WriterOptions::new(dir.path(), "agent")).unwrap();
    let events = sample_events();
    writer.write_batch(&events);
    let path = writer.path().to_path_buf();
    let before = std::fs::read(&path).unwrap();

    let o = run_in(dir.path(), telering().arg("tail").arg("--json").arg(&path));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let lines = parse_json_lines(&stdout(&o));
    assert_eq!(lines.len(), events.len());
    for (line, e) in lines.iter().zip(&events) {
        assert_json_matches(line, e);
    }
    let o = run_in(dir.path(), telering().arg("tail").arg(&path));
    assert_eq!(
        stdout(&o).matches("=== Telemetry Event ===").count(),
        events.len()
    );
    let o = run_in(dir.path(), telering().arg("stat").arg(&path));
    assert_eq!(o.status.code(), Some(0));

    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "tail or stat changed the file"
    );
    // The events are all still there for the draining reader.
    assert_eq!(telering_shm::stat(&path).unwrap().fill, events.len() as u64);
    writer.close().unwrap();
}

#[test]
fn tail_reports_the_exact_gap_when_the_writer_laps_it() {
    let dir = scratch();
    let mut options = WriterOptions::new(dir.path(), "agent");
    options.capacity = 8;
    options.policy = telering_core::OverflowPolicy::OverwriteOldest;
    let mut writer = ShmWriter::create(options).unwrap();
    let tick = |v: u64| event(1_700_000_000_000_000 + v, Category::Custom, "tick", v);
    writer.write_batch(&[tick(0), tick(1)]);
    let mut child = Running::spawn(
        telering()
            .args(["tail", "--json", "--follow", "--interval", "1000"])
            .arg(writer.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let mut out = BufReader::new(child.child.stdout.take().unwrap());
    wait_for_line(&mut out, "\"value\":1}");
    // The observer has caught up and sleeps; 20 more events lap its 8-slot ring.
    let more: Vec<Event> = (2..22).map(tick).collect();
    writer.write_batch(&more);
    let mut values = Vec::new();
    while values.last() != Some(&21) {
        let line = wait_for_line(&mut out, "\"timestamp_us\"");
        let line: serde_json::Value = serde_json::from_str(&line).unwrap();
        values.push(line["value"].as_u64().unwrap());
    }
    signal(&child.child, "-INT");
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(child.wait(), Some(0));
    // What it printed is a contiguous tail of the stream; the rest is counted.
    let first = values[0];
    assert_eq!(values, (first..22).collect::<Vec<_>>());
    let missed = first - 2;
    assert!(missed > 0);
    assert!(
        err.contains(&format!("gap: {missed} events were overwritten")),
        "{err}"
    );
    writer.close().unwrap();
}

#[test]
fn stat_reports_every_ring_of_a_directory() {
    let dir = scratch();
    let mut a = ShmWriter::create(WriterOptions::new(dir.path(), "agent-a")).unwrap();
    let b = ShmWriter::create(WriterOptions::new(dir.path(), "agent-b")).unwrap();
    a.write_batch(&sample_events());
    let b_path = b.path().to_path_buf();
    b.close().unwrap();
    let o = run_in(dir.path(), telering().arg("stat").arg(dir.path()));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("agent-a\n"));
    assert!(text.contains("agent-b\n"));
    assert!(text.contains("fill:           5 events"));
    assert!(text.contains("writer:         alive"));
    assert!(text.contains("writer:         gone"));
    assert!(text.contains("clean close:    yes"));
    assert!(text.contains(&format!("writer pid:     {}", std::process::id())));
    assert!(b_path.exists());
    a.close().unwrap();
}

#[test]
fn missing_files_fail_with_exit_1_naming_the_file() {
    let dir = scratch();
    let missing = dir.path().join("no-such-agent");
    let m = path_str(&missing);
    for args in [
        vec!["read", m],
        vec!["tail", m],
        vec!["stat", m],
        vec!["decode", "--input", m],
    ] {
        let o = run_in(dir.path(), telering().args(&args));
        assert_fails(&o, 1, &[m, "No such file"]);
    }
    let o = run_in(
        dir.path(),
        telering().args(["serve", "--port", "0", "--dir", m]),
    );
    assert_fails(&o, 1, &[m]);
}

#[test]
fn a_corrupted_file_fails_with_exit_1_and_is_left_untouched() {
    let dir = scratch();
    let path = dir.path().join("agent");
    let mut writer = ShmWriter::create(WriterOptions::new(dir.path(), "agent")).unwrap();
    writer.write_batch(&sample_events());
    writer.close().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    // The header's `version` (offset 16, i32) becomes 7.
    bytes[16..20].copy_from_slice(&7i32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    for cmd in ["read", "tail", "stat"] {
        let o = run_in(dir.path(), telering().arg(cmd).arg(&path));
        assert_fails(
            &o,
            1,
            &[
                path_str(&path),
                "field `version` (offset 16) is 7",
                "left untouched",
            ],
        );
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "a reader changed the file"
    );

    // Not a ring at all: too short for the header.
    std::fs::write(&path, b"hello").unwrap();
    let o = run_in(dir.path(), telering().arg("read").arg(&path));
    assert_fails(&o, 1, &[path_str(&path)]);
    assert_eq!(std::fs::read(&path).unwrap(), b"hello");
}

#[test]
fn a_slot_that_does_not_validate_is_shown_as_it_is_and_reported() {
    let dir = scratch();
    let path = dir.path().join("agent");
    let mut writer = ShmWriter::create(WriterOptions::new(dir.path(), "agent")).unwrap();
    let events = sample_events();
    writer.write_batch(&events);
    writer.close().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    // Slot 2's category (header 40 bytes, 56 per slot, category at +8) becomes 99.
    let at = 40 + 2 * 56 + 8;
    bytes[at..at + 4].copy_from_slice(&99i32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();

    let o = run_in(dir.path(), telering().arg("read").arg("--json").arg(&path));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines = parse_json_lines(&stdout(&o));
    assert_eq!(lines.len(), events.len());
    assert_eq!(lines[2]["category"], "UNKNOWN(99)");
    assert_eq!(lines[2]["event"], events[2].name().unwrap());
    let err = stderr(&o);
    assert!(err.contains("slot 2"), "{err}");
    assert!(err.contains("99"), "{err}");
    assert!(
        err.contains("1 record was shown as it is although it does not validate"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
}

/// Every malformed variable: exit code 2 and one line naming it.
#[test]
fn each_malformed_environment_variable_fails_with_exit_2_naming_it() {
    let dir = scratch();
    let a_file = dir.path().join("a-file");
    std::fs::write(&a_file, b"x").unwrap();
    let cases: Vec<(&str, &str, &[&str])> = vec![
        (
            "NIXL_TELEMETRY_BUFFER_SIZE",
            "1000",
            &["not a power of two", "512", "1024"],
        ),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "lots", &["not a number"]),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "1", &["too small"]),
        (
            "NIXL_TELEMETRY_BUFFER_SIZE",
            "4294967296",
            &["above the maximum"],
        ),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "0", &["milliseconds"]),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "fast", &["milliseconds"]),
        (
            "NIXL_TELEMETRY_EXPORTER",
            "kafka",
            &["not a known exporter", "prometheus"],
        ),
        ("NIXL_TELEMETRY_DIR", path_str(&a_file), &["directory"]),
        (
            "NIXL_TELEMETRY_ENABLED_METRICS",
            "no_such_event",
            &["allows none"],
        ),
        (
            "NIXL_TELEMETRY_PROMETHEUS_PORT",
            "http",
            &["not a TCP port"],
        ),
        (
            "NIXL_TELEMETRY_PROMETHEUS_PORT",
            "70000",
            &["not a TCP port"],
        ),
        (
            "NIXL_TELEMETRY_PROMETHEUS_LOCAL",
            "maybe",
            &["not a boolean"],
        ),
        (
            "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US",
            "10,5",
            &["strictly increasing"],
        ),
        (
            "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US",
            "10,fast",
            &["item 2"],
        ),
    ];
    for (var, value, needles) in cases {
        let o = run_in(
            dir.path(),
            telering()
                .args(["demo", "--events", "10", "--no-serve"])
                .env(var, value),
        );
        let mut all = vec![var];
        all.extend_from_slice(needles);
        assert_fails(&o, 2, &all);
    }
    // The exporter's own variables are checked when it starts, too.
    let o = run_in(
        dir.path(),
        telering()
            .args(["demo", "--events", "10", "--exporter", "prometheus"])
            .env("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", "5,1"),
    );
    assert_fails(&o, 2, &["NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US"]);
    // And by `serve`.
    let o = run_in(
        dir.path(),
        telering()
            .args(["serve", "--dir", "."])
            .env("NIXL_TELEMETRY_PROMETHEUS_PORT", "http"),
    );
    assert_fails(&o, 2, &["NIXL_TELEMETRY_PROMETHEUS_PORT"]);
    // With no directory named and no ./telemetry, `serve` says which one it meant.
    let o = run_in(dir.path(), telering().arg("serve"));
    assert_fails(&o, 1, &["./telemetry", "NIXL_TELEMETRY_DIR", "--dir"]);
}

#[test]
fn a_variable_that_is_not_utf8_fails_with_exit_2_naming_it() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch();
    let o = run_in(
        dir.path(),
        telering()
            .args(["demo", "--events", "10", "--no-serve"])
            .env(
                "NIXL_TELEMETRY_EXPORTER",
                std::ffi::OsStr::from_bytes(b"csv\xff"),
            ),
    );
    assert_fails(&o, 2, &["NIXL_TELEMETRY_EXPORTER", "UTF-8"]);
}

#[test]
fn an_unrecognized_enable_value_warns_and_runs_without_telemetry() {
    let dir = scratch();
    let o = run_in(
        dir.path(),
        telering()
            .args(["demo", "--events", "50", "--rate", "0", "--no-serve"])
            .env("NIXL_TELEMETRY_ENABLE", "maybe"),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert!(stderr(&o).contains("NIXL_TELEMETRY_ENABLE=maybe is not recognized"));
    assert!(stdout(&o).contains("telemetry: disabled"));
    assert!(!dir.path().join("telemetry/demo-agent").exists());
}

#[test]
fn usage_errors_exit_2() {
    let dir = scratch();
    for args in [
        vec!["read"],
        vec!["demo", "--duration", "soon"],
        vec!["demo", "--threads", "0"],
        vec!["demo", "--rate", "-5"],
        vec!["demo", "--rate", "inf"],
        vec!["read", "--interval", "0", "x"],
        vec!["frobnicate"],
    ] {
        let o = run_in(dir.path(), telering().args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"));
    }
    let o = run_in(dir.path(), telering().arg("--help"));
    assert_eq!(o.status.code(), Some(0));
    for sub in ["demo", "read", "tail", "stat", "serve", "decode"] {
        assert!(stdout(&o).contains(sub), "{sub} missing from --help");
    }
}

fn frames(events: &[Event]) -> Vec<u8> {
    let mut line = Vec::new();
    let mut exporter = FrameExporter::new(&mut line);
    for e in events {
        exporter.export(e).unwrap();
    }
    line
}

#[test]
fn decode_prints_the_events_of_an_embedded_io_frame_stream() {
    let dir = scratch();
    let events = sample_events();
    let stream = dir.path().join("uart.bin");
    std::fs::write(&stream, frames(&events)).unwrap();

    let o = run_in(
        dir.path(),
        telering()
            .arg("decode")
            .arg("--json")
            .arg("--input")
            .arg(&stream),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let lines = parse_json_lines(&stdout(&o));
    assert_eq!(lines.len(), events.len());
    for (line, e) in lines.iter().zip(&events) {
        assert_json_matches(line, e);
    }
    // Text blocks, from standard input.
    let o = run_in(
        dir.path(),
        telering()
            .arg("decode")
            .stdin(std::fs::File::open(&stream).unwrap()),
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o).matches("=== Telemetry Event ===").count(),
        events.len()
    );
    assert!(stdout(&o).contains("Event: quoted \"name\"\n"));
}

#[test]
fn decode_reports_a_damaged_frame_and_prints_the_rest() {
    let dir = scratch();
    let events = sample_events();
    let mut bytes = frames(&events);
    // Flip a byte inside the third frame (one sync zero, then 68-byte frames).
    bytes[1 + 2 * 68 + 20] ^= 0x40;
    let stream = dir.path().join("uart.bin");
    std::fs::write(&stream, &bytes).unwrap();
    let o = run_in(
        dir.path(),
        telering()
            .arg("decode")
            .arg("--json")
            .arg("--input")
            .arg(&stream),
    );
    assert_eq!(o.status.code(), Some(1));
    let lines = parse_json_lines(&stdout(&o));
    assert_eq!(lines.len(), events.len() - 1);
    let err = stderr(&o);
    assert!(
        err.contains(&format!("{}: frame stream at byte", stream.display())),
        "{err}"
    );
    assert!(err.contains("1 frame(s) missing"), "{err}");
    assert!(
        err.contains("frame stream problems were reported above"),
        "{err}"
    );
}

#[test]
fn serve_answers_metrics_for_a_ring_directory_and_stops_on_sigterm() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let mut writer = ShmWriter::create(WriterOptions::new(&rings, "agent-x")).unwrap();
    writer.write_batch(&sample_events());
    let mut child = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(child.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    assert!(addr.ip().is_loopback());
    let page = http_get(addr, "/metrics");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert_eq!(
        sample(&page, "agent_tx_bytes_total{agent_name=\"agent-x\""),
        Some(1_048_576.0),
        "{page}"
    );
    assert_eq!(
        sample(
            &page,
            "agent_memory_registered_total{agent_name=\"agent-x\""
        ),
        Some((1u64 << 26) as f64)
    );
    // Events written later show up too.
    writer.write_batch(&[event(
        1_700_000_000_000_010,
        Category::Transfer,
        "agent_tx_bytes",
        4,
    )]);
    let updated = eventually(Duration::from_secs(10), || {
        sample(
            &http_get(addr, "/metrics"),
            "agent_tx_bytes_total{agent_name=\"agent-x\"",
        )
        .filter(|v| *v == 1_048_580.0)
    });
    assert!(updated.is_some());
    signal(&child.child, "-TERM");
    assert_eq!(child.wait(), Some(0));
    // The collector observes: the ring still holds everything.
    assert_eq!(telering_shm::stat(writer.path()).unwrap().fill, 6);
    writer.close().unwrap();
}

/// A ring file as NIXL's own writer lays it out: header and slots, no trailer.
fn nixl_ring(path: &std::path::Path, events: &[Event], capacity: u64) {
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

#[test]
fn read_and_stat_work_on_a_ring_without_trailer_as_nixl_writes_it() {
    let dir = scratch();
    let path = dir.path().join("nixl-agent");
    let events = sample_events();
    nixl_ring(&path, &events, 8);
    let o = run_in(dir.path(), telering().arg("stat").arg(&path));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert!(stdout(&o).contains("no telering trailer"), "{}", stdout(&o));
    assert!(stdout(&o).contains("fill:           5 events"));
    let o = run_in(dir.path(), telering().arg("read").arg("--json").arg(&path));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let lines = parse_json_lines(&stdout(&o));
    assert_eq!(lines.len(), events.len());
    for (line, e) in lines.iter().zip(&events) {
        assert_json_matches(line, e);
    }
    // An observer needs slot stamps, which NIXL's writer does not write.
    let o = run_in(dir.path(), telering().arg("tail").arg(&path));
    assert_fails(&o, 2, &[path_str(&path), "stamp", "telering read"]);
    // `read` advanced read_pos (offset 8) like NIXL's readers.
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(u64::from_le_bytes(bytes[8..16].try_into().unwrap()), 5);
}

#[test]
fn a_closed_output_pipe_ends_tail_quietly_with_exit_0() {
    let dir = scratch();
    let mut writer = ShmWriter::create(WriterOptions::new(dir.path(), "agent")).unwrap();
    let many: Vec<Event> = (0..4000)
        .map(|v| event(1_700_000_000_000_000 + v, Category::Custom, "tick", v))
        .collect();
    writer.write_batch(&many);
    let mut child = Running::spawn(
        telering()
            .arg("tail")
            .arg(writer.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    // Take one line, then close the pipe, as `| head -1` does.
    let mut out = BufReader::new(child.child.stdout.take().unwrap());
    wait_for_line(&mut out, "=== Telemetry Event ===");
    drop(out);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(child.wait(), Some(0), "stderr: {err}");
    assert_eq!(err, "");
    writer.close().unwrap();
}
