//! `telering bridge mem:PATH[@OFFSET]` on something other than a regular file: a
//! character device is opened and mapped (its extent is its header's), so `/dev/zero`
//! is refused for holding no ring header and `/dev/null` for refusing to be mapped,
//! each with exit 2, one line naming the link, the path and the offset, and nothing
//! created; a FIFO is still refused as before (the link's failure), without blocking.

mod common;

use common::{assert_fails, scratch, stderr, telering};
use std::process::Output;
use std::time::Duration;

fn bridge(dir: &std::path::Path, link: &str) -> Output {
    telering()
        .args(["bridge", "--dir"])
        .arg(dir.join("rings"))
        .arg(link)
        .output()
        .unwrap()
}

#[test]
fn dev_zero_is_opened_as_a_device_and_refused_for_holding_no_ring_header() {
    let dir = scratch();
    for (link, offset) in [
        ("zero=mem:/dev/zero@8", 8),
        ("mem:/dev/zero", 0),
        ("mem:/dev/zero@0x1018", 0x1018),
    ] {
        let o = bridge(dir.path(), link);
        let at = format!("/dev/zero: no ring window at offset {offset}:");
        assert_fails(&o, 2, &[link, &at, "version 0"]);
        let err = stderr(&o);
        assert!(
            !err.contains("not a regular file") && !err.contains("character device"),
            "{err}"
        );
        assert!(
            !dir.path().join("rings").exists(),
            "{link}: nothing created"
        );
    }
}

#[test]
fn a_device_the_kernel_cannot_map_exits_2_naming_path_and_offset() {
    let dir = scratch();
    let o = bridge(dir.path(), "mem:/dev/null@4096");
    assert_fails(
        &o,
        2,
        &[
            "mem:/dev/null@4096",
            "/dev/null: no ring window at offset 4096",
            "cannot be mapped",
        ],
    );
    assert!(!dir.path().join("rings").exists());
}

#[test]
fn a_fifo_window_is_refused_without_blocking() {
    let dir = scratch();
    let fifo = dir.path().join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let (dir_path, link) = (
        dir.path().to_path_buf(),
        format!("mem:{}@8", fifo.display()),
    );
    std::thread::spawn(move || {
        let _ = tx.send(bridge(&dir_path, &link));
    });
    let o = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the bridge blocked on a FIFO window");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is a FIFO, not a ring file"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("rings").exists());
}
