//! `stat` and `top` on what a directory holds, and the names they show: a heartbeat
//! no clock could have written, symbolic links listed as skipped with the reason, and
//! agent names that would split the listing refused.

mod common;

use common::*;
use std::os::unix::fs::FileExt;
use telering_core::{Category, Event, EventName};
use telering_shm::{ShmWriter, WriterOptions};

fn ring(dir: &std::path::Path, name: &str) -> std::path::PathBuf {
    let mut o = WriterOptions::new(dir, name);
    o.capacity = 8;
    let mut w = ShmWriter::create(o).unwrap();
    w.write_batch(&[Event::new(
        1,
        Category::Custom,
        EventName::new("e").unwrap(),
        1,
    )]);
    let path = w.path().to_path_buf();
    w.close().unwrap();
    path
}

#[test]
fn a_heartbeat_in_the_far_future_is_not_shown_as_a_time_ago() {
    let dir = scratch();
    let path = ring(dir.path(), "a");
    // The trailer starts after 8 slots of 56 bytes; heartbeat_us at +56.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&u64::MAX.to_le_bytes(), 40 + 8 * 56 + 56)
        .unwrap();
    let out = run_in(dir.path(), telering().args(["stat", "a"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let line = text
        .lines()
        .find(|l| l.contains("last heartbeat"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("in the future"), "{line}");
    assert!(!line.contains("s ago"), "{line}");
}

#[test]
fn stat_and_top_list_a_symlinked_ring_as_skipped_with_the_reason() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    ring(&rings, "a");
    std::os::unix::fs::symlink(rings.join("a"), rings.join("b")).unwrap();
    let out = run_in(dir.path(), telering().args(["stat", "rings"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines()
            .any(|l| l.contains("skipped") && l.contains("rings/b") && l.contains("symbolic link")),
        "{err}"
    );
    assert_eq!(
        stdout(&out).matches("rings/a").count(),
        1,
        "{}",
        stdout(&out)
    );

    let out = run_in(dir.path(), telering().args(["top", "--once", "rings"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with('b') && l.contains("symbolic link")),
        "{text}"
    );
}

#[test]
fn an_agent_name_with_a_control_character_is_refused() {
    let dir = scratch();
    for name in ["two\nlines", "tab\there"] {
        let out = run_in(
            dir.path(),
            telering().args([
                "demo",
                "--dir",
                "d",
                "--events",
                "1",
                "--no-serve",
                "--agent",
                name,
            ]),
        );
        assert_ne!(out.status.code(), Some(0), "{name:?}");
        assert!(
            stderr(&out).contains("control character"),
            "{}",
            stderr(&out)
        );
    }
    assert!(
        !dir.path().join("d").exists()
            || std::fs::read_dir(dir.path().join("d"))
                .unwrap()
                .next()
                .is_none()
    );
}
