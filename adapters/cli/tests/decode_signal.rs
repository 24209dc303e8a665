//! `telering decode` ends at the first SIGTERM or SIGINT, also while it is blocked
//! opening a FIFO nobody writes to, or reading input that never comes.

mod common;

use common::*;
use std::process::Stdio;
use std::time::Duration;

/// Waits until the child catches SIGINT and SIGTERM (`SigCgt` in its
/// `/proc/PID/status`), so the signal reaches the handler and not the default action.
fn wait_for_handler(pid: u32) {
    let caught = |status: &str| {
        let mask = status
            .lines()
            .find_map(|line| line.strip_prefix("SigCgt:"))?;
        let mask = u64::from_str_radix(mask.trim(), 16).ok()?;
        // Bit n-1 stands for signal n: SIGINT is 2, SIGTERM 15.
        (mask & (1 << 1) != 0 && mask & (1 << 14) != 0).then_some(())
    };
    let ready = eventually(Duration::from_secs(30), || {
        caught(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
    });
    assert!(ready.is_some(), "decode did not install its signal handler");
}

fn ends_within(running: &mut Running, limit: Duration) -> Option<i32> {
    let status = eventually(limit, || running.child.try_wait().unwrap());
    status
        .expect("decode did not end at the first signal")
        .code()
}

#[test]
fn the_first_signal_ends_decode_blocked_opening_a_fifo() {
    for sig in ["-TERM", "-INT"] {
        let dir = scratch();
        let fifo = dir.path().join("uart");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let mut decode = Running::spawn(
            telering()
                .args(["decode", "--input"])
                .arg(&fifo)
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        wait_for_handler(decode.child.id());
        signal(&decode.child, sig);
        assert_eq!(
            ends_within(&mut decode, Duration::from_secs(10)),
            Some(130),
            "{sig}"
        );
    }
}

#[test]
fn the_first_signal_ends_decode_waiting_for_input() {
    let mut decode = Running::spawn(
        telering()
            .args(["decode", "--input", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_for_handler(decode.child.id());
    signal(&decode.child, "-INT");
    assert_eq!(ends_within(&mut decode, Duration::from_secs(10)), Some(130));
}
