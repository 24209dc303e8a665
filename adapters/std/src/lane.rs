//! Per-thread lanes: one core SPSC ring per (recording thread, `Telemetry`) pair.
//!
//! # Protocol
//!
//! A lane is an unobserved [`SliceRing`] (no slot stamps, no seqlock fence: nothing
//! but the flush ever reads it) over a boxed slot array allocated once, when a thread
//! records its first event into a given `Telemetry`. The lane has exactly one
//! producer, the [`LaneProducer`] kept in the recording thread's thread-local
//! [`ThreadLanes`], and exactly one consumer, the [`LaneConsumer`] kept in the
//! `Telemetry`'s lane list and used only by the flush (under the list's lock). Both
//! hold an `Arc` of the [`LaneStorage`] (the ring's handles through their owner, the
//! counters and flags through the same `Arc`), so the memory lives until the later of
//! the two is gone, with no `unsafe` anywhere:
//!
//! - the thread exits → its `LaneProducer` is dropped and sets `producer_gone`; the
//!   flush drains what is left and then removes the lane;
//! - the `Telemetry` is dropped → its `LaneConsumer`s are dropped and set `closed`;
//!   the thread frees its `LaneProducer` the next time it registers a lane, or when it
//!   exits.
//!
//! Registration takes the lane list's lock once per thread and `Telemetry`;
//! recording afterwards is a thread-local lookup (the most recently used lane sits
//! first) and a ring push: no lock, no allocation.
//!
//! # Accounting
//!
//! Events written are counted by the consumer's side: the events it drained plus those
//! the ring holds (its published `write_pos` less its own `read_pos`), so a push
//! stores no counter of its own. Events refused because the lane was full are counted
//! by the producer, which mirrors that count into [`LaneStorage`] with a relaxed
//! store (it is the only writer, so a plain store, no read-modify-write) on the
//! refusing path only. The flush reads both to report new drops and to sum
//! statistics; after the recording threads have synchronised with the flush (a join,
//! the `Telemetry`'s drop) the values it reads are final, which is what makes the
//! accounting exact.
//!
//! # Batches
//!
//! [`LaneProducer::push_all`] writes a batch all or nothing with one publish (the
//! core's `Producer::push_all`). Its room check counts from the consumer position the
//! producer last loaded, a lower bound on the lane's free slots (only the producer
//! fills the lane, and the consumer only ever frees more), so most batches check room
//! without loading the consumer's cache line.

use std::cell::RefCell;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use telering_core::ring::{self, Observability, SliceRing, Slot};
use telering_core::{Consumer, Event, OverflowPolicy, Producer};

/// The counter only the producer writes, on its own cache line(s) so that the
/// producer's stores do not evict the ring header the consumer reads (128 bytes: the
/// pair of lines x86-64 and AArch64 prefetchers fetch together).
#[repr(C, align(128))]
struct ProducerCounters {
    dropped: AtomicU64,
}

/// A lane's ring and the state both ends share.
pub(crate) struct LaneStorage {
    ring: SliceRing<Box<[Slot]>>,
    counters: ProducerCounters,
    producer_gone: AtomicBool,
    closed: AtomicBool,
}

/// The owner the lane's ring handles hold: a share of the whole [`LaneStorage`].
#[derive(Clone)]
struct LaneRing(Arc<LaneStorage>);

impl Deref for LaneRing {
    type Target = SliceRing<Box<[Slot]>>;
    #[inline(always)]
    fn deref(&self) -> &Self::Target {
        &self.0.ring
    }
}

/// Makes a lane of `capacity` slots (a power of two; it holds `capacity − 1`
/// events). `None` if the core refuses the capacity, which the configuration checks
/// beforehand.
pub(crate) fn new_lane(capacity: u32) -> Option<(LaneProducer, LaneConsumer)> {
    let slots: Box<[Slot]> = (0..capacity).map(|_| Slot::new()).collect();
    let storage = Arc::new(LaneStorage {
        ring: SliceRing::new(slots, Observability::Unobserved).ok()?,
        counters: ProducerCounters {
            dropped: AtomicU64::new(0),
        },
        producer_gone: AtomicBool::new(false),
        closed: AtomicBool::new(false),
    });
    let owner = LaneRing(Arc::clone(&storage));
    let (producer, consumer) = ring::split(owner, OverflowPolicy::DropNewest).ok()?;
    Some((
        LaneProducer {
            producer,
            storage: Arc::clone(&storage),
        },
        LaneConsumer {
            consumer,
            storage,
            drained: 0,
            reported_dropped: 0,
        },
    ))
}

/// The recording thread's end of a lane.
pub(crate) struct LaneProducer {
    producer: Producer<LaneRing>,
    storage: Arc<LaneStorage>,
}

impl LaneProducer {
    /// Pushes one event; `false` if the lane was full (the event is counted).
    #[inline(always)]
    pub(crate) fn push(&mut self, event: &Event) -> bool {
        match self.producer.push(event) {
            Ok(()) => true,
            Err(_) => {
                self.mirror_dropped();
                false
            }
        }
    }

    /// Pushes all of `events` and publishes them together, or none of them if the
    /// lane lacks room for all (then all are counted as dropped). The room check
    /// uses the consumer position last loaded and loads it again only when that one
    /// shows too little room: only this thread fills the lane, and the consumer only
    /// ever frees more.
    #[inline(always)]
    pub(crate) fn push_all(&mut self, events: &[Event]) -> bool {
        match self.producer.push_all(events) {
            Ok(()) => true,
            Err(_) => {
                self.mirror_dropped();
                false
            }
        }
    }

    /// [`push_all`](Self::push_all) of the `n` events `event(0)`, …, `event(n − 1)`,
    /// each made straight into its slot.
    #[inline(always)]
    pub(crate) fn push_all_with(&mut self, n: usize, event: impl FnMut(usize) -> Event) -> bool {
        match self.producer.push_all_with(n, event) {
            Ok(()) => true,
            Err(_) => {
                self.mirror_dropped();
                false
            }
        }
    }

    #[cold]
    fn mirror_dropped(&self) {
        self.storage
            .counters
            .dropped
            .store(self.producer.events_dropped(), Ordering::Relaxed);
    }

    fn is_closed(&self) -> bool {
        self.storage.closed.load(Ordering::Acquire)
    }
}

impl Drop for LaneProducer {
    fn drop(&mut self) {
        // Release: the flush that sees this flag also sees every event published.
        self.storage.producer_gone.store(true, Ordering::Release);
    }
}

/// The flush's end of a lane.
pub(crate) struct LaneConsumer {
    consumer: Consumer<LaneRing>,
    storage: Arc<LaneStorage>,
    /// Events taken out by [`drain`](Self::drain), in total.
    drained: u64,
    reported_dropped: u64,
}

impl LaneConsumer {
    /// Whether the recording thread has exited. Check this *before* the last
    /// [`drain`](Self::drain): a lane whose producer was gone before a drain is empty
    /// after it.
    pub(crate) fn producer_gone(&self) -> bool {
        self.storage.producer_gone.load(Ordering::Acquire)
    }

    /// Moves every published event into `out`; returns how many.
    pub(crate) fn drain(&mut self, out: &mut Vec<Event>) -> usize {
        let n = self.consumer.read_batch(usize::MAX, |e| out.push(*e));
        self.drained += n as u64;
        n
    }

    /// Events the lane refused since the previous call.
    pub(crate) fn take_new_drops(&mut self) -> u64 {
        let dropped = self.dropped();
        let new = dropped - self.reported_dropped;
        self.reported_dropped = dropped;
        new
    }

    /// Events written into the lane, in total: those drained and those waiting.
    pub(crate) fn written(&self) -> u64 {
        self.drained + u64::from(self.consumer.len())
    }

    /// Events the lane refused, in total.
    pub(crate) fn dropped(&self) -> u64 {
        self.storage.counters.dropped.load(Ordering::Relaxed)
    }
}

impl Drop for LaneConsumer {
    fn drop(&mut self) {
        self.storage.closed.store(true, Ordering::Release);
    }
}

/// A thread's lanes, one per `Telemetry` it recorded into (by its unique id), the
/// most recently used first.
struct ThreadLanes {
    lanes: Vec<(u64, LaneProducer)>,
}

thread_local! {
    static LANES: RefCell<ThreadLanes> = const { RefCell::new(ThreadLanes { lanes: Vec::new() }) };
}

/// Runs `f` on this thread's lane for the `Telemetry` with id `id`, registering one
/// through `register` on first use. `None` when there is no lane: the thread is
/// exiting (its thread-locals are gone), `register` failed, or a recording call
/// re-entered this one.
#[inline]
pub(crate) fn with_lane<R>(
    id: u64,
    register: impl FnOnce() -> Option<LaneProducer>,
    f: impl FnOnce(&mut LaneProducer) -> R,
) -> Option<R> {
    LANES
        .try_with(|cell| {
            let mut lanes = cell.try_borrow_mut().ok()?;
            match lanes.lanes.first_mut() {
                Some((first, lane)) if *first == id => Some(f(lane)),
                _ => find_or_register(&mut lanes.lanes, id, register).map(f),
            }
        })
        .ok()
        .flatten()
}

#[cold]
#[inline(never)]
fn find_or_register(
    lanes: &mut Vec<(u64, LaneProducer)>,
    id: u64,
    register: impl FnOnce() -> Option<LaneProducer>,
) -> Option<&mut LaneProducer> {
    if let Some(i) = lanes.iter().position(|(lane_id, _)| *lane_id == id) {
        lanes.swap(0, i);
    } else {
        // Free the lanes of `Telemetry`s that are gone before adding one.
        lanes.retain(|(_, lane)| !lane.is_closed());
        let lane = register()?;
        lanes.insert(0, (id, lane));
    }
    lanes.first_mut().map(|(_, lane)| lane)
}

#[cfg(test)]
mod tests {
    use super::*;
    use telering_core::{Category, event_name};

    fn ev(v: u64) -> Event {
        Event::new(v, Category::Custom, event_name!("lane_test"), v)
    }

    #[test]
    fn a_lane_delivers_in_order_and_counts_what_it_refuses() {
        let (mut p, mut c) = new_lane(8).unwrap();
        for v in 0..10 {
            p.push(&ev(v));
        }
        let mut out = Vec::new();
        assert_eq!(c.drain(&mut out), 7);
        assert_eq!(
            out.iter().map(Event::value).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5, 6]
        );
        assert_eq!((c.written(), c.dropped()), (7, 3));
        assert_eq!(c.take_new_drops(), 3);
        assert_eq!(c.take_new_drops(), 0);
    }

    #[test]
    fn push_all_writes_all_or_counts_all_as_dropped() {
        let (mut p, mut c) = new_lane(8).unwrap();
        assert!(p.push_all(&[ev(1), ev(2), ev(3), ev(4)]));
        assert!(!p.push_all(&[ev(5), ev(6), ev(7), ev(8)])); // 3 free slots
        assert!(p.push_all(&[ev(9), ev(10), ev(11)]));
        let mut out = Vec::new();
        c.drain(&mut out);
        assert_eq!(out.len(), 7);
        assert_eq!((c.written(), c.dropped()), (7, 4));
    }

    #[test]
    fn written_counts_events_waiting_and_drained() {
        let (mut p, mut c) = new_lane(8).unwrap();
        p.push(&ev(1));
        assert!(p.push_all(&[ev(2), ev(3)]));
        assert_eq!(c.written(), 3);
        let mut out = Vec::new();
        c.drain(&mut out);
        p.push(&ev(4));
        assert_eq!((c.written(), c.dropped()), (4, 0));
    }

    #[test]
    fn push_all_sees_the_room_a_drain_frees() {
        let (mut p, mut c) = new_lane(8).unwrap();
        assert!(p.push_all(&[ev(1), ev(2), ev(3), ev(4), ev(5), ev(6)]));
        assert!(!p.push_all(&[ev(7), ev(8)])); // 1 free slot
        let mut out = Vec::new();
        assert_eq!(c.drain(&mut out), 6);
        assert!(p.push_all(&[ev(9), ev(10), ev(11), ev(12)]));
        p.push(&ev(13));
        p.push(&ev(14));
        p.push(&ev(15));
        assert!(!p.push_all(&[ev(16)])); // full: 7 waiting
        out.clear();
        assert_eq!(c.drain(&mut out), 7);
        assert_eq!(
            out.iter().map(Event::value).collect::<Vec<_>>(),
            [9, 10, 11, 12, 13, 14, 15]
        );
        assert_eq!((c.written(), c.dropped()), (13, 3));
    }

    #[test]
    fn the_consumer_outlives_an_exited_producer_and_drains_it() {
        let (p, mut c) = new_lane(16).unwrap();
        let handle = std::thread::spawn(move || {
            let mut p = p;
            for v in 0..5 {
                p.push(&ev(v));
            }
        });
        handle.join().unwrap();
        assert!(c.producer_gone());
        let mut out = Vec::new();
        assert_eq!(c.drain(&mut out), 5);
    }

    #[test]
    fn thread_lanes_of_a_closed_telemetry_are_freed_at_the_next_registration() {
        let (p1, c1) = new_lane(4).unwrap();
        let weak = Arc::downgrade(&c1.storage);
        let mut p1 = Some(p1);
        assert_eq!(with_lane(u64::MAX - 1, || p1.take(), |_| 1), Some(1));
        drop(c1); // the Telemetry went away
        let (p2, _c2) = new_lane(4).unwrap();
        let mut p2 = Some(p2);
        assert_eq!(with_lane(u64::MAX - 2, || p2.take(), |_| 2), Some(2));
        assert!(weak.upgrade().is_none(), "closed lane still allocated");
    }
}
