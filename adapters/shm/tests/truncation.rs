//! Another process shrinking and re-growing a ring file in a loop while a writer, a
//! draining reader and an observer (each its own process) use it: nobody dies of
//! `SIGBUS`; the writer counts what it could not write and the readers stop with
//! `ShmError::Truncated`.
//!
//! The child processes are this test binary, re-executed with `TELERING_SHM_CHILD`
//! naming the role (`child_process_entry` does nothing in a normal run).

mod common;

use common::{TempDir, seq_event};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};
use telering_core::{Event, ObserverStart};
use telering_shm::{DrainingReader, ObserverReader, ShmError, ShmWriter, WriterOptions};

const ROLE: &str = "TELERING_SHM_CHILD";
const RUN: Duration = Duration::from_millis(1500);

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} not set"))
}

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
}

/// Runs one child role; a no-op in a normal test run.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let path = Path::new(&env("DIR")).join("agent");
    let deadline = Instant::now() + RUN + Duration::from_millis(500);
    match role.as_str() {
        "writer" => {
            let mut o = WriterOptions::new(env("DIR"), "agent");
            o.capacity = 1024;
            let mut w = ShmWriter::create(o).unwrap();
            say("ready");
            let batch: Vec<Event> = (0..64).map(seq_event).collect();
            let mut written = 0u64;
            while Instant::now() < deadline {
                written += w.write_batch(&batch) as u64;
            }
            let flushed = match w.flush() {
                Ok(()) => "ok".to_string(),
                Err(ShmError::Truncated { .. }) => "truncated".to_string(),
                Err(e) => format!("other {e}"),
            };
            say(&format!(
                "writer written={written} dropped={} flush={flushed}",
                w.events_dropped()
            ));
        }
        "drain" => {
            let mut r = DrainingReader::open(&path).unwrap();
            say("ready");
            let outcome = loop {
                if Instant::now() >= deadline {
                    break "deadline".to_string();
                }
                match r.read_batch(256, |_| {}) {
                    Ok(_) => {}
                    Err(ShmError::Truncated { .. }) => break "truncated".to_string(),
                    Err(e) => break format!("other {e}"),
                }
            };
            say(&format!("reader {outcome}"));
        }
        "observer" => {
            let mut r = ObserverReader::open(&path, ObserverStart::Oldest).unwrap();
            say("ready");
            let outcome = loop {
                if Instant::now() >= deadline {
                    break "deadline".to_string();
                }
                match r.read_batch(256, |_| {}) {
                    Ok(_) => {}
                    Err(ShmError::Truncated { .. }) => break "truncated".to_string(),
                    Err(e) => break format!("other {e}"),
                }
            };
            say(&format!("reader {outcome}"));
        }
        other => panic!("unknown role {other}"),
    }
}

fn spawn(role: &str, dir: &Path) -> (Child, BufReader<ChildStdout>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "child_process_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env("DIR", dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    (child, out)
}

fn expect_line(out: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            panic!("child exited before printing {prefix:?}");
        }
        if let Some(at) = line.find(prefix) {
            return line[at..].trim_end().to_string();
        }
    }
}

#[test]
fn shrinking_and_regrowing_the_file_kills_no_writer_and_no_reader() {
    for round in 0..2 {
        let dir = TempDir::new("shrink");
        let path = dir.path().join("agent");
        let (mut writer, mut writer_out) = spawn("writer", dir.path());
        expect_line(&mut writer_out, "ready");
        let (mut drain, mut drain_out) = spawn("drain", dir.path());
        let (mut observer, mut observer_out) = spawn("observer", dir.path());
        expect_line(&mut drain_out, "ready");
        expect_line(&mut observer_out, "ready");

        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        let full = file.metadata().unwrap().len();
        let until = Instant::now() + RUN;
        let mut cycles = 0u64;
        while Instant::now() < until {
            file.set_len(4096).unwrap();
            file.set_len(full).unwrap();
            cycles += 1;
        }
        assert!(cycles > 100, "round {round}: only {cycles} truncations");

        let report = expect_line(&mut writer_out, "writer ");
        let drained = expect_line(&mut drain_out, "reader ");
        let observed = expect_line(&mut observer_out, "reader ");
        for (name, child) in [
            ("writer", &mut writer),
            ("draining reader", &mut drain),
            ("observer", &mut observer),
        ] {
            let status = child.wait().unwrap();
            assert_eq!(
                status.signal(),
                None,
                "round {round}: the {name} was killed by a signal"
            );
            assert!(status.success(), "round {round}: the {name} failed");
        }
        // The writer noticed, stopped writing into the file and counted the rest.
        assert!(
            report.ends_with("flush=truncated"),
            "round {round}: {report}"
        );
        let dropped: u64 = report
            .split_whitespace()
            .find_map(|w| w.strip_prefix("dropped="))
            .unwrap()
            .parse()
            .unwrap();
        assert!(dropped > 0, "round {round}: {report}");
        // The readers stopped with the typed error.
        assert_eq!(drained, "reader truncated", "round {round}");
        assert_eq!(observed, "reader truncated", "round {round}");
    }
}
