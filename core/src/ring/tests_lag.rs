//! Readers that fall far behind: lapped many times, or by 2²⁹ events and more (the
//! limit of the 30-bit stamps). Producers are "driven" past 2³⁰ events by stamping
//! every slot as a ring that has run that long would be, instead of copying 10⁹
//! events.

use super::*;
use crate::event::{Category, Event, EventName};

fn ev(value: u64) -> Event {
    Event::new(
        value,
        Category::Custom,
        EventName::new("lag").unwrap(),
        value,
    )
}

const N: u32 = 64;
/// Laps a stalled reader is lapped by (fewer under Miri, which runs ~10⁴× slower).
const LAPS: u64 = if cfg!(miri) { 5 } else { 500 };

/// Makes the ring look as if `next` events had been published into it: every slot
/// carries the stamp of the latest event that went there, `write_pos` is `next mod N`.
fn run_up_to(ring: &Ring<{ N as usize }>, next: u64) {
    for slot in 0..N as u64 {
        let seq = next - 1 - ((next - 1 - slot) % N as u64);
        stamp_of(ring, slot as u32).store(stamp_done(seq as u32), Ordering::Release);
    }
    ring.write_pos()
        .store_low((next % N as u64) as u32, Ordering::Release);
    ring.read_pos()
        .store_low((next % N as u64) as u32, Ordering::Release);
}

#[test]
fn a_reader_lapped_many_times_resumes_at_once_and_counts_exactly() {
    let ring = Ring::<{ N as usize }>::new();
    let (mut p, _c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    let mut o = ring.observer(ObserverStart::Newest).unwrap();
    // The reader stalls while the writer laps it 500 times.
    let stall = LAPS * N as u64;
    for v in 0..stall {
        p.push(&ev(v)).unwrap();
    }
    // The very first call after the stall delivers the oldest readable event.
    let first = o.poll().expect("progress on the first call").value();
    assert_eq!(first, stall - N as u64);
    assert_eq!(o.events_missed(), first);
    // Every later call makes progress while the writer keeps going, and
    // delivered + missed = published.
    let mut delivered = 1;
    for v in stall..stall + 10 * N as u64 {
        p.push(&ev(v)).unwrap();
        if v % 3 == 0 {
            assert!(o.poll().is_some(), "no progress at {v}");
            delivered += 1;
        }
    }
    while o.poll().is_some() {
        delivered += 1;
    }
    assert_eq!(delivered + o.events_missed(), p.events_published());
    assert_eq!(o.lag_unknown(), 0);
}

#[test]
fn an_overwrite_oldest_consumer_lapped_many_times_resumes_at_once() {
    let ring = Ring::<{ N as usize }>::new();
    let (mut p, mut c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    let stall = 2 * LAPS * N as u64 + 7;
    for v in 0..stall {
        p.push(&ev(v)).unwrap();
    }
    assert_eq!(c.pop().map(|e| e.value()), Some(stall - N as u64));
    let delivered = 1 + c.read_batch(usize::MAX, |_| {}) as u64;
    assert_eq!(delivered, N as u64);
    assert_eq!(delivered + c.events_lost(), stall);
}

#[test]
fn a_lag_just_under_two_to_the_29_is_counted_from_the_stamps() {
    let ring = Ring::<{ N as usize }>::new();
    let start = (1u64 << 30) - 10; // the producer's sequence wraps 30 bits in this run
    run_up_to(&ring, start);
    let mut o = ring.observer(ObserverStart::Newest).unwrap();
    let lag = (1u64 << 29) - 1000;
    run_up_to(&ring, start + lag);
    let (mut p, _c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    for v in 0..3 {
        p.push(&ev(v)).unwrap();
    }
    // Resumes at the oldest event (a slot stamped above) and counts exactly.
    assert!(o.poll().is_some());
    assert_eq!(o.events_missed(), lag + 3 - N as u64);
    assert_eq!(o.lag_unknown(), 0);
    let mut rest = 0;
    while let Some(e) = o.poll() {
        rest += 1;
        if rest > N - 3 {
            assert_eq!(e.name(), Ok("lag"));
        }
    }
    assert_eq!(rest, N - 1);
}

#[test]
fn a_lag_beyond_two_to_the_29_is_signalled_as_unknown_and_the_reader_resumes() {
    let ring = Ring::<{ N as usize }>::new();
    let start = (1u64 << 30) + 5;
    run_up_to(&ring, start);
    let mut o = ring.observer(ObserverStart::Newest).unwrap();
    // More than 2²⁹ events behind: the stamps look older than the expected one.
    run_up_to(&ring, start + (1 << 29) + 12_345);
    let (mut p, _c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    p.push(&ev(1)).unwrap();
    assert!(o.poll().is_some(), "resumes on the first call");
    assert_eq!(o.lag_unknown(), 1);
    assert_eq!(o.events_missed(), 0, "an unknown loss is not guessed");
    let mut n = 1;
    let mut last = None;
    while let Some(e) = o.poll() {
        n += 1;
        last = Some(e.value());
    }
    assert_eq!((n, last), (N, Some(1)));
    assert_eq!(o.lag_unknown(), 1);
}

#[test]
fn with_a_64_bit_published_count_any_lag_is_counted_exactly() {
    for lag in [
        (1u64 << 29) + 12_345,
        (1 << 30) + 77,
        (3 << 30) + N as u64 * 5,
    ] {
        let ring = Ring::<{ N as usize }>::new();
        let start = (1u64 << 31) + 3;
        run_up_to(&ring, start);
        let mut o = ring.observer(ObserverStart::Newest).unwrap();
        o.set_published(start);
        run_up_to(&ring, start + lag);
        let (mut p, _c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
        p.push(&ev(1)).unwrap();
        o.set_published(start + lag + 1);
        let mut delivered = 0;
        while o.poll().is_some() {
            delivered += 1;
        }
        assert_eq!(delivered, N as u64, "lag {lag}");
        assert_eq!(o.events_missed() + delivered, lag + 1, "lag {lag}");
        assert_eq!(o.lag_unknown(), 0);
    }
}

#[test]
fn a_lag_of_whole_rounds_of_two_to_the_30_is_counted_from_the_published_count() {
    // The stamps of such a ring look as when the reader last looked (or as if it were
    // a few events behind): only the 64-bit count tells that it is whole rounds of the
    // 30-bit sequence behind.
    for lag in [1u64 << 30, 3 << 30, (1 << 30) + 3] {
        let ring = Ring::<{ N as usize }>::new();
        let start = (1u64 << 31) + 3;
        run_up_to(&ring, start);
        let (_p, mut c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
        let mut o = ring.observer(ObserverStart::Newest).unwrap();
        c.set_published(start);
        o.set_published(start);
        assert_eq!(c.read_batch(usize::MAX, |_| {}), N as usize);
        let lost_before = c.events_lost();
        run_up_to(&ring, start + lag);
        c.set_published(start + lag);
        o.set_published(start + lag);
        assert!(o.poll().is_some(), "lag {lag}: resumes on the first call");
        assert_eq!(o.events_missed(), lag - N as u64, "observer, lag {lag}");
        assert_eq!(c.read_batch(usize::MAX, |_| {}), N as usize, "lag {lag}");
        assert_eq!(
            c.events_lost() - lost_before,
            lag - N as u64,
            "consumer, lag {lag}"
        );
        assert_eq!((o.lag_unknown(), c.lag_unknown()), (0, 0));
        // Caught up now: nothing more, nothing counted.
        let mut rest = 0;
        while o.poll().is_some() {
            rest += 1;
        }
        assert_eq!(rest, N - 1, "lag {lag}");
        assert!(c.pop().is_none());
        assert_eq!(o.events_missed(), lag - N as u64);
    }
}

#[test]
fn stamp_followers_see_a_batch_only_once_it_is_published() {
    let ring = Ring::<{ N as usize }>::new();
    let (mut p, mut c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    let mut o = ring.observer(ObserverStart::Newest).unwrap();
    let mut b = p.batch();
    for v in 0..5 {
        b.push(&ev(v)).unwrap();
    }
    // Stamped, not yet published.
    assert!(o.poll().is_none());
    assert!(c.pop().is_none());
    drop(b);
    assert_eq!(o.poll().map(|e| e.value()), Some(0));
    assert_eq!(c.read_batch(usize::MAX, |_| {}), 5);
}

#[test]
fn a_published_count_that_starts_from_zero_on_a_continued_sequence_still_counts_exactly() {
    // A new writer continues the stamps' sequence of the file it reuses but counts
    // its own events from 0.
    let ring = Ring::<{ N as usize }>::new();
    let start = (5u64 << 30) + 11;
    run_up_to(&ring, start);
    let (mut p, mut c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    assert_eq!(c.read_batch(usize::MAX, |_| {}), N as usize);
    let lost_before = c.events_lost();
    c.set_published(0);
    for v in 0..3 * N as u64 + 5 {
        p.push(&ev(v)).unwrap();
    }
    c.set_published(p.events_published());
    let delivered = c.read_batch(usize::MAX, |_| {}) as u64;
    assert_eq!(delivered, N as u64);
    assert_eq!(
        c.events_lost() - lost_before + delivered,
        p.events_published()
    );
    assert_eq!(c.lag_unknown(), 0);
}

#[test]
fn a_consumer_attaching_after_whole_laps_reads_the_ring_instead_of_nothing() {
    let ring = Ring::<{ N as usize }>::new();
    let (mut p, _) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    // No consumer ran while the writer wrote three whole rings: read_pos == write_pos.
    for v in 0..3 * N as u64 {
        p.push(&ev(v)).unwrap();
    }
    let mut c = Consumer::new(&ring, address_of(&ring), OverflowPolicy::OverwriteOldest);
    let mut got = std::vec::Vec::new();
    c.read_batch(usize::MAX, |e| got.push(e.value()));
    assert_eq!(
        got,
        (2 * N as u64..3 * N as u64).collect::<std::vec::Vec<_>>()
    );
}
