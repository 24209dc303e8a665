//! Text telering did not create is printed escaped: event names and ring file names
//! holding a newline, an `ESC ]0;…BEL` title sequence, a carriage return, bytes that
//! are not UTF-8 or a bidirectional override neither forge a line nor reach the
//! terminal raw, in `read`, `tail`, `stat`, `top --once`, `decode` and error lines.

mod common;

use common::*;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use telering_core::{Category, Event, EventName};
use telering_embedded_io::FrameExporter;
use telering_shm::{ShmWriter, WriterOptions};

/// Event names another writer could store (telering's own refuses them all).
const HOSTILE_NAMES: [&[u8]; 5] = [
    b"x\nValue: 999999",
    b"\x1b]0;pwned\x07",
    b"cr\r\nEvent: forged",
    b"bad\xff\xfe",
    b"\xe2\x80\xaertl",
];

/// Ring file names a foreign writer could make.
fn hostile_file_names() -> Vec<OsString> {
    vec![
        OsString::from("a\u{1b}]0;pwned\u{7}"),
        OsString::from("b\n  writer pid:     1"),
        OsString::from_vec(b"c\xff\xfe".to_vec()),
        OsString::from("d".repeat(255)),
        OsString::from("e\u{202e}txt\r"),
    ]
}

/// Whether `text` holds a character a terminal acts on, other than the newlines
/// that end lines.
fn has_raw_control(text: &[u8]) -> bool {
    String::from_utf8_lossy(text)
        .chars()
        .any(|c| c != '\n' && telering_core::text::is_unsafe_char(c))
}

/// A ring at `dir/file_name` holding one event per name of `names`, each name
/// written into its slot's name field as raw bytes.
fn ring_with_names(dir: &Path, file_name: &OsStr, names: &[&[u8]]) -> PathBuf {
    let mut o = WriterOptions::new(dir, "placeholder");
    o.capacity = 8;
    let mut w = ShmWriter::create(o).unwrap();
    let events: Vec<Event> = (0..names.len() as u64)
        .map(|i| Event::new(i + 1, Category::Custom, EventName::new("e").unwrap(), i))
        .collect();
    w.write_batch(&events);
    let path = w.path().to_path_buf();
    w.close().unwrap();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    for (i, name) in names.iter().enumerate() {
        let mut field = [0u8; 32];
        field[..name.len()].copy_from_slice(name);
        // Version-1 slots start at 40 and are 56 bytes; the name field is at +12.
        file.write_all_at(&field, 40 + i as u64 * 56 + 12).unwrap();
    }
    let target = dir.join(file_name);
    std::fs::rename(&path, &target).unwrap();
    target
}

fn assert_blocks_not_forged(text: &str, events: usize) {
    for field in ["Event: ", "Value: ", "Category: "] {
        let n = text.lines().filter(|l| l.starts_with(field)).count();
        assert_eq!(n, events, "{field} lines in:\n{text}");
    }
}

#[test]
fn read_and_tail_print_hostile_event_names_escaped_on_their_line() {
    let dir = scratch();
    let path = ring_with_names(dir.path(), "agent".as_ref(), &HOSTILE_NAMES);
    for sub in ["tail", "read"] {
        let out = run_in(dir.path(), telering().arg(sub).arg(&path));
        assert_eq!(out.status.code(), Some(0), "{sub}: {}", stderr(&out));
        assert!(!has_raw_control(&out.stdout), "{sub}: {:?}", stdout(&out));
        assert!(!has_raw_control(&out.stderr), "{sub}: {:?}", stderr(&out));
        let text = stdout(&out);
        assert_blocks_not_forged(&text, HOSTILE_NAMES.len());
        for shown in [
            "Event: x\\nValue: 999999\n",
            "Event: \\u{1b}]0;pwned\\u{7}\n",
            "Event: cr\\r\\nEvent: forged\n",
            "Event: bad\\xff\\xfe\n",
            "Event: \\u{202e}rtl\n",
        ] {
            assert!(text.contains(shown), "{sub}: {shown:?} missing in:\n{text}");
        }
        // The slot whose name is not UTF-8 is reported, escaped, on one line.
        let err = stderr(&out);
        assert!(err.contains("name \"bad\\xff\\xfe\""), "{sub}: {err}");
    }
}

#[test]
fn json_output_keeps_hostile_names_as_json_strings() {
    let dir = scratch();
    let path = ring_with_names(dir.path(), "agent".as_ref(), &HOSTILE_NAMES[..2]);
    let out = run_in(dir.path(), telering().args(["tail", "--json"]).arg(&path));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events = parse_json_lines(&stdout(&out));
    assert_eq!(events[0]["event"], "x\nValue: 999999");
    assert_eq!(events[1]["event"], "\u{1b}]0;pwned\u{7}");
}

#[test]
fn stat_and_top_show_hostile_file_names_escaped_one_row_each() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    let names = hostile_file_names();
    for name in &names {
        ring_with_names(&rings, name, &[b"e"]);
    }
    let out = run_in(dir.path(), telering().args(["stat", "rings"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!has_raw_control(&out.stdout), "{:?}", stdout(&out));
    let text = stdout(&out);
    let heads: Vec<&str> = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("  "))
        .collect();
    assert_eq!(heads.len(), names.len(), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("  writer pid:"))
            .count(),
        names.len(),
        "{text}"
    );
    for shown in [
        "rings/a\\u{1b}]0;pwned\\u{7}",
        "rings/b\\n  writer pid:     1",
        "rings/c\\xff\\xfe",
        "rings/e\\u{202e}txt\\r",
    ] {
        assert!(heads.contains(&shown), "{shown:?} missing in:\n{text}");
    }

    let out = run_in(
        dir.path(),
        telering().args(["top", "--once", "--interval", "50ms", "rings"]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!has_raw_control(&out.stdout), "{:?}", stdout(&out));
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), names.len(), "{text}");
    for agent in ["a\\u{1b}]0;pwned\\u{7}", "b\\n  writer pid:", "c\\xff\\xfe"] {
        assert!(
            rows.iter().any(|r| r.starts_with(agent)),
            "{agent:?} missing in:\n{text}"
        );
    }
}

#[test]
fn stat_reports_hostile_names_of_skipped_and_broken_files_escaped() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    std::fs::create_dir(&rings).unwrap();
    std::fs::create_dir(rings.join("sub\ntelering: forged")).unwrap();
    std::fs::write(rings.join("junk\u{1b}[2J"), b"not a ring at all").unwrap();
    let out = run_in(dir.path(), telering().args(["stat", "rings"]));
    let err = stderr(&out);
    assert!(!has_raw_control(&out.stderr), "{err:?}");
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(
        err.contains("rings/sub\\ntelering: forged: a directory"),
        "{err}"
    );
    assert!(err.contains("junk\\u{1b}[2J"), "{err}");
}

#[test]
fn decode_prints_hostile_event_names_escaped() {
    let dir = scratch();
    let mut line = Vec::new();
    let mut exporter = FrameExporter::new(&mut line);
    for (i, name) in HOSTILE_NAMES.iter().enumerate() {
        let mut field = [0u8; 32];
        field[..name.len()].copy_from_slice(name);
        let bytes = field;
        // Names read from elsewhere keep their bytes (only recording refuses them),
        // except bytes that are not UTF-8, which no `EventName` holds.
        let Ok(name) = EventName::from_field(&bytes) else {
            continue;
        };
        exporter
            .export(&Event::new(1, Category::Custom, name, i as u64))
            .unwrap();
    }
    let stream = dir.path().join("uart\u{1b}]0;t\u{7}.bin");
    std::fs::write(&stream, &line).unwrap();
    let out = run_in(
        dir.path(),
        telering().arg("decode").arg("--input").arg(&stream),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!has_raw_control(&out.stdout), "{:?}", stdout(&out));
    assert_blocks_not_forged(&stdout(&out), HOSTILE_NAMES.len() - 1);
    assert!(stdout(&out).contains("Event: x\\nValue: 999999\n"));
}

#[test]
fn error_lines_show_a_hostile_path_escaped_on_one_line() {
    let dir = scratch();
    for sub in ["read", "tail", "stat"] {
        let out = run_in(
            dir.path(),
            telering()
                .arg(sub)
                .arg(OsStr::from_bytes(b"no\x1b]0;pwned\x07\nsuch\xff")),
        );
        assert!(!has_raw_control(&out.stderr), "{sub}: {:?}", stderr(&out));
        assert_fails(&out, 1, &["no\\u{1b}]0;pwned\\u{7}\\nsuch"]);
    }
}

#[test]
fn a_warning_quoting_a_hostile_value_is_escaped() {
    let dir = scratch();
    let out = run_in(
        dir.path(),
        telering()
            .args(["stat", "."])
            .env("TELERING_LOG", "\u{1b}]0;pwned\u{7}\nforged"),
    );
    assert!(!has_raw_control(&out.stderr), "{:?}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "telering: warning: TELERING_LOG=\\u{1b}]0;pwned\\u{7}\\nforged is not a log level"
        ),
        "{err}"
    );
}

#[test]
fn a_usage_error_is_one_line_naming_the_help_to_read() {
    let dir = scratch();
    let out = run_in(dir.path(), telering().args(["stat", "--bogus", "x"]));
    assert_fails(
        &out,
        2,
        &[
            "unexpected argument '--bogus' found",
            "`telering stat --help`",
        ],
    );
    let out = run_in(dir.path(), telering().arg("read"));
    assert_fails(&out, 2, &["<PATH>", "`telering read --help`"]);
    let out = run_in(
        dir.path(),
        telering().args(["read", "--interval", "0", "x"]),
    );
    assert_fails(&out, 2, &["--interval", "`telering read --help`"]);
    let out = run_in(dir.path(), &mut telering());
    assert_fails(&out, 2, &["name a subcommand: demo, read, tail"]);
    let out = run_in(dir.path(), telering().arg("frobnicate"));
    assert_fails(&out, 2, &["frobnicate"]);
    let out = run_in(dir.path(), telering().args(["stat", "--help"]));
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("Usage: telering stat"));
}

fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap()
}

#[test]
fn an_unwritable_stderr_keeps_the_documented_exit_code() {
    let dir = scratch();
    for (args, code) in [
        (&["stat", "missing"][..], 1),
        (&["read", "missing"][..], 1),
        (&["stat", "--bogus"][..], 2),
        (&["read", "--interval", "0", "x"][..], 2),
    ] {
        // A warning is written first (an unknown log level), then the error.
        let out = run_in(
            dir.path(),
            telering()
                .args(args)
                .env("TELERING_LOG", "loud")
                .stderr(dev_full()),
        );
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?} with stderr on /dev/full"
        );
    }
    // A closed pipe: the reader of stderr has gone before telering writes (the FIFO
    // `go` makes telering wait until it has).
    let script = r#"mkfifo go
{ read x < go; "$0" stat missing 2>&1 >/dev/null; echo $? > code; } | { exec 0<&-; echo > go; }
{ read x < go; "$0" stat --bogus 2>&1 >/dev/null; echo $? > usage; } | { exec 0<&-; echo > go; }"#;
    let status = std::process::Command::new("sh")
        .args(["-c", script, env!("CARGO_BIN_EXE_telering")])
        .current_dir(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    let code = std::fs::read_to_string(dir.path().join("code")).unwrap();
    assert_eq!(code.trim(), "1", "stat with stderr a closed pipe");
    let usage = std::fs::read_to_string(dir.path().join("usage")).unwrap();
    assert_eq!(usage.trim(), "2", "a usage error with stderr a closed pipe");
}
