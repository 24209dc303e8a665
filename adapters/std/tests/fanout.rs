//! Several exporters at once (`NIXL_TELEMETRY_EXPORTER=a,b`): each gets every event,
//! a failing or slow one costs the others nothing, and each one's losses are counted
//! and reported to it on their own.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use telering_core::builtin::AGENT_TELEMETRY_EVENTS_DROPPED;
use telering_core::{Category, Event};
use telering_std::export::{ExportError, Exporter};
use telering_std::{EnvSource, ExporterStats, Telemetry, TelemetryBuilder};

/// What a test exporter saw.
#[derive(Debug, Default)]
struct Seen {
    events: Mutex<Vec<Event>>,
    /// Fail this many exports first.
    fail_first: AtomicU64,
    /// While set, every export waits.
    hold: AtomicBool,
    added_dropped: AtomicU64,
}

#[derive(Debug)]
struct Probe(&'static str, Arc<Seen>);

impl Exporter for Probe {
    fn name(&self) -> &str {
        self.0
    }
    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        while self.1.hold.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let failing = self.1.fail_first.load(Ordering::Acquire);
        if failing > 0 {
            self.1.fail_first.store(failing - 1, Ordering::Release);
            return Err(ExportError::failed(self.0, "collector down"));
        }
        self.1.events.lock().unwrap().extend_from_slice(batch);
        Ok(())
    }
    fn add_dropped(&mut self, events: u64) {
        self.1.added_dropped.fetch_add(events, Ordering::AcqRel);
    }
    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
    fn shutdown(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}

fn builder(exporters: &str, probes: &[(&'static str, Arc<Seen>)]) -> TelemetryBuilder {
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y"),
        ("NIXL_TELEMETRY_EXPORTER", exporters),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "1000"),
    ]);
    let mut b = Telemetry::builder("fan").apply_env(&env).unwrap();
    for (name, seen) in probes {
        let (name, seen) = (*name, seen.clone());
        b.registry_mut()
            .register(name, move |_| Ok(Box::new(Probe(name, seen.clone()))));
    }
    b
}

fn values(seen: &Seen, category: Category) -> Vec<u64> {
    let events = seen.events.lock().unwrap();
    events
        .iter()
        .filter(|e| {
            e.category() == Ok(category) && e.name() != Ok("agent_telemetry_events_dropped")
        })
        .map(Event::value)
        .collect()
}

fn reports(seen: &Seen) -> Vec<u64> {
    let events = seen.events.lock().unwrap();
    events
        .iter()
        .filter(|e| e.name() == Ok(AGENT_TELEMETRY_EVENTS_DROPPED.name.as_str()))
        .map(Event::value)
        .collect()
}

/// Polls `f` until it holds, for at most 20 s.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn stats_of<'a>(stats: &'a [ExporterStats], name: &str) -> &'a ExporterStats {
    stats.iter().find(|s| s.name == name).unwrap()
}

#[test]
fn a_single_name_is_the_exporter_itself() {
    let a = Arc::new(Seen::default());
    let t = builder("a", &[("a", a.clone())]).build().unwrap();
    t.update_tx_bytes(1);
    t.flush().unwrap();
    // Exported synchronously by the flush, as before: no thread in between.
    assert_eq!(values(&a, Category::Transfer), [1]);
    let stats = t.exporter_stats();
    assert_eq!(stats.len(), 1);
    assert_eq!(
        (stats[0].name.as_str(), stats[0].events_delivered),
        ("a", 1)
    );
}

#[test]
fn every_exporter_of_the_list_gets_every_event_and_counts_its_own() {
    let seen: [Arc<Seen>; 3] = Default::default();
    let t = builder(
        " a, B ,c",
        &[
            ("a", seen[0].clone()),
            ("b", seen[1].clone()),
            ("c", seen[2].clone()),
        ],
    )
    .build()
    .unwrap();
    for v in 1..=300u64 {
        t.update_tx_bytes(v);
        if v % 100 == 0 {
            t.flush().unwrap();
        }
    }
    drop_and_check(t, |stats| {
        for (s, name) in seen.iter().zip(["a", "b", "c"]) {
            assert_eq!(
                values(s, Category::Transfer),
                (1..=300).collect::<Vec<_>>(),
                "{name}"
            );
            assert_eq!(reports(s), Vec::<u64>::new(), "{name}: nothing lost");
            let st = stats_of(stats, name);
            assert_eq!(
                (st.events_delivered, st.events_dropped, st.export_errors),
                (300, 0, 0)
            );
        }
    });
}

/// Takes the stats after every queued batch was exported, then drops the telemetry
/// (which shuts the exporters down) and runs `check` on them.
/// The telemetry's own counters must add up whatever the list did.
fn drop_and_check(t: Telemetry, check: impl FnOnce(&[ExporterStats])) {
    t.flush().unwrap();
    let recorded = t.stats().events_recorded;
    eventually("every exporter to take or lose every event", || {
        t.exporter_stats()
            .iter()
            .all(|s| s.events_delivered + s.events_dropped >= recorded)
    });
    let stats = t.exporter_stats();
    let all = t.stats();
    drop(t);
    let weakest = stats.iter().min_by_key(|s| s.events_delivered).unwrap();
    assert_eq!(all.events_exported, weakest.events_delivered, "{all:?}");
    assert_eq!(
        all.export_errors,
        stats.iter().map(|s| s.export_errors).sum::<u64>()
    );
    assert_eq!(
        all.events_exported
            + all.events_dropped
            + all.exporter_dropped
            + all.events_not_in_layout
            + all.events_undelivered,
        all.events_recorded,
        "{all:?}"
    );
    check(&stats);
}

#[test]
fn a_failing_exporter_loses_only_its_own_events_and_gets_its_own_report() {
    let ok = Arc::new(Seen::default());
    let down = Arc::new(Seen::default());
    down.fail_first.store(1, Ordering::Release);
    let t = builder("ok,down", &[("ok", ok.clone()), ("down", down.clone())])
        .build()
        .unwrap();
    for v in 1..=10u64 {
        t.update_tx_bytes(v);
    }
    t.flush().unwrap(); // `down` fails this batch of 10
    eventually("the failed export and the other's delivery", || {
        let each = t.exporter_stats();
        stats_of(&each, "down").export_errors == 1 && stats_of(&each, "ok").events_delivered == 10
    });
    // The telemetry's own counters are the failing exporter's: nothing of those 10
    // counts as exported while one exporter lost them, and the loss is that
    // exporter's (nothing was dropped at record time); it is failing.
    let all = t.stats();
    assert_eq!(
        (
            all.events_exported,
            all.events_dropped,
            all.exporter_dropped,
            all.export_errors,
            all.exporter_failing
        ),
        (0, 0, 10, 1, true),
        "{all:?}"
    );
    for v in 11..=15u64 {
        t.update_tx_bytes(v);
    }
    drop_and_check(t, |stats| {
        assert_eq!(
            values(&ok, Category::Transfer),
            (1..=15).collect::<Vec<_>>()
        );
        assert_eq!(reports(&ok), Vec::<u64>::new(), "`ok` lost nothing");
        assert_eq!(
            values(&down, Category::Transfer),
            (11..=15).collect::<Vec<_>>()
        );
        assert_eq!(reports(&down), [10], "one report of its own 10 losses");
        assert_eq!(down.added_dropped.load(Ordering::Acquire), 10);
        let d = stats_of(stats, "down");
        assert_eq!(
            (d.events_delivered, d.events_dropped, d.export_errors),
            (5, 10, 1)
        );
        let o = stats_of(stats, "ok");
        assert_eq!(
            (o.events_delivered, o.events_dropped, o.export_errors),
            (15, 0, 0)
        );
    });
}

#[test]
fn a_slow_exporter_delays_no_other_and_counts_what_it_could_not_take() {
    let fast = Arc::new(Seen::default());
    let slow = Arc::new(Seen::default());
    slow.hold.store(true, Ordering::Release);
    let t = builder(
        "slow,fast",
        &[("slow", slow.clone()), ("fast", fast.clone())],
    )
    .build()
    .unwrap();
    // Far more flushes than the slow exporter's queue holds, while it is stuck.
    let flushes = telering_std::fanout::QUEUE_BATCHES as u64 * 3;
    for v in 1..=flushes {
        t.update_tx_bytes(v);
        t.flush().unwrap();
        eventually("the fast exporter, while the slow one is stuck", || {
            values(&fast, Category::Transfer).len() as u64 == v
        });
    }
    let stuck = stats_of(&t.exporter_stats(), "slow").clone();
    assert_eq!(stuck.events_delivered, 0);
    assert!(stuck.events_dropped > 0, "{stuck:?}");
    slow.hold.store(false, Ordering::Release);
    drop_and_check(t, |stats| {
        let s = stats_of(stats, "slow");
        assert_eq!(s.events_delivered + s.events_dropped, flushes, "{s:?}");
        assert_eq!(
            values(&slow, Category::Transfer).len() as u64,
            s.events_delivered
        );
        // Its losses reach it in its own report once it has room again.
        let reported: u64 = reports(&slow).iter().sum();
        assert!(
            reported > 0 && reported <= s.events_dropped,
            "{reported} of {s:?}"
        );
        assert_eq!(reports(&fast), Vec::<u64>::new());
        assert_eq!(stats_of(stats, "fast").events_delivered, flushes);
    });
}
