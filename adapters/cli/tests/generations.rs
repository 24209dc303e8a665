//! `telering read/tail/stat` on every NIXL ring generation and on the events NIXL's
//! own writer produces that telering's strict decoder refuses. Every file here is
//! built byte by byte from the published layouts, not by telering's writer.

mod common;

use common::*;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const CAPACITY: u64 = 8;

/// NIXL's 40-byte header, then `CAPACITY` slots of `slot` bytes filled with 0x5A
/// (uninitialised memory may hold anything), then the given slots from slot 0.
fn ring(version: i32, slot: usize, slots: &[Vec<u8>]) -> Vec<u8> {
    let mut b = vec![0x5Au8; 40 + CAPACITY as usize * slot];
    b[0..8].copy_from_slice(&(slots.len() as u64).to_le_bytes());
    b[8..16].copy_from_slice(&0u64.to_le_bytes());
    b[16..20].copy_from_slice(&version.to_le_bytes());
    b[20..24].copy_from_slice(&version.to_le_bytes());
    b[24..32].copy_from_slice(&CAPACITY.to_le_bytes());
    b[32..40].copy_from_slice(&(CAPACITY - 1).to_le_bytes());
    for (i, s) in slots.iter().enumerate() {
        assert_eq!(s.len(), slot);
        b[40 + i * slot..40 + (i + 1) * slot].copy_from_slice(s);
    }
    b
}

/// A 16-byte slot of version 3 or 4: type u32 @0, 4 bytes left as they were, value @8.
fn typed(type_number: u32, value: u64) -> Vec<u8> {
    let mut s = vec![0x5Au8; 16];
    s[0..4].copy_from_slice(&type_number.to_le_bytes());
    s[8..16].copy_from_slice(&value.to_le_bytes());
    s
}

/// A 56-byte version-1 slot with the name bytes as given (NUL padded).
fn v1(ts: u64, category: i32, name: &[u8], value: u64) -> Vec<u8> {
    let mut s = vec![0x5Au8; 56];
    s[0..8].copy_from_slice(&ts.to_le_bytes());
    s[8..12].copy_from_slice(&category.to_le_bytes());
    s[12..44].fill(0);
    s[12..12 + name.len()].copy_from_slice(name);
    s[48..56].copy_from_slice(&value.to_le_bytes());
    s
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn read_prints_typed_generations_without_timestamps() {
    let dir = scratch();
    let slots = vec![
        typed(0, 4096),
        typed(6, 52),
        typed(17, 1),
        typed(20, 3),
        typed(99, 7),
    ];
    for version in [3, 4] {
        let path = write(
            dir.path(),
            &format!("v{version}"),
            &ring(version, 16, &slots),
        );
        let o = run_in(dir.path(), telering().arg("read").arg("--json").arg(&path));
        assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
        let lines = parse_json_lines(&stdout(&o));
        let got: Vec<(String, String, u64)> = lines
            .iter()
            .map(|l| {
                assert!(l["timestamp_us"].is_null(), "{l}");
                (
                    l["event"].as_str().unwrap().to_owned(),
                    l["category"].as_str().unwrap().to_owned(),
                    l["value"].as_u64().unwrap(),
                )
            })
            .collect();
        let dropped = if version == 4 {
            ("agent_telemetry_events_dropped", "ERROR")
        } else {
            ("unknown_type_20", "CUSTOM")
        };
        let expected = [
            ("agent_tx_bytes", "TRANSFER", 4096),
            ("agent_xfer_time", "PERFORMANCE", 52),
            ("agent_err_remote_disconnect", "ERROR", 1),
            (dropped.0, dropped.1, 3),
            ("unknown_type_99", "CUSTOM", 7),
        ];
        let expected: Vec<(String, String, u64)> = expected
            .iter()
            .map(|(n, c, v)| (n.to_string(), c.to_string(), *v))
            .collect();
        assert_eq!(got, expected, "version {version}");
        // Unknown types are reported once each kind, not per event, and do not fail.
        let err = stderr(&o);
        assert!(err.contains("type number NIXL does not define"), "{err}");
        assert_eq!(err.matches("does not define (shown").count(), 2, "{err}");
    }
}

#[test]
fn read_prints_the_text_block_without_a_timestamp_line() {
    let dir = scratch();
    let mut slot = vec![0u8; 16];
    slot[0..4].copy_from_slice(&1i32.to_le_bytes()); // category TRANSFER
    slot[4..8].copy_from_slice(&3u32.to_le_bytes()); // agent_rx_requests_num
    slot[8..16].copy_from_slice(&9u64.to_le_bytes());
    let path = write(dir.path(), "v2", &ring(2, 16, &[slot]));
    let o = run_in(dir.path(), telering().arg("read").arg(&path));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "=== Telemetry Event ===\nCategory: TRANSFER\nEvent: agent_rx_requests_num\nValue: 9\n=======================\n\n"
    );
}

#[test]
fn read_shows_events_nixl_writes_that_strict_decoding_refuses() {
    let dir = scratch();
    // 30 ASCII bytes, then the first byte of 'é' (C3 A9): strncpy kept 31 bytes.
    let mut cut = vec![b'n'; 30];
    cut.push(0xC3);
    let slots = vec![
        v1(1_700_000_000_000_001, 1, b"agent_tx_bytes", 10),
        v1(1_700_000_000_000_002, 1, b"", 11),
        v1(1_700_000_000_000_003, 8, b"agent_rx_bytes", 12),
        v1(1_700_000_000_000_004, 1, &cut, 13),
        v1(1_700_000_000_000_005, 8, b"", 14),
        v1(1_700_000_000_000_006, 1, b"agent_rx_bytes", 15),
    ];
    let path = write(dir.path(), "nixl-v1", &ring(1, 56, &slots));
    let o = run_in(dir.path(), telering().arg("read").arg("--json").arg(&path));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let lines = parse_json_lines(&stdout(&o));
    let shown: Vec<(String, String, u64)> = lines
        .iter()
        .map(|l| {
            (
                l["category"].as_str().unwrap().to_owned(),
                l["event"].as_str().unwrap().to_owned(),
                l["value"].as_u64().unwrap(),
            )
        })
        .collect();
    let cut_text = format!("{}\u{FFFD}", "n".repeat(30));
    assert_eq!(
        shown,
        [
            ("TRANSFER".into(), "agent_tx_bytes".into(), 10),
            ("TRANSFER".into(), "".into(), 11),
            ("UNKNOWN(8)".into(), "agent_rx_bytes".into(), 12),
            ("TRANSFER".into(), cut_text, 13),
            ("UNKNOWN(8)".into(), "".into(), 14),
            ("TRANSFER".into(), "agent_rx_bytes".into(), 15),
        ]
    );
    assert_eq!(lines[2]["timestamp_us"], 1_700_000_000_000_003u64);
    // One warning per kind, naming the first slot of each, then the count.
    let err = stderr(&o);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 4, "{err}");
    assert!(lines[0].contains("slot 1 holds an empty name"), "{err}");
    assert!(
        lines[1].contains("slot 2 holds a category outside 0 to 7"),
        "{err}"
    );
    assert!(
        lines[2].contains("slot 3 holds a name that is not UTF-8"),
        "{err}"
    );
    assert!(
        lines[3].contains("4 records were shown as they are"),
        "{err}"
    );
    assert!(
        lines[3].contains("2 with a category outside 0 to 7"),
        "{err}"
    );
    assert!(lines[3].contains("2 with an empty name"), "{err}");
    assert!(
        lines[3].contains("1 with a name that is not UTF-8"),
        "{err}"
    );

    // The text block shows the same.
    let path = write(dir.path(), "nixl-v1-text", &ring(1, 56, &slots[2..3]));
    let o = run_in(dir.path(), telering().arg("read").arg(&path));
    assert!(
        stdout(&o).contains("Category: UNKNOWN(8)\nEvent: agent_rx_bytes\n"),
        "{}",
        stdout(&o)
    );
}

/// Waits at most `limit` for the child to exit.
fn exit_within(child: &mut Running, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Some(status) = child.child.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

#[test]
fn tail_follow_on_an_empty_stampless_ring_refuses_at_once() {
    let dir = scratch();
    // write_pos == read_pos == 0: nothing in the slots could tell whether they will
    // be stamped; the missing trailer does.
    for (name, bytes) in [
        ("nixl-v1", ring(1, 56, &[])),
        ("nixl-v4", ring(4, 16, &[])),
        ("nixl-v2", ring(2, 48, &[])),
    ] {
        let path = write(dir.path(), name, &bytes);
        let mut child = Running::spawn(
            telering()
                .args(["tail", "--follow", "--json"])
                .arg(&path)
                .current_dir(dir.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        );
        let code = exit_within(&mut child, Duration::from_secs(20));
        assert_eq!(
            code,
            Some(2),
            "{name}: tail --follow did not refuse at once"
        );
        let mut err = String::new();
        child
            .child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert!(err.contains(path_str(&path)), "{err}");
        assert!(err.contains("telering read"), "{err}");
        assert!(err.contains(&format!("version {}", bytes[16])), "{err}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "tail changed the file"
        );
    }
}

#[test]
fn tail_core_window_follows_a_trailerless_ring_whose_writer_stamps() {
    use telering_core::ring::{HeaderInfo, RingRegion};
    use telering_core::{Category, Event, EventName, OverflowPolicy, Producer};
    let dir = scratch();
    let len = HeaderInfo::ring_bytes(CAPACITY) as usize;
    let mut memory = vec![0u64; len / 8];
    let ptr = memory.as_mut_ptr().cast::<u8>();
    // SAFETY: `memory` is aligned, `len` bytes, owned by the region (a moved `Vec`
    // keeps its buffer in place) and touched only through it until copied out.
    let region = unsafe { RingRegion::init(memory, ptr, len, CAPACITY as u32) }.unwrap();
    let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    let name = EventName::new("dpu_window_tx_bytes").unwrap();
    producer
        .push(&Event::new(5, Category::Transfer, name, 77))
        .unwrap();
    let bytes: Vec<u8> = region
        .owner()
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect();
    let path = write(dir.path(), "window", &bytes);
    let o = run_in(dir.path(), telering().args(["tail", "--json"]).arg(&path));
    assert_fails(&o, 2, &["telering read"]);
    let o = run_in(
        dir.path(),
        telering()
            .args(["tail", "--json", "--core-window"])
            .arg(&path),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let lines = parse_json_lines(&stdout(&o));
    assert_eq!(lines.len(), 1);
    assert_eq!(
        (lines[0]["event"].as_str(), lines[0]["value"].as_u64()),
        (Some("dpu_window_tx_bytes"), Some(77))
    );
}

/// A stamped version-1 slot of a telering-core window holding event `seq`.
fn stamped_slot(seq: u64, name: &str) -> Vec<u8> {
    use telering_core::{Category, Event, EventName};
    let event = Event::new(seq, Category::Transfer, EventName::new(name).unwrap(), seq);
    let mut slot = event.to_wire_bytes().to_vec();
    // The stamp: (seq mod 2^30) << 2 | 0b10, at offset 44.
    let stamp = ((seq as u32) & ((1 << 30) - 1)) << 2 | 0b10;
    slot[44..48].copy_from_slice(&stamp.to_le_bytes());
    slot
}

/// Whether process `pid` is stopped (state `T` in `/proc/PID/stat`).
fn is_stopped(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
}

#[test]
fn tail_reports_an_unknown_gap_when_suspended_while_the_writer_ran_2_to_the_29_ahead() {
    use std::io::BufReader;
    use std::os::unix::fs::FileExt;
    // A trailerless window: no 64-bit published count, only the 30-bit stamps.
    let dir = scratch();
    let first: Vec<Vec<u8>> = (0..3).map(|seq| stamped_slot(seq, "before_stop")).collect();
    let mut bytes = ring(1, 56, &first);
    bytes[40 + 3 * 56..].fill(0); // never-written slots carry stamp 0
    let path = write(dir.path(), "window", &bytes);
    let mut child = Running::spawn(
        telering()
            .args([
                "tail",
                "--follow",
                "--json",
                "--core-window",
                "--interval",
                "5",
            ])
            .args(["--max", "11"])
            .arg(&path)
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let mut out = BufReader::new(child.child.stdout.take().unwrap());
    for seq in 0..3 {
        let line = wait_for_line(&mut out, "before_stop");
        assert_eq!(parse_json_lines(&line)[0]["value"].as_u64(), Some(seq));
    }
    // Ctrl-Z; meanwhile the writer publishes 2^29 + 1000 more events.
    signal(&child.child, "-STOP");
    let pid = child.child.id();
    assert!(
        eventually(Duration::from_secs(10), || is_stopped(pid).then_some(())).is_some(),
        "tail did not stop"
    );
    let next = 3 + (1u64 << 29) + 1000;
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    for slot in 0..CAPACITY {
        let seq = next - 1 - ((next - 1 - slot) % CAPACITY);
        file.write_all_at(&stamped_slot(seq, "after_resume"), 40 + slot * 56)
            .unwrap();
    }
    file.write_all_at(&(next % CAPACITY).to_le_bytes(), 0)
        .unwrap();
    signal(&child.child, "-CONT");
    // It resumes at the oldest event still in the ring and reads on.
    for seq in next - CAPACITY..next {
        let line = wait_for_line(&mut out, "after_resume");
        assert_eq!(parse_json_lines(&line)[0]["value"].as_u64(), Some(seq));
    }
    assert_eq!(exit_within(&mut child, Duration::from_secs(20)), Some(0));
    let mut err = String::new();
    child
        .child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(
        err.matches("gap: an unknown number of events (2^29 or more)")
            .count(),
        1,
        "{err}"
    );
    assert!(!err.contains("in total)"), "no loss may be guessed: {err}");
}

#[test]
fn stat_names_the_generation_and_says_no_counters_exist() {
    let dir = scratch();
    for (name, bytes, generation) in [
        (
            "v1",
            ring(1, 56, &[]),
            "version 1 (56-byte slots, NIXL 0.5.1 to 1.0.1)",
        ),
        (
            "v2-48",
            ring(2, 48, &[]),
            "version 2 (48-byte slots, first form, NIXL development builds)",
        ),
        (
            "v2",
            ring(2, 16, &[]),
            "version 2 (16-byte slots, NIXL 1.1.0 and 1.2.0)",
        ),
        (
            "v3",
            ring(3, 16, &[typed(1, 1)]),
            "version 3 (16-byte slots, NIXL 1.3.0 and 1.3.2)",
        ),
        (
            "v4",
            ring(4, 16, &[typed(1, 1)]),
            "version 4 (16-byte slots, NIXL 1.3.1, 1.4.0 and later)",
        ),
    ] {
        let path = write(dir.path(), name, &bytes);
        let o = run_in(dir.path(), telering().arg("stat").arg(&path));
        assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
        let text = stdout(&o);
        assert!(
            text.contains(&format!("generation:     {generation}")),
            "{text}"
        );
        assert!(
            text.contains("no writer pid, heartbeat or loss counters"),
            "{text}"
        );
        let o = run_in(dir.path(), telering().args(["stat", "--json"]).arg(&path));
        let json: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        assert_eq!(json["generation"], name);
        assert_eq!(json["trailer"], serde_json::Value::Null);
        assert_eq!(json["timestamps"], name == "v1");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "stat changed the file"
        );
    }
    // A directory of them: every one is reported, none skipped.
    let o = run_in(
        dir.path(),
        telering().args(["stat", "--json"]).arg(dir.path()),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 5);
}

#[test]
fn demo_layout_v4_writes_a_ring_every_reader_follows() {
    let dir = scratch();
    let ring_dir = dir.path().join("telemetry");
    let o = run_in(
        dir.path(),
        telering()
            .env_remove("TELERING_RING_LAYOUT")
            .args([
                "demo",
                "--layout",
                "v4",
                "--events",
                "400",
                "--rate",
                "0",
                "--no-serve",
                "--json",
                "--dir",
            ])
            .arg(&ring_dir),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let path = ring_dir.join("demo-agent");
    let o = run_in(dir.path(), telering().args(["stat", "--json"]).arg(&path));
    let info: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(info["generation"], "v4", "{info}");
    let trailer = &info["trailer"];
    let published = trailer["published"].as_u64().unwrap();
    let unrepresentable = trailer["dropped_unrepresentable"].as_u64().unwrap();
    // Every recorded event is in the ring, counted as dropped, or counted as not
    // representable in version 4.
    assert_eq!(
        published
            + unrepresentable
            + trailer["dropped_ring_full"].as_u64().unwrap()
            + trailer["dropped_staging"].as_u64().unwrap(),
        400 + count_reports(&path),
        "{info}"
    );
    let o = run_in(dir.path(), telering().arg("stat").arg(&path));
    assert!(stdout(&o).contains("not in layout:  "), "{}", stdout(&o));
    // An observer follows it (the stamps are at offset 4)…
    let o = run_in(dir.path(), telering().args(["tail", "--json"]).arg(&path));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let observed = parse_json_lines(&stdout(&o));
    assert_eq!(observed.len() as u64, published);
    // …and the draining reader prints the same events, without timestamps.
    let o = run_in(dir.path(), telering().args(["read", "--json"]).arg(&path));
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let drained = parse_json_lines(&stdout(&o));
    assert_eq!(drained, observed);
    for line in &drained {
        assert!(line["timestamp_us"].is_null(), "{line}");
        let name = line["event"].as_str().unwrap();
        assert!(name.starts_with("agent_"), "{line}");
    }
}

/// In-band drop reports the writer added (each is one published event).
fn count_reports(path: &Path) -> u64 {
    let o = telering()
        .args(["tail", "--json"])
        .arg(path)
        .output()
        .unwrap();
    parse_json_lines(&String::from_utf8(o.stdout).unwrap())
        .iter()
        .filter(|l| l["event"] == "agent_telemetry_events_dropped")
        .count() as u64
}

#[test]
fn an_unknown_layout_is_refused_naming_the_flag_or_the_variable() {
    let dir = scratch();
    let o = run_in(
        dir.path(),
        telering().args(["demo", "--layout", "v3", "--events", "1", "--no-serve"]),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`v3` is not a ring layout; use v1"),
        "{}",
        stderr(&o)
    );
    let o = run_in(
        dir.path(),
        telering()
            .env("TELERING_RING_LAYOUT", "v9")
            .args(["demo", "--events", "1", "--no-serve"]),
    );
    assert_fails(
        &o,
        2,
        &["TELERING_RING_LAYOUT=v9 is not a ring layout", "v4"],
    );
    assert!(!dir.path().join("telemetry/demo-agent").exists());
}
