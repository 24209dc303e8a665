//! telering-std's recording path against models of NIXL's host telemetry, side by
//! side in one run (see `BENCHMARKS.md`).
//!
//! Baselines (`telering_benches::nixl`, models from NIXL's published facts, not its
//! code): `nixl-today`, NIXL's current design — 16-byte events without a timestamp in
//! a mutex-guarded double vector swapped every 100 ms, the cycle-counter stopwatch per
//! transfer — which every ratio is against; and `nixl-earlier`, its earlier design
//! (56-byte events stamped with `SystemTime::now()` in one mutex-guarded vector).
//! `nixl-today + one counter read` is `nixl-today` reading the cycle counter once per
//! call: the anchor of the exact clock's target (no slower than the baseline plus one
//! counter read), measured in the same run instead of estimated.
//!
//! telering-std: one lock-free lane per thread, drained every run interval (100 ms)
//! by the flush thread into an exporter that reads every word of every event. Three
//! configurations: no timestamp (an exporter that declares it needs none, as the
//! 16-byte ring layout does: recording reads no clock), the exact default clock
//! (`auto`: the CPU counter on this machine) and the coarse clock.
//!
//! What is timed is the recording call. A round is a fixed number of calls on every
//! recording thread, which fits the buffers; before each round, untimed, the
//! contender's buffers are flushed (as the flush thread does every 100 ms in a real
//! agent, whose event rate is far below a benchmark loop's), so no event is dropped
//! and the write path is what is measured (the drops are printed to show it).
//! Recording threads are started once per contender and kept across rounds, so lanes
//! and vectors are set up and their pages touched before timing.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use telering_benches::nixl::{self, NixlEarlier, NixlToday};
use telering_benches::{Comparison, Contender, compare, rounds};
use telering_core::builtin;
use telering_core::{Category, Event};
use telering_std::export::{ExportError, Exporter, ExporterContext, ExporterRegistry};
use telering_std::{ClockSource, Recorder, Telemetry};

const EVENTS_PER_THREAD: u64 = 200_000;
const BUFFER_SIZE: usize = 1 << 18;
const RUN_INTERVAL: Duration = nixl::RUN_INTERVAL;
/// The exact clock's anchor: `nixl-today` with one cycle-counter read per call.
const TODAY_PLUS_READ: &str = "nixl-today + one counter read";

/// An exporter that reads every word of every event, with or without timestamps.
#[derive(Debug)]
struct Sink {
    timed: bool,
}

impl Exporter for Sink {
    fn name(&self) -> &str {
        if self.timed { "sink" } else { "sink-untimed" }
    }
    fn needs_timestamps(&self) -> bool {
        self.timed
    }
    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        let sum = batch.iter().fold(0u64, |acc, e| {
            acc ^ e.timestamp_us() ^ e.value() ^ e.raw_category() as u64
        });
        black_box((
            sum,
            batch
                .iter()
                .map(|e| e.name().map_or(0, str::len))
                .sum::<usize>(),
        ));
        Ok(())
    }
    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
    fn shutdown(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}

fn sink(_: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
    Ok(Box::new(Sink { timed: true }))
}

fn sink_untimed(_: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
    Ok(Box::new(Sink { timed: false }))
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

/// A telering configuration under test.
#[derive(Clone, Copy, Debug)]
enum Setup {
    /// No sink needs timestamps: no clock read.
    Untimed,
    /// The default clock (`auto`).
    Exact,
    /// `CLOCK_REALTIME_COARSE`.
    Coarse,
}

impl Setup {
    const ALL: [Setup; 3] = [Setup::Untimed, Setup::Exact, Setup::Coarse];

    fn name(self) -> String {
        match self {
            Setup::Untimed => "telering, no timestamp (16-byte layout)".to_string(),
            Setup::Exact => format!(
                "telering, exact clock (default: {})",
                ClockSource::Auto
                    .resolve(&telering_std::clock::ClockProbe::system())
                    .unwrap()
            ),
            Setup::Coarse => "telering, coarse clock".to_string(),
        }
    }

    fn build(self, metrics: &str) -> Arc<Telemetry> {
        let mut registry = ExporterRegistry::empty();
        registry.register("sink", sink);
        registry.register("sink-untimed", sink_untimed);
        let (exporter, clock) = match self {
            Setup::Untimed => ("sink-untimed", ClockSource::Auto),
            Setup::Exact => ("sink", ClockSource::Auto),
            Setup::Coarse => ("sink", ClockSource::RealtimeCoarse),
        };
        Arc::new(
            Telemetry::builder("bench")
                .registry(registry)
                .enabled(true)
                .exporter(exporter)
                .clock(clock)
                .enabled_metrics(metrics)
                .lane_capacity(BUFFER_SIZE as u32)
                .buffer_size(BUFFER_SIZE as u32)
                .run_interval(RUN_INTERVAL)
                .build()
                .expect("bench telemetry"),
        )
    }
}

/// A recording operation of one contender, called as `op(model, call_index)`.
///
/// Each workload's operations are closures, passed by type rather than as function
/// pointers, so the timed loop calls them directly and they inline into it, as a
/// recording call inlines into an agent's code (and as in the loops
/// `benches/examples/recording_instructions.rs` counts): an indirect call per event
/// would add the same call overhead to every contender and narrow every ratio.
trait Op<M>: Fn(&M, u64) + Copy + Send + Sync + 'static {}
impl<M, F: Fn(&M, u64) + Copy + Send + Sync + 'static> Op<M> for F {}

/// The operation each contender repeats.
struct Workload<T: Op<NixlToday>, E: Op<NixlEarlier>, R: Op<Telemetry>> {
    title: String,
    threads: usize,
    calls: u64,
    events_per_call: u64,
    today: T,
    earlier: E,
    telering: R,
}

/// Runs `w` on both models and every telering setup; ratios against `nixl-today`.
fn against_nixl<T: Op<NixlToday>, E: Op<NixlEarlier>, R: Op<Telemetry>>(
    w: Workload<T, E, R>,
) -> Comparison {
    let capacity = BUFFER_SIZE * w.threads;
    let today = Arc::new(NixlToday::start(capacity));
    let earlier = Arc::new(NixlEarlier::start(capacity));
    let calls = w.calls;
    let (op_today, op_earlier, op_telering) = (w.today, w.earlier, w.telering);
    let t = Arc::clone(&today);
    let today_workers = Workers::new(w.threads, move |_| {
        for v in 0..calls {
            op_today(&t, v);
        }
    });
    // The exact clock's anchor: the same model, plus one counter read per call (what a
    // timestamp costs), its result kept.
    let today_read = Arc::new(NixlToday::start(capacity));
    let t = Arc::clone(&today_read);
    let today_read_workers = Workers::new(w.threads, move |_| {
        for v in 0..calls {
            black_box(t.read_counter());
            op_today(&t, v);
        }
    });
    let e = Arc::clone(&earlier);
    let earlier_workers = Workers::new(w.threads, move |_| {
        for v in 0..calls {
            op_earlier(&e, v);
        }
    });
    let telerings: Vec<(String, Arc<Telemetry>, Workers)> = Setup::ALL
        .iter()
        .map(|setup| {
            let telemetry = setup.build("");
            let t = Arc::clone(&telemetry);
            let workers = Workers::new(w.threads, move |_| {
                for v in 0..calls {
                    op_telering(&t, v);
                }
            });
            (setup.name(), telemetry, workers)
        })
        .collect();
    let mut contenders = vec![
        Contender::self_timed("nixl-today", || {
            today.flush_now();
            today_workers.round()
        }),
        Contender::self_timed(TODAY_PLUS_READ, || {
            today_read.flush_now();
            today_read_workers.round()
        }),
        Contender::self_timed("nixl-earlier design", || {
            earlier.flush_now();
            earlier_workers.round()
        }),
    ];
    for (name, telemetry, workers) in &telerings {
        contenders.push(Contender::self_timed(name.clone(), move || {
            telemetry.flush().unwrap();
            workers.round()
        }));
    }
    let result = compare(
        &w.title,
        calls * w.threads as u64,
        rounds(9),
        "nixl-today",
        contenders,
    );
    println!("{}", result.to_markdown());
    println!("Against `{TODAY_PLUS_READ}` (throughput ÷ its throughput, per round):");
    for (name, _, _) in &telerings {
        if let Some(r) = result.ratio_between(name, TODAY_PLUS_READ) {
            println!("- `{name}`: {:.2}× ({:.2}–{:.2}×)", r.median, r.min, r.max);
        }
    }
    println!();
    per_call(
        &result,
        w.threads,
        if w.events_per_call == 1 {
            "event"
        } else {
            "call"
        },
    );
    println!();
    if w.threads > 1 {
        print!(
            "Recording threads running at once, on average (the machine is shared): nixl-today {:.2}, {TODAY_PLUS_READ} {:.2}, nixl-earlier {:.2}",
            today_workers.parallelism(),
            today_read_workers.parallelism(),
            earlier_workers.parallelism()
        );
        for (name, _, workers) in &telerings {
            print!(", {name} {:.2}", workers.parallelism());
        }
        println!("\n");
    }
    drop((today_workers, today_read_workers, earlier_workers));
    today.stop();
    today_read.stop();
    earlier.stop();
    let total = calls * w.events_per_call * w.threads as u64 * (rounds(9) as u64 + 2);
    println!("Dropped (all rounds):");
    println!(
        "- `nixl-today`: {} of {total} events dropped",
        today.dropped()
    );
    println!(
        "- `{TODAY_PLUS_READ}`: {} of {total} events dropped",
        today_read.dropped()
    );
    println!(
        "- `nixl-earlier design`: {} of {total} events dropped",
        earlier.dropped()
    );
    for (name, telemetry, workers) in telerings {
        drop(workers);
        let s = telemetry.stats();
        println!(
            "- `{name}`: {} of {} events dropped",
            s.events_dropped, s.events_recorded
        );
    }
    result
}

/// The transfer times of the `add_xfer_stats` workload, in microseconds: NIXL's
/// `addXferStats` takes `std::chrono::microseconds`, and so does
/// `Telemetry::add_xfer_stats_us`.
const XFER_US: u64 = 40;
const POST_US: u64 = 3;

/// Recording one event (NIXL's `updateData`, telering's `update_tx_bytes`).
fn one_event(
    threads: usize,
) -> Workload<impl Op<NixlToday>, impl Op<NixlEarlier>, impl Op<Telemetry>> {
    Workload {
        title: format!("Recording one event, {threads} thread(s)"),
        threads,
        calls: EVENTS_PER_THREAD,
        events_per_call: 1,
        today: |n: &NixlToday, v| n.update_data(nixl::kind::TX_BYTES, black_box(v)),
        earlier: |n: &NixlEarlier, v| n.update_data(builtin::AGENT_TX_BYTES, black_box(v)),
        telering: |t: &Telemetry, v| {
            t.update_tx_bytes(black_box(v));
        },
    }
}

/// One `add_xfer_stats` call: four events.
fn xfer_stats() -> Workload<impl Op<NixlToday>, impl Op<NixlEarlier>, impl Op<Telemetry>> {
    Workload {
        title: "add_xfer_stats (4 events per call), 1 thread".to_string(),
        threads: 1,
        calls: EVENTS_PER_THREAD / 4,
        events_per_call: 4,
        today: |n: &NixlToday, v| {
            n.add_xfer_stats(black_box(40), v % 2 == 0, black_box(v), black_box(3))
        },
        earlier: |n: &NixlEarlier, v| {
            n.add_xfer_stats(black_box(40), v % 2 == 0, black_box(v), black_box(3))
        },
        telering: |t: &Telemetry, v| {
            t.add_xfer_stats_us(
                black_box(XFER_US),
                v % 2 == 0,
                black_box(v),
                black_box(POST_US),
            );
        },
    }
}

/// A whole transfer: started, posted, completed (its clock reads and four events).
fn whole_transfer() -> Workload<impl Op<NixlToday>, impl Op<NixlEarlier>, impl Op<Telemetry>> {
    Workload {
        title: "A whole transfer (start, posted, completed: its clock reads + 4 events), 1 thread"
            .to_string(),
        threads: 1,
        calls: EVENTS_PER_THREAD / 4,
        events_per_call: 4,
        today: |n: &NixlToday, v| {
            let mut w = n.start_xfer();
            n.xfer_posted(&mut w);
            n.xfer_completed(&w, v % 2 == 0, black_box(v));
        },
        earlier: |n: &NixlEarlier, v| n.transfer(v % 2 == 0, black_box(v)),
        telering: |t: &Telemetry, v| {
            let mut x = t.start_xfer(v % 2 == 0, black_box(v), 1);
            let _ = t.xfer_posted(&mut x);
            let _ = black_box(t.xfer_completed(&mut x));
        },
    }
}

fn disabled_metric() -> Comparison {
    let today = Arc::new(NixlToday::start(BUFFER_SIZE));
    // The allowlist leaves agent_tx_bytes out.
    let filtered = Setup::Exact.build("agent_rx_*, NIXL_ERR_*");
    let off = Arc::new(Telemetry::disabled("bench"));
    let n = Arc::clone(&today);
    let today_workers = Workers::new(1, move |_| {
        for v in 0..EVENTS_PER_THREAD {
            n.update_data(nixl::kind::TX_BYTES, black_box(v));
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
        "A metric that is not recorded, 1 thread (baseline: nixl-today recording it)",
        EVENTS_PER_THREAD,
        rounds(9),
        "nixl-today (recorded)",
        vec![
            Contender::self_timed("nixl-today (recorded)", || {
                today.flush_now();
                today_workers.round()
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
    drop((today_workers, filtered_workers, custom_workers, off_workers));
    today.stop();
    result
}

/// One recording thread repeating `op` on `telemetry`, `EVENTS_PER_THREAD` calls a round.
fn one_thread(telemetry: &Arc<Telemetry>, op: impl Op<Telemetry>) -> Workers {
    let t = Arc::clone(telemetry);
    Workers::new(1, move |_| {
        for v in 0..EVENTS_PER_THREAD {
            op(&t, v);
        }
    })
}

/// A custom event through a pre-resolved [`telering_std::CustomEvent`] against a
/// built-in metric, with the exact clock and an allowlist of two patterns (which
/// `record_event` and `record` evaluate on every call, the handle once per round of
/// `EVENTS_PER_THREAD` events).
fn custom_event_handle() -> Comparison {
    let telemetry = Setup::Exact.build("agent_*, app_*");
    let builtin_workers = one_thread(&telemetry, |t: &Telemetry, v| {
        black_box(t.update_tx_bytes(black_box(v)));
    });
    let t = Arc::clone(&telemetry);
    let handle_workers = Workers::new(1, move |_| {
        let depth = telering_std::custom_event!(t, Category::Custom, "app_queue_depth");
        for v in 0..EVENTS_PER_THREAD {
            black_box(depth.record(black_box(v)));
        }
    });
    let event_workers = one_thread(&telemetry, |t: &Telemetry, v| {
        const NAME: telering_core::EventName = telering_core::event_name!("app_queue_depth");
        black_box(t.record_event(Category::Custom, &NAME, black_box(v)));
    });
    let str_workers = one_thread(&telemetry, |t: &Telemetry, v| {
        black_box(
            t.record(Category::Custom, black_box("app_queue_depth"), black_box(v))
                .ok(),
        );
    });
    let result = compare(
        "A custom event, 1 thread, exact clock, allowlist `agent_*, app_*` (baseline: a built-in metric)",
        EVENTS_PER_THREAD,
        rounds(9),
        "built-in: update_tx_bytes",
        vec![
            Contender::self_timed("built-in: update_tx_bytes", || {
                telemetry.flush().unwrap();
                builtin_workers.round()
            }),
            Contender::self_timed("custom: CustomEvent::record (resolved once)", || {
                telemetry.flush().unwrap();
                handle_workers.round()
            }),
            Contender::self_timed("custom: record_event (allowlist per call)", || {
                telemetry.flush().unwrap();
                event_workers.round()
            }),
            Contender::self_timed(
                "custom: record(&str) (name check + allowlist per call)",
                || {
                    telemetry.flush().unwrap();
                    str_workers.round()
                },
            ),
        ],
    );
    drop((builtin_workers, handle_workers, event_workers, str_workers));
    let s = telemetry.stats();
    println!("{}", result.to_markdown());
    per_call(&result, 1, "event");
    println!(
        "
Dropped (all rounds): {} of {} events",
        s.events_dropped, s.events_recorded
    );
    result
}

/// How fast one flush drains, converts, merges and exports what `threads` threads
/// recorded with the exact clock: median over the rounds of events per second.
fn flush_rate(threads: usize) -> f64 {
    timed_flushes(&Setup::Exact.build(""), threads, EVENTS_PER_THREAD)
}

/// Median over the rounds of events per second of the flush that follows each round
/// of `threads` threads recording `per_thread` events into `t` (only that flush is
/// timed).
fn timed_flushes(t: &Arc<Telemetry>, threads: usize, per_thread: u64) -> f64 {
    let r = Arc::clone(t);
    let workers = Workers::new(threads, move |_| {
        for v in 0..per_thread {
            r.update_tx_bytes(v);
        }
    });
    let mut rates = Vec::new();
    for _ in 0..rounds(9) {
        t.flush().unwrap();
        workers.round();
        let start = Instant::now();
        t.flush().unwrap();
        rates.push((per_thread * threads as u64) as f64 / start.elapsed().as_secs_f64());
    }
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// How fast one flush drains, converts, merges and writes into a version-1 ring file
/// what `threads` threads recorded with the exact clock (the `buffer` exporter, a
/// file of `BUFFER_SIZE` slots read by nothing): median over the rounds of events
/// per second. The file is drained by no reader, so its `OverwriteOldest` writer keeps
/// writing; only the flush is timed.
fn flush_into_file_rate(threads: usize) -> f64 {
    let dir = std::env::temp_dir().join(format!("telering-bench-flush-{}", std::process::id()));
    let t = Arc::new(
        Telemetry::builder("bench")
            .enabled(true)
            .dir(&dir)
            .exporter("buffer")
            .lane_capacity(BUFFER_SIZE as u32)
            .buffer_size(BUFFER_SIZE as u32)
            .run_interval(Duration::from_secs(3600))
            .build()
            .expect("bench telemetry"),
    );
    let rate = timed_flushes(&t, threads, EVENTS_PER_THREAD / 2);
    drop(t);
    let _ = std::fs::remove_dir_all(&dir);
    rate
}

fn print_flush_rates() {
    for threads in [1, 2] {
        println!(
            "Flush of {threads} lane(s) of {EVENTS_PER_THREAD} events (drain, convert, merge, export): {:.1} M events/s (median)",
            flush_rate(threads) / 1e6
        );
    }
    for threads in [1, 2] {
        println!(
            "Flush into a version-1 ring file, {threads} lane(s) of {} events: {:.1} M events/s (median)",
            EVENTS_PER_THREAD / 2,
            flush_into_file_rate(threads) / 1e6
        );
    }
}

/// One recording thread repeating `op` through a [`Recorder`] of `telemetry`, made on
/// the worker thread at the start of each round (a thread-local lookup and a
/// reference count, once per `calls` calls).
fn one_recorder(telemetry: &Arc<Telemetry>, calls: u64, op: impl Op<Recorder>) -> Workers {
    let t = Arc::clone(telemetry);
    Workers::new(1, move |_| {
        let recorder = t.recorder();
        for v in 0..calls {
            op(&recorder, v);
        }
    })
}

/// The same calls through a thread's [`Recorder`] and through the [`Telemetry`], one
/// thread, without timestamps and with the exact clock; ratios against the
/// `Telemetry` of the same setup (`TELERING_BENCH_SECTION=recorder`).
fn recorder_against_telemetry() {
    recorder_pair(
        "one event",
        EVENTS_PER_THREAD,
        |t: &Telemetry, v| {
            black_box(t.update_tx_bytes(black_box(v)));
        },
        |r: &Recorder, v| {
            black_box(r.update_tx_bytes(black_box(v)));
        },
    );
    recorder_pair(
        "add_xfer_stats",
        EVENTS_PER_THREAD / 4,
        |t: &Telemetry, v| {
            black_box(t.add_xfer_stats_us(
                black_box(XFER_US),
                v % 2 == 0,
                black_box(v),
                black_box(POST_US),
            ));
        },
        |r: &Recorder, v| {
            black_box(r.add_xfer_stats_us(
                black_box(XFER_US),
                v % 2 == 0,
                black_box(v),
                black_box(POST_US),
            ));
        },
    );
    recorder_pair(
        "whole transfer",
        EVENTS_PER_THREAD / 4,
        |t: &Telemetry, v| {
            let mut x = t.start_xfer(v % 2 == 0, black_box(v), 1);
            let _ = t.xfer_posted(&mut x);
            let _ = black_box(t.xfer_completed(&mut x));
        },
        |r: &Recorder, v| {
            let mut x = r.start_xfer(v % 2 == 0, black_box(v), 1);
            let _ = r.xfer_posted(&mut x);
            let _ = black_box(r.xfer_completed(&mut x));
        },
    );
}

/// One workload of [`recorder_against_telemetry`], both setups.
fn recorder_pair(
    what: &str,
    calls: u64,
    through_telemetry: impl Op<Telemetry>,
    through_recorder: impl Op<Recorder>,
) {
    for setup in [Setup::Untimed, Setup::Exact] {
        let telemetry = setup.build("");
        let t = Arc::clone(&telemetry);
        let telemetry_workers = Workers::new(1, move |_| {
            for v in 0..calls {
                through_telemetry(&t, v);
            }
        });
        let recorder_workers = one_recorder(&telemetry, calls, through_recorder);
        let name = setup.name();
        let contenders = vec![
            Contender::self_timed("Telemetry", || {
                telemetry.flush().unwrap();
                telemetry_workers.round()
            }),
            Contender::self_timed("Recorder", || {
                telemetry.flush().unwrap();
                recorder_workers.round()
            }),
        ];
        let title = format!("{what} through a Recorder vs the Telemetry, {name}, 1 thread");
        let result = compare(&title, calls, rounds(9), "Telemetry", contenders);
        println!("{}", result.to_markdown());
        per_call(&result, 1, "call");
        drop((telemetry_workers, recorder_workers));
        let s = telemetry.stats();
        println!(
            "Dropped: {} of {} events\n",
            s.events_dropped, s.events_recorded
        );
    }
}

fn per_call(c: &Comparison, threads: usize, unit: &str) {
    println!("Per {unit} per thread (median):");
    for (name, thr, _) in &c.rows {
        println!("- `{name}`: {:.1} ns", 1e9 * threads as f64 / thr.median);
    }
}

fn main() {
    match std::env::var("TELERING_BENCH_SECTION").as_deref() {
        Ok("custom") => return drop(custom_event_handle()),
        Ok("flush") => return print_flush_rates(),
        Ok("recorder") => return recorder_against_telemetry(),
        _ => {}
    }
    println!("## telering-std\n");
    for threads in [1, 2] {
        against_nixl(one_event(threads));
        println!();
    }
    against_nixl(xfer_stats());
    println!();
    against_nixl(whole_transfer());
    println!();
    let c = disabled_metric();
    println!("{}", c.to_markdown());
    per_call(&c, 1, "call");
    println!();
    custom_event_handle();
    println!();
    recorder_against_telemetry();
    print_flush_rates();
}
