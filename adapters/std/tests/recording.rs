//! Recording from many threads, flushing, shutdown and exact loss accounting, with a
//! collecting exporter.

mod common;

use common::{DROP_REPORT, Sink, registry, telemetry_exporting_to};
use std::time::Duration;
use telering_core::builtin::ErrorStatus;
use telering_core::{Category, Event, EventName};
use telering_std::Recorded;
use telering_std::clock::ClockProbe;
use telering_std::{ClockSource, Telemetry, TelemetryBuilder};

const HOUR: Duration = Duration::from_secs(3600);

/// A builder exporting to a collecting exporter, and what that exporter receives.
fn collecting(agent: &str) -> (TelemetryBuilder, Sink) {
    let (registry, sink) = registry();
    let builder = Telemetry::builder(agent)
        .registry(registry)
        .enabled(true)
        .exporter("collect");
    (builder, sink)
}

/// Runs `record(thread, seq)` for `seq` in `0..per_thread` on each of `threads`
/// threads at once; returns how many were written and how many dropped (anything else
/// fails the test).
fn record_from_threads(
    threads: u64,
    per_thread: u64,
    record: impl Fn(u64, u64) -> Recorded + Sync,
) -> (u64, u64) {
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let record = &record;
                s.spawn(move || {
                    let (mut written, mut dropped) = (0u64, 0u64);
                    for seq in 0..per_thread {
                        match record(t, seq) {
                            Recorded::Written => written += 1,
                            Recorded::Dropped => dropped += 1,
                            other => unreachable!("{other:?}"),
                        }
                    }
                    (written, dropped)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .fold((0, 0), |(w, d), (tw, td)| (w + tw, d + td))
    })
}

/// Each event's category, name and value, in order.
fn category_name_value(events: &[Event]) -> Vec<(Category, &str, u64)> {
    events
        .iter()
        .map(|e| (e.category().unwrap(), e.name().unwrap(), e.value()))
        .collect()
}

fn name(thread: u64) -> EventName {
    EventName::new(&format!("stress_{thread}")).unwrap()
}

#[test]
fn four_threads_times_a_million_events_are_all_delivered_or_counted() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 1_000_000;
    let agent = "stress-4x1m";
    let (builder, c) = collecting(agent);
    c.lock().unwrap().count_only = true;
    let telemetry = builder
        .run_interval(Duration::from_millis(1))
        .build()
        .unwrap();
    let names: Vec<EventName> = (0..THREADS).map(name).collect();
    let (written, dropped) = record_from_threads(THREADS, PER_THREAD, |t, seq| {
        telemetry.record_event(Category::Custom, &names[t as usize], t << 32 | seq)
    });
    let stats = telemetry.stats();
    assert_eq!(stats.events_recorded, THREADS * PER_THREAD);
    assert_eq!(stats.events_dropped, dropped);
    drop(telemetry);

    let c = c.lock().unwrap();
    // Every event is delivered exactly once or counted as dropped, and every drop
    // was reported in-band and through add_dropped.
    assert_eq!(c.events_seen, written);
    assert_eq!(c.events_seen + dropped, THREADS * PER_THREAD);
    assert_eq!(c.drop_reports.iter().sum::<u64>(), dropped);
    assert_eq!(c.add_dropped, dropped);
    assert!(c.drop_reports.iter().all(|&r| r > 0));
    assert_eq!(c.unordered_batches, 0);
    assert_eq!(c.shutdowns, 1);
    for t in 0..THREADS {
        let seqs = &c.seen[&t];
        // Each thread's events arrive once, in the order it recorded them.
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "thread {t} out of order"
        );
        assert!(seqs.iter().all(|&s| (s as u64) < PER_THREAD));
    }
    println!(
        "stress: {written} delivered, {dropped} dropped in {} flushes",
        c.batch_sizes.len()
    );
}

#[test]
fn a_thread_that_exits_mid_run_loses_nothing() {
    let agent = "exiting-thread";
    let (builder, c) = collecting(agent);
    let telemetry = std::sync::Arc::new(builder.run_interval(HOUR).build().unwrap());
    let recorder = std::sync::Arc::clone(&telemetry);
    // `join` (unlike the end of a thread scope) returns after the thread's
    // thread-locals, its lane's producer among them, are gone.
    std::thread::spawn(move || {
        for v in 0..1000 {
            recorder.update_tx_bytes(v);
        }
    })
    .join()
    .unwrap();
    // The thread is gone; its lane still holds its events.
    assert_eq!(telemetry.stats().lanes, 1);
    telemetry.update_rx_bytes(7);
    telemetry.flush().unwrap();
    let stats = telemetry.stats();
    assert_eq!(
        stats.lanes, 1,
        "the exited thread's lane is removed after its drain"
    );
    assert_eq!(stats.events_recorded, 1001);
    assert_eq!(stats.events_exported, 1001);
    drop(std::sync::Arc::into_inner(telemetry));
    let c = c.lock().unwrap();
    let tx: Vec<u64> = c
        .events
        .iter()
        .filter(|e| e.name() == Ok("agent_tx_bytes"))
        .map(|e| e.value())
        .collect();
    assert_eq!(tx, (0..1000).collect::<Vec<_>>());
    assert!(c.drop_reports.is_empty());
}

#[test]
fn dropping_the_telemetry_flushes_everything_recorded_before() {
    let agent = "shutdown";
    let (builder, c) = collecting(agent);
    let telemetry = builder
        .run_interval(HOUR)
        .lane_capacity(1 << 14)
        .build()
        .unwrap();
    std::thread::scope(|s| {
        for t in 0..3 {
            let telemetry = &telemetry;
            s.spawn(move || {
                for v in 0..5000 {
                    telemetry
                        .record(Category::Custom, "shutdown_test", t * 10_000 + v)
                        .unwrap();
                }
            });
        }
    });
    drop(telemetry);
    let c = c.lock().unwrap();
    assert_eq!(c.events.len(), 15_000);
    assert_eq!(
        c.batch_sizes,
        [15_000],
        "one final flush carries everything"
    );
    assert_eq!((c.flushes, c.shutdowns), (1, 1));
    let mut values: Vec<u64> = c.events.iter().map(|e| e.value()).collect();
    values.sort_unstable();
    values.dedup();
    assert_eq!(values.len(), 15_000);
}

#[test]
fn a_full_lane_counts_every_dropped_event_and_reports_it_once_per_flush() {
    let agent = "lane-full";
    let (builder, c) = collecting(agent);
    let telemetry = builder
        .run_interval(HOUR)
        .lane_capacity(4)
        .early_flush(false)
        .build()
        .unwrap();
    let results: Vec<Recorded> = (0..10).map(|v| telemetry.update_tx_bytes(v)).collect();
    assert_eq!(
        results.iter().filter(|&&r| r == Recorded::Written).count(),
        3
    );
    assert_eq!(telemetry.stats().events_dropped, 7);
    telemetry.flush().unwrap();
    telemetry.update_tx_bytes(99);
    telemetry.flush().unwrap();
    // All four parts of a transfer or none: the lane holds 3.
    assert_eq!(
        telemetry.add_xfer_stats(Duration::from_micros(5), true, 1, Duration::from_micros(1)),
        Recorded::Dropped
    );
    telemetry.flush().unwrap();
    let stats = telemetry.stats();
    assert_eq!(stats.events_recorded, 15);
    assert_eq!(stats.events_dropped, 11);
    assert_eq!(stats.events_exported, 4);
    drop(telemetry);
    let c = c.lock().unwrap();
    // Flush 1: 3 events + report(7). Flush 2: 1 event, no report. Flush 3: report(4).
    assert_eq!(&c.batch_sizes[..3], [4, 1, 1]);
    assert_eq!(c.drop_reports, [7, 4]);
    assert_eq!(c.add_dropped, 11);
    // Each report arrived in the ERROR category, as NIXL's readers expect.
    assert_eq!(c.drop_report_categories, [Ok(Category::Error); 2]);
}

#[test]
fn one_flush_merges_all_threads_in_timestamp_order() {
    let agent = "merge";
    let (builder, c) = collecting(agent);
    let telemetry = builder.run_interval(HOUR).build().unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let telemetry = &telemetry;
            s.spawn(move || {
                for v in 0..500 {
                    telemetry.update_rx_requests_num(t * 1000 + v);
                    if v % 100 == 0 {
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
    telemetry.flush().unwrap();
    let c = c.lock().unwrap();
    assert_eq!(c.events.len(), 2000);
    assert!(
        c.events
            .windows(2)
            .all(|w| w[0].timestamp_us() <= w[1].timestamp_us())
    );
    // With a coarse clock many timestamps are equal; each thread's events must still
    // keep the order that thread recorded them in.
    for t in 0..4 {
        let of_thread: Vec<u64> = c
            .events
            .iter()
            .map(|e| e.value())
            .filter(|v| v / 1000 == t)
            .collect();
        assert_eq!(
            of_thread,
            (0..500).map(|v| t * 1000 + v).collect::<Vec<_>>()
        );
    }
    assert_eq!(c.unordered_batches, 0);
}

#[test]
fn every_builtin_api_records_its_event() {
    let agent = "builtins";
    let (builder, c) = collecting(agent);
    let telemetry = builder.run_interval(HOUR).build().unwrap();
    telemetry.update_tx_bytes(1);
    telemetry.update_rx_bytes(2);
    telemetry.update_tx_requests_num(3);
    telemetry.update_rx_requests_num(4);
    telemetry.update_memory_registered(5);
    telemetry.update_memory_deregistered(6);
    for s in ErrorStatus::ALL {
        telemetry.update_error_count(s);
    }
    telemetry.add_xfer_stats(
        Duration::from_micros(70),
        false,
        8,
        Duration::from_micros(9),
    );
    telemetry.add_xfer_stats_us(71, true, 16, 11);
    telemetry
        .record(Category::Connection, "peers_connected", 10)
        .unwrap();
    drop(telemetry);
    let c = c.lock().unwrap();
    let got = category_name_value(&c.events);
    let mut expected = vec![
        (Category::Transfer, "agent_tx_bytes", 1),
        (Category::Transfer, "agent_rx_bytes", 2),
        (Category::Transfer, "agent_tx_requests_num", 3),
        (Category::Transfer, "agent_rx_requests_num", 4),
        (Category::Memory, "agent_memory_registered", 5),
        (Category::Memory, "agent_memory_deregistered", 6),
    ];
    expected.extend(
        ErrorStatus::ALL
            .iter()
            .map(|s| (Category::Error, s.as_str(), 1)),
    );
    expected.extend([
        (Category::Transfer, "agent_rx_bytes", 8),
        (Category::Transfer, "agent_rx_requests_num", 1),
        (Category::Performance, "agent_xfer_time", 70),
        (Category::Performance, "agent_xfer_post_time", 9),
        (Category::Transfer, "agent_tx_bytes", 16),
        (Category::Transfer, "agent_tx_requests_num", 1),
        (Category::Performance, "agent_xfer_time", 71),
        (Category::Performance, "agent_xfer_post_time", 11),
        (Category::Connection, "peers_connected", 10),
    ]);
    assert_eq!(got, expected);
}

#[test]
fn the_allowlist_filters_builtin_custom_and_backend_events() {
    let agent = "allowlist";
    let (builder, c) = collecting(agent);
    let telemetry = builder
        .run_interval(HOUR)
        .enabled_metrics("agent_tx_*, NIXL_ERR_[!U]*, app_*")
        .build()
        .unwrap();
    assert_eq!(telemetry.update_tx_bytes(1), Recorded::Written);
    assert_eq!(telemetry.update_rx_bytes(1), Recorded::Filtered);
    assert_eq!(
        telemetry.update_error_count(ErrorStatus::Backend),
        Recorded::Written
    );
    assert_eq!(
        telemetry.update_error_count(ErrorStatus::Unknown),
        Recorded::Filtered
    );
    assert_eq!(
        telemetry.record(Category::Custom, "app_x", 1),
        Ok(Recorded::Written)
    );
    assert_eq!(
        telemetry.record(Category::Custom, "other", 1),
        Ok(Recorded::Filtered)
    );
    // Only the tx parts of a write pass.
    assert_eq!(
        telemetry.add_xfer_stats(Duration::ZERO, true, 5, Duration::ZERO),
        Recorded::Written
    );
    assert_eq!(
        telemetry.add_xfer_stats(Duration::ZERO, false, 5, Duration::ZERO),
        Recorded::Filtered
    );
    let backend = telemetry.backend("ucx");
    assert_eq!(
        backend.add_telemetry_event("app_backend", 1),
        Ok(Recorded::Written)
    );
    assert_eq!(
        backend.add_telemetry_event("ucx_other", 1),
        Ok(Recorded::Filtered)
    );
    drop(telemetry);
    let names: Vec<&str> = sink_names(&c.lock().unwrap());
    assert_eq!(
        names,
        [
            "agent_tx_bytes",
            "NIXL_ERR_BACKEND",
            "app_x",
            "agent_tx_bytes",
            "agent_tx_requests_num",
            "app_backend"
        ]
    );
}

fn sink_names(c: &common::Collected) -> Vec<&'static str> {
    c.events
        .iter()
        .map(|e| -> &'static str { e.name().unwrap().to_string().leak() })
        .collect()
}

#[test]
fn backend_events_are_exported_in_category_backend_at_each_flush() {
    let agent = "backend";
    let (builder, c) = collecting(agent);
    let telemetry = builder.run_interval(HOUR).buffer_size(4).build().unwrap();
    let gds = telemetry.backend("GDS");
    gds.add_telemetry_event("gds_batches", 11).unwrap();
    gds.add_telemetry_event("gds_bytes", 4096).unwrap();
    assert_eq!(gds.get_telemetry_events().len(), 2);
    telemetry.flush().unwrap();
    assert!(
        gds.get_telemetry_events().is_empty(),
        "exported events leave the buffer"
    );
    // The buffer holds NIXL_TELEMETRY_BUFFER_SIZE events; more are counted as dropped.
    for v in 0..6 {
        gds.add_telemetry_event("gds_batches", v).unwrap();
    }
    assert_eq!(gds.events_dropped(), 2);
    drop(telemetry);
    let c = c.lock().unwrap();
    assert!(
        c.events
            .iter()
            .all(|e| e.category() == Ok(Category::Backend))
    );
    assert_eq!(c.events.len(), 6);
    assert_eq!(c.drop_reports, [2]);
}

#[test]
fn an_exporter_that_fails_loses_nothing_silently() {
    use std::sync::{Arc, Mutex};
    use telering_std::export::{ExportError, Exporter, ExporterContext};
    #[derive(Debug)]
    struct FailsFirst {
        calls: u32,
        reported: Arc<Mutex<Vec<u64>>>,
    }
    impl Exporter for FailsFirst {
        fn name(&self) -> &str {
            "fails-first"
        }
        fn export(&mut self, batch: &[telering_core::Event]) -> Result<(), ExportError> {
            self.calls += 1;
            if self.calls == 1 {
                return Err(ExportError::failed("fails-first", "disk full"));
            }
            for e in batch {
                if e.name() == Ok(DROP_REPORT) {
                    self.reported.lock().unwrap().push(e.value());
                }
            }
            Ok(())
        }
        fn flush(&mut self) -> Result<(), ExportError> {
            Ok(())
        }
        fn shutdown(&mut self) -> Result<(), ExportError> {
            Ok(())
        }
    }
    let reported = Arc::new(Mutex::new(Vec::new()));
    let for_factory = Arc::clone(&reported);
    let factory = move |_: &ExporterContext| -> Result<Box<dyn Exporter>, ExportError> {
        Ok(Box::new(FailsFirst {
            calls: 0,
            reported: Arc::clone(&for_factory),
        }))
    };
    let telemetry = telemetry_exporting_to("failing", "fails-first", factory);
    for v in 0..5 {
        telemetry.update_tx_bytes(v);
    }
    telemetry.flush().unwrap(); // export fails: 5 events lost, counted
    let stats = telemetry.stats();
    // The exporter's loss, not the recording's, and it says it is failing.
    assert_eq!(
        (
            stats.events_dropped,
            stats.exporter_dropped,
            stats.export_errors,
            stats.exporter_failing
        ),
        (0, 5, 1, true)
    );
    telemetry.flush().unwrap(); // the loss is reported with the next batch
    assert_eq!(*reported.lock().unwrap(), [5]);
    // That export worked: no longer failing, and nothing more lost.
    let stats = telemetry.stats();
    assert_eq!((stats.exporter_dropped, stats.exporter_failing), (5, false));
}

#[test]
fn capture_only_runs_no_exporter_and_keeps_per_transfer_telemetry() {
    let (registry, c) = registry();
    let telemetry = Telemetry::builder("capture")
        .registry(registry)
        .capture_telemetry(true)
        .exporter("collect")
        .build()
        .unwrap();
    assert_eq!(telemetry.update_tx_bytes(1), Recorded::CaptureOnly);
    let mut xfer = telemetry.start_xfer(false, 512, 2);
    std::thread::sleep(Duration::from_millis(2));
    telemetry.xfer_posted(&mut xfer).unwrap();
    telemetry.xfer_completed(&mut xfer).unwrap();
    let t = telemetry.get_xfer_telemetry(&xfer).unwrap();
    assert!(t.post_duration >= Duration::from_millis(2));
    assert!(t.xfer_duration >= t.post_duration);
    assert_eq!((t.total_bytes, t.descriptor_count), (512, 2));
    assert!(t.start_time_us > 1_600_000_000_000_000);
    let backend = telemetry.backend("ucx");
    backend.add_telemetry_event("ucx_eps", 2).unwrap();
    assert_eq!(backend.get_telemetry_events().len(), 1);
    drop(telemetry);
    assert!(c.lock().unwrap().batch_sizes.is_empty());
}

#[test]
fn disabled_telemetry_records_nothing_and_has_no_transfer_telemetry() {
    let telemetry = Telemetry::builder("off").build().unwrap();
    assert_eq!(telemetry.update_tx_bytes(1), Recorded::Disabled);
    assert_eq!(
        telemetry.record(Category::Custom, "x", 1),
        Ok(Recorded::Disabled)
    );
    let xfer = telemetry.start_xfer(true, 1, 1);
    let err = telemetry.get_xfer_telemetry(&xfer).unwrap_err();
    assert_eq!(err.status(), ErrorStatus::NoTelemetry);
    assert!(err.to_string().contains("NIXL_TELEMETRY_ENABLE"));
    let backend = telemetry.backend("ucx");
    assert_eq!(backend.add_telemetry_event("x", 1), Ok(Recorded::Disabled));
    assert_eq!(telemetry.stats(), Default::default());
}

#[test]
fn a_completed_transfer_is_recorded_once() {
    let agent = "xfer-once";
    let (builder, c) = collecting(agent);
    let telemetry = builder.run_interval(HOUR).build().unwrap();
    let mut xfer = telemetry.start_xfer(true, 100, 1);
    telemetry.xfer_posted(&mut xfer).unwrap();
    assert_eq!(telemetry.xfer_completed(&mut xfer), Ok(Recorded::Written));
    assert_eq!(
        telemetry.xfer_completed(&mut xfer),
        Ok(Recorded::AlreadyCompleted)
    );
    drop(telemetry);
    assert_eq!(c.lock().unwrap().events.len(), 4);
}

#[test]
fn a_transfer_cannot_be_posted_completed_or_read_on_another_telemetry() {
    use telering_std::XferError;
    let (builder_a, sink_a) = collecting("xfer-owner-a");
    let (builder_b, sink_b) = collecting("xfer-owner-b");
    let a = builder_a.run_interval(HOUR).build().unwrap();
    let b = builder_b.run_interval(HOUR).build().unwrap();
    let mut xfer = a.start_xfer(true, 100, 1);
    assert!(xfer.belongs_to(&a) && !xfer.belongs_to(&b));
    assert_eq!(b.xfer_posted(&mut xfer), Err(XferError::OtherTelemetry));
    assert_eq!(b.xfer_completed(&mut xfer), Err(XferError::OtherTelemetry));
    assert_eq!(b.xfer_telemetry(&xfer), Err(XferError::OtherTelemetry));
    // Refused calls left the transfer as it was: not posted, not completed.
    assert!(!xfer.is_completed());
    assert_eq!(
        a.xfer_telemetry(&xfer).unwrap().post_duration,
        Duration::ZERO
    );
    assert_eq!(b.stats().events_recorded, 0);
    assert_eq!(a.xfer_completed(&mut xfer), Ok(Recorded::Written));
    drop((a, b));
    assert_eq!(sink_a.lock().unwrap().events.len(), 4);
    assert!(sink_b.lock().unwrap().events.is_empty());
}

#[test]
fn two_telemetries_on_one_thread_keep_their_events_apart() {
    let (builder_a, sink_a) = collecting("two-a");
    let (builder_b, sink_b) = collecting("two-b");
    let (builder_c, _) = collecting("two-c");
    let a = builder_a.run_interval(HOUR).build().unwrap();
    let b = builder_b.run_interval(HOUR).build().unwrap();
    for v in 0..10 {
        a.update_tx_bytes(v);
        b.update_rx_bytes(v);
    }
    drop(a);
    // A third one after `a` is gone: `a`'s lane on this thread is freed.
    let c = builder_c.run_interval(HOUR).build().unwrap();
    c.update_tx_bytes(1);
    drop((b, c));
    let (a, b) = (sink_a, sink_b);
    assert!(
        a.lock()
            .unwrap()
            .events
            .iter()
            .all(|e| e.name() == Ok("agent_tx_bytes"))
    );
    assert!(
        b.lock()
            .unwrap()
            .events
            .iter()
            .all(|e| e.name() == Ok("agent_rx_bytes"))
    );
    assert_eq!(a.lock().unwrap().events.len(), 10);
    assert_eq!(b.lock().unwrap().events.len(), 10);
}

#[test]
fn the_flush_thread_exports_every_run_interval() {
    let agent = "periodic";
    let (builder, _) = collecting(agent);
    let telemetry = builder
        .run_interval(Duration::from_millis(5))
        .build()
        .unwrap();
    telemetry.update_tx_bytes(1);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while telemetry.stats().events_exported < 1 {
        assert!(std::time::Instant::now() < deadline, "no flush within 10 s");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(telemetry.stats().flushes >= 1);
}

#[test]
fn a_panicking_exporter_never_takes_the_agent_down_and_losses_stay_counted() {
    use telering_std::export::{ExportError, Exporter, ExporterContext};
    #[derive(Debug)]
    struct Panics;
    impl Exporter for Panics {
        fn name(&self) -> &str {
            "panics"
        }
        fn export(&mut self, batch: &[telering_core::Event]) -> Result<(), ExportError> {
            if !batch.is_empty() {
                panic!("exporter bug");
            }
            Ok(())
        }
        fn flush(&mut self) -> Result<(), ExportError> {
            Ok(())
        }
        fn shutdown(&mut self) -> Result<(), ExportError> {
            Ok(())
        }
    }
    fn factory(_: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
        Ok(Box::new(Panics))
    }
    let telemetry = telemetry_exporting_to("panicking", "panics", factory);
    telemetry.update_tx_bytes(1);
    assert!(telemetry.flush().is_err());
    // Recording goes on; what can no longer be exported is drained and counted.
    for v in 0..10 {
        assert_eq!(telemetry.update_tx_bytes(v), Recorded::Written);
    }
    assert!(telemetry.flush().is_err());
    let stats = telemetry.stats();
    assert_eq!(stats.events_recorded, 11);
    assert_eq!((stats.events_dropped, stats.exporter_dropped), (0, 11));
    assert_eq!(stats.events_exported, 0);
    assert!(stats.exporter_failing);
    drop(telemetry); // no panic, no hang
}

#[test]
fn asking_twice_for_a_backend_gives_the_same_buffer() {
    let telemetry = Telemetry::builder("backend-twice")
        .capture_telemetry(true)
        .build()
        .unwrap();
    telemetry
        .backend("ucx")
        .add_telemetry_event("a", 1)
        .unwrap();
    telemetry
        .backend("ucx")
        .add_telemetry_event("b", 2)
        .unwrap();
    assert_eq!(telemetry.backend("ucx").get_telemetry_events().len(), 2);
    assert!(telemetry.backend("gds").get_telemetry_events().is_empty());
}

#[test]
fn a_failed_export_hands_every_upstream_loss_to_the_exporter_exactly_once() {
    use std::sync::{Arc, Mutex};
    use telering_std::export::{ExportError, Exporter, ExporterContext, ExporterRegistry};
    /// What the exporter saw: `add_dropped` amounts and in-band report values.
    #[derive(Debug, Default)]
    struct Seen {
        added: Vec<u64>,
        reported: Vec<u64>,
    }
    #[derive(Debug)]
    struct FailsFirst {
        calls: u32,
        seen: Arc<Mutex<Seen>>,
    }
    impl Exporter for FailsFirst {
        fn name(&self) -> &str {
            "fails-first-exact"
        }
        fn export(&mut self, batch: &[telering_core::Event]) -> Result<(), ExportError> {
            self.calls += 1;
            if self.calls == 1 {
                return Err(ExportError::failed("fails-first-exact", "disk full"));
            }
            for e in batch {
                if e.name() == Ok(DROP_REPORT) {
                    assert_eq!(e.category(), Ok(Category::Error));
                    self.seen.lock().unwrap().reported.push(e.value());
                }
            }
            Ok(())
        }
        fn add_dropped(&mut self, events: u64) {
            self.seen.lock().unwrap().added.push(events);
        }
        fn flush(&mut self) -> Result<(), ExportError> {
            Ok(())
        }
        fn shutdown(&mut self) -> Result<(), ExportError> {
            Ok(())
        }
    }
    let seen = Arc::new(Mutex::new(Seen::default()));
    let for_factory = Arc::clone(&seen);
    let mut registry = ExporterRegistry::empty();
    registry.register("fails-first-exact", move |_: &ExporterContext| {
        let exporter: Box<dyn Exporter> = Box::new(FailsFirst {
            calls: 0,
            seen: Arc::clone(&for_factory),
        });
        Ok(exporter)
    });
    let telemetry = Telemetry::builder("failing-exact")
        .registry(registry)
        .enabled(true)
        .exporter("fails-first-exact")
        .lane_capacity(16)
        .early_flush(false)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    // A lane of 16 holds 15: 5 of 20 are lost upstream.
    for v in 0..20 {
        telemetry.update_tx_bytes(v);
    }
    telemetry.flush().unwrap(); // the export fails: the 15 drained events are lost too
    assert_eq!(seen.lock().unwrap().added, [5], "the lane's losses, once");
    telemetry.flush().unwrap(); // only the failed batch is new
    assert_eq!(seen.lock().unwrap().added, [5, 15]);
    // In-band, the one report that arrived covers all 20 losses.
    assert_eq!(seen.lock().unwrap().reported, [20]);
    let stats = telemetry.stats();
    // 5 dropped at record time (the full lane), 15 by the exporter (its failed export).
    assert_eq!(
        (
            stats.events_recorded,
            stats.events_dropped,
            stats.exporter_dropped
        ),
        (20, 5, 15)
    );
    assert_eq!(
        telemetry.dropped_by_name().into_iter().collect::<Vec<_>>(),
        [("agent_tx_bytes".to_string(), 15)]
    );
}

#[test]
fn a_custom_event_handle_records_like_record_event_and_filters_once() {
    let agent = "custom-handle";
    let (builder, c) = collecting(agent);
    let telemetry = builder
        .run_interval(HOUR)
        .enabled_metrics("queue_*")
        .build()
        .unwrap();
    let depth = telemetry
        .custom_event(Category::Connection, "queue_depth")
        .unwrap();
    let other = telering_std::custom_event!(telemetry, Category::Custom, "other_thing");
    assert!(depth.enabled() && !other.enabled());
    assert_eq!(depth.record(7), Recorded::Written);
    assert_eq!(other.record(1), Recorded::Filtered);
    assert_eq!(
        telemetry.record(Category::Connection, "queue_depth", 8),
        Ok(Recorded::Written)
    );
    assert_eq!(telemetry.stats().events_recorded, 2);
    drop(telemetry);
    let c = c.lock().unwrap();
    let got: Vec<_> = c
        .events
        .iter()
        .map(|e| (e.name().unwrap().to_string(), e.category(), e.value()))
        .collect();
    assert_eq!(
        got,
        [
            ("queue_depth".to_string(), Ok(Category::Connection), 7),
            ("queue_depth".to_string(), Ok(Category::Connection), 8)
        ]
    );
}

/// A builder exporting to a collecting exporter that needs no timestamps, so that
/// built-in events travel through compact lanes.
fn collecting_untimed(agent: &str) -> (TelemetryBuilder, Sink) {
    let (registry, sink) = registry();
    let builder = Telemetry::builder(agent)
        .registry(registry)
        .enabled(true)
        .exporter("collect-untimed");
    (builder, sink)
}

#[test]
fn without_timestamps_every_event_arrives_whole_in_recording_order() {
    let (builder, c) = collecting_untimed("compact-builtins");
    let telemetry = builder.run_interval(HOUR).build().unwrap();
    telemetry.update_tx_bytes(1);
    telemetry.update_rx_requests_num(4);
    telemetry.update_memory_registered(5);
    telemetry.update_error_count(ErrorStatus::Backend);
    telemetry
        .record(Category::Connection, "peers_connected", 10)
        .unwrap();
    telemetry.add_xfer_stats_us(71, true, 16, 11);
    telemetry.add_xfer_stats(
        Duration::from_micros(70),
        false,
        8,
        Duration::from_micros(9),
    );
    // One lane of 16-byte records for built-in and custom events alike.
    assert_eq!(telemetry.stats().lanes, 1);
    drop(telemetry);
    let c = c.lock().unwrap();
    assert!(c.events.iter().all(|e| e.timestamp_us() == 0));
    let got = category_name_value(&c.events);
    assert_eq!(
        got,
        [
            (Category::Transfer, "agent_tx_bytes", 1),
            (Category::Transfer, "agent_rx_requests_num", 4),
            (Category::Memory, "agent_memory_registered", 5),
            (Category::Error, "NIXL_ERR_BACKEND", 1),
            (Category::Connection, "peers_connected", 10),
            (Category::Transfer, "agent_tx_bytes", 16),
            (Category::Transfer, "agent_tx_requests_num", 1),
            (Category::Performance, "agent_xfer_time", 71),
            (Category::Performance, "agent_xfer_post_time", 11),
            (Category::Transfer, "agent_rx_bytes", 8),
            (Category::Transfer, "agent_rx_requests_num", 1),
            (Category::Performance, "agent_xfer_time", 70),
            (Category::Performance, "agent_xfer_post_time", 9),
        ]
    );
}

#[test]
fn without_timestamps_a_filtered_transfer_keeps_only_the_allowed_parts() {
    let (builder, c) = collecting_untimed("compact-filtered");
    let telemetry = builder
        .run_interval(HOUR)
        .enabled_metrics("agent_xfer_*")
        .build()
        .unwrap();
    assert_eq!(
        telemetry.add_xfer_stats_us(30, true, 4096, 2),
        Recorded::Written
    );
    assert_eq!(telemetry.update_tx_bytes(1), Recorded::Filtered);
    drop(telemetry);
    let c = c.lock().unwrap();
    let got: Vec<(&str, u64)> = c
        .events
        .iter()
        .map(|e| (e.name().unwrap(), e.value()))
        .collect();
    assert_eq!(got, [("agent_xfer_time", 30), ("agent_xfer_post_time", 2)]);
}

#[test]
fn without_timestamps_a_full_compact_lane_counts_every_drop() {
    let (builder, c) = collecting_untimed("compact-full");
    let telemetry = builder
        .run_interval(HOUR)
        .lane_capacity(4)
        .early_flush(false)
        .build()
        .unwrap();
    let results: Vec<Recorded> = (0..10).map(|v| telemetry.update_tx_bytes(v)).collect();
    assert_eq!(
        results.iter().filter(|&&r| r == Recorded::Written).count(),
        3
    );
    telemetry.flush().unwrap();
    // All four parts of a transfer or none: the empty lane holds 3.
    assert_eq!(
        telemetry.add_xfer_stats_us(5, true, 1, 1),
        Recorded::Dropped
    );
    telemetry.flush().unwrap();
    let stats = telemetry.stats();
    assert_eq!(stats.events_recorded, 14);
    assert_eq!(stats.events_dropped, 11);
    assert_eq!(stats.events_exported, 3);
    drop(telemetry);
    let c = c.lock().unwrap();
    let values: Vec<u64> = c.events.iter().map(|e| e.value()).collect();
    assert_eq!(values, [0, 1, 2]);
    assert_eq!(c.drop_reports, [7, 4]);
    assert_eq!(c.add_dropped, 11);
}

/// Four threads record `per_thread` events each through `record(telemetry, value)`
/// (value: thread << 32 | sequence) into a collecting exporter flushed every
/// millisecond, into lanes small enough to drop: every event is delivered once or
/// counted as dropped, and each thread's arrive in recording order.
fn four_threads_deliver_or_count_in_order(
    (builder, c): (TelemetryBuilder, Sink),
    per_thread: u64,
    record: impl Fn(&Telemetry, u64) -> Recorded + Sync,
) {
    const THREADS: u64 = 4;
    c.lock().unwrap().count_only = true;
    let telemetry = builder
        .run_interval(Duration::from_millis(1))
        .lane_capacity(1024)
        .build()
        .unwrap();
    let (written, dropped) = record_from_threads(THREADS, per_thread, |t, seq| {
        record(&telemetry, t << 32 | seq)
    });
    let stats = telemetry.stats();
    assert_eq!(stats.events_recorded, THREADS * per_thread);
    assert_eq!(stats.events_dropped, dropped);
    drop(telemetry);
    let c = c.lock().unwrap();
    assert_eq!(c.events_seen, written);
    assert_eq!(c.events_seen + dropped, THREADS * per_thread);
    assert_eq!(c.add_dropped, dropped);
    assert_eq!(c.unordered_batches, 0);
    for (thread, seqs) in &c.seen {
        assert!(*thread < THREADS);
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "thread {thread} out of order"
        );
    }
}

#[test]
fn without_timestamps_four_threads_deliver_or_count_every_builtin_event() {
    four_threads_deliver_or_count_in_order(
        collecting_untimed("compact-stress"),
        200_000,
        |t, v| t.update_tx_bytes(v),
    );
}

/// A builder exporting to a collecting exporter, stamping with the CPU counter
/// (`tsc`, with a probe that trusts it): stamps are raw ticks, converted at flush.
fn collecting_with_counter(agent: &str) -> (TelemetryBuilder, Sink) {
    let (builder, sink) = collecting(agent);
    (
        builder
            .clock(ClockSource::Tsc)
            .clock_probe(ClockProbe::trusting_counter()),
        sink,
    )
}

#[test]
fn with_counter_stamps_builtin_and_custom_events_arrive_in_recording_order_in_wall_clock_time() {
    let (builder, c) = collecting_with_counter("counter-order");
    let telemetry = builder.run_interval(HOUR).build().unwrap();
    let before = ClockSource::Realtime.now_us();
    telemetry.update_tx_bytes(1);
    telemetry
        .record(Category::Connection, "peers_connected", 2)
        .unwrap();
    telemetry.update_error_count(ErrorStatus::Backend);
    telemetry.add_xfer_stats_us(71, true, 16, 11);
    telemetry.record(Category::Custom, "app_depth", 3).unwrap();
    let mut xfer = telemetry.start_xfer(false, 8, 1);
    telemetry.xfer_posted(&mut xfer).unwrap();
    assert_eq!(telemetry.xfer_completed(&mut xfer), Ok(Recorded::Written));
    // One lane for this thread: built-in and custom events in one stream.
    assert_eq!(telemetry.stats().lanes, 1);
    drop(telemetry);
    let after = ClockSource::Realtime.now_us();
    let c = c.lock().unwrap();
    let got = category_name_value(&c.events);
    // Recording order.
    assert_eq!(got.len(), 12);
    assert_eq!(
        got[..9],
        [
            (Category::Transfer, "agent_tx_bytes", 1),
            (Category::Connection, "peers_connected", 2),
            (Category::Error, "NIXL_ERR_BACKEND", 1),
            (Category::Transfer, "agent_tx_bytes", 16),
            (Category::Transfer, "agent_tx_requests_num", 1),
            (Category::Performance, "agent_xfer_time", 71),
            (Category::Performance, "agent_xfer_post_time", 11),
            (Category::Custom, "app_depth", 3),
            (Category::Transfer, "agent_rx_bytes", 8),
        ]
    );
    assert_eq!(got[9], (Category::Transfer, "agent_rx_requests_num", 1));
    assert_eq!(got[10].1, "agent_xfer_time");
    assert_eq!(got[11].1, "agent_xfer_post_time");
    // Converted to wall-clock microseconds, never backwards.
    assert!(
        c.events
            .windows(2)
            .all(|w| w[0].timestamp_us() <= w[1].timestamp_us())
    );
    assert!(
        c.events
            .iter()
            .all(|e| (before.saturating_sub(2)..=after + 2).contains(&e.timestamp_us()))
    );
}

#[test]
fn with_counter_stamps_four_threads_mixing_builtin_and_custom_events_keep_each_threads_order() {
    let sink = collecting_with_counter("counter-stress");
    four_threads_deliver_or_count_in_order(sink, 100_000, |t, v| match (v as u32) % 3 {
        0 => t.record(Category::Custom, "app_seq", v).unwrap(),
        1 => t.update_tx_bytes(v),
        _ => t.update_rx_bytes(v),
    });
}
