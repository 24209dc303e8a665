//! loom models of the telering ring: one model per property.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p
//! telering-loom-tests --release`. Under `cfg(loom)` telering-core takes its atomics
//! and fences from loom (`core/src/sync.rs`), so these models check the production
//! code, exploring every interleaving (and every value a relaxed load may return) up
//! to the preemption bound.
//!
//! Every model checks the same four things: events arrive in order (FIFO), nothing is
//! lost without being counted, nothing is delivered twice, and nothing is torn (each
//! event is written with `timestamp == value`, so a mix of two writes shows).

#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use telering_core::clock::FixedClock;
use telering_core::{
    Allowlist, Category, Event, EventName, ObserverStart, OverflowPolicy, Recorded, Recorder, Ring,
    builtin,
};

fn ev(v: u64) -> Event {
    Event::new(v, Category::Custom, EventName::new("seq").unwrap(), v)
}

/// Checks an event is intact and returns its sequence value.
fn intact(e: &Event) -> u64 {
    assert_eq!(e.timestamp_us(), e.value(), "torn event: {e:?}");
    assert_eq!(e.name(), Ok("seq"), "torn name");
    e.value()
}

/// A ring that outlives the model's threads (loom threads need `'static`).
fn leak<const N: usize>() -> &'static Ring<N> {
    Box::leak(Box::new(Ring::new()))
}

#[test]
fn drop_newest_is_fifo_and_counts_every_drop() {
    loom::model(|| {
        let ring = leak::<2>();
        let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
        let producer = thread::spawn(move || {
            for v in 1..=3 {
                let _ = p.push(&ev(v));
            }
            p.events_dropped()
        });
        let mut seen = Vec::new();
        for _ in 0..3 {
            if let Some(e) = c.pop() {
                seen.push(intact(&e));
            }
            thread::yield_now();
        }
        let dropped = producer.join().unwrap();
        while let Some(e) = c.pop() {
            seen.push(intact(&e));
        }
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "not FIFO: {seen:?}");
        assert_eq!(
            seen.len() as u64 + dropped,
            3,
            "seen {seen:?}, dropped {dropped}"
        );
    });
}

#[test]
fn a_batch_becomes_visible_all_at_once() {
    loom::model(|| {
        let ring = leak::<4>();
        let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
        let producer = thread::spawn(move || {
            let mut batch = p.batch();
            batch.push(&ev(1)).unwrap();
            batch.push(&ev(2)).unwrap();
            batch.publish();
        });
        let mut first = Vec::new();
        c.read_batch(usize::MAX, |e| first.push(intact(e)));
        assert!(
            first.is_empty() || first == [1, 2],
            "partial batch: {first:?}"
        );
        producer.join().unwrap();
        let mut rest = Vec::new();
        c.read_batch(usize::MAX, |e| rest.push(intact(e)));
        first.extend(rest);
        assert_eq!(first, [1, 2]);
    });
}

#[test]
fn overwrite_oldest_never_tears_and_counts_what_it_lost() {
    loom::model(|| {
        let ring = leak::<2>();
        let (mut p, mut c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
        let producer = thread::spawn(move || {
            for v in 0..3 {
                p.push(&ev(v)).unwrap();
            }
        });
        let mut seen = Vec::new();
        if let Some(e) = c.pop() {
            seen.push(intact(&e));
        }
        producer.join().unwrap();
        while let Some(e) = c.pop() {
            seen.push(intact(&e));
        }
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "not FIFO: {seen:?}");
        // The last event is never overwritten, so the consumer ends with it.
        assert_eq!(seen.last(), Some(&2), "seen {seen:?}");
        assert_eq!(seen.len() as u64 + c.events_lost(), 3, "seen {seen:?}");
    });
}

#[test]
fn observers_detect_gaps_exactly_without_disturbing_the_consumer() {
    loom::model(|| {
        let ring = leak::<2>();
        let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
        let mut observer = ring.observer(ObserverStart::Oldest).unwrap();
        let done: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let producer = thread::spawn(move || {
            for v in 0..3 {
                let _ = p.push(&ev(v));
                thread::yield_now();
            }
            (p.events_published(), p.events_dropped())
        });
        let consumer = thread::spawn(move || {
            let mut seen = Vec::new();
            while !done.load(Ordering::Acquire) {
                if let Some(e) = c.pop() {
                    seen.push(intact(&e));
                }
                thread::yield_now();
            }
            while let Some(e) = c.pop() {
                seen.push(intact(&e));
            }
            seen
        });
        let mut observed = Vec::new();
        if let Some(e) = observer.poll() {
            observed.push(intact(&e));
        }
        let (published, dropped) = producer.join().unwrap();
        done.store(true, Ordering::Release);
        let consumed = consumer.join().unwrap();
        while let Some(e) = observer.poll() {
            observed.push(intact(&e));
        }
        assert_eq!(consumed.len() as u64 + dropped, 3);
        assert_eq!(consumed.len() as u64, published);
        assert!(consumed.windows(2).all(|w| w[0] < w[1]));
        assert!(
            observed.windows(2).all(|w| w[0] < w[1]),
            "observer order {observed:?}"
        );
        assert!(
            observed.iter().all(|v| consumed.contains(v)),
            "observer invented events"
        );
        assert_eq!(
            observed.len() as u64 + observer.events_missed(),
            published,
            "observed {observed:?}, missed {}, consumed {consumed:?}",
            observer.events_missed()
        );
    });
}

#[test]
fn recorder_reports_every_drop_in_band() {
    loom::model(|| {
        let ring = leak::<4>();
        let (p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
        let producer = thread::spawn(move || {
            let mut rec = Recorder::new(p, FixedClock(1), Allowlist::all());
            let mut written = 0;
            for _ in 0..5 {
                if rec.record_builtin(builtin::AGENT_TX_BYTES, 1) == Recorded::Written {
                    written += 1;
                }
            }
            rec.flush_drop_report();
            (written, rec.unreported_drops())
        });
        let mut tx = 0;
        let mut reported = 0;
        let mut drain = |c: &mut telering_core::Consumer<&Ring<4>>| {
            while let Some(e) = c.pop() {
                match e.name() {
                    Ok("agent_tx_bytes") => tx += e.value(),
                    Ok("agent_telemetry_events_dropped") => reported += e.value(),
                    other => panic!("unexpected event {other:?}"),
                }
            }
        };
        drain(&mut c);
        let (written, unreported) = producer.join().unwrap();
        drain(&mut c);
        assert_eq!(tx, written);
        assert_eq!(
            tx + reported + unreported,
            5,
            "tx {tx}, reported {reported}, unreported {unreported}"
        );
    });
}
