//! Routes: exact per-route sums from many threads, the bound and folding, the slow
//! transfers kept, and the events a route-less reader sees.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use telering_core::Event;
use telering_core::builtin::ErrorStatus;
use telering_std::export::{ExportError, Exporter, ExporterContext};
use telering_std::route::{MemoryType, Operation, Route, RouteReport};
use telering_std::{EnvSource, Recorded, Telemetry, TelemetryBuilder};

fn ucx(peer: &str) -> Route {
    Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        peer,
    )
}

fn posix_read() -> Route {
    Route::new(
        Operation::Read,
        "POSIX",
        MemoryType::Dram,
        MemoryType::File,
        "",
    )
}

/// Keeps every event and the last route report.
#[derive(Clone, Default)]
struct Seen {
    events: Arc<Mutex<Vec<Event>>>,
    routes: Arc<Mutex<Option<RouteReport>>>,
}

struct Keeping(Seen);

impl Exporter for Keeping {
    fn name(&self) -> &str {
        "keeping"
    }
    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        self.0.events.lock().unwrap().extend_from_slice(batch);
        Ok(())
    }
    fn export_routes(&mut self, report: &RouteReport) -> Result<(), ExportError> {
        *self.0.routes.lock().unwrap() = Some(report.clone());
        Ok(())
    }
    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
    fn shutdown(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}

fn keeping(builder: TelemetryBuilder) -> (Telemetry, Seen) {
    let seen = Seen::default();
    let s = seen.clone();
    let mut builder = builder.enabled(true).exporter("keeping");
    builder
        .registry_mut()
        .register("keeping", move |_: &ExporterContext| {
            Ok(Box::new(Keeping(s.clone())) as Box<dyn Exporter>)
        });
    let t = builder.build().unwrap();
    (t, seen)
}

/// Sums of values per event name.
fn sums(events: &[Event]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for e in events {
        *m.entry(e.name().unwrap().to_string()).or_default() += e.value();
    }
    m
}

#[test]
fn every_route_counts_exact_sums_from_many_threads() {
    let (t, _) = keeping(Telemetry::builder("a").buffer_size(1 << 16));
    let peers: Vec<_> = (0..4)
        .map(|p| t.route(&ucx(&format!("d{p}"))).unwrap())
        .collect();
    let file = t.route(&posix_read()).unwrap();
    std::thread::scope(|s| {
        for (th, &route) in peers.iter().enumerate() {
            let t = &t;
            s.spawn(move || {
                let rec = t.recorder();
                for i in 0..1000u64 {
                    let r = if i % 2 == 0 {
                        rec.add_route_xfer_stats_us(route, 10 + i, 100 + th as u64, 2, 3)
                    } else {
                        let mut x = rec.start_route_xfer(route, 100 + th as u64, 3);
                        rec.route_xfer_posted(&mut x).unwrap();
                        rec.route_xfer_completed(&mut x).unwrap()
                    };
                    assert_eq!(r, Recorded::Written);
                    assert_eq!(
                        t.add_route_xfer_stats_us(file, 5, 7, 1, 1),
                        Recorded::Written
                    );
                }
                assert_eq!(
                    rec.update_route_error_count(route, ErrorStatus::Backend),
                    Recorded::Written
                );
            });
        }
    });
    t.flush().unwrap();
    let report = t.route_report();
    assert_eq!(report.routes.len(), 5);
    for (route, stats) in &report.routes {
        if route.backend == "POSIX" {
            assert_eq!(
                (stats.transfers, stats.bytes, stats.descriptors),
                (4000, 28_000, 4000)
            );
            assert_eq!(stats.xfer_time.sum_us, 20_000);
            assert_eq!(stats.errors, [0; 12]);
        } else {
            let th: u64 = route.peer[1..].parse().unwrap();
            assert_eq!((stats.transfers, stats.bytes), (1000, 1000 * (100 + th)));
            assert_eq!(stats.descriptors, 3000);
            assert_eq!(
                (stats.xfer_time.count(), stats.post_time.count()),
                (1000, 1000)
            );
            assert_eq!(stats.errors[ErrorStatus::Backend as usize], 1);
        }
    }
    assert_eq!(t.stats().events_dropped, 0);
}

#[test]
fn a_route_less_reader_sees_the_events_it_would_see_without_routes() {
    let (with, seen_with) = keeping(Telemetry::builder("a"));
    let (without, seen_without) = keeping(Telemetry::builder("b"));
    let w = with.route(&ucx("p")).unwrap();
    let r = with.route(&posix_read()).unwrap();
    with.add_route_xfer_stats_us(w, 120, 4096, 4, 9);
    with.add_route_xfer_stats_us(r, 30, 512, 2, 1);
    with.update_route_error_count(w, ErrorStatus::RemoteDisconnect);
    without.add_xfer_stats_us(120, true, 4096, 4);
    without.add_xfer_stats_us(30, false, 512, 2);
    without.update_error_count(ErrorStatus::RemoteDisconnect);
    drop((with, without));
    let a = seen_with.events.lock().unwrap().clone();
    let b = seen_without.events.lock().unwrap().clone();
    assert_eq!(sums(&a)["agent_tx_requests_num"], 1);
    let key = |e: &Event| {
        (
            e.category().unwrap(),
            e.name().unwrap().to_string(),
            e.value(),
        )
    };
    let mut a: Vec<_> = a.iter().map(key).collect();
    let mut b: Vec<_> = b.iter().map(key).collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert_eq!(a.len(), 9);
}

#[test]
fn routes_beyond_the_bound_fold_into_other_and_are_counted() {
    let (t, seen) = keeping(Telemetry::builder("a").routes_max(3));
    let ids: Vec<_> = (0..10)
        .map(|p| t.route(&ucx(&format!("p{p}"))).unwrap())
        .collect();
    assert!(ids[..3].iter().all(|r| !r.is_other()));
    assert!(ids[3..].iter().all(|r| r.is_other()));
    // The same folded route asked again counts once.
    assert!(t.route(&ucx("p9")).unwrap().is_other());
    let read = t.route(&posix_read()).unwrap();
    assert!(read.is_other() && read.operation() == Operation::Read);
    assert_eq!(t.routes_folded(), 8);
    for r in &ids {
        t.add_route_xfer_stats_us(*r, 10, 100, 1, 1);
    }
    t.add_route_xfer_stats_us(read, 10, 5, 1, 1);
    t.flush().unwrap();
    let report = seen.routes.lock().unwrap().clone().unwrap();
    assert_eq!(report.folded, 8);
    let by_peer: BTreeMap<_, _> = report
        .routes
        .iter()
        .map(|(r, s)| ((r.peer.clone(), r.operation), (s.transfers, s.bytes)))
        .collect();
    assert_eq!(by_peer[&("other".to_string(), Operation::Write)], (7, 700));
    assert_eq!(by_peer[&("other".to_string(), Operation::Read)], (1, 5));
    assert_eq!(by_peer[&("p0".to_string(), Operation::Write)], (1, 100));
    assert_eq!(by_peer.len(), 5);
}

#[test]
fn each_interval_keeps_the_k_slowest_transfers_of_each_route_whole() {
    let (t, seen) = keeping(Telemetry::builder("a").slow_xfers_kept(2));
    let fast = t.route(&ucx("fast")).unwrap();
    let slow = t.route(&ucx("slow")).unwrap();
    for i in 0..50u64 {
        t.add_route_xfer_stats_us(fast, 10 + i, 1000 + i, 1, i);
        t.add_route_xfer_stats_us(slow, 5000 + i, 2000 + i, 7, i);
    }
    t.flush().unwrap();
    let report = seen.routes.lock().unwrap().clone().unwrap();
    let kept: Vec<_> = report
        .slow
        .iter()
        .map(|(r, x)| {
            (
                r.peer.as_str(),
                x.xfer_us,
                x.bytes,
                x.descriptors,
                x.post_us,
            )
        })
        .collect();
    assert_eq!(
        kept,
        [
            ("slow", 5049, 2049, 49, 7),
            ("slow", 5048, 2048, 48, 7),
            ("fast", 59, 1049, 49, 1),
            ("fast", 58, 1048, 48, 1),
        ]
    );
    let now = telering_std::ClockSource::Realtime.now_us();
    assert!(
        report
            .slow
            .iter()
            .all(|(_, x)| x.start_us > 0 && x.start_us <= now)
    );
    // The next interval starts empty.
    t.add_route_xfer_stats_us(fast, 3, 1, 1, 1);
    t.flush().unwrap();
    let report = seen.routes.lock().unwrap().clone().unwrap();
    assert_eq!(report.slow.len(), 1);
    assert_eq!(report.slow[0].1.xfer_us, 3);
}

#[test]
fn the_allowlist_applies_to_route_events_and_their_totals() {
    let (t, seen) =
        keeping(Telemetry::builder("a").enabled_metrics("agent_tx_bytes,agent_xfer_time"));
    let w = t.route(&ucx("p")).unwrap();
    assert_eq!(
        t.add_route_xfer_stats_us(w, 10, 4096, 2, 1),
        Recorded::Written
    );
    assert_eq!(
        t.update_route_error_count(w, ErrorStatus::Backend),
        Recorded::Filtered
    );
    t.flush().unwrap();
    let events = seen.events.lock().unwrap().clone();
    assert_eq!(
        sums(&events),
        BTreeMap::from([
            ("agent_tx_bytes".into(), 4096),
            ("agent_xfer_time".into(), 10)
        ])
    );
    let report = seen.routes.lock().unwrap().clone().unwrap();
    let stats = &report.routes[0].1;
    assert_eq!(
        (stats.bytes, stats.transfers, stats.xfer_time.count()),
        (4096, 0, 1)
    );
    assert_eq!(report.slow[0].1.bytes, 4096);
}

#[test]
fn route_names_are_checked_and_shown_escaped() {
    let t = Telemetry::builder("a")
        .enabled(true)
        .exporter("nop")
        .build()
        .unwrap();
    let long = ucx(&"x".repeat(65));
    assert_eq!(
        t.route(&long).unwrap_err().to_string(),
        "route peer name is 65 bytes; at most 64 are kept"
    );
    let empty = Route::new(Operation::Read, "", MemoryType::Dram, MemoryType::Dram, "p");
    assert!(t.route(&empty).is_err());
    let hostile = ucx("a\u{1b}[31mb\n<i>");
    assert!(t.route(&hostile).is_ok());
    let shown = hostile.to_string();
    assert!(
        !shown.contains('\u{1b}') && !shown.contains('\n'),
        "{shown}"
    );
}

#[test]
fn route_variables_out_of_range_are_refused_by_name() {
    for (var, value) in [
        ("TELERING_ROUTES_MAX", "0"),
        ("TELERING_ROUTES_MAX", "many"),
        ("TELERING_SLOW_XFERS", "1025"),
        ("TELERING_SLOW_XFERS", "-1"),
    ] {
        let env = EnvSource::from_pairs([(var, value)]);
        let e = TelemetryBuilder::from_env("a", &env).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("{var}={value} is not a number")),
            "{e}"
        );
    }
    let env = EnvSource::from_pairs([("TELERING_ROUTES_MAX", "2"), ("TELERING_SLOW_XFERS", "0")]);
    let config = TelemetryBuilder::from_env("a", &env)
        .unwrap()
        .resolve()
        .unwrap();
    assert_eq!((config.routes.max, config.routes.slow_kept), (2, 0));
}

#[test]
fn routes_of_a_disabled_telemetry_record_nothing() {
    let t = Telemetry::disabled("a");
    let r = t.route(&ucx("p")).unwrap();
    assert_eq!(t.add_route_xfer_stats_us(r, 1, 1, 1, 1), Recorded::Disabled);
    let mut x = t.start_route_xfer(r, 1, 1);
    assert_eq!(t.route_xfer_completed(&mut x), Ok(Recorded::Disabled));
    assert!(t.route_report().routes.is_empty());
}

#[test]
fn route_transfers_a_full_lane_refuses_are_counted_dropped_and_not_in_the_totals() {
    let (t, _) = keeping(
        Telemetry::builder("a")
            .buffer_size(16)
            .run_interval(std::time::Duration::from_secs(3600)),
    );
    let r = t.route(&ucx("p")).unwrap();
    let mut written = 0u64;
    let mut dropped = 0u64;
    for _ in 0..10 {
        match t.add_route_xfer_stats_us(r, 10, 100, 1, 1) {
            Recorded::Written => written += 1,
            Recorded::Dropped => dropped += 1,
            other => panic!("{other:?}"),
        }
    }
    assert!(
        dropped > 0,
        "a lane of 16 holds at most 3 transfers of 4 events"
    );
    t.flush().unwrap();
    let stats = t.stats();
    assert_eq!(stats.events_dropped, dropped * 4);
    let report = t.route_report();
    assert_eq!(report.routes[0].1.transfers, written);
    assert_eq!(report.routes[0].1.bytes, written * 100);
}

#[test]
fn a_route_id_used_with_another_telemetry_counts_on_its_other_route() {
    let (a, _) = keeping(Telemetry::builder("a"));
    let (b, _) = keeping(Telemetry::builder("b"));
    let r = a.route(&ucx("p")).unwrap();
    assert_eq!(
        b.add_route_xfer_stats_us(r, 10, 64, 1, 1),
        Recorded::Written
    );
    b.flush().unwrap();
    let report = b.route_report();
    assert_eq!(report.routes.len(), 1);
    assert_eq!(report.routes[0].0, Route::other(Operation::Write));
    assert_eq!(report.routes[0].1.bytes, 64);
}

#[test]
fn a_listed_exporter_receives_the_route_report_through_the_fan_out() {
    let seen = Seen::default();
    let s = seen.clone();
    let mut builder = Telemetry::builder("a")
        .enabled(true)
        .exporter("keeping,nop");
    builder
        .registry_mut()
        .register("keeping", move |_: &ExporterContext| {
            Ok(Box::new(Keeping(s.clone())) as Box<dyn Exporter>)
        });
    let t = builder.build().unwrap();
    let r = t.route(&ucx("p")).unwrap();
    t.add_route_xfer_stats_us(r, 10, 64, 1, 1);
    drop(t); // the last flush, then each listed exporter's queue is worked through
    let report = seen.routes.lock().unwrap().clone().expect("a route report");
    assert_eq!(report.routes[0].1.bytes, 64);
}

#[test]
fn a_recorder_of_a_closed_telemetry_refuses_and_counts_its_route_events() {
    let t = Telemetry::builder("closed-routes")
        .enabled(true)
        .exporter("nop")
        .build()
        .unwrap();
    let route = t.route(&ucx("peer")).unwrap();
    let recorder = t.recorder();
    assert_eq!(
        recorder.add_route_xfer_stats_us(route, 10, 64, 1, 1),
        Recorded::Written
    );
    drop(t);
    // Nothing will drain the lane again: no call may say "written".
    assert_eq!(
        recorder.add_route_xfer_stats_us(route, 10, 64, 1, 1),
        Recorded::Dropped
    );
    assert_eq!(
        recorder.update_route_error_count(route, ErrorStatus::Backend),
        Recorded::Dropped
    );
}
