//! `telering bridge` and hellos that do not parse: the device is told about on
//! standard error, naming the field, once per link and field.

mod bridge_support;
mod common;

use bridge_support::*;

use common::{parse_json_lines, scratch, telering};

/// Runs the bridge on a capture named `fw.bin`; returns its summary and stderr.
fn bridge(line: &[u8]) -> (serde_json::Value, String) {
    let dir = scratch();
    let capture = dir.path().join("fw.bin");
    std::fs::write(&capture, line).unwrap();
    let out = telering()
        .args(["bridge", "--json", "--dir"])
        .arg(dir.path().join("rings"))
        .arg(format!("file:{}", capture.display()))
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let summary = parse_json_lines(&String::from_utf8_lossy(&out.stdout)).remove(0);
    (summary, err)
}

#[test]
fn a_hello_with_a_65_byte_name_is_warned_about_once_and_the_events_keep_the_links_name() {
    let mut line = raw_hello(0, &[b'a'; 65], 1_000_000);
    line.extend(raw_names(1, b"hello_ev"));
    line.extend(raw_events(2, 0, &[5, 6]));
    line.extend(raw_hello(3, &[b'b'; 70], 1_000_000));
    let (s, err) = bridge(&line);
    assert_eq!(
        (s["agent"].as_str(), s["events"].as_u64()),
        (Some("link-fw.bin"), Some(2)),
        "{s}"
    );
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("hello was dropped") && warnings[0].contains("`agent`"),
        "{err}"
    );
}

#[test]
fn a_hello_with_a_clock_above_32_bits_is_warned_about_naming_the_field() {
    let mut line = raw_hello(0, b"fast-fw\x1b[31m", 10_000_000_000);
    line.extend(raw_names(1, b"hello_ev"));
    line.extend(raw_events(2, 0, &[5]));
    let (s, err) = bridge(&line);
    assert_eq!(s["events"].as_u64(), Some(1), "{s}");
    let warning = err
        .lines()
        .find(|l| l.contains("warning"))
        .unwrap_or_else(|| panic!("no warning: {err}"));
    assert!(
        warning.contains("`ticks_per_second`") && warning.contains("32 bits"),
        "{err}"
    );
    assert!(!err.contains('\x1b'), "{err:?}");
}
