//! The core ring against rtrb 0.4, heapless 0.9 `spsc::Queue` and crossbeam-queue
//! `ArrayQueue`, side by side in one run (see `BENCHMARKS.md`).
//!
//! Workload, identical for every contender: a prebuilt 56-byte `Event` whose `value`
//! changes on every push; the consumer sums the values it pops (so nothing is
//! optimised away) and the sum is checked.

use std::hint::black_box;
use std::thread;
use std::time::{Duration, Instant};
use telering_benches::{Contender, compare, rounds};
use telering_core::clock::FixedClock;
use telering_core::{
    Allowlist, Category, Event, OverflowPolicy, Recorder, Ring, builtin, event_name,
};

const EVENTS: u64 = 10_000_000;
const BATCH: usize = 256;

fn template() -> Event {
    Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), 0)
}

fn expected_sum() -> u64 {
    EVENTS * (EVENTS - 1) / 2
}

fn with_value(mut e: Event, v: u64) -> Event {
    e.set_value(v);
    e
}

fn single_thread_interleaved() -> String {
    let base = template();
    let contenders = vec![
        Contender::timed("telering", move || {
            let ring = Box::new(Ring::<1024>::new());
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            let mut sum = 0u64;
            for v in 0..EVENTS {
                p.push(&with_value(base, v)).unwrap();
                sum += c.pop().unwrap().value();
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
        Contender::timed("rtrb", move || {
            let (mut p, mut c) = rtrb::RingBuffer::<Event>::new(1024);
            let mut sum = 0u64;
            for v in 0..EVENTS {
                p.push(with_value(base, v)).unwrap();
                sum += c.pop().unwrap().value();
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
        Contender::timed("heapless", move || {
            let mut q = Box::new(heapless::spsc::Queue::<Event, 1024>::new());
            let (mut p, mut c) = q.split();
            let mut sum = 0u64;
            for v in 0..EVENTS {
                p.enqueue(with_value(base, v)).unwrap();
                sum += c.dequeue().unwrap().value();
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
        Contender::timed("crossbeam ArrayQueue", move || {
            let q = crossbeam_queue::ArrayQueue::<Event>::new(1024);
            let mut sum = 0u64;
            for v in 0..EVENTS {
                q.push(with_value(base, v)).unwrap();
                sum += q.pop().unwrap().value();
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
    ];
    compare(
        "Single thread, push + pop interleaved, capacity 1024",
        EVENTS,
        rounds(7),
        "rtrb",
        contenders,
    )
    .to_markdown()
}

fn single_thread_batches() -> String {
    let base = template();
    let contenders = vec![
        Contender::timed("telering batch", move || {
            let ring = Box::new(Ring::<1024>::new());
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            let mut sum = 0u64;
            let mut v = 0;
            while v < EVENTS {
                let n = BATCH.min((EVENTS - v) as usize);
                let mut b = p.batch();
                for _ in 0..n {
                    b.push(&with_value(base, v)).unwrap();
                    v += 1;
                }
                b.publish();
                c.read_batch(n, |e| sum += e.value());
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
        Contender::timed("rtrb chunks", move || {
            let (mut p, mut c) = rtrb::RingBuffer::<Event>::new(1024);
            let mut sum = 0u64;
            let mut v = 0;
            while v < EVENTS {
                let n = BATCH.min((EVENTS - v) as usize);
                let chunk = p.write_chunk_uninit(n).unwrap();
                let start = v;
                chunk.fill_from_iter((start..start + n as u64).map(|x| with_value(base, x)));
                v += n as u64;
                let chunk = c.read_chunk(n).unwrap();
                let (a, b) = chunk.as_slices();
                sum += a.iter().chain(b).map(|e| e.value()).sum::<u64>();
                chunk.commit_all();
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
        Contender::timed("heapless", move || {
            let mut q = Box::new(heapless::spsc::Queue::<Event, 1024>::new());
            let (mut p, mut c) = q.split();
            let mut sum = 0u64;
            let mut v = 0;
            while v < EVENTS {
                let n = BATCH.min((EVENTS - v) as usize);
                for _ in 0..n {
                    p.enqueue(with_value(base, v)).unwrap();
                    v += 1;
                }
                for _ in 0..n {
                    sum += c.dequeue().unwrap().value();
                }
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
        Contender::timed("crossbeam ArrayQueue", move || {
            let q = crossbeam_queue::ArrayQueue::<Event>::new(1024);
            let mut sum = 0u64;
            let mut v = 0;
            while v < EVENTS {
                let n = BATCH.min((EVENTS - v) as usize);
                for _ in 0..n {
                    q.push(with_value(base, v)).unwrap();
                    v += 1;
                }
                for _ in 0..n {
                    sum += q.pop().unwrap().value();
                }
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
    ];
    compare(
        "Single thread, batches of 256, capacity 1024",
        EVENTS,
        rounds(7),
        "rtrb chunks",
        contenders,
    )
    .to_markdown()
}

/// Runs a producer and a consumer thread; the consumer's time from first to last
/// event is the measurement.
fn two_threads(produce: impl FnOnce() + Send, consume: impl FnOnce() -> u64 + Send) -> Duration {
    thread::scope(|s| {
        let consumer = s.spawn(|| {
            let start = Instant::now();
            let sum = consume();
            assert_eq!(sum, expected_sum());
            start.elapsed()
        });
        s.spawn(produce);
        consumer.join().unwrap()
    })
}

/// Two threads moving events one at a time: `push` retries (spinning) until it
/// succeeds, `pop` spins until an event arrives; the popped values are summed.
fn per_event(
    mut push: impl FnMut(u64) -> bool + Send,
    mut pop: impl FnMut() -> Option<u64> + Send,
) -> Duration {
    two_threads(
        move || {
            let mut v = 0;
            while v < EVENTS {
                if push(v) {
                    v += 1;
                } else {
                    std::hint::spin_loop();
                }
            }
        },
        move || {
            let (mut sum, mut n) = (0u64, 0);
            while n < EVENTS {
                match pop() {
                    Some(value) => {
                        sum += value;
                        n += 1;
                    }
                    None => std::hint::spin_loop(),
                }
            }
            sum
        },
    )
}

fn two_thread() -> String {
    let base = template();
    let contenders = vec![
        Contender::self_timed("telering", move || {
            let ring = Box::new(Ring::<4096>::new());
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            per_event(
                move |v| p.push(&with_value(base, v)).is_ok(),
                move || c.pop().map(|e| e.value()),
            )
        }),
        Contender::self_timed("telering batch", move || {
            let ring = Box::new(Ring::<4096>::new());
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            two_threads(
                move || {
                    let mut v = 0;
                    while v < EVENTS {
                        let room = (p.free_slots() as u64).min(BATCH as u64).min(EVENTS - v);
                        if room == 0 {
                            std::hint::spin_loop();
                            continue;
                        }
                        let mut b = p.batch();
                        for _ in 0..room {
                            b.push(&with_value(base, v)).unwrap();
                            v += 1;
                        }
                    }
                },
                move || {
                    let (mut sum, mut n) = (0u64, 0u64);
                    while n < EVENTS {
                        let got = c.read_batch(BATCH, |e| sum += e.value());
                        if got == 0 {
                            std::hint::spin_loop();
                        }
                        n += got as u64;
                    }
                    sum
                },
            )
        }),
        Contender::self_timed("rtrb", move || {
            let (mut p, mut c) = rtrb::RingBuffer::<Event>::new(4096);
            per_event(
                move |v| p.push(with_value(base, v)).is_ok(),
                move || c.pop().ok().map(|e| e.value()),
            )
        }),
        Contender::self_timed("heapless", move || {
            let q: &'static mut heapless::spsc::Queue<Event, 4096> =
                Box::leak(Box::new(heapless::spsc::Queue::new()));
            let (mut p, mut c) = q.split();
            per_event(
                move |v| p.enqueue(with_value(base, v)).is_ok(),
                move || c.dequeue().map(|e| e.value()),
            )
        }),
    ];
    compare(
        "Two threads (producer, consumer), capacity 4096",
        EVENTS,
        rounds(7),
        "rtrb",
        contenders,
    )
    .to_markdown()
}

fn recording_front() -> String {
    let contenders = vec![
        Contender::timed("bare push, constant clock", || {
            let ring = Box::new(Ring::<1024>::new());
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            let clock = FixedClock(1);
            let mut sum = 0u64;
            for v in 0..EVENTS {
                use telering_core::Clock;
                // The same opaque input as the recorder gets, so both build the event.
                let kind = black_box(builtin::AGENT_TX_BYTES);
                let e = Event::new(clock.now_us(), kind.category, kind.name, v);
                p.push(&e).unwrap();
                sum += c.pop().unwrap().value();
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
        Contender::timed("Recorder, empty allowlist", || {
            let ring = Box::new(Ring::<1024>::new());
            let (p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            let mut rec = Recorder::new(p, FixedClock(1), Allowlist::all());
            let mut sum = 0u64;
            for v in 0..EVENTS {
                rec.record_builtin(black_box(builtin::AGENT_TX_BYTES), v);
                sum += c.pop().unwrap().value();
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
        Contender::timed("Recorder, allowlist \"agent_tx_*,agent_rx_*\"", || {
            let ring = Box::new(Ring::<1024>::new());
            let (p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            let mut rec = Recorder::new(p, FixedClock(1), Allowlist::new("agent_tx_*,agent_rx_*"));
            let mut sum = 0u64;
            for v in 0..EVENTS {
                rec.record_builtin(black_box(builtin::AGENT_TX_BYTES), v);
                sum += c.pop().unwrap().value();
            }
            assert_eq!(black_box(sum), expected_sum());
        }),
    ];
    compare(
        "Recording front (allowlist + clock + push) vs a bare push, one thread, interleaved pop",
        EVENTS,
        rounds(7),
        "bare push, constant clock",
        contenders,
    )
    .to_markdown()
}

fn main() {
    // `cargo bench -- <filter>` runs only the benchmarks whose name contains it.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    type Bench = (&'static str, fn() -> String);
    let benches: [Bench; 4] = [
        ("single_thread_interleaved", single_thread_interleaved),
        ("single_thread_batches", single_thread_batches),
        ("two_thread", two_thread),
        ("recording_front", recording_front),
    ];
    for (name, bench) in benches {
        if filter.as_deref().is_none_or(|f| name.contains(f)) {
            println!("{}", bench());
        }
    }
}
