//! loom models of the telering ring: one model per property.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test -p
//! telering-loom-tests --release`. Under `cfg(loom)` telering-core takes its atomics
//! and fences from loom (`core/src/sync.rs`), so these models check the production
//! code, exploring every interleaving (and every value a relaxed load may return) up
//! to the preemption bound.
//!
//! Every model checks the same four things: events arrive in order (FIFO), nothing is
//! lost without being counted, nothing is delivered twice, and nothing is torn: each
//! event differs from every other in every 8-byte word of its record, name bytes
//! included (`ev`), so a copy mixing two writes in any word shows.

#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::thread;
use telering_core::clock::FixedClock;
use telering_core::{
    Allowlist, Category, Event, EventName, ObserverStart, OverflowPolicy, Recorded, Recorder, Ring,
    builtin,
};

/// Event `v`: every word of its record differs from every other event's — the
/// timestamp, the category, each of the 31 name bytes and the value.
fn ev(v: u64) -> Event {
    let mut name = [0u8; 31];
    for (i, b) in name.iter_mut().enumerate() {
        *b = b'a' + ((v as usize * 7 + i) % 26) as u8;
    }
    let categories = [Category::Custom, Category::Memory, Category::Transfer];
    Event::new(
        1_000 + v * 3,
        categories[v as usize % categories.len()],
        EventName::new(core::str::from_utf8(&name).unwrap()).unwrap(),
        v,
    )
}

/// Checks an event is intact (equal, word for word, to the event of its value) and
/// returns its sequence value.
fn intact(e: &Event) -> u64 {
    assert_eq!(*e, ev(e.value()), "torn event: {e:?}");
    e.value()
}

/// Checks the readings of a reader that may have started after event 0: strictly
/// increasing, and what it delivered plus what it counted as missed is exactly the
/// stretch from its start (at or before its first event) to its last event.
fn check_follower(seen: &[u64], missed: u64, published: u64) {
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "not FIFO: {seen:?}");
    assert!(seen.iter().all(|&v| v < published), "invented: {seen:?}");
    if let (Some(&first), Some(&last)) = (seen.first(), seen.last()) {
        let covered = seen.len() as u64 + missed;
        assert!(
            covered <= last + 1 && last + 1 - covered <= first,
            "seen {seen:?}, missed {missed}"
        );
    }
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
        assert_eq!(
            seen.len() as u64 + c.events_lost(),
            3,
            "seen {seen:?} unknown {}",
            c.lag_unknown()
        );
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

#[test]
fn an_observer_attaching_mid_stream_under_overwrite_oldest_never_tears_or_miscounts() {
    loom::model(|| {
        let ring = leak::<2>();
        let (mut p, _c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
        let producer = thread::spawn(move || {
            for v in 0..3 {
                p.push(&ev(v)).unwrap();
            }
        });
        // Made while the producer runs: its start races the writes (polls racing
        // the writes are the other observer models; both together take loom minutes).
        let mut observer = ring.observer(ObserverStart::Oldest).unwrap();
        let mut seen = Vec::new();
        producer.join().unwrap();
        while let Some(e) = observer.poll() {
            seen.push(intact(&e));
        }
        // The newest event is never overwritten, so the observer ends with it.
        assert_eq!(seen.last(), Some(&2), "seen {seen:?}");
        check_follower(&seen, observer.events_missed(), 3);
    });
}

#[test]
fn a_consumer_attaching_mid_stream_reads_only_whole_published_events() {
    for policy in [OverflowPolicy::DropNewest, OverflowPolicy::OverwriteOldest] {
        loom::model(move || {
            let ring = leak::<4>();
            let (mut p, c) = ring.split(policy).unwrap();
            drop(c);
            let producer = thread::spawn(move || {
                for v in 0..2 {
                    p.push(&ev(v)).unwrap();
                }
            });
            // As a reader attaching to a ring file does: from the positions and
            // stamps as they are, while the producer writes.
            let mut c = ring.attach_consumer(policy);
            let mut seen = Vec::new();
            if let Some(e) = c.pop() {
                seen.push(intact(&e));
            }
            producer.join().unwrap();
            while let Some(e) = c.pop() {
                seen.push(intact(&e));
            }
            assert_eq!(seen.last(), Some(&1), "{policy:?}: seen {seen:?}");
            check_follower(&seen, c.events_lost(), 2);
        });
    }
}

#[test]
fn an_observer_sees_a_batch_all_at_once() {
    loom::model(|| {
        let ring = leak::<4>();
        let (mut p, _c) = ring.split(OverflowPolicy::DropNewest).unwrap();
        let mut observer = ring.observer(ObserverStart::Oldest).unwrap();
        let producer = thread::spawn(move || {
            let mut batch = p.batch();
            batch.push(&ev(1)).unwrap();
            batch.push(&ev(2)).unwrap();
            batch.publish();
        });
        let mut first = Vec::new();
        while let Some(e) = observer.poll() {
            first.push(intact(&e));
        }
        assert!(
            first.is_empty() || first == [1, 2],
            "partial batch: {first:?}"
        );
        producer.join().unwrap();
        while let Some(e) = observer.poll() {
            first.push(intact(&e));
        }
        assert_eq!(first, [1, 2]);
        assert_eq!(observer.events_missed(), 0);
    });
}

#[test]
fn an_observer_of_a_one_fence_batch_under_overwrite_oldest_never_tears() {
    loom::model(|| {
        let ring = leak::<2>();
        let (mut p, _c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
        let mut observer = ring.observer(ObserverStart::Oldest).unwrap();
        let producer = thread::spawn(move || {
            // Rounds of one event each in a ring of 2, one fence per round.
            assert_eq!(p.push_slice(&[ev(0), ev(1), ev(2)]), 3);
        });
        let mut seen = Vec::new();
        if let Some(e) = observer.poll() {
            seen.push(intact(&e));
        }
        producer.join().unwrap();
        while let Some(e) = observer.poll() {
            seen.push(intact(&e));
        }
        assert_eq!(seen.last(), Some(&2), "seen {seen:?}");
        assert_eq!(
            seen.len() as u64 + observer.events_missed(),
            3,
            "seen {seen:?}"
        );
    });
}

#[test]
fn an_unobserved_ring_is_fifo_and_counts_every_drop() {
    loom::model(|| {
        let ring: &'static Ring<2> = Box::leak(Box::new(Ring::new_unobserved()));
        assert!(ring.observer(ObserverStart::Oldest).is_err());
        let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
        let producer = thread::spawn(move || {
            for v in 0..3 {
                let _ = p.push(&ev(v));
            }
            p.events_dropped()
        });
        let mut seen = Vec::new();
        for _ in 0..2 {
            if let Some(e) = c.pop() {
                seen.push(intact(&e));
            }
        }
        let dropped = producer.join().unwrap();
        while let Some(e) = c.pop() {
            seen.push(intact(&e));
        }
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "not FIFO: {seen:?}");
        assert_eq!(seen.len() as u64 + dropped, 3, "seen {seen:?}");
    });
}

#[test]
fn the_plain_read_consumer_never_races_the_producer() {
    // `Ring<N>` under DropNewest: the consumer copies slots with unsynchronised loads
    // (loom's `unsync_load`, which fails the model on any store not ordered before
    // it), the producer writes a batch with one fence.
    loom::model(|| {
        let ring = leak::<2>();
        let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
        let producer = thread::spawn(move || {
            let mut written = p.push_slice(&[ev(0)]) as u64;
            written += p.push_slice(&[ev(1), ev(2)]) as u64;
            (written, p.events_dropped())
        });
        let mut seen = Vec::new();
        c.read_batch(usize::MAX, |e| seen.push(intact(e)));
        let (written, dropped) = producer.join().unwrap();
        c.read_batch(usize::MAX, |e| seen.push(intact(e)));
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "not FIFO: {seen:?}");
        assert_eq!(seen.len() as u64, written);
        assert_eq!(written + dropped, 3);
    });
}
