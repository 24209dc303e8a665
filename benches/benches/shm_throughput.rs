//! telering-shm: events through the shared-memory file from a writer process to a
//! draining reader process, against the same ring in one process (two threads), in
//! the same run; and the time from creating the file to the first event being
//! readable by another handle (see `BENCHMARKS.md`).
//!
//! Workload: `EVENTS` sequence-numbered 56-byte events written in batches of `BATCH`
//! with back-pressure (the writer waits for room, so nothing is dropped), read in
//! batches by the one consumer, which checks that it got exactly 0, 1, 2, … in order.
//! The writer process is this benchmark binary, re-executed with
//! `TELERING_SHM_BENCH_WRITER` set; it is started and has created the file before the
//! clock starts, and it starts writing when the reader sends it a byte.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};
use telering_benches::{Contender, compare, rounds};
use telering_core::ring::{self, HeaderInfo, RingRegion};
use telering_core::{Category, Event, OverflowPolicy, event_name};
use telering_shm::{DrainingReader, ShmWriter, WriterOptions};

const EVENTS: u64 = 2_000_000;
const BATCH: usize = 256;
const CAPACITY: u32 = 4096;
const WRITER_ROLE: &str = "TELERING_SHM_BENCH_WRITER";

fn event(v: u64) -> Event {
    Event::new(v, Category::Transfer, event_name!("agent_tx_bytes"), v)
}

/// Fills `batch` with the events `from..from + BATCH`.
fn fill(batch: &mut Vec<Event>, from: u64) {
    batch.clear();
    batch.extend((from..(from + BATCH as u64).min(EVENTS)).map(event));
}

/// The writer process: create the file, say so, wait for the go byte, write.
/// Writes `EVENTS` sequence-numbered events in batches of `BATCH`, with
/// back-pressure: it writes only what fits (`free`) and yields rather than spins when
/// nothing does, because the machine's cores are shared. Both contenders use it, so
/// they differ only in the ring underneath.
fn send_all<W>(writer: &mut W, free: fn(&W) -> usize, write: fn(&mut W, &[Event]) -> usize) {
    let mut batch = Vec::with_capacity(BATCH);
    let mut next = 0;
    while next < EVENTS {
        fill(&mut batch, next);
        let mut done = 0;
        while done < batch.len() {
            let room = free(writer);
            if room == 0 {
                std::thread::yield_now();
                continue;
            }
            let end = (done + room).min(batch.len());
            done += write(writer, &batch[done..end]);
        }
        next += batch.len() as u64;
    }
}

fn writer_process(dir: &str) {
    let mut options = WriterOptions::new(dir, "bench");
    options.capacity = CAPACITY;
    let mut writer = ShmWriter::create(options).expect("create the ring file");
    println!("ready");
    std::io::stdout().flush().unwrap();
    let mut go = [0u8; 1];
    std::io::stdin().read_exact(&mut go).unwrap();
    send_all(
        &mut writer,
        |w| w.free_slots() as usize,
        |w, events| w.write_batch(events),
    );
    assert_eq!(writer.events_dropped(), 0);
    writer.close().unwrap();
}

/// One round across two processes; returns the time from the go byte to the last
/// event read.
fn two_processes(dir: &std::path::Path) -> Duration {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(WRITER_ROLE, dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let mut reader = DrainingReader::open(&dir.join("bench")).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let start = Instant::now();
    stdin.write_all(b"g").unwrap();
    stdin.flush().unwrap();
    let mut next = 0u64;
    while next < EVENTS {
        let n = reader
            .read_batch(usize::MAX, |e| {
                let v = e.unwrap().value();
                assert_eq!(v, next);
                next += 1;
            })
            .unwrap();
        if n == 0 {
            thread::yield_now();
        }
    }
    let elapsed = start.elapsed();
    assert!(child.wait().unwrap().success());
    elapsed
}

/// One round in one process: the same ring layout over heap memory, producer and
/// consumer on two threads, the same batches and checks.
fn one_process() -> Duration {
    let len = HeaderInfo::ring_bytes(CAPACITY as u64) as usize;
    let mut memory = vec![0u64; len / 8];
    let ptr = memory.as_mut_ptr().cast::<u8>();
    // SAFETY: `memory` is 8-aligned, `len` bytes long, owned by the region (its heap
    // buffer stays in place), and is touched only through it.
    let region = unsafe { RingRegion::init(memory, ptr, len, CAPACITY) }.unwrap();
    let (mut producer, mut consumer) = ring::split(&region, OverflowPolicy::DropNewest).unwrap();
    let start = Instant::now();
    thread::scope(|s| {
        s.spawn(move || {
            send_all(
                &mut producer,
                |p| p.free_slots() as usize,
                |p, events| p.push_slice(events),
            );
        });
        let mut next = 0u64;
        while next < EVENTS {
            let n = consumer.read_batch(usize::MAX, |e| {
                assert!(e.validate().is_ok());
                assert_eq!(e.value(), next);
                next += 1;
            });
            if n == 0 {
                thread::yield_now();
            }
        }
    });
    start.elapsed()
}

fn throughput(dir: &std::path::Path) -> String {
    let contenders = vec![
        Contender::self_timed("in-process ring (2 threads)", one_process),
        Contender::self_timed("shm file (2 processes)", || two_processes(dir)),
    ];
    compare(
        &format!(
            "Writer → draining reader, {EVENTS} events, batches of {BATCH}, capacity {CAPACITY}"
        ),
        EVENTS,
        rounds(7),
        "in-process ring (2 threads)",
        contenders,
    )
    .to_markdown()
}

/// Creating a ring and reading its first event through a second handle, against the
/// same steps on a ring in heap memory.
fn first_event(dir: &std::path::Path) -> String {
    const CREATIONS: u64 = 200;
    let contenders = vec![
        Contender::timed("in-memory ring: init, push, pop", || {
            for i in 0..CREATIONS {
                let len = HeaderInfo::ring_bytes(CAPACITY as u64) as usize;
                let mut memory = vec![0u64; len / 8];
                let ptr = memory.as_mut_ptr().cast::<u8>();
                // SAFETY: as in `one_process`.
                let region = unsafe { RingRegion::init(memory, ptr, len, CAPACITY) }.unwrap();
                let (mut p, mut c) = ring::split(&region, OverflowPolicy::DropNewest).unwrap();
                p.push(&event(i)).unwrap();
                assert_eq!(c.pop().map(|e| e.value()), Some(i));
            }
        }),
        Contender::self_timed("shm file: create, write, open, pop", || {
            // Closing (msync, unlink) is not part of the latency measured.
            let mut timed = Duration::ZERO;
            for i in 0..CREATIONS {
                let start = Instant::now();
                let mut options = WriterOptions::new(dir, "first");
                options.capacity = CAPACITY;
                options.unlink_on_close = true;
                let mut writer = ShmWriter::create(options).unwrap();
                writer.write_batch(&[event(i)]);
                let mut reader = DrainingReader::open(writer.path()).unwrap();
                assert_eq!(reader.pop().unwrap().map(|e| e.value()), Some(i));
                timed += start.elapsed();
                drop(reader);
                writer.close().unwrap();
            }
            timed
        }),
    ];
    let c = compare(
        &format!("Create to first event readable, capacity {CAPACITY}"),
        CREATIONS,
        rounds(7),
        "in-memory ring: init, push, pop",
        contenders,
    );
    let mut out = c.to_markdown();
    for (name, thr, _) in &c.rows {
        out.push_str(&format!(
            "\n`{name}`: {:.1} µs per creation (median; min–max {:.1}–{:.1} µs)",
            1e6 / thr.median,
            1e6 / thr.max,
            1e6 / thr.min
        ));
    }
    out.push('\n');
    out
}

fn main() {
    if let Ok(dir) = std::env::var(WRITER_ROLE) {
        writer_process(&dir);
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("telering-bench-shm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    println!("{}", throughput(&dir));
    println!("{}", first_event(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}
