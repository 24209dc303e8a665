//! Drops on a busy machine: two recording threads against as many competing
//! processes that burn every core, so that the flush thread is starved as it is on a
//! crowded host (see `BENCHMARKS.md`). Reports events dropped, not times.
//!
//! Contenders, each with the same event capacity and the same memory for buffered
//! events (2 × 2¹⁸ events of 16 bytes): `nixl-today`, the model of NIXL's current
//! design (one mutex-guarded staging vector of 2¹⁹ 16-byte events, swapped every
//! 100 ms by its flush thread; `telering_benches::nixl`), and telering-std with one
//! lane of 2¹⁸ 16-byte records per thread, drained every 100 ms, without timestamps
//! and with the exact clock; and with the exact clock and lanes of 2¹⁹ records, which
//! take half the memory 56-byte lanes of 2¹⁸ took before lanes carried records. A round records for `ROUND` on both threads at a steady
//! rate (`RATE` events per second per thread, an agent's busy burst, not a benchmark
//! loop's maximum), then waits a run interval and counts. Rounds alternate between
//! contenders, so each sees the same competitors.
//!
//! Run: `cargo bench -p telering-benches --bench busy_drops` (rounds:
//! `TELERING_BENCH_ROUNDS`, default 7).

use std::process::{Child, Command};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use telering_benches::nixl::{self, NixlToday};
use telering_benches::rounds;
use telering_core::Event;
use telering_std::export::{ExportError, Exporter, ExporterContext, ExporterRegistry};
use telering_std::{ClockSource, Telemetry};

const THREADS: usize = 2;
const LANE: usize = 1 << 18;
const ROUND: Duration = Duration::from_secs(2);
/// Events per second per thread: 1 M, 100 000 per run interval, which a lane of 2¹⁸
/// (and the model's shared vector of 2¹⁹) holds with room to spare when the flush
/// runs on time: what drops is what a starved flush thread lets overflow.
const RATE: u64 = 1_000_000;
const BURNER: &str = "TELERING_BUSY_DROPS_BURNER";

/// An exporter that reads every word of every event.
#[derive(Debug)]
struct Sink(bool);

impl Exporter for Sink {
    fn name(&self) -> &str {
        "sink"
    }
    fn needs_timestamps(&self) -> bool {
        self.0
    }
    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        let sum = batch
            .iter()
            .fold(0u64, |acc, e| acc ^ e.timestamp_us() ^ e.value());
        std::hint::black_box(sum);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
    fn shutdown(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}

fn telemetry(timed: bool, lane: usize) -> Telemetry {
    let mut registry = ExporterRegistry::empty();
    if timed {
        registry.register("sink", |_: &ExporterContext| Ok(Box::new(Sink(true))));
    } else {
        registry.register("sink", |_: &ExporterContext| Ok(Box::new(Sink(false))));
    }
    Telemetry::builder("busy")
        .registry(registry)
        .enabled(true)
        .exporter("sink")
        .clock(ClockSource::Auto)
        .lane_capacity(lane as u32)
        .buffer_size(LANE as u32)
        .run_interval(nixl::RUN_INTERVAL)
        .build()
        .expect("bench telemetry")
}

/// Runs `record(thread, value)` on `THREADS` threads at `RATE` per second each for
/// `ROUND`; returns the events recorded.
fn paced(record: impl Fn(u64) + Sync) -> u64 {
    let per_ms = RATE / 1000;
    thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let record = &record;
                s.spawn(move || {
                    let start = Instant::now();
                    let mut sent = 0u64;
                    while start.elapsed() < ROUND {
                        // Catch up to the schedule in bursts of at most one ms.
                        let due = (start.elapsed().as_micros() as u64 * per_ms) / 1000;
                        let burst = due.saturating_sub(sent).min(per_ms);
                        for v in 0..burst {
                            record(sent + v);
                        }
                        sent += burst;
                        if burst == 0 {
                            thread::yield_now();
                        }
                    }
                    sent
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

fn burners() -> Vec<Child> {
    let exe = std::env::current_exe().expect("own path");
    let cores = thread::available_parallelism().map_or(2, |n| n.get());
    (0..cores)
        .map(|_| {
            Command::new(&exe)
                .env(BURNER, "1")
                .spawn()
                .expect("competing process")
        })
        .collect()
}

fn burn() -> ! {
    let mut x = 1u64;
    loop {
        x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
}

fn summary(name: &str, mut drops: Vec<(u64, u64)>) {
    drops.sort_by_key(|&(d, _)| d);
    let total_dropped: u64 = drops.iter().map(|d| d.0).sum();
    let total: u64 = drops.iter().map(|d| d.1).sum();
    let (min, med, max) = (
        drops[0].0,
        drops[drops.len() / 2].0,
        drops[drops.len() - 1].0,
    );
    println!(
        "| {name} | {med} | {min}–{max} | {total_dropped} of {total} ({:.3} %) |",
        100.0 * total_dropped as f64 / total.max(1) as f64
    );
}

fn main() {
    if std::env::var_os(BURNER).is_some() {
        burn();
    }
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // `cargo test --benches` lists nothing here
    }
    let n = rounds(7);
    let mut competitors = burners();
    let (mut today_drops, mut untimed_drops, mut exact_drops, mut exact_big_drops) =
        (vec![], vec![], vec![], vec![]);
    for _ in 0..n {
        let today = Arc::new(NixlToday::start(LANE * THREADS));
        let recorded = paced(|v| today.update_data(nixl::kind::TX_BYTES, v));
        thread::sleep(nixl::RUN_INTERVAL * 2);
        today.stop();
        today_drops.push((today.dropped(), recorded));
        for (timed, lane, out) in [
            (false, LANE, &mut untimed_drops),
            (true, LANE, &mut exact_drops),
            (true, 2 * LANE, &mut exact_big_drops),
        ] {
            let t = telemetry(timed, lane);
            paced(|v| {
                t.update_tx_bytes(v);
            });
            let s = t.stats();
            out.push((s.events_dropped, s.events_recorded));
        }
    }
    for c in &mut competitors {
        let _ = c.kill();
        let _ = c.wait();
    }
    println!(
        "## Drops with {} competing processes burning every core ({THREADS} recording threads, {} M events/s each, {} s rounds, {n} rounds)\n",
        competitors.len(),
        RATE / 1_000_000,
        ROUND.as_secs()
    );
    println!("| contender | dropped per round, median | min–max | all rounds |\n|---|---|---|---|");
    summary("nixl-today", today_drops);
    summary("telering, no timestamp", untimed_drops);
    summary("telering, exact clock", exact_drops);
    summary(
        "telering, exact clock, lanes of 2¹⁹ (8 MiB each; 56-byte lanes of 2¹⁸ took 14 MiB)",
        exact_big_drops,
    );
}
