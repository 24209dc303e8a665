//! Exported timestamps: exact against the wall clock, never backwards within a
//! thread, fine-grained, and the fallback when the CPU counter is not trusted.
//!
//! Exactness is checked by bracketing: each recording call sits between two
//! `CLOCK_REALTIME` reads, and its exported timestamp must lie between them, widened
//! by the 2 µs the conversion may be off ([`ClockSource::error_bound`]). A thread
//! preempted around the call (common on a loaded virtual machine) widens its own
//! bracket, so scheduling cannot make the check fail; only a wrong conversion can.

mod common;

use std::time::{Duration, Instant};
use telering_core::{Category, Event, event_name};
use telering_std::clock::ClockProbe;
use telering_std::export::{ExportError, Exporter, ExporterContext};
use telering_std::{ClockSource, ConfigError, EnvSource, Telemetry};

const NAME: telering_core::EventName = event_name!("clock_test");

fn realtime_us() -> u64 {
    ClockSource::Realtime.now_us()
}

/// A telemetry of `agent` exporting to the collecting exporter every `interval`.
fn collecting(agent: &str, clock: ClockSource, interval: Duration) -> (Telemetry, common::Sink) {
    let (registry, sink) = common::registry();
    let t = Telemetry::builder(agent)
        .registry(registry)
        .enabled(true)
        .exporter("collect")
        .clock(clock)
        .lane_capacity(1 << 16)
        .run_interval(interval)
        .build()
        .unwrap();
    (t, sink)
}

fn collected(sink: &common::Sink) -> Vec<Event> {
    std::mem::take(&mut sink.lock().unwrap().events)
}

/// The clock exactness tests use: the counter where this machine trusts it.
fn exact_clock() -> ClockSource {
    ClockSource::Auto.resolve(&ClockProbe::system()).unwrap()
}

/// Records events with value `i` between two realtime reads for `duration`, pausing
/// `gap` between events; returns the brackets by value.
fn record_bracketed(t: &Telemetry, duration: Duration, gap: Duration) -> Vec<(u64, u64)> {
    let mut brackets = Vec::new();
    let end = Instant::now() + duration;
    while Instant::now() < end {
        let before = realtime_us();
        t.record_event(Category::Custom, &NAME, brackets.len() as u64);
        let after = realtime_us();
        brackets.push((before, after));
        let next = Instant::now() + gap;
        while Instant::now() < next {
            std::hint::spin_loop();
        }
    }
    brackets
}

fn assert_bracketed(events: &[Event], brackets: &[(u64, u64)], tolerance_us: u64) {
    assert_eq!(events.len(), brackets.len(), "every event exported");
    let mut worst = 0;
    for e in events {
        let (before, after) = brackets[e.value() as usize];
        let ts = e.timestamp_us();
        assert!(
            ts + tolerance_us >= before && ts <= after + tolerance_us,
            "event {} stamped {ts} µs outside [{before}, {after}] ± {tolerance_us} µs",
            e.value()
        );
        worst = worst
            .max(before.saturating_sub(ts))
            .max(ts.saturating_sub(after));
    }
    eprintln!(
        "{} events, worst distance outside the bracket {worst} µs",
        events.len()
    );
}

#[test]
fn exported_timestamps_stay_within_2us_of_the_wall_clock() {
    let clock = exact_clock();
    let (t, sink) = collecting("clock-exact", clock, Duration::from_millis(100));
    assert_eq!(t.clock(), clock);
    // Over 10 s the flush re-anchors about a hundred times.
    let brackets = record_bracketed(&t, Duration::from_secs(10), Duration::from_micros(50));
    drop(t);
    let events = collected(&sink);
    assert_bracketed(&events, &brackets, clock.error_bound().as_micros() as u64);
}

#[test]
fn timestamps_never_go_backwards_within_a_thread() {
    let (t, sink) = collecting("clock-order", exact_clock(), Duration::from_millis(2));
    std::thread::scope(|s| {
        for thread in 0..2u64 {
            let t = &t;
            s.spawn(move || {
                let end = Instant::now() + Duration::from_millis(700);
                let mut seq = 0;
                while Instant::now() < end {
                    t.record_event(Category::Custom, &NAME, thread << 32 | seq);
                    seq += 1;
                }
            });
        }
    });
    drop(t);
    let events = collected(&sink);
    assert!(events.len() > 1000, "{} events", events.len());
    for thread in 0..2u64 {
        let mine: Vec<&Event> = events
            .iter()
            .filter(|e| e.value() >> 32 == thread)
            .collect();
        for w in mine.windows(2) {
            assert!(
                w[0].value() < w[1].value(),
                "a thread's events arrive in order"
            );
            assert!(
                w[0].timestamp_us() <= w[1].timestamp_us(),
                "thread {thread}: {} µs then {} µs",
                w[0].timestamp_us(),
                w[1].timestamp_us()
            );
        }
    }
}

#[test]
fn events_10us_apart_are_stamped_about_10us_apart() {
    let (t, sink) = collecting(
        "clock-resolution",
        exact_clock(),
        Duration::from_millis(100),
    );
    let mut last = realtime_us();
    for i in 0..2000 {
        while realtime_us() < last + 10 {
            std::hint::spin_loop();
        }
        last = realtime_us();
        t.record_event(Category::Custom, &NAME, i);
    }
    drop(t);
    let mut events = collected(&sink);
    events.sort_by_key(Event::value);
    let gaps: Vec<u64> = events
        .windows(2)
        .map(|w| w[1].timestamp_us() - w[0].timestamp_us())
        .collect();
    // Preemption stretches a few gaps; the coarse clock would give 0 or a whole tick.
    let near_10 = gaps.iter().filter(|g| (9..=13).contains(*g)).count();
    assert!(
        near_10 * 10 >= gaps.len() * 9,
        "only {near_10} of {} gaps within 9–13 µs",
        gaps.len()
    );
    let mut sorted = gaps.clone();
    sorted.sort_unstable();
    assert!(
        (10..=11).contains(&sorted[sorted.len() / 2]),
        "median gap {}",
        sorted[sorted.len() / 2]
    );
}

fn untrusted_counter() -> ClockProbe {
    ClockProbe {
        invariant_tsc: false,
        clocksource: Some("hpet".into()),
    }
}

#[test]
fn without_a_trusted_counter_auto_falls_back_to_the_exact_realtime_clock() {
    let (registry, sink) = common::registry();
    let t = Telemetry::builder("clock-fallback")
        .registry(registry)
        .enabled(true)
        .exporter("collect")
        .clock_probe(untrusted_counter())
        .lane_capacity(1 << 16)
        .build()
        .unwrap();
    assert_eq!(t.clock(), ClockSource::Realtime);
    let brackets = record_bracketed(&t, Duration::from_millis(200), Duration::from_micros(20));
    drop(t);
    let events = collected(&sink);
    assert_bracketed(&events, &brackets, 1);
}

#[test]
fn asking_for_the_counter_where_it_is_untrusted_is_an_error_naming_the_variable() {
    let e = Telemetry::builder("clock-tsc")
        .clock_probe(untrusted_counter())
        .clock(ClockSource::Tsc)
        .build()
        .unwrap_err();
    assert!(matches!(e, ConfigError::ClockUnreliable { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.starts_with("TELERING_CLOCK=tsc"), "{text}");
    assert!(
        ["invariant TSC", "hpet", "supported"]
            .iter()
            .any(|w| text.contains(w)),
        "{text}"
    );
}

#[test]
fn telering_clock_selects_the_clock_and_rejects_unknown_names() {
    for (value, clock) in [
        ("realtime", ClockSource::Realtime),
        (" Coarse ", ClockSource::RealtimeCoarse),
        ("auto", ClockSource::Realtime),
    ] {
        let env = EnvSource::from_pairs([("TELERING_CLOCK", value)]);
        let b = Telemetry::builder("a")
            .clock_probe(untrusted_counter())
            .apply_env(&env)
            .unwrap();
        assert_eq!(b.resolve().unwrap().clock, clock, "{value}");
    }
    let env = EnvSource::from_pairs([("TELERING_CLOCK", "sundial")]);
    let e = Telemetry::builder("a").apply_env(&env).unwrap_err();
    assert!(matches!(e, ConfigError::ClockUnknown { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "TELERING_CLOCK=sundial is not a clock; use one of: auto, tsc, realtime, coarse"
    );
}

/// An exporter whose output has no timestamp field.
#[derive(Debug)]
struct Untimed {
    sink: common::Sink,
}

impl Exporter for Untimed {
    fn name(&self) -> &str {
        "untimed"
    }
    fn needs_timestamps(&self) -> bool {
        false
    }
    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        let mut c = self.sink.lock().unwrap();
        c.events
            .extend(batch.iter().filter(|e| e.name() == Ok("clock_test")));
        Ok(())
    }
    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
    fn shutdown(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}

#[test]
fn a_sink_without_timestamps_gets_events_stamped_zero() {
    let sink = common::Sink::default();
    let for_factory = sink.clone();
    let untimed = move |_: &ExporterContext| -> Result<Box<dyn Exporter>, ExportError> {
        Ok(Box::new(Untimed {
            sink: for_factory.clone(),
        }))
    };
    let t = common::telemetry_exporting_to("clock-untimed", "untimed", untimed);
    for v in 0..10 {
        t.record_event(Category::Custom, &NAME, v);
    }
    let mut xfer = t.start_xfer(true, 64, 1);
    t.xfer_posted(&mut xfer).unwrap();
    t.xfer_completed(&mut xfer).unwrap();
    // Per-transfer telemetry still has its start time and durations.
    let x = t.get_xfer_telemetry(&xfer).unwrap();
    assert!(x.start_time_us.abs_diff(realtime_us()) < 1_000_000);
    drop(t);
    let events = collected(&sink);
    assert_eq!(events.len(), 10);
    assert!(events.iter().all(|e| e.timestamp_us() == 0));
}

#[test]
fn per_transfer_start_times_are_wall_clock_microseconds() {
    let t = Telemetry::builder("clock-xfer")
        .capture_telemetry(true)
        .clock(exact_clock())
        .build()
        .unwrap();
    let before = realtime_us();
    let mut xfer = t.start_xfer(false, 1 << 20, 4);
    let after = realtime_us();
    std::thread::sleep(Duration::from_millis(3));
    t.xfer_posted(&mut xfer).unwrap();
    t.xfer_completed(&mut xfer).unwrap();
    let x = t.get_xfer_telemetry(&xfer).unwrap();
    assert!(
        x.start_time_us + 2 >= before && x.start_time_us <= after + 2,
        "{} not in [{before}, {after}]",
        x.start_time_us
    );
    assert!(x.post_duration >= Duration::from_millis(3));
    assert!(x.xfer_duration >= x.post_duration);
    assert!(x.xfer_duration < Duration::from_secs(5));
}

#[test]
fn the_ring_file_trailer_names_the_clock_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let clock = exact_clock();
    let t = Telemetry::builder("clock-trailer")
        .enabled(true)
        .dir(dir.path())
        .clock(clock)
        .build()
        .unwrap();
    t.update_tx_bytes(1);
    let before = realtime_us();
    t.flush().unwrap();
    let info = telering_shm::stat(&dir.path().join("clock-trailer")).unwrap();
    let expected = match clock {
        ClockSource::Tsc => telering_shm::ClockId::Tsc,
        _ => telering_shm::ClockId::Realtime,
    };
    assert_eq!(info.trailer.unwrap().clock, expected);
    drop(t);
    let mut reader = telering_shm::DrainingReader::open(&dir.path().join("clock-trailer")).unwrap();
    let e = reader.pop().unwrap().unwrap();
    assert!(e.timestamp_us() <= before + 2 && e.timestamp_us() + 1_000_000 > before);
}

#[test]
fn telering_clock_is_read_from_the_process_environment() {
    // The variable is set for a child run of this test, never in this process.
    let exe = std::env::current_exe().unwrap();
    if std::env::var_os("TELERING_CLOCK_CHILD").is_some() {
        let env = EnvSource::from_process();
        assert_eq!(
            env.get("TELERING_CLOCK").unwrap().as_deref(),
            Some("sundial")
        );
        return;
    }
    let status = std::process::Command::new(exe)
        .args([
            "--exact",
            "telering_clock_is_read_from_the_process_environment",
        ])
        .env("TELERING_CLOCK_CHILD", "1")
        .env("TELERING_CLOCK", "sundial")
        .status()
        .unwrap();
    assert!(status.success());
}
