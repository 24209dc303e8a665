//! The single-thread workloads of `benches/core_ring.rs`, one function per (case,
//! contender), for counting instructions with callgrind:
//!
//! ```text
//! benches/callgrind_ring.sh   # builds this, runs every function under callgrind, prints the table
//! ```
//!
//! One process runs one `measure_*` function: [`EVENTS`] push + pop pairs after a
//! warm-up outside it. The script collects only inside that function
//! (`--toggle-collect`) and divides by [`EVENTS`]. The consumer uses the whole event
//! (`black_box(&event)`), as in the timed benchmark.

use std::hint::black_box;
use telering_core::{Category, Event, OverflowPolicy, Ring, event_name};

/// Push + pop pairs per measured function.
pub const EVENTS: u64 = 102_400;
const BATCH: usize = 256;

fn template() -> Event {
    Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), 0)
}

fn with_value(mut e: Event, v: u64) -> Event {
    e.set_value(v);
    e
}

#[inline(always)]
fn consume(e: &Event, sum: &mut u64) {
    black_box(e);
    *sum += e.value();
}

#[inline(never)]
fn measure_interleaved_telering(ring: &Ring<1024>) -> u64 {
    let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    let base = black_box(template());
    let mut sum = 0;
    for v in 0..EVENTS {
        p.push(&with_value(base, v)).unwrap();
        consume(&c.pop().unwrap(), &mut sum);
    }
    sum
}

#[inline(never)]
fn measure_interleaved_rtrb() -> u64 {
    let (mut p, mut c) = rtrb::RingBuffer::<Event>::new(1024);
    let base = black_box(template());
    let mut sum = 0;
    for v in 0..EVENTS {
        p.push(with_value(base, v)).unwrap();
        consume(&c.pop().unwrap(), &mut sum);
    }
    sum
}

#[inline(never)]
fn measure_interleaved_heapless(q: &mut heapless::spsc::Queue<Event, 1024>) -> u64 {
    let (mut p, mut c) = q.split();
    let base = black_box(template());
    let mut sum = 0;
    for v in 0..EVENTS {
        p.enqueue(with_value(base, v)).unwrap();
        consume(&c.dequeue().unwrap(), &mut sum);
    }
    sum
}

#[inline(never)]
fn measure_interleaved_crossbeam() -> u64 {
    let q = crossbeam_queue::ArrayQueue::<Event>::new(1024);
    let base = black_box(template());
    let mut sum = 0;
    for v in 0..EVENTS {
        q.push(with_value(base, v)).unwrap();
        consume(&q.pop().unwrap(), &mut sum);
    }
    sum
}

#[inline(never)]
fn measure_batches_telering(ring: &Ring<1024>) -> u64 {
    let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    let base = black_box(template());
    let mut sum = 0;
    let mut v = 0;
    while v < EVENTS {
        p.push_all_with(BATCH, |i| with_value(base, v + i as u64))
            .unwrap();
        v += BATCH as u64;
        c.read_batch(BATCH, |e| consume(e, &mut sum));
    }
    sum
}

#[inline(never)]
fn measure_batches_telering_slice(ring: &Ring<1024>) -> u64 {
    let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    let mut staged = vec![black_box(template()); BATCH];
    let mut sum = 0;
    let mut v = 0;
    while v < EVENTS {
        for e in &mut staged {
            e.set_value(v);
            v += 1;
        }
        assert_eq!(p.push_slice(&staged), BATCH);
        c.read_batch(BATCH, |e| consume(e, &mut sum));
    }
    sum
}

#[inline(never)]
fn measure_batches_rtrb() -> u64 {
    let (mut p, mut c) = rtrb::RingBuffer::<Event>::new(1024);
    let base = black_box(template());
    let mut sum = 0;
    let mut v = 0;
    while v < EVENTS {
        let chunk = p.write_chunk_uninit(BATCH).unwrap();
        chunk.fill_from_iter((v..v + BATCH as u64).map(|x| with_value(base, x)));
        v += BATCH as u64;
        let chunk = c.read_chunk(BATCH).unwrap();
        let (a, b) = chunk.as_slices();
        for e in a.iter().chain(b) {
            consume(e, &mut sum);
        }
        chunk.commit_all();
    }
    sum
}

#[inline(never)]
fn measure_batches_heapless(q: &mut heapless::spsc::Queue<Event, 1024>) -> u64 {
    let (mut p, mut c) = q.split();
    let base = black_box(template());
    let mut sum = 0;
    let mut v = 0;
    while v < EVENTS {
        for _ in 0..BATCH {
            p.enqueue(with_value(base, v)).unwrap();
            v += 1;
        }
        for _ in 0..BATCH {
            consume(&c.dequeue().unwrap(), &mut sum);
        }
    }
    sum
}

#[inline(never)]
fn measure_batches_crossbeam() -> u64 {
    let q = crossbeam_queue::ArrayQueue::<Event>::new(1024);
    let base = black_box(template());
    let mut sum = 0;
    let mut v = 0;
    while v < EVENTS {
        for _ in 0..BATCH {
            q.push(with_value(base, v)).unwrap();
            v += 1;
        }
        for _ in 0..BATCH {
            consume(&q.pop().unwrap(), &mut sum);
        }
    }
    sum
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (case, contender) = match args.as_slice() {
        [case, contender] => (case.as_str(), contender.as_str()),
        _ => {
            eprintln!(
                "usage: ring_instructions interleaved|batches telering-unobserved|telering-observed|telering-observed-slice|rtrb|heapless|crossbeam"
            );
            std::process::exit(2);
        }
    };
    let ring = |unobserved: bool| {
        Box::new(if unobserved {
            Ring::<1024>::new_unobserved()
        } else {
            Ring::<1024>::new()
        })
    };
    let mut q = Box::new(heapless::spsc::Queue::<Event, 1024>::new());
    let sum = match (case, contender) {
        ("interleaved", "telering-unobserved") => measure_interleaved_telering(&ring(true)),
        ("interleaved", "telering-observed") => measure_interleaved_telering(&ring(false)),
        ("interleaved", "rtrb") => measure_interleaved_rtrb(),
        ("interleaved", "heapless") => measure_interleaved_heapless(&mut q),
        ("interleaved", "crossbeam") => measure_interleaved_crossbeam(),
        ("batches", "telering-unobserved") => measure_batches_telering(&ring(true)),
        ("batches", "telering-observed") => measure_batches_telering(&ring(false)),
        ("batches", "telering-observed-slice") => measure_batches_telering_slice(&ring(false)),
        ("batches", "rtrb") => measure_batches_rtrb(),
        ("batches", "heapless") => measure_batches_heapless(&mut q),
        ("batches", "crossbeam") => measure_batches_crossbeam(),
        _ => {
            eprintln!("unknown case or contender: {case} {contender}");
            std::process::exit(2);
        }
    };
    assert_eq!(sum, EVENTS * (EVENTS - 1) / 2);
}
