//! telering-std's recording path against a baseline that reproduces NIXL's host
//! telemetry design, side by side in one run (see `BENCHMARKS.md`).
//!
//! The baseline (`nixl-like`, defined here, not in the library): one
//! `Mutex<Vec<Event>>` staging buffer per agent, capped at `BUFFER_SIZE` events (an
//! event that finds it full is counted as dropped), timestamps from
//! `SystemTime::now()`, and a flush thread that swaps the vector for an empty one
//! every run interval (the default 100 ms). The timestamp is taken before the lock,
//! which only shortens the baseline's critical section.
//!
//! telering-std: one lock-free lane per thread, drained every run interval (100 ms)
//! by the flush thread into the `nop` exporter. Both sides record the same 56-byte
//! `agent_tx_bytes` event into `BUFFER_SIZE` events of buffer per lane / staging
//! vector.
//!
//! What is timed is the recording call. A round is `EVENTS_PER_THREAD` calls on every
//! recording thread, which fits the buffers; before each round, untimed, the
//! contender's buffers are flushed (as the flush thread does every 100 ms in a real
//! agent, whose event rate is far below a benchmark loop's), so no event is dropped
//! and the write path is what is measured (the drops are printed to show it).
//! Recording threads are started once per contender and kept across rounds, so lanes
//! and vectors are set up and their pages touched before timing. How fast a flush
//! drains is printed separately.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use telering_benches::{Comparison, Contender, compare, rounds};
use telering_core::builtin::{self, BuiltinEvent};
use telering_core::{Category, Event};
use telering_std::{ClockSource, Telemetry};

const EVENTS_PER_THREAD: u64 = 200_000;
const BUFFER_SIZE: usize = 1 << 18;
const RUN_INTERVAL: Duration = Duration::from_millis(100);

/// NIXL's design: a mutex-protected staging vector swapped out at each flush.
struct NixlLike {
    capacity: usize,
    staging: Mutex<Vec<Event>>,
    dropped: AtomicU64,
    flushed: AtomicU64,
    stop: AtomicBool,
}

impl NixlLike {
    /// A staging vector of `capacity` events and its flush thread.
    fn start(capacity: usize) -> (Arc<NixlLike>, JoinHandle<()>) {
        let this = Arc::new(NixlLike {
            capacity,
            staging: Mutex::new(Vec::with_capacity(capacity)),
            dropped: AtomicU64::new(0),
            flushed: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        });
        let flusher = Arc::clone(&this);
        let handle = std::thread::spawn(move || {
            let mut spare = Vec::with_capacity(flusher.capacity);
            let mut next = Instant::now() + RUN_INTERVAL;
            while !flusher.stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                if Instant::now() >= next {
                    flusher.flush(&mut spare);
                    next += RUN_INTERVAL;
                }
            }
        });
        (this, handle)
    }

    /// Swaps the staging vector for `spare` and consumes what it held.
    fn flush(&self, spare: &mut Vec<Event>) {
        std::mem::swap(&mut *self.staging.lock().unwrap(), spare);
        let sum: u64 = spare.iter().map(Event::value).sum();
        black_box(sum);
        self.flushed
            .fetch_add(spare.len() as u64, Ordering::Relaxed);
        spare.clear();
    }

    /// An untimed flush between rounds.
    fn flush_between_rounds(&self) {
        let mut spare = Vec::with_capacity(self.capacity);
        self.flush(&mut spare);
    }

    #[inline]
    fn now_us() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64)
    }

    #[inline]
    fn update_data(&self, event: BuiltinEvent, value: u64) {
        let ts = NixlLike::now_us();
        let mut staging = self.staging.lock().unwrap();
        if staging.len() < self.capacity {
            staging.push(Event::new(ts, event.category, event.name, value));
        } else {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// NIXL's optimised transfer record: the four events under one lock and one
    /// clock read.
    #[inline]
    fn add_xfer_stats(&self, xfer_us: u64, is_write: bool, bytes: u64, post_us: u64) {
        let ts = NixlLike::now_us();
        let (b, r) = if is_write {
            (builtin::AGENT_TX_BYTES, builtin::AGENT_TX_REQUESTS_NUM)
        } else {
            (builtin::AGENT_RX_BYTES, builtin::AGENT_RX_REQUESTS_NUM)
        };
        let mut staging = self.staging.lock().unwrap();
        if staging.len() + 4 <= self.capacity {
            for (e, v) in [
                (b, bytes),
                (r, 1),
                (builtin::AGENT_XFER_TIME, xfer_us),
                (builtin::AGENT_XFER_POST_TIME, post_us),
            ] {
                staging.push(Event::new(ts, e.category, e.name, v));
            }
        } else {
            self.dropped.fetch_add(4, Ordering::Relaxed);
        }
    }
}

/// Recording threads kept across rounds; a round releases them through one barrier
/// and waits for them at another. Each thread times its own work, and the round
/// lasts from the first thread's start to the last thread's end, so a late wake-up
/// of the coordinating thread does not distort it.
struct Workers {
    start: Arc<Barrier>,
    done: Arc<Barrier>,
    stop: Arc<AtomicBool>,
    spans: Arc<Mutex<Vec<(Instant, Instant)>>>,
    /// Sum over timed rounds of (threads' busy time, round time): their ratio is how
    /// many recording threads actually ran at once on average.
    overlap: Mutex<(f64, f64)>,
    handles: Vec<JoinHandle<()>>,
}

impl Workers {
    fn new(threads: usize, work: impl Fn(u64) + Send + Sync + 'static) -> Workers {
        let start = Arc::new(Barrier::new(threads + 1));
        let done = Arc::new(Barrier::new(threads + 1));
        let stop = Arc::new(AtomicBool::new(false));
        let spans = Arc::new(Mutex::new(Vec::with_capacity(threads)));
        let work = Arc::new(work);
        let handles = (0..threads as u64)
            .map(|t| {
                let (start, done, stop, spans, work) = (
                    Arc::clone(&start),
                    Arc::clone(&done),
                    Arc::clone(&stop),
                    Arc::clone(&spans),
                    Arc::clone(&work),
                );
                std::thread::spawn(move || {
                    loop {
                        start.wait();
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let begin = Instant::now();
                        work(t);
                        let end = Instant::now();
                        spans.lock().unwrap().push((begin, end));
                        done.wait();
                    }
                })
            })
            .collect();
        let workers = Workers {
            start,
            done,
            stop,
            spans,
            overlap: Mutex::new((0.0, 0.0)),
            handles,
        };
        workers.round(); // set-up: lanes registered, pages touched
        *workers.overlap.lock().unwrap() = (0.0, 0.0);
        workers
    }

    fn round(&self) -> Duration {
        self.spans.lock().unwrap().clear();
        self.start.wait();
        self.done.wait();
        let spans = self.spans.lock().unwrap();
        let begin = spans.iter().map(|s| s.0).min().expect("a span per thread");
        let end = spans.iter().map(|s| s.1).max().expect("a span per thread");
        let busy: f64 = spans.iter().map(|s| (s.1 - s.0).as_secs_f64()).sum();
        let mut overlap = self.overlap.lock().unwrap();
        overlap.0 += busy;
        overlap.1 += (end - begin).as_secs_f64();
        end - begin
    }

    /// Recording threads that ran at once, on average over the rounds.
    fn parallelism(&self) -> f64 {
        let (busy, wall) = *self.overlap.lock().unwrap();
        busy / wall
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.start.wait();
        for h in self.handles.drain(..) {
            h.join().unwrap();
        }
    }
}

fn telering(clock: ClockSource, metrics: &str) -> Arc<Telemetry> {
    Arc::new(
        Telemetry::builder("bench")
            .enabled(true)
            .exporter("nop")
            .clock(clock)
            .enabled_metrics(metrics)
            .lane_capacity(BUFFER_SIZE as u32)
            .buffer_size(BUFFER_SIZE as u32)
            .run_interval(RUN_INTERVAL)
            .build()
            .expect("bench telemetry"),
    )
}

/// Drops seen by each contender, printed under the table.
struct Drops(Vec<(String, DropCounter)>);

/// Reads (events dropped, events recorded) of one contender.
type DropCounter = Box<dyn Fn() -> (u64, u64)>;

impl Drops {
    fn print(&self) {
        for (name, f) in &self.0 {
            let (dropped, recorded) = f();
            println!("- `{name}`: {dropped} of {recorded} events dropped");
        }
    }
}

/// The NIXL-like baseline against telering with both clocks: every contender makes
/// `calls` calls per thread of its own operation (`nixl_op` or `telering_op`, each
/// recording `events_per_call` events), on `threads` recording threads.
fn against_nixl(
    title: &str,
    threads: usize,
    calls: u64,
    events_per_call: u64,
    nixl_op: impl Fn(&NixlLike, u64) + Copy + Send + Sync + 'static,
    telering_op: impl Fn(&Telemetry, u64) + Copy + Send + Sync + 'static,
) -> (Comparison, Drops) {
    // The same total buffer as the lanes: BUFFER_SIZE per recording thread.
    let (nixl, nixl_flusher) = NixlLike::start(BUFFER_SIZE * threads);
    let real = telering(ClockSource::Realtime, "");
    let fast = telering(ClockSource::RealtimeCoarse, "");
    let n = Arc::clone(&nixl);
    let nixl_workers = Workers::new(threads, move |_| {
        for v in 0..calls {
            nixl_op(&n, v);
        }
    });
    let telering_workers = |t: &Arc<Telemetry>| {
        let t = Arc::clone(t);
        Workers::new(threads, move |_| {
            for v in 0..calls {
                telering_op(&t, v);
            }
        })
    };
    let real_workers = telering_workers(&real);
    let fast_workers = telering_workers(&fast);
    let result = compare(
        title,
        calls * threads as u64,
        rounds(9),
        "nixl-like",
        vec![
            Contender::self_timed("nixl-like", || {
                nixl.flush_between_rounds();
                nixl_workers.round()
            }),
            Contender::self_timed("telering (realtime clock)", || {
                real.flush().unwrap();
                real_workers.round()
            }),
            Contender::self_timed("telering (fast clock, default)", || {
                fast.flush().unwrap();
                fast_workers.round()
            }),
        ],
    );
    if threads > 1 {
        println!(
            "Recording threads running at once, on average (the machine is shared): nixl-like {:.2}, telering realtime {:.2}, fast {:.2}\n",
            nixl_workers.parallelism(),
            real_workers.parallelism(),
            fast_workers.parallelism()
        );
    }
    drop((nixl_workers, real_workers, fast_workers));
    nixl.stop.store(true, Ordering::Relaxed);
    nixl_flusher.join().unwrap();
    let total = calls * events_per_call * threads as u64 * (rounds(9) as u64 + 2);
    let drops = Drops(vec![
        (
            "nixl-like".into(),
            Box::new(move || (nixl.dropped.load(Ordering::Relaxed), total)),
        ),
        stats_of("telering (realtime clock)", real),
        stats_of("telering (fast clock, default)", fast),
    ]);
    (result, drops)
}

fn per_event(threads: usize) -> (Comparison, Drops) {
    against_nixl(
        &format!("Recording one event, {threads} thread(s)"),
        threads,
        EVENTS_PER_THREAD,
        1,
        |n, v| n.update_data(builtin::AGENT_TX_BYTES, black_box(v)),
        |t, v| {
            t.update_tx_bytes(black_box(v));
        },
    )
}

fn stats_of(name: &str, t: Arc<Telemetry>) -> (String, DropCounter) {
    (
        name.to_string(),
        Box::new(move || {
            let s = t.stats();
            (s.events_dropped, s.events_recorded)
        }),
    )
}

fn xfer_stats() -> (Comparison, Drops) {
    const XFER: Duration = Duration::from_micros(40);
    const POST: Duration = Duration::from_micros(3);
    against_nixl(
        "add_xfer_stats (4 events per call), 1 thread",
        1,
        EVENTS_PER_THREAD / 4,
        4,
        |n, v| n.add_xfer_stats(black_box(40), v % 2 == 0, black_box(v), black_box(3)),
        |t, v| {
            t.add_xfer_stats(black_box(XFER), v % 2 == 0, black_box(v), black_box(POST));
        },
    )
}

fn disabled_metric() -> Comparison {
    let (nixl, nixl_flusher) = NixlLike::start(BUFFER_SIZE);
    // The allowlist leaves agent_tx_bytes out.
    let filtered = telering(ClockSource::Realtime, "agent_rx_*, NIXL_ERR_*");
    let off = Arc::new(Telemetry::disabled("bench"));
    let n = Arc::clone(&nixl);
    let nixl_workers = Workers::new(1, move |_| {
        for v in 0..EVENTS_PER_THREAD {
            n.update_data(builtin::AGENT_TX_BYTES, black_box(v));
        }
    });
    let fl = Arc::clone(&filtered);
    let filtered_workers = Workers::new(1, move |_| {
        for v in 0..EVENTS_PER_THREAD {
            black_box(fl.update_tx_bytes(black_box(v)));
        }
    });
    let fc = Arc::clone(&filtered);
    let custom_workers = Workers::new(1, move |_| {
        for v in 0..EVENTS_PER_THREAD {
            black_box(
                fc.record(Category::Custom, black_box("app_queue_depth"), v)
                    .ok(),
            );
        }
    });
    let o = Arc::clone(&off);
    let off_workers = Workers::new(1, move |_| {
        for v in 0..EVENTS_PER_THREAD {
            black_box(o.update_tx_bytes(black_box(v)));
        }
    });
    let result = compare(
        "A metric that is not recorded, 1 thread (baseline: recording it the NIXL way)",
        EVENTS_PER_THREAD,
        rounds(9),
        "nixl-like (recorded)",
        vec![
            Contender::self_timed("nixl-like (recorded)", || {
                nixl.flush_between_rounds();
                nixl_workers.round()
            }),
            Contender::self_timed("telering: built-in metric not in the allowlist", || {
                filtered_workers.round()
            }),
            Contender::self_timed("telering: custom name not in the allowlist", || {
                custom_workers.round()
            }),
            Contender::self_timed("telering: telemetry disabled", || off_workers.round()),
        ],
    );
    drop((nixl_workers, filtered_workers, custom_workers, off_workers));
    nixl.stop.store(true, Ordering::Relaxed);
    nixl_flusher.join().unwrap();
    result
}

/// How fast one flush drains, merges and exports (to `nop`) what `threads` threads
/// recorded: median over the rounds of events per second.
fn flush_rate(threads: usize) -> f64 {
    let t = telering(ClockSource::RealtimeCoarse, "");
    let r = Arc::clone(&t);
    let workers = Workers::new(threads, move |_| {
        for v in 0..EVENTS_PER_THREAD {
            r.update_tx_bytes(v);
        }
    });
    let mut rates = Vec::new();
    for _ in 0..rounds(9) {
        t.flush().unwrap();
        workers.round();
        let start = Instant::now();
        t.flush().unwrap();
        rates.push((EVENTS_PER_THREAD * threads as u64) as f64 / start.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn ns_per_unit(c: &Comparison) {
    for (name, thr, _) in &c.rows {
        println!("- `{name}`: {:.1} ns per call (median)", 1e9 / thr.median);
    }
}

fn main() {
    println!("## telering-std\n");
    for threads in [1, 2] {
        let (c, drops) = per_event(threads);
        println!("{}", c.to_markdown());
        println!("Aggregate throughput over {threads} thread(s). Per thread:");
        for (name, thr, _) in &c.rows {
            println!(
                "- `{name}`: {:.1} ns per event per thread (median)",
                1e9 * threads as f64 / thr.median
            );
        }
        println!("Dropped (all rounds):");
        drops.print();
        println!();
    }
    let (c, drops) = xfer_stats();
    println!("{}", c.to_markdown());
    ns_per_unit(&c);
    println!("Dropped (all rounds):");
    drops.print();
    println!();
    let c = disabled_metric();
    println!("{}", c.to_markdown());
    ns_per_unit(&c);
    println!();
    for threads in [1, 2] {
        println!(
            "Flush of {threads} lane(s) of {EVENTS_PER_THREAD} events (drain, merge, export to `nop`): {:.1} M events/s (median)",
            flush_rate(threads) / 1e6
        );
    }
}
