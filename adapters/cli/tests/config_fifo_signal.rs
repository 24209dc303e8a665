//! A configuration file that is not a regular file (a FIFO nobody writes) is refused
//! at once instead of hanging every command, and SIGTERM ends `config` even while
//! its output is blocked on a pipe nobody reads.

mod common;

use common::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Waits for `child` to exit, up to a deadline far above any normal run (a hang is
/// what is tested); its exit code, or `None` when it had to be killed.
fn exit_code_within_deadline(child: &mut Child) -> Option<Option<i32>> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status.code());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success());
}

#[test]
fn a_fifo_as_the_configuration_file_is_refused_without_hanging() {
    let dir = scratch();
    let fifo = dir.path().join("nixl.cfg");
    mkfifo(&fifo);
    // Named by NIXL_CONFIG_FILE, and found as ~/.nixl.cfg.
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    mkfifo(&home.join(".nixl.cfg"));
    for (var, value) in [
        ("NIXL_CONFIG_FILE", fifo.as_os_str()),
        ("HOME", home.as_os_str()),
    ] {
        for args in [
            &["config"][..],
            &["top", "--once", "--interval", "10ms"][..],
        ] {
            let mut child = Running::spawn(
                telering()
                    .args(args)
                    .env_remove("NIXL_CONFIG_FILE")
                    .env(var, value)
                    .current_dir(dir.path())
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped()),
            );
            let code = exit_code_within_deadline(&mut child.child);
            assert_eq!(code, Some(Some(2)), "{var} {args:?}: hung or wrong code");
            let mut err = String::new();
            std::io::Read::read_to_string(child.child.stderr.as_mut().unwrap(), &mut err).unwrap();
            assert!(err.contains("not a regular file"), "{err}");
            assert_eq!(err.lines().count(), 1, "{err}");
        }
    }
}

#[test]
fn sigterm_ends_config_while_its_output_blocks() {
    let dir = scratch();
    // More output than a pipe holds: `config` lists every TELERING_* variable set.
    let mut config = telering();
    config.arg("config");
    for i in 0..200 {
        config.env(format!("TELERING_UNREAD_{i}"), "x".repeat(1000));
    }
    let mut child = Running::spawn(
        config
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    );
    // The first line shows the handlers are in place; then nobody reads.
    let mut out = BufReader::new(child.child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(first.starts_with("configuration file"), "{first}");
    signal(&child.child, "-TERM");
    let code = exit_code_within_deadline(&mut child.child);
    assert_eq!(code, Some(Some(130)), "SIGTERM did not end it");
}
