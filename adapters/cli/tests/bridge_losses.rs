//! `telering bridge`'s loss reports when its ring is full, and counts at their
//! extremes: every loss before the ring reaches the ring with its cause, whatever
//! the ring's room, and no count can overflow the bridge.

mod bridge_support;
mod common;

use bridge_support::*;

use common::{eventually, parse_json_lines, telering};
use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;
use telering_core::{Category, Event, event_name};
use telering_embedded_io::link::LinkEncoder;

const PER_CAUSE: [(&str, &str); 5] = [
    ("lost_damaged", "telering_link_lost_damaged"),
    ("lost_missing", "telering_link_lost_missing"),
    ("lost_unknown_name", "telering_link_lost_unknown_name"),
    ("lost_device_full", "telering_link_lost_device_full"),
    ("resets", "telering_link_resets"),
];

/// `chunks` batches of 5 events of one name; batch `i` is sent as it is, lost on
/// the line (`i % 4 == 1`) or damaged (`i % 4 == 3`). Returns the line and how many
/// events it lost.
fn lossy_stream(agent: &str, chunks: u64) -> (Vec<u8>, u64) {
    let mut encoder: LinkEncoder<_, 16> = LinkEncoder::new(Vec::new(), hello(agent));
    let mut line = Vec::new();
    let mut lost = 0;
    for i in 0..chunks {
        for j in 0..5 {
            let e = Event::new(
                1_000 + (i * 5 + j) * 10,
                Category::Custom,
                event_name!("lossy_ev"),
                i,
            );
            encoder.push(&e).unwrap();
        }
        encoder.flush().unwrap();
        let mut frames = std::mem::take(encoder.writer_mut());
        match (i % 4, i + 1 == chunks) {
            (1, false) => {
                frames.clear();
                lost += 5;
            }
            (3, false) => {
                let at = frames.len() / 2;
                // Not a frame delimiter, and not made one.
                assert!(frames[at] != 0 && frames[at] != 0x40);
                frames[at] ^= 0x40;
                lost += 5;
            }
            _ => {}
        }
        line.extend_from_slice(&frames);
    }
    (line, lost)
}

fn dropped_staging(ring: &Path) -> Option<u64> {
    let out = telering()
        .args(["stat", "--json"])
        .arg(ring)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    parse_json_lines(&String::from_utf8_lossy(&out.stdout))
        .first()?
        .get("trailer")?
        .get("dropped_staging")?
        .as_u64()
}

/// A bridge reading its standard input, into `dir` with a ring of `capacity`.
fn stdin_bridge(dir: &Path, capacity: u32) -> Child {
    telering()
        .args(["bridge", "--json", "--capacity"])
        .arg(capacity.to_string())
        .arg("--dir")
        .arg(dir)
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Each cause's count in the summary, and the sum of the ring's reports of it.
fn per_cause(summary: &serde_json::Value, ring: &[Event]) -> Vec<(u64, u64)> {
    PER_CAUSE
        .iter()
        .map(|(key, name)| {
            let reported = ring
                .iter()
                .filter(|e| e.name() == Ok(*name))
                .map(Event::value)
                .sum();
            (summary[key].as_u64().unwrap(), reported)
        })
        .collect()
}

#[test]
fn a_full_ring_gets_every_loss_report_once_a_reader_makes_room() {
    let dir = common::scratch();
    let (line, lost) = lossy_stream("full-ring-fw", 100);
    let mut bridge = stdin_bridge(dir.path(), 16);
    let mut stdin = bridge.stdin.take().unwrap();
    stdin.write_all(&line).unwrap();
    stdin.flush().unwrap();
    let ring = dir.path().join("full-ring-fw");
    // Every loss reached the ring's counter; the ring has been full all along.
    let seen = eventually(Duration::from_secs(30), || {
        dropped_staging(&ring).filter(|&d| d == lost)
    });
    assert_eq!(seen, Some(lost), "the ring never counted the line's losses");
    // A reader drains the ring late; the reports refused meanwhile come now.
    let mut in_ring = ring_events(&ring);
    drop(stdin);
    let out = bridge.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    in_ring.extend(ring_events(&ring));
    let summary = parse_json_lines(&String::from_utf8_lossy(&out.stdout)).remove(0);
    let causes = per_cause(&summary, &in_ring);
    for ((key, _), (counted, reported)) in PER_CAUSE.iter().zip(&causes) {
        assert_eq!(
            counted, reported,
            "{key}: summary {counted}, ring {reported}"
        );
    }
    assert_eq!(lost, causes[0].0 + causes[1].0, "{summary}");
    assert!(causes[0].0 > 0 && causes[1].0 > 0, "{summary}");
    assert!(summary["lost_host_ring_full"].as_u64().unwrap() > 0);
}

/// Runs the bridge on a capture and returns its summary and standard error.
fn bridge_file(dir: &Path, line: &[u8]) -> (serde_json::Value, String) {
    let capture = dir.join("capture.bin");
    std::fs::write(&capture, line).unwrap();
    let out = telering()
        .args(["bridge", "--json", "--dir"])
        .arg(dir.join("rings"))
        .arg(format!("file:{}", capture.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let summary = parse_json_lines(&String::from_utf8_lossy(&out.stdout)).remove(0);
    (summary, err)
}

#[test]
fn gaps_claimed_past_u64_saturate_the_missing_count_and_the_link_keeps_its_events() {
    let dir = common::scratch();
    let mut line = Vec::new();
    for _ in 0..3 {
        line.extend(raw_hello(0, b"huge-gap-fw", 1_000_000));
        line.extend(raw_names(1, b"gap_ev"));
        line.extend(raw_events(2, 0, &[5]));
        line.extend(raw_events(3, 1 << 63, &[6]));
    }
    let (s, _) = bridge_file(dir.path(), &line);
    assert_eq!(
        (s["events"].as_u64(), s["written"].as_u64()),
        (Some(6), Some(6)),
        "{s}"
    );
    assert_eq!(s["lost_missing"].as_u64(), Some(u64::MAX), "{s}");
    let ring = ring_events(&dir.path().join("rings/huge-gap-fw"));
    assert_eq!(device_events(&ring).len(), 6);
}

#[test]
fn device_drop_reports_past_u64_saturate_the_device_full_count() {
    let dir = common::scratch();
    let report = Event::new(
        2_000,
        Category::Error,
        event_name!("agent_telemetry_events_dropped"),
        u64::MAX,
    );
    let mut events = mix(20, 5);
    events.insert(5, report);
    events.insert(10, report);
    let (s, _) = bridge_file(dir.path(), &v2_stream("max-drops-fw", &events));
    assert_eq!(
        (s["lost_device_full"].as_u64(), s["events"].as_u64()),
        (Some(u64::MAX), Some(21)),
        "{s}"
    );
    let ring = ring_events(&dir.path().join("rings/max-drops-fw"));
    assert_eq!(sums(&device_events(&ring)), sums(&device_events(&events)));
}

#[test]
fn no_room_for_the_ring_names_the_bridges_capacity_option_and_counts_what_it_held() {
    let dir = common::scratch();
    let capture = dir.path().join("fw.bin");
    std::fs::write(&capture, v2_stream("no-room-fw", &mix(5, 2))).unwrap();
    // A file size limit makes creating the ring fail as a full disk does (EFBIG); the
    // signal it raises is ignored, so the write fails instead of killing.
    let script = format!(
        "trap '' XFSZ; ulimit -f 8; exec \"$0\" bridge --json --dir '{}' 'file:{}'",
        dir.path().join("rings").display(),
        capture.display()
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(telering().get_program())
        .env("NIXL_TELEMETRY_BUFFER_SIZE", "64")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no room for the ring file") && err.contains("--capacity"),
        "{err}"
    );
    assert!(!err.contains("NIXL_TELEMETRY_BUFFER_SIZE"), "{err}");
    // The events it held are counted as lost, not left out of the summary.
    let s = parse_json_lines(&String::from_utf8_lossy(&out.stdout)).remove(0);
    assert_eq!(
        (s["written"].as_u64(), s["lost_host_ring_full"].as_u64()),
        (Some(0), s["events"].as_u64()),
        "{s}"
    );
    assert_eq!(s["events"].as_u64(), Some(6), "{s}");
}

#[test]
fn a_stream_that_fails_its_decoder_ends_only_its_own_link_and_says_what_it_lost() {
    let dir = common::scratch();
    // An event index at the end of u64: a decoder that adds to it without care
    // fails; one that does not takes it as a gap.
    let mut hostile = raw_hello(0, b"edge-fw", 1_000_000);
    hostile.extend(raw_names(1, b"edge_ev"));
    hostile.extend(raw_events(2, 0, &[5]));
    hostile.extend(raw_events(3, u64::MAX, &[6, 7, 8]));
    hostile.extend(raw_events(4, 5, &[9]));
    let hostile_file = dir.path().join("hostile.bin");
    std::fs::write(&hostile_file, &hostile).unwrap();
    let good = mix(200, 9);
    let good_file = dir.path().join("good.bin");
    std::fs::write(&good_file, v2_stream("good-fw", &good)).unwrap();
    let out = telering()
        .args(["bridge", "--json", "--dir"])
        .arg(dir.path().join("rings"))
        .arg(format!("file:{}", hostile_file.display()))
        .arg(format!("file:{}", good_file.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let summaries = parse_json_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(summaries.len(), 2, "{err}");
    // The other link is whole.
    assert_eq!(summaries[1]["error"], serde_json::Value::Null, "{err}");
    assert_eq!(
        sums(&device_events(&ring_events(
            &dir.path().join("rings/good-fw")
        ))),
        sums(&good)
    );
    // The hostile link either took the index as a gap, or ended saying what it lost;
    // never a thread lost with its counts.
    match summaries[0]["error"].as_str() {
        None => assert_eq!(out.status.code(), Some(0), "{err}"),
        Some(e) => {
            assert!(e.contains("internal error while decoding"), "{e}");
            assert!(e.contains("lost and not counted"), "{e}");
            assert_eq!(out.status.code(), Some(1), "{err}");
        }
    }
}
