use super::*;
use crate::event::{Category, Event, EventName};
use std::collections::VecDeque;
use std::vec::Vec;

fn ev(value: u64) -> Event {
    Event::new(
        value,
        Category::Custom,
        EventName::new("seq").unwrap(),
        value,
    )
}

/// Iterations for the randomized tests: fewer under Miri, which interprets every
/// instruction.
const ITERATIONS: u64 = if cfg!(miri) { 500 } else { 200_000 };

/// A small deterministic generator, so failures reproduce.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn stamps_encode_sequence_and_busy_bit() {
    assert_eq!(stamp_seq(stamp_done(0)), 0);
    assert_eq!(stamp_seq(stamp_done(12345) | STAMP_BUSY), 12345);
    // No sequence number encodes to the "never written" stamp 0, even where it wraps.
    for seq in [0, 1, STAMP_SEQ_MASK - 1, STAMP_SEQ_MASK, STAMP_SEQ_MASK + 1] {
        assert!(stamp_written(stamp_done(seq)), "seq {seq}");
        assert_eq!(stamp_seq(stamp_done(seq)), seq & STAMP_SEQ_MASK);
    }
    assert!(!stamp_written(0));
    assert_eq!(seq_distance(5, 3), 2);
    assert_eq!(seq_distance(3, 5), -2);
    assert_eq!(seq_distance(1, STAMP_SEQ_MASK), 2);
}

#[test]
fn a_reader_over_crafted_stamps_gives_up_instead_of_spinning() {
    let ring = Ring::<4>::new();
    let (mut p, _c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    p.push(&ev(0)).unwrap();
    let mut observer = ring.observer(ObserverStart::Oldest).unwrap();
    // Every slot claims an event far ahead, each pointing past the others.
    for (i, slot) in ring.slots.iter().enumerate() {
        slot.stamp
            .store(stamp_done(1_000_000 + i as u32 * 7), Ordering::Relaxed);
    }
    // Each call does bounded work: it resynchronises to what `write_pos` and the
    // stamps before it tell, and returns at most the one slot whose stamp fits.
    let delivered = (0..10).filter(|_| observer.poll().is_some()).count();
    assert!(delivered <= 1, "{delivered}");
    assert!(observer.events_missed() > 0);
}

#[test]
fn drop_newest_is_fifo_and_counts_every_dropped_event() {
    let ring = Ring::<8>::new();
    let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    let mut model = VecDeque::new();
    let mut rng = Lcg(1);
    let (mut next, mut dropped) = (0u64, 0u64);
    for _ in 0..ITERATIONS {
        if rng.next() % 3 != 0 {
            match p.push(&ev(next)) {
                Ok(()) => model.push_back(next),
                Err(Full) => {
                    assert_eq!(model.len(), 7, "refused while not full");
                    dropped += 1;
                }
            }
            next += 1;
        } else {
            assert_eq!(c.pop().map(|e| e.value()), model.pop_front());
        }
        assert_eq!(p.events_dropped(), dropped);
    }
    assert_eq!(p.events_published() + p.events_dropped(), next);
}

#[test]
fn full_ring_counts_every_dropped_event() {
    let ring = Ring::<4>::new();
    let (mut p, _c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    for v in 0..10 {
        let _ = p.push(&ev(v));
    }
    assert_eq!(p.events_published(), 3);
    assert_eq!(p.events_dropped(), 7);
    assert_eq!(p.free_slots(), 0);
}

#[test]
fn batch_is_invisible_until_published_and_then_visible_at_once() {
    let ring = Ring::<16>::new();
    let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    {
        let mut b = p.batch();
        for v in 0..20 {
            let _ = b.push(&ev(v));
        }
        assert_eq!(b.len(), 15);
        assert!(c.is_empty());
    }
    assert_eq!(p.events_dropped(), 5);
    let mut got = Vec::new();
    assert_eq!(c.read_batch(usize::MAX, |e| got.push(e.value())), 15);
    assert_eq!(got, (0..15).collect::<Vec<_>>());
    assert_eq!(p.push_slice(&[ev(100), ev(101)]), 2);
    let mut out = [ev(0); 4];
    assert_eq!(c.pop_into(&mut out), 2);
    assert_eq!(out[1].value(), 101);
}

#[test]
fn overwrite_oldest_consumer_counts_exactly_what_it_lost() {
    let ring = Ring::<8>::new();
    let (mut p, mut c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    let mut rng = Lcg(7);
    let mut next = 0u64;
    let mut expected = 0u64;
    let mut delivered = 0u64;
    for _ in 0..ITERATIONS {
        if rng.next() % 4 != 0 {
            p.push(&ev(next)).unwrap();
            next += 1;
        } else {
            let before = c.events_lost();
            if let Some(e) = c.pop() {
                // Everything between the previous event and this one was counted.
                assert_eq!(e.value(), expected + (c.events_lost() - before));
                expected = e.value() + 1;
                delivered += 1;
                // The consumer always gets the oldest event still in the ring.
                assert!(next - e.value() <= 8);
            } else {
                assert_eq!(expected + (c.events_lost() - before), next);
            }
        }
    }
    while let Some(e) = c.pop() {
        assert!(e.value() >= expected);
        expected = e.value() + 1;
        delivered += 1;
    }
    assert_eq!(delivered + c.events_lost(), next);
    assert_eq!(p.events_dropped(), 0);
}

#[test]
fn observers_follow_without_affecting_the_consumer_and_count_gaps() {
    let ring = Ring::<8>::new();
    let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    let mut fast = ring.observer(ObserverStart::Oldest).unwrap();
    let mut slow = ring.observer(ObserverStart::Oldest).unwrap();
    let mut consumed = Vec::new();
    let (mut fast_seen, mut slow_seen) = (Vec::new(), 0u64);
    // The next value the slow observer has neither seen nor counted as missed.
    let mut slow_next = 0;
    let mut next = 0;
    for round in 0..(ITERATIONS / 200).max(10) {
        for _ in 0..5 {
            if p.push(&ev(next)).is_ok() {
                next += 1;
            }
        }
        while let Some(e) = fast.poll() {
            fast_seen.push(e.value());
        }
        if round % 7 == 0 {
            let before = slow.events_missed();
            let (mut last, mut seen_now) = (None, 0);
            while let Some(e) = slow.poll() {
                // What it sees is in order; a gap is exactly what it counted missed.
                assert!(last.is_none_or(|l| e.value() > l));
                last = Some(e.value());
                seen_now += 1;
            }
            slow_seen += seen_now;
            let missed_now = slow.events_missed() - before;
            // It caught up with the head, and seen + missed is everything published since.
            assert_eq!(last, Some(next - 1));
            assert_eq!(seen_now + missed_now, next - slow_next);
            slow_next = next;
        }
        while let Some(e) = c.pop() {
            consumed.push(e.value());
        }
    }
    // The consumer saw everything that was published, in order.
    assert_eq!(consumed, (0..next).collect::<Vec<_>>());
    // The fast observer kept up and saw the same stream.
    assert_eq!(fast_seen, consumed);
    assert_eq!(fast.events_missed(), 0);
    // The slow one was lapped; seen + missed = published, up to what is still unread.
    let mut tail = 0;
    while slow.poll().is_some() {
        tail += 1;
    }
    assert!(slow.events_missed() > 0);
    assert_eq!(slow_seen + tail + slow.events_missed(), next);
}

#[test]
fn observer_starting_at_newest_sees_only_new_events() {
    let ring = Ring::<8>::new();
    let (mut p, _c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    for v in 0..20 {
        p.push(&ev(v)).unwrap();
    }
    let mut newest = ring.observer(ObserverStart::Newest).unwrap();
    let mut oldest = ring.observer(ObserverStart::Oldest).unwrap();
    assert!(newest.poll().is_none());
    p.push(&ev(20)).unwrap();
    assert_eq!(newest.poll().map(|e| e.value()), Some(20));
    // Oldest started (before event 20) with capacity − 1 events of history: 13..=19.
    assert_eq!(oldest.poll().map(|e| e.value()), Some(13));
}

#[test]
fn split_is_allowed_once() {
    let ring = Ring::<2>::new();
    assert!(ring.split(OverflowPolicy::DropNewest).is_ok());
    assert_eq!(
        ring.split(OverflowPolicy::DropNewest).err(),
        Some(AlreadySplit)
    );
}

#[test]
fn two_threads_deliver_every_event_in_order_or_count_it() {
    use std::sync::atomic::{AtomicBool, Ordering as O};
    for policy in [OverflowPolicy::DropNewest, OverflowPolicy::OverwriteOldest] {
        let ring = Ring::<64>::new();
        let (mut p, mut c) = ring.split(policy).unwrap();
        let total: u64 = if cfg!(miri) { 500 } else { 400_000 };
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let producer = s.spawn(|| {
                let mut v = 0;
                while v < total {
                    let mut b = p.batch();
                    for _ in 0..(v % 13 + 1).min(total - v) {
                        let _ = b.push(&ev(v));
                        v += 1;
                    }
                }
                done.store(true, O::Release);
                (p.events_published(), p.events_dropped())
            });
            let mut expected = 0u64;
            let mut delivered = 0u64;
            // Losses counted since the previous delivered event: a read may count a
            // lap and still find nothing readable yet.
            let mut lost_at_last_event = 0;
            loop {
                let finished = done.load(O::Acquire);
                match c.pop() {
                    Some(e) => {
                        assert!(e.value() >= expected, "{policy:?}: out of order");
                        if policy == OverflowPolicy::OverwriteOldest {
                            assert_eq!(e.value() - expected, c.events_lost() - lost_at_last_event);
                            lost_at_last_event = c.events_lost();
                        }
                        assert_eq!(e.name(), Ok("seq"));
                        assert_eq!(e.timestamp_us(), e.value(), "torn event");
                        expected = e.value() + 1;
                        delivered += 1;
                    }
                    None if finished => break,
                    None => std::thread::yield_now(),
                }
            }
            let (published, dropped) = producer.join().unwrap();
            assert_eq!(published + dropped, total);
            assert_eq!(delivered + dropped + c.events_lost(), total, "{policy:?}");
        });
    }
}
