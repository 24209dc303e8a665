//! The core ring against rtrb 0.4, heapless 0.9 `spsc::Queue` and crossbeam-queue
//! `ArrayQueue`, side by side in one run (see `BENCHMARKS.md`).
//!
//! Workload, identical for every contender: a prebuilt 56-byte `Event` whose `value`
//! changes on every push. The consumer uses the *whole* event it takes out
//! (`black_box(&event)`, so every word must be loaded, whatever the contender's copy
//! is made of) and sums the values, and the sum is checked. The earlier workload,
//! which read only `.value` (letting the compiler drop the other six loads for the
//! contenders that copy with plain moves), runs beside it for reference.

use std::hint::black_box;
use std::thread;
use std::time::{Duration, Instant};
use telering_benches::{Contender, compare, rounds};
use telering_core::clock::FixedClock;
use telering_core::{
    Allowlist, Category, Event, OverflowPolicy, Recorder, Ring, builtin, event_name,
};

const EVENTS: u64 = 10_000_000;
const TWO_THREAD_EVENTS: u64 = 4_000_000;
const BATCH: usize = 256;

fn template() -> Event {
    Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), 0)
}

fn expected_sum(events: u64) -> u64 {
    events * (events - 1) / 2
}

fn with_value(mut e: Event, v: u64) -> Event {
    e.set_value(v);
    e
}

/// What the consumer does with an event it took out: with `WHOLE`, uses every word
/// (`black_box(&event)`); without, reads only the value (the earlier workload).
#[inline(always)]
fn consume<const WHOLE: bool>(e: &Event, sum: &mut u64) {
    if WHOLE {
        black_box(e);
    }
    *sum += e.value();
}

fn workload_name<const WHOLE: bool>() -> &'static str {
    if WHOLE {
        "whole event consumed"
    } else {
        "earlier workload: value only"
    }
}

fn single_thread_interleaved<const WHOLE: bool>() -> String {
    let base = template();
    let telering = |name: &'static str, unobserved: bool| {
        Contender::timed(name, move || {
            let ring = Box::new(if unobserved {
                Ring::<1024>::new_unobserved()
            } else {
                Ring::<1024>::new()
            });
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            let mut sum = 0u64;
            for v in 0..EVENTS {
                p.push(&with_value(base, v)).unwrap();
                consume::<WHOLE>(&c.pop().unwrap(), &mut sum);
            }
            assert_eq!(black_box(sum), expected_sum(EVENTS));
        })
    };
    let contenders = vec![
        telering("telering unobserved", true),
        telering("telering observed", false),
        Contender::timed("rtrb", move || {
            let (mut p, mut c) = rtrb::RingBuffer::<Event>::new(1024);
            let mut sum = 0u64;
            for v in 0..EVENTS {
                p.push(with_value(base, v)).unwrap();
                consume::<WHOLE>(&c.pop().unwrap(), &mut sum);
            }
            assert_eq!(black_box(sum), expected_sum(EVENTS));
        }),
        Contender::timed("heapless", move || {
            let mut q = Box::new(heapless::spsc::Queue::<Event, 1024>::new());
            let (mut p, mut c) = q.split();
            let mut sum = 0u64;
            for v in 0..EVENTS {
                p.enqueue(with_value(base, v)).unwrap();
                consume::<WHOLE>(&c.dequeue().unwrap(), &mut sum);
            }
            assert_eq!(black_box(sum), expected_sum(EVENTS));
        }),
        Contender::timed("crossbeam ArrayQueue", move || {
            let q = crossbeam_queue::ArrayQueue::<Event>::new(1024);
            let mut sum = 0u64;
            for v in 0..EVENTS {
                q.push(with_value(base, v)).unwrap();
                consume::<WHOLE>(&q.pop().unwrap(), &mut sum);
            }
            assert_eq!(black_box(sum), expected_sum(EVENTS));
        }),
    ];
    compare(
        &format!(
            "Single thread, push + pop interleaved, capacity 1024 ({})",
            workload_name::<WHOLE>()
        ),
        EVENTS,
        rounds(7),
        "rtrb",
        contenders,
    )
    .to_markdown()
}

fn single_thread_batches<const WHOLE: bool>() -> String {
    let base = template();
    let contenders = vec![
        Contender::timed("telering unobserved push_all_with", move || {
            let ring = Box::new(Ring::<1024>::new_unobserved());
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            let mut sum = 0u64;
            let mut v = 0;
            while v < EVENTS {
                let n = BATCH.min((EVENTS - v) as usize);
                p.push_all_with(n, |i| with_value(base, v + i as u64))
                    .unwrap();
                v += n as u64;
                c.read_batch(n, |e| consume::<WHOLE>(e, &mut sum));
            }
            assert_eq!(black_box(sum), expected_sum(EVENTS));
        }),
        Contender::timed("telering observed push_slice", move || {
            let ring = Box::new(Ring::<1024>::new());
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            let mut staged = vec![base; BATCH];
            let mut sum = 0u64;
            let mut v = 0;
            while v < EVENTS {
                let n = BATCH.min((EVENTS - v) as usize);
                for e in &mut staged[..n] {
                    e.set_value(v);
                    v += 1;
                }
                assert_eq!(p.push_slice(&staged[..n]), n);
                c.read_batch(n, |e| consume::<WHOLE>(e, &mut sum));
            }
            assert_eq!(black_box(sum), expected_sum(EVENTS));
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
                for e in a.iter().chain(b) {
                    consume::<WHOLE>(e, &mut sum);
                }
                chunk.commit_all();
            }
            assert_eq!(black_box(sum), expected_sum(EVENTS));
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
                    consume::<WHOLE>(&c.dequeue().unwrap(), &mut sum);
                }
            }
            assert_eq!(black_box(sum), expected_sum(EVENTS));
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
                    consume::<WHOLE>(&q.pop().unwrap(), &mut sum);
                }
            }
            assert_eq!(black_box(sum), expected_sum(EVENTS));
        }),
    ];
    compare(
        &format!(
            "Single thread, batches of 256, capacity 1024 ({})",
            workload_name::<WHOLE>()
        ),
        EVENTS,
        rounds(7),
        "rtrb chunks",
        contenders,
    )
    .to_markdown()
}

/// The same interleaved loop on an observed (stamped) and an unobserved ring.
fn observed_vs_unobserved() -> String {
    let base = template();
    let run = |name: &'static str, unobserved: bool| {
        Contender::timed(name, move || {
            let ring = Box::new(if unobserved {
                Ring::<1024>::new_unobserved()
            } else {
                Ring::<1024>::new()
            });
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            let mut sum = 0u64;
            for v in 0..EVENTS {
                p.push(&with_value(base, v)).unwrap();
                consume::<true>(&c.pop().unwrap(), &mut sum);
            }
            assert_eq!(black_box(sum), expected_sum(EVENTS));
        })
    };
    compare(
        "Observed (stamped) vs unobserved ring, single thread interleaved, capacity 1024 (whole event consumed)",
        EVENTS,
        rounds(7),
        "telering unobserved",
        vec![
            run("telering unobserved", true),
            run("telering observed", false),
        ],
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
            assert_eq!(sum, expected_sum(TWO_THREAD_EVENTS));
            start.elapsed()
        });
        s.spawn(produce);
        consumer.join().unwrap()
    })
}

/// Two threads moving events one at a time: `push` retries (spinning) until it
/// succeeds, `pop` spins until an event arrives; the consumer uses each whole event.
fn per_event(
    mut push: impl FnMut(u64) -> bool + Send,
    mut pop: impl FnMut() -> Option<Event> + Send,
) -> Duration {
    two_threads(
        move || {
            let mut v = 0;
            while v < TWO_THREAD_EVENTS {
                if push(v) {
                    v += 1;
                } else {
                    std::hint::spin_loop();
                }
            }
        },
        move || {
            let (mut sum, mut n) = (0u64, 0);
            while n < TWO_THREAD_EVENTS {
                match pop() {
                    Some(e) => {
                        consume::<true>(&e, &mut sum);
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
            let ring = Box::new(Ring::<4096>::new_unobserved());
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            per_event(
                move |v| p.push(&with_value(base, v)).is_ok(),
                move || c.pop(),
            )
        }),
        Contender::self_timed("telering batch publish", move || {
            let ring = Box::new(Ring::<4096>::new_unobserved());
            let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
            two_threads(
                move || {
                    let mut v = 0;
                    while v < TWO_THREAD_EVENTS {
                        let room = (p.free_slots() as u64)
                            .min(BATCH as u64)
                            .min(TWO_THREAD_EVENTS - v);
                        if room == 0 {
                            std::hint::spin_loop();
                            continue;
                        }
                        p.push_all_with(room as usize, |i| with_value(base, v + i as u64))
                            .unwrap();
                        v += room;
                    }
                },
                move || {
                    let (mut sum, mut n) = (0u64, 0u64);
                    while n < TWO_THREAD_EVENTS {
                        let got = c.read_batch(BATCH, |e| consume::<true>(e, &mut sum));
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
                move || c.pop().ok(),
            )
        }),
        Contender::self_timed("rtrb chunks", move || {
            let (mut p, mut c) = rtrb::RingBuffer::<Event>::new(4096);
            two_threads(
                move || {
                    let mut v = 0;
                    while v < TWO_THREAD_EVENTS {
                        let room = (p.slots() as u64)
                            .min(BATCH as u64)
                            .min(TWO_THREAD_EVENTS - v);
                        if room == 0 {
                            std::hint::spin_loop();
                            continue;
                        }
                        let chunk = p.write_chunk_uninit(room as usize).unwrap();
                        chunk.fill_from_iter((v..v + room).map(|x| with_value(base, x)));
                        v += room;
                    }
                },
                move || {
                    let (mut sum, mut n) = (0u64, 0u64);
                    while n < TWO_THREAD_EVENTS {
                        let got = c.slots().min(BATCH);
                        if got == 0 {
                            std::hint::spin_loop();
                            continue;
                        }
                        let chunk = c.read_chunk(got).unwrap();
                        let (a, b) = chunk.as_slices();
                        for e in a.iter().chain(b) {
                            consume::<true>(e, &mut sum);
                        }
                        chunk.commit_all();
                        n += got as u64;
                    }
                    sum
                },
            )
        }),
        Contender::self_timed("heapless", move || {
            let q: &'static mut heapless::spsc::Queue<Event, 4096> =
                Box::leak(Box::new(heapless::spsc::Queue::new()));
            let (mut p, mut c) = q.split();
            per_event(
                move |v| p.enqueue(with_value(base, v)).is_ok(),
                move || c.dequeue(),
            )
        }),
    ];
    compare(
        "Two threads (producer, consumer), capacity 4096 (whole event consumed)",
        TWO_THREAD_EVENTS,
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
            assert_eq!(black_box(sum), expected_sum(EVENTS));
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
            assert_eq!(black_box(sum), expected_sum(EVENTS));
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
            assert_eq!(black_box(sum), expected_sum(EVENTS));
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
    let benches: [Bench; 7] = [
        (
            "single_thread_interleaved",
            single_thread_interleaved::<true>,
        ),
        (
            "single_thread_interleaved_value_only",
            single_thread_interleaved::<false>,
        ),
        ("single_thread_batches", single_thread_batches::<true>),
        (
            "single_thread_batches_value_only",
            single_thread_batches::<false>,
        ),
        ("observed_vs_unobserved", observed_vs_unobserved),
        ("two_thread", two_thread),
        ("recording_front", recording_front),
    ];
    for (name, bench) in benches {
        if filter.as_deref().is_none_or(|f| name.contains(f)) {
            println!("{}", bench());
        }
    }
}
