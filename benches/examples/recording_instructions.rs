//! The recording workloads of `benches/std_recording.rs`, one function per
//! (workload, contender), for counting instructions with callgrind:
//!
//! ```text
//! benches/callgrind.sh        # builds this with `--features callgrind`, runs it, prints the table
//! ```
//!
//! One process runs one `measure_*` function: [`CALLS`] calls of one workload after
//! a warm-up outside it (so lane registration is not counted). The script collects
//! only inside that function (`--toggle-collect`), once as is and once with the
//! contender's clock functions toggled off too, and divides by [`CALLS`]. telering
//! reads the counter inline (`rdtsc`, 3 instructions), which cannot be toggled off;
//! the script subtracts 3 per read.
//!
//! Contenders: `nixl-today` and `nixl-earlier` (`telering_benches::nixl`), telering
//! with no timestamp (an exporter that needs none: no clock read), and telering with
//! the CPU counter forced on (`TELERING_CLOCK=tsc` semantics through an injected
//! probe, since valgrind's emulated CPU does not report an invariant TSC); and the
//! same two through a thread's [`Recorder`] (`recorder-untimed`, `recorder-tsc`).

use std::hint::black_box;
use telering_benches::nixl::{self, NixlEarlier, NixlToday};
use telering_core::builtin::ErrorStatus;
use telering_core::{Event, builtin};
use telering_std::clock::ClockProbe;
use telering_std::export::{ExportError, Exporter, ExporterContext, ExporterRegistry};
use telering_std::route::{MemoryType, Operation, Route, RouteId};
use telering_std::{ClockSource, Recorder, Telemetry};

/// Calls per measured function.
pub const CALLS: u64 = 50_000;

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
        black_box(
            batch
                .iter()
                .fold(0, |a, e| a ^ e.value() ^ e.timestamp_us()),
        );
        Ok(())
    }
    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
    fn shutdown(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}

fn telering(timed: bool) -> Telemetry {
    let mut registry = ExporterRegistry::empty();
    registry.register("timed", |_: &ExporterContext| Ok(Box::new(Sink(true))));
    registry.register("untimed", |_: &ExporterContext| Ok(Box::new(Sink(false))));
    Telemetry::builder("instructions")
        .registry(registry)
        .enabled(true)
        .exporter(if timed { "timed" } else { "untimed" })
        .clock(ClockSource::Tsc)
        .clock_probe(ClockProbe::trusting_counter())
        .lane_capacity(1 << 18)
        .build()
        .expect("telemetry")
}

/// The transfer times passed to `add_xfer_stats_us`, as NIXL's model takes them
/// (microseconds).
const XFER_US: u64 = 40;
const POST_US: u64 = 3;

#[inline(never)]
fn measure_event_today(n: &NixlToday) {
    for v in 0..CALLS {
        n.update_data(nixl::kind::TX_BYTES, black_box(v));
    }
}

#[inline(never)]
fn measure_stats_today(n: &NixlToday) {
    for v in 0..CALLS {
        n.add_xfer_stats(black_box(40), v % 2 == 0, black_box(v), black_box(3));
    }
}

#[inline(never)]
fn measure_transfer_today(n: &NixlToday) {
    for v in 0..CALLS {
        let mut w = n.start_xfer();
        n.xfer_posted(&mut w);
        n.xfer_completed(&w, v % 2 == 0, black_box(v));
    }
}

#[inline(never)]
fn measure_event_earlier(n: &NixlEarlier) {
    for v in 0..CALLS {
        n.update_data(builtin::AGENT_TX_BYTES, black_box(v));
    }
}

#[inline(never)]
fn measure_stats_earlier(n: &NixlEarlier) {
    for v in 0..CALLS {
        n.add_xfer_stats(black_box(40), v % 2 == 0, black_box(v), black_box(3));
    }
}

#[inline(never)]
fn measure_transfer_earlier(n: &NixlEarlier) {
    for v in 0..CALLS {
        n.transfer(v % 2 == 0, black_box(v));
    }
}

#[inline(never)]
fn measure_event_telering(t: &Telemetry) {
    for v in 0..CALLS {
        black_box(t.update_tx_bytes(black_box(v)));
    }
}

#[inline(never)]
fn measure_stats_telering(t: &Telemetry) {
    for v in 0..CALLS {
        black_box(t.add_xfer_stats_us(
            black_box(XFER_US),
            v % 2 == 0,
            black_box(v),
            black_box(POST_US),
        ));
    }
}

#[inline(never)]
fn measure_transfer_telering(t: &Telemetry) {
    for v in 0..CALLS {
        let mut x = t.start_xfer(v % 2 == 0, black_box(v), 1);
        let _ = t.xfer_posted(&mut x);
        let _ = black_box(t.xfer_completed(&mut x));
    }
}

#[inline(never)]
fn measure_event_recorder(r: &Recorder) {
    for v in 0..CALLS {
        black_box(r.update_tx_bytes(black_box(v)));
    }
}

#[inline(never)]
fn measure_stats_recorder(r: &Recorder) {
    for v in 0..CALLS {
        black_box(r.add_xfer_stats_us(
            black_box(XFER_US),
            v % 2 == 0,
            black_box(v),
            black_box(POST_US),
        ));
    }
}

#[inline(never)]
fn measure_transfer_recorder(r: &Recorder) {
    for v in 0..CALLS {
        let mut x = r.start_xfer(v % 2 == 0, black_box(v), 1);
        let _ = r.xfer_posted(&mut x);
        let _ = black_box(r.xfer_completed(&mut x));
    }
}

/// Two routes, a write and a read, as the route workloads alternate them.
fn routes(t: &Telemetry) -> [RouteId; 2] {
    let w = Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        "decode-0",
    );
    let r = Route::new(
        Operation::Read,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        "decode-0",
    );
    [t.route(&w).expect("route"), t.route(&r).expect("route")]
}

#[inline(never)]
fn measure_event_route(t: &Telemetry, routes: [RouteId; 2]) {
    for v in 0..CALLS {
        let route = routes[(v % 2) as usize];
        black_box(t.update_route_error_count(black_box(route), ErrorStatus::Backend));
    }
}

#[inline(never)]
fn measure_stats_route(t: &Telemetry, w: RouteId, r: RouteId) {
    for v in 0..CALLS {
        let route = if v % 2 == 0 { w } else { r };
        black_box(t.add_route_xfer_stats_us(
            route,
            black_box(XFER_US),
            black_box(v),
            black_box(POST_US),
            1,
        ));
    }
}

#[inline(never)]
fn measure_transfer_route(t: &Telemetry, w: RouteId, r: RouteId) {
    for v in 0..CALLS {
        let route = if v % 2 == 0 { w } else { r };
        let mut x = t.start_route_xfer(route, black_box(v), 1);
        let _ = t.route_xfer_posted(&mut x);
        let _ = black_box(t.route_xfer_completed(&mut x));
    }
}

#[inline(never)]
fn measure_stats_recorder_route(rec: &Recorder, w: RouteId, r: RouteId) {
    for v in 0..CALLS {
        let route = if v % 2 == 0 { w } else { r };
        black_box(rec.add_route_xfer_stats_us(
            route,
            black_box(XFER_US),
            black_box(v),
            black_box(POST_US),
            1,
        ));
    }
}

#[inline(never)]
fn measure_transfer_recorder_route(rec: &Recorder, w: RouteId, r: RouteId) {
    for v in 0..CALLS {
        let route = if v % 2 == 0 { w } else { r };
        let mut x = rec.start_route_xfer(route, black_box(v), 1);
        let _ = rec.route_xfer_posted(&mut x);
        let _ = black_box(rec.route_xfer_completed(&mut x));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (which, workload) = match args.as_slice() {
        [_, c, w] => (c.as_str(), w.as_str()),
        _ => ("", ""),
    };
    let capacity = 1 << 20;
    match (which, workload) {
        ("nixl-today", w) => {
            let n = NixlToday::start(capacity);
            n.update_data(0, 0);
            n.start_xfer();
            match w {
                "event" => measure_event_today(&n),
                "stats" => measure_stats_today(&n),
                _ => measure_transfer_today(&n),
            }
            n.stop();
        }
        ("nixl-earlier", w) => {
            let n = NixlEarlier::start(capacity);
            n.update_data(builtin::AGENT_TX_BYTES, 0);
            match w {
                "event" => measure_event_earlier(&n),
                "stats" => measure_stats_earlier(&n),
                _ => measure_transfer_earlier(&n),
            }
            n.stop();
        }
        ("telering-untimed" | "telering-tsc", w) => {
            let t = telering(which == "telering-tsc");
            t.update_tx_bytes(0);
            match w {
                "event" => measure_event_telering(&t),
                "stats" => measure_stats_telering(&t),
                _ => measure_transfer_telering(&t),
            }
            assert_eq!(t.stats().events_dropped, 0, "the lanes hold every event");
        }
        ("recorder-untimed" | "recorder-tsc", w) => {
            let t = telering(which == "recorder-tsc");
            let r = t.recorder();
            r.update_tx_bytes(0);
            match w {
                "event" => measure_event_recorder(&r),
                "stats" => measure_stats_recorder(&r),
                _ => measure_transfer_recorder(&r),
            }
            assert_eq!(t.stats().events_dropped, 0, "the lanes hold every event");
        }
        ("route-untimed" | "route-tsc", w) => {
            let t = telering(which == "route-tsc");
            let routes = routes(&t);
            t.update_tx_bytes(0);
            match w {
                "event" => measure_event_route(&t, routes),
                "stats" => measure_stats_route(&t, routes[0], routes[1]),
                _ => measure_transfer_route(&t, routes[0], routes[1]),
            }
            assert_eq!(t.stats().events_dropped, 0, "the lanes hold every event");
        }
        ("recorder-route-untimed" | "recorder-route-tsc", w) => {
            let t = telering(which == "recorder-route-tsc");
            let routes = routes(&t);
            let r = t.recorder();
            r.update_tx_bytes(0);
            match w {
                "stats" => measure_stats_recorder_route(&r, routes[0], routes[1]),
                _ => measure_transfer_recorder_route(&r, routes[0], routes[1]),
            }
            assert_eq!(t.stats().events_dropped, 0, "the lanes hold every event");
        }
        _ => {
            eprintln!(
                "usage: recording_instructions nixl-today|nixl-earlier|telering-untimed|telering-tsc|recorder-untimed|recorder-tsc|route-untimed|route-tsc|recorder-route-untimed|recorder-route-tsc event|stats|transfer"
            );
            std::process::exit(2);
        }
    }
}
