//! Writer, draining reader and observer in separate processes.
//!
//! The child processes are this test binary itself, re-executed with
//! `TELERING_SHM_CHILD` naming the role (the `child_process_entry` test does nothing
//! in a normal run).

mod common;

use common::{TempDir, check_event, is_drop_report, seq_event};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};
use telering_core::{Event, ObserverStart};
use telering_shm::{DrainingReader, ObserverReader, ShmWriter, WriterOptions, stat};

const ROLE: &str = "TELERING_SHM_CHILD";
const BATCH: usize = 256;

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} not set"))
}

/// Runs one child role; a no-op in a normal test run.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    match role.as_str() {
        "stress-writer" => stress_writer(),
        "stress-observer" => stress_observer(),
        "endless-writer" => endless_writer(),
        other => panic!("unknown role {other}"),
    }
}

fn spawn(role: &str, vars: &[(&str, String)]) -> (Child, BufReader<ChildStdout>) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "child_process_entry",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(ROLE, role)
    .stdout(Stdio::piped());
    for (k, v) in vars {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdout)
}

/// Waits for the child to print a line starting with `prefix`; returns the line.
fn expect_line(out: &mut BufReader<ChildStdout>, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line).unwrap() == 0 {
            panic!("child exited before printing {prefix:?}");
        }
        // libtest may print "test child_process_entry ... " on the same line.
        if let Some(at) = line.find(prefix) {
            return line[at..].trim_end().to_string();
        }
    }
}

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout();
    writeln!(out, "{line}").unwrap();
    out.flush().unwrap();
}

fn wait_for(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

// ---- stress: 10^7 events, draining reader and observer alongside ----

/// Writes `COUNT` sequence-numbered events in batches, never retrying what the ring
/// refused (that is counted as dropped), then waits until every loss has been reported
/// in-band and closes.
fn stress_writer() {
    let count: u64 = env("COUNT").parse().unwrap();
    let mut options = WriterOptions::new(env("DIR"), env("NAME"));
    options.capacity = env("CAPACITY").parse().unwrap();
    let mut writer = ShmWriter::create(options).unwrap();
    say("ready");
    wait_for(&PathBuf::from(env("GO")));
    let mut batch: Vec<Event> = Vec::with_capacity(BATCH);
    let mut seq = 0;
    while seq < count {
        batch.clear();
        let end = (seq + BATCH as u64).min(count);
        batch.extend((seq..end).map(seq_event));
        seq = end;
        if writer.write_batch(&batch) < batch.len() {
            // The ring was full: let the readers run before the next batch.
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while writer.unreported_drops() > 0 {
        assert!(Instant::now() < deadline, "drop report never fit");
        writer.heartbeat();
        std::thread::sleep(Duration::from_micros(200));
    }
    say(&format!("dropped {}", writer.events_dropped()));
    writer.close().unwrap();
}

/// What a reader saw of the stream.
#[derive(Debug, Default)]
struct Tally {
    data: u64,
    reports: u64,
    reported: u64,
    /// Sum of the gaps between consecutive data events (including before the first).
    gaps: u64,
    last: Option<u64>,
}

impl Tally {
    fn take(&mut self, e: Event) {
        if is_drop_report(&e) {
            self.reports += 1;
            self.reported += e.value();
            return;
        }
        let seq = check_event(&e).unwrap();
        let expected = self.last.map_or(0, |l| l + 1);
        assert!(
            seq >= expected,
            "event {seq} after {:?}: duplicated or out of order",
            self.last
        );
        self.gaps += seq - expected;
        self.last = Some(seq);
        self.data += 1;
    }
}

fn stress_observer() {
    let path = PathBuf::from(env("RING"));
    let mut observer = ObserverReader::open(&path, ObserverStart::Oldest).unwrap();
    say("ready");
    let mut tally = Tally::default();
    let mut seen = 0u64;
    loop {
        let n = observer
            .read_batch(4096, |e| {
                seen += 1;
                tally.take(e.unwrap());
            })
            .unwrap();
        if n == 0 {
            let t = observer.info().trailer.unwrap();
            if t.clean_close && seen + observer.events_missed() == t.published {
                break;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    let published = observer.info().trailer.unwrap().published;
    // Every published event was seen or counted as missed.
    assert_eq!(seen + observer.events_missed(), published);
    say(&format!(
        "observed seen={seen} missed={} data={} last={:?}",
        observer.events_missed(),
        tally.data,
        tally.last
    ));
}

fn stress(count: u64) {
    let dir = TempDir::new("stress");
    let go = dir.path().join("go");
    let ring = dir.path().join("agent");
    let (mut writer, mut writer_out) = spawn(
        "stress-writer",
        &[
            ("DIR", dir.path().display().to_string()),
            ("NAME", "agent".into()),
            ("COUNT", count.to_string()),
            ("CAPACITY", "16384".into()),
            ("GO", go.display().to_string()),
        ],
    );
    expect_line(&mut writer_out, "ready");
    let (mut observer, mut observer_out) =
        spawn("stress-observer", &[("RING", ring.display().to_string())]);
    expect_line(&mut observer_out, "ready");
    let mut reader = DrainingReader::open(&ring).unwrap();
    std::fs::write(&go, b"").unwrap();

    let started = Instant::now();
    let mut tally = Tally::default();
    loop {
        let n = reader.read_batch(4096, |e| tally.take(e.unwrap())).unwrap();
        if n == 0 {
            let info = reader.info();
            if info.trailer.unwrap().clean_close && info.fill == 0 {
                break;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    let elapsed = started.elapsed();
    let dropped_line = expect_line(&mut writer_out, "dropped");
    assert!(writer.wait().unwrap().success(), "writer failed");
    let observed = expect_line(&mut observer_out, "observed");
    let mut rest = String::new();
    observer_out.read_to_string(&mut rest).unwrap();
    assert!(observer.wait().unwrap().success(), "observer failed");

    let t = stat(&ring).unwrap().trailer.unwrap();
    let dropped = t.events_dropped();
    assert_eq!(dropped_line, format!("dropped {dropped}"));
    // Events after the last delivered one were dropped too.
    let tail = count - 1 - tally.last.expect("no event delivered");
    let lost = tally.gaps + tail;
    // Each event delivered exactly once and in order, or counted as dropped.
    assert_eq!(tally.data + dropped, count, "{tally:?}, dropped {dropped}");
    assert_eq!(lost, dropped, "gaps in the stream are exactly the drops");
    assert_eq!(tally.reported, dropped, "every drop was reported in-band");
    assert_eq!(tally.data + tally.reports, t.published);
    eprintln!(
        "stress {count}: {} delivered, {dropped} dropped in {} reports, {elapsed:?}; {observed}",
        tally.data, tally.reports
    );
}

#[test]
fn ten_million_events_cross_process_each_delivered_once_in_order_or_counted() {
    stress(10_000_000);
}

// ---- kill -9 ----

/// Writes sequence-numbered events forever, waiting (never dropping) when the ring
/// is full, until it is killed.
fn endless_writer() {
    let mut options = WriterOptions::new(env("DIR"), env("NAME"));
    options.capacity = 4096;
    let mut writer = ShmWriter::create(options).unwrap();
    say("ready");
    let mut seq = 0u64;
    let mut batch: Vec<Event> = Vec::with_capacity(64);
    loop {
        batch.clear();
        batch.extend((seq..seq + 64).map(seq_event));
        let mut done = 0;
        while done < batch.len() {
            // Back-pressure: never drop, so the stream must be gap-free.
            let free = writer.free_slots() as usize;
            if free == 0 {
                std::thread::yield_now();
                continue;
            }
            let end = (done + free).min(batch.len());
            assert_eq!(writer.write_batch(&batch[done..end]), end - done);
            done = end;
        }
        seq += 64;
    }
}

#[test]
fn kill_9_mid_stream_loses_nothing_published_and_a_new_writer_starts_cleanly() {
    let dir = TempDir::new("kill9");
    let ring = dir.path().join("agent");
    let (mut child, mut out) = spawn(
        "endless-writer",
        &[
            ("DIR", dir.path().display().to_string()),
            ("NAME", "agent".into()),
        ],
    );
    expect_line(&mut out, "ready");
    let mut reader = DrainingReader::open(&ring).unwrap();
    let next = std::cell::Cell::new(0u64);
    let take = |e: Result<Event, telering_shm::ShmError>| {
        assert_eq!(
            check_event(&e.unwrap()).unwrap(),
            next.get(),
            "gap or duplicate"
        );
        next.set(next.get() + 1);
    };
    while next.get() < 200_000 {
        if reader.read_batch(1024, take).unwrap() == 0 {
            std::thread::yield_now();
        }
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    // Everything published before the kill is still there.
    while reader.read_batch(1024, take).unwrap() > 0 {}
    let next = next.get();
    let info = stat(&ring).unwrap();
    let t = info.trailer.unwrap();
    assert!(!info.writer_alive, "the lock dies with the writer");
    assert!(!t.clean_close);
    assert_eq!(t.writer_pid, child.id());
    assert_eq!(info.fill, 0);
    // `published` is updated right after each batch is published, so it can lag the
    // ring by the one batch being published at the moment of the kill.
    assert!(
        next >= t.published && next - t.published <= 64,
        "read {next}, trailer says {} published",
        t.published
    );

    // A new writer for the same name starts cleanly on a new file...
    let mut options = WriterOptions::new(dir.path(), "agent");
    options.capacity = 64;
    let mut writer = ShmWriter::create(options).unwrap();
    let info = stat(&ring).unwrap();
    assert!(info.writer_alive);
    assert_eq!(info.capacity, 64);
    assert_eq!(info.trailer.unwrap().published, 0);
    assert_eq!(info.trailer.unwrap().writer_pid, std::process::id());
    // ...which the reader follows once it has drained the old one.
    writer.write_batch(&[seq_event(7)]);
    assert_eq!(reader.pop().unwrap().map(|e| e.value()), Some(7));
    assert_eq!(reader.info().capacity, 64);
}
