//! A writer restarting under the same name keeps the file: a reader left running
//! across the restart — telering's draining reader, and a stdlib-Python reader that
//! works as NIXL's readers do (it maps the file once and never reopens it) — receives
//! both runs' events, each exactly once.
//!
//! The writers are this test binary, re-executed with `TELERING_SHM_CHILD`.

mod common;

use common::{TempDir, check_event, seq_event};
use std::io::{BufRead, BufReader};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use telering_core::Event;
use telering_shm::{DrainingReader, ShmWriter, WriterOptions};

const ROLE: &str = "TELERING_SHM_CHILD";
const CAPACITY: u32 = 64;
const FIRST_RUN: u64 = 500;
const SECOND_RUN: u64 = 700;

/// Writes events `START..START + COUNT`, waiting (never dropping) while the ring is
/// full, then closes. A no-op in a normal test run.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    assert_eq!(role, "writer");
    let var = |n: &str| std::env::var(n).unwrap();
    let start: u64 = var("START").parse().unwrap();
    let count: u64 = var("COUNT").parse().unwrap();
    let mut o = WriterOptions::new(var("DIR"), "agent");
    o.capacity = CAPACITY;
    let mut w = ShmWriter::create(o).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut next = start;
    while next < start + count {
        assert!(Instant::now() < deadline, "the reader stopped reading");
        let free = w.free_slots() as u64;
        if free == 0 {
            std::thread::yield_now();
            continue;
        }
        let end = (next + free).min(start + count);
        let batch: Vec<Event> = (next..end).map(seq_event).collect();
        // Only this writer fills the ring and the reader only empties it, so every
        // slot `free_slots` reported is still free.
        assert_eq!(w.write_batch(&batch), batch.len(), "at event {next}");
        next = end;
    }
    assert_eq!(w.events_dropped(), 0);
    w.close().unwrap();
}

/// Runs one writer process to the end.
fn run_writer(dir: &Path, start: u64, count: u64) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child_process_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, "writer")
        .env("DIR", dir)
        .env("START", start.to_string())
        .env("COUNT", count.to_string())
        // Its failures show on the test's stderr.
        .stdout(Stdio::from(
            std::io::stderr().as_fd().try_clone_to_owned().unwrap(),
        ))
        .spawn()
        .unwrap()
}

fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::yield_now();
    }
}

#[test]
fn telerings_draining_reader_receives_both_runs_across_a_restart() {
    let dir = TempDir::new("restart-drain");
    let path = dir.path().join("agent");
    let mut first = run_writer(dir.path(), 0, FIRST_RUN);
    wait_for_file(&path);
    let ino = std::fs::metadata(&path).unwrap().ino();
    let mut reader = DrainingReader::open(&path).unwrap();
    let mut got = Vec::new();
    let mut second = None;
    let deadline = Instant::now() + Duration::from_secs(60);
    while (got.len() as u64) < FIRST_RUN + SECOND_RUN {
        assert!(Instant::now() < deadline, "received {} events", got.len());
        reader
            .read_batch(256, |e| got.push(check_event(&e.unwrap()).unwrap()))
            .unwrap();
        // The restart: once the first run has ended, the second one starts.
        if second.is_none() && first.try_wait().unwrap().is_some() {
            second = Some(run_writer(dir.path(), FIRST_RUN, SECOND_RUN));
        }
    }
    assert!(first.wait().unwrap().success());
    assert!(second.unwrap().wait().unwrap().success());
    assert_eq!(got, (0..FIRST_RUN + SECOND_RUN).collect::<Vec<_>>());
    assert_eq!(
        std::fs::metadata(&path).unwrap().ino(),
        ino,
        "the file was kept"
    );
    assert_eq!(reader.pop().unwrap(), None);
}

/// A reader built from the layout alone, like NIXL's: it maps header and slots
/// once, takes the event at `read_pos` while `read_pos != write_pos`, and stores
/// `read_pos + 1` (mod capacity). It prints every event it took, then `end` and the
/// number taken.
///
/// The positions are loaded and stored as whole 8-byte words through a `Q`
/// memoryview, as NIXL's readers do with atomics. `struct.pack_into` would not do:
/// CPython zeroes the field before it writes the new bytes, so a writer loading
/// `read_pos` in between sees 0 and takes slots the reader has not read yet for
/// free; `struct.unpack_from` reads byte by byte and can tear.
const PYTHON_READER: &str = r#"
import mmap, os, struct, sys, time
path, total = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDWR)
w, r, version, expected, capacity, mask = struct.unpack("<QQiiQQ", os.pread(fd, 40, 0))
assert version == 1 and mask == capacity - 1 and sys.byteorder == "little"
ring = mmap.mmap(fd, 40 + capacity * 56)
positions = memoryview(ring)[0:16].cast("Q")  # write_pos, read_pos
print("ready", flush=True)
taken = 0
deadline = time.monotonic() + 60
while taken < total and time.monotonic() < deadline:
    w, r = positions[0], positions[1]
    if w == r:
        continue
    slot = 40 + (r & mask) * 56
    timestamp, category = struct.unpack_from("<Qi", ring, slot)
    name = ring[slot + 12 : slot + 44].split(b"\0")[0].decode()
    (value,) = struct.unpack_from("<Q", ring, slot + 48)
    print(value, category, name, flush=False)
    positions[1] = (r + 1) & mask
    taken += 1
print("end", taken, flush=True)
"#;

#[test]
fn a_python_reader_written_from_the_layout_receives_both_runs_across_a_restart() {
    let dir = TempDir::new("restart-python");
    let path = dir.path().join("agent");
    // The first run waits for room, so it cannot finish before the reader is there.
    let mut first = run_writer(dir.path(), 0, FIRST_RUN);
    wait_for_file(&path);
    let ino = std::fs::metadata(&path).unwrap().ino();
    let mut python = Command::new("python3")
        .args(["-c", PYTHON_READER])
        .arg(&path)
        .arg((FIRST_RUN + SECOND_RUN).to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut out = BufReader::new(python.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");

    assert!(first.wait().unwrap().success());
    let second = run_writer(dir.path(), FIRST_RUN, SECOND_RUN)
        .wait()
        .unwrap();
    assert!(second.success());

    let mut values = Vec::new();
    for line in out.lines() {
        let line = line.unwrap();
        if let Some(end) = line.strip_prefix("end ") {
            assert_eq!(end, (FIRST_RUN + SECOND_RUN).to_string());
            break;
        }
        let mut fields = line.split(' ');
        let value: u64 = fields.next().unwrap().parse().unwrap();
        let category: i32 = fields.next().unwrap().parse().unwrap();
        let name = fields.next().unwrap();
        let expected = seq_event(value);
        assert_eq!(category, expected.category().unwrap() as i32, "{line}");
        assert_eq!(Ok(name), expected.name(), "{line}");
        values.push(value);
    }
    assert!(python.wait().unwrap().success());
    // Each event of both runs once, in order.
    assert_eq!(values, (0..FIRST_RUN + SECOND_RUN).collect::<Vec<_>>());
    assert_eq!(
        std::fs::metadata(&path).unwrap().ino(),
        ino,
        "the file was kept"
    );
}
