//! A thread's `Recorder` and its `Telemetry` share one lane: one order of events,
//! one set of counts; and a lane past its high-water mark wakes the flush early.

mod common;

use common::{Sink, registry};
use std::time::{Duration, Instant};
use telering_core::builtin::ErrorStatus;
use telering_core::{Category, event_name};
use telering_std::{Recorded, Telemetry, TelemetryBuilder};

const HOUR: Duration = Duration::from_secs(3600);

/// A builder exporting to the collecting exporter without timestamps (every stamp 0,
/// so the flush's stable sort keeps each lane's order as it is).
fn collecting_untimed(agent: &str) -> (TelemetryBuilder, Sink) {
    let (registry, sink) = registry();
    let builder = Telemetry::builder(agent)
        .registry(registry)
        .enabled(true)
        .exporter("collect-untimed");
    (builder, sink)
}

#[test]
fn recorder_and_telemetry_calls_of_one_thread_keep_their_order_in_one_lane() {
    let (builder, sink) = collecting_untimed("order");
    let telemetry = builder.run_interval(HOUR).build().unwrap();
    let recorder = telemetry.recorder();
    for v in 0..300u64 {
        let recorded = match v % 3 {
            0 => recorder.update_tx_bytes(v),
            1 => telemetry.update_tx_bytes(v),
            _ => recorder
                .record_event(Category::Custom, &event_name!("ordered"), v)
                .then_written_or(telemetry.update_rx_bytes(v)),
        };
        assert_eq!(recorded, Recorded::Written);
    }
    assert_eq!(telemetry.stats().lanes, 1, "one lane for both");
    drop(recorder);
    let stats = telemetry.close();
    assert_eq!((stats.events_recorded, stats.events_exported), (400, 400));
    let values: Vec<u64> = sink
        .lock()
        .unwrap()
        .events
        .iter()
        .map(|e| e.value())
        .collect();
    let expected: Vec<u64> = (0..300u64)
        .flat_map(|v| if v % 3 == 2 { vec![v, v] } else { vec![v] })
        .collect();
    assert_eq!(values, expected);
}

/// `a.then_written_or(b)`: `b` after `a`, both required written.
trait Both {
    fn then_written_or(self, next: Recorded) -> Recorded;
}

impl Both for Recorded {
    fn then_written_or(self, next: Recorded) -> Recorded {
        if self == Recorded::Written {
            next
        } else {
            self
        }
    }
}

#[test]
fn drops_through_recorder_and_telemetry_are_counted_once_each() {
    let (builder, sink) = collecting_untimed("losses");
    // 16 slots hold 15 records; the flush, woken at 8 waiting, drains some while the
    // loop runs, but cannot keep up with back-to-back calls.
    let telemetry = builder
        .lane_capacity(16)
        .run_interval(HOUR)
        .build()
        .unwrap();
    let recorder = telemetry.recorder();
    let (mut written, mut dropped) = (0u64, 0u64);
    for v in 0..4000u64 {
        let outcome = match v % 4 {
            0 => recorder.update_tx_bytes(v),
            1 => telemetry.update_error_count(ErrorStatus::Backend),
            // Four events each, all or none.
            2 => recorder.add_xfer_stats_us(5, true, v, 1),
            _ => telemetry.add_xfer_stats_us(5, false, v, 1),
        };
        let events = if v % 4 >= 2 { 4 } else { 1 };
        match outcome {
            Recorded::Written => written += events,
            Recorded::Dropped => dropped += events,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(
        written >= 15 && dropped > 0,
        "{written} written, {dropped} dropped"
    );
    let live = telemetry.stats();
    assert_eq!(
        (live.events_recorded, live.events_dropped),
        (written + dropped, dropped)
    );
    drop(recorder);
    let stats = telemetry.close();
    assert_eq!(
        (
            stats.events_recorded,
            stats.events_exported,
            stats.events_dropped
        ),
        (written + dropped, written, dropped)
    );
    assert_eq!(sink.lock().unwrap().events.len() as u64, written);
}

#[test]
fn a_recorder_outliving_its_thread_lane_list_keeps_counting_into_the_flush() {
    let (builder, _sink) = collecting_untimed("threads");
    let telemetry = builder.run_interval(HOUR).build().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let recorder = telemetry.recorder();
            for v in 0..100 {
                assert_eq!(recorder.update_rx_bytes(v), Recorded::Written);
            }
        });
    });
    // The thread exits (its thread-locals are destroyed after `scope` returns, at
    // their own pace): a flush after that drains its lane, then removes it.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        telemetry.flush().unwrap();
        let stats = telemetry.stats();
        assert_eq!((stats.events_recorded, stats.events_exported), (100, 100));
        if stats.lanes == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the lane was not removed within 30 s"
        );
        std::thread::yield_now();
    }
}

#[test]
fn a_recorder_of_a_telemetry_that_does_not_export_records_nothing_and_makes_no_lane() {
    let disabled = Telemetry::disabled("off");
    let recorder = disabled.recorder();
    assert_eq!(recorder.update_tx_bytes(1), Recorded::Disabled);
    let mut xfer = recorder.start_xfer(true, 1, 1);
    assert_eq!(recorder.xfer_completed(&mut xfer), Ok(Recorded::Disabled));
    assert_eq!(disabled.stats().lanes, 0);
    let capture = Telemetry::builder("capture")
        .capture_telemetry(true)
        .build()
        .unwrap();
    let recorder = capture.recorder();
    assert_eq!(
        recorder.add_xfer_stats_us(1, true, 2, 3),
        Recorded::CaptureOnly
    );
    assert_eq!(capture.stats().lanes, 0);
}

#[test]
fn a_lane_past_its_high_water_mark_is_flushed_before_the_interval_elapses() {
    let (builder, sink) = collecting_untimed("early");
    let telemetry = builder
        .lane_capacity(1024)
        .run_interval(HOUR)
        .build()
        .unwrap();
    let recorder = telemetry.recorder();
    // Below the mark (512 waiting): no reason to wake.
    for v in 0..511 {
        assert_eq!(recorder.update_tx_bytes(v), Recorded::Written);
    }
    assert_eq!(telemetry.stats().flushes, 0);
    // The 512th record crosses it: one wake, the flush drains the lane long before
    // the hour is up.
    assert_eq!(recorder.update_tx_bytes(511), Recorded::Written);
    let deadline = Instant::now() + Duration::from_secs(30);
    while sink.lock().unwrap().events.len() < 512 {
        assert!(Instant::now() < deadline, "no early flush within 30 s");
        std::thread::yield_now();
    }
    assert_eq!(telemetry.stats().events_dropped, 0);
    // Recording goes on, and a second crossing wakes it again.
    for v in 512..1100 {
        assert_eq!(recorder.update_tx_bytes(v), Recorded::Written);
    }
    while sink.lock().unwrap().events.len() < 1024 {
        assert!(
            Instant::now() < deadline,
            "no second early flush within 30 s"
        );
        std::thread::yield_now();
    }
}

#[test]
fn a_lane_filled_through_telemetry_calls_also_wakes_the_flush() {
    let (builder, sink) = collecting_untimed("early-telemetry");
    let telemetry = builder
        .lane_capacity(256)
        .run_interval(HOUR)
        .build()
        .unwrap();
    for v in 0..40 {
        // 160 records: past the mark of 128.
        assert_eq!(
            telemetry.add_xfer_stats_us(3, v % 2 == 0, v, 1),
            Recorded::Written
        );
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while sink.lock().unwrap().events.len() < 128 {
        assert!(Instant::now() < deadline, "no early flush within 30 s");
        std::thread::yield_now();
    }
    assert_eq!(telemetry.close().events_dropped, 0);
}

#[test]
fn a_recorder_outliving_its_telemetry_refuses_every_event_instead_of_writing_it() {
    let (builder, sink) = collecting_untimed("outlived");
    let telemetry = builder.run_interval(HOUR).build().unwrap();
    let recorder = telemetry.recorder();
    for v in 0..10 {
        assert_eq!(recorder.update_tx_bytes(v), Recorded::Written);
    }
    let stats = telemetry.close();
    assert_eq!((stats.events_recorded, stats.events_exported), (10, 10));
    assert_eq!(sink.lock().unwrap().events.len(), 10);
    // Nothing will ever drain its lane again: no call says "written".
    assert!(recorder.is_closed());
    let after = [
        recorder.update_tx_bytes(1),
        recorder.update_rx_bytes(1),
        recorder.update_tx_requests_num(1),
        recorder.update_rx_requests_num(1),
        recorder.update_memory_registered(1),
        recorder.update_memory_deregistered(1),
        recorder.update_error_count(ErrorStatus::Backend),
        recorder.add_xfer_stats_us(3, true, 64, 1),
        recorder.record_event(Category::Custom, &event_name!("late"), 1),
    ];
    assert!(after.iter().all(|r| *r == Recorded::Dropped), "{after:?}");
    assert_eq!(
        sink.lock().unwrap().events.len(),
        10,
        "nothing more exported"
    );
}

#[test]
fn a_backend_handle_outliving_its_exporting_telemetry_refuses_its_events() {
    let (builder, sink) = collecting_untimed("outlived-backend");
    let telemetry = builder.run_interval(HOUR).build().unwrap();
    let ucx = telemetry.backend("UCX");
    assert_eq!(
        ucx.add_telemetry_event("ucx_rndv", 1),
        Ok(Recorded::Written)
    );
    drop(telemetry);
    assert_eq!(sink.lock().unwrap().events.len(), 1);
    assert!(ucx.is_closed());
    assert_eq!(
        ucx.add_telemetry_event("ucx_rndv", 2),
        Ok(Recorded::Dropped)
    );
    assert_eq!(ucx.events_dropped(), 1);
    assert!(ucx.pending_events().is_empty(), "nothing waits for a flush");
}
