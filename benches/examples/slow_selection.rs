//! What keeping each route's slowest transfers costs the flush, for counting
//! instructions with callgrind:
//!
//! ```text
//! benches/slow_selection.sh   # builds this with `--features callgrind`, runs it, prints the table
//! ```
//!
//! The recording thread pays nothing for the choice (it records a route's transfer the
//! same whether it is kept or not); the flush, which drains every record anyway, makes
//! it. One process records [`ROUNDS`] × [`PER_ROUND`] transfers on one route, flushing
//! on its own thread after each round, and the script collects only inside
//! [`measure_flush`] (`--toggle-collect`), so the figure is the flush's whole work per
//! transfer: draining its four records, the route's totals and histograms, the events
//! handed to the exporter, and the choice. Modes:
//!
//! - `none`: nothing kept (`slow_xfers_kept(0)`): the flush without the choice;
//! - `passed`: K = 8, every transfer faster than the 8 kept (times falling), so all
//!   but the first 8 of a round are compared once and passed over;
//! - `kept`: K = 8, every transfer slower than all kept (times rising), so each one
//!   enters the kept set and pushes the fastest out.

use std::hint::black_box;
use telering_core::Event;
use telering_std::clock::ClockProbe;
use telering_std::export::{ExportError, Exporter, ExporterContext, ExporterRegistry};
use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{ClockSource, Telemetry};

/// Flushes per process.
pub const ROUNDS: u64 = 20;
/// Transfers recorded between two flushes.
pub const PER_ROUND: u64 = 5_000;

#[derive(Debug)]
struct Sink;

impl Exporter for Sink {
    fn name(&self) -> &str {
        "sink"
    }
    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        black_box(batch.iter().fold(0, |a, e| a ^ e.value()));
        Ok(())
    }
    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
    fn shutdown(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}

#[inline(never)]
fn measure_flush(t: &Telemetry) {
    t.flush().expect("the sink takes every batch");
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let (keep, rising) = match mode.as_str() {
        "none" => (0, true),
        "passed" => (8, false),
        "kept" => (8, true),
        _ => {
            eprintln!("usage: slow_selection none|passed|kept");
            std::process::exit(2);
        }
    };
    let mut registry = ExporterRegistry::empty();
    registry.register("sink", |_: &ExporterContext| Ok(Box::new(Sink)));
    let t = Telemetry::builder("selection")
        .registry(registry)
        .enabled(true)
        .exporter("sink")
        .clock(ClockSource::Tsc)
        .clock_probe(ClockProbe::trusting_counter())
        .lane_capacity(1 << 16)
        .early_flush(false)
        .run_interval(std::time::Duration::from_secs(3600))
        .slow_xfers_kept(keep)
        .build()
        .expect("telemetry");
    let route = Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        "peer",
    );
    let route = t.route(&route).expect("a route");
    for _ in 0..ROUNDS {
        for i in 0..PER_ROUND {
            let us = if rising { 10 + i } else { 10 + PER_ROUND - i };
            black_box(t.add_route_xfer_stats_us(route, us, 4096, 2, 1));
        }
        measure_flush(&t);
    }
    let stats = t.stats();
    assert_eq!(stats.events_dropped, 0, "the lane holds every round");
    assert_eq!(stats.events_recorded, 4 * ROUNDS * PER_ROUND);
}
