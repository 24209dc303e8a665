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
//! - the thread exits → its `LaneProducer` is dropped (by the thread-exit guard that
//!   the first registration arms, [`LanesGuard`]) and sets `producer_gone`; the flush
//!   drains what is left and then removes the lane;
//! - the `Telemetry` is dropped → its `LaneConsumer`s are dropped and set `closed`;
//!   the thread frees its `LaneProducer` the next time it registers a lane, or when it
//!   exits.
//!
//! Registration takes the lane list's lock once per thread and `Telemetry`;
//! recording afterwards is a thread-local lookup (the most recently used lane sits
//! first) and a ring push: no lock, no allocation. A recording call takes the
//! thread's lane list out of its thread-local and puts it back when done
//! ([`LentLanes`]), so a call that re-enters it on the same thread (a global
//! allocator that records, say) finds no lane and its event is counted as dropped.
//! Recording from a signal handler is not supported: neither registration (which
//! allocates) nor the take and put-back (plain loads and stores) is async-signal-safe.
//! The lanes' thread-locals have no destructor of their own (the guard
//! drops their contents), so the lookup tests no destructor state: it is a plain
//! thread-local access.
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
//! # Compact lanes
//!
//! A `Telemetry` whose sinks need no timestamp (the 16-byte version-4 ring file)
//! records its built-in events into *compact* lanes: the same ring over 16-byte
//! [`CompactEvent`] slots (`{type, value}`, the type being the built-in's index),
//! which the flush turns back into events. A lane of 56-byte records costs three and a
//! half times the memory traffic per event, which bounds a recording loop long before
//! its instructions do. Custom events keep the full lanes (their name is not an
//! index), so each thread then has up to two lanes per `Telemetry`, each in order;
//! with no timestamps to merge by, the flush exports a thread's built-in events and
//! its custom events as two streams.
//!
//! # Batches
//!
//! [`LaneProducer::push_all`] writes a batch all or nothing with one publish (the
//! core's `Producer::push_all`). Its room check counts from the consumer position the
//! producer last loaded, a lower bound on the lane's free slots (only the producer
//! fills the lane, and the consumer only ever frees more), so most batches check room
//! without loading the consumer's cache line.

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::LocalKey;
use telering_core::ring::{
    self, CompactEvent, CompactFormat, EventFormat, Observability, SliceRing, SlotFormat,
};
use telering_core::{Consumer, Event, OverflowPolicy, Producer};

/// The counter only the producer writes, on its own cache line(s) so that the
/// producer's stores do not evict the ring header the consumer reads (128 bytes: the
/// pair of lines x86-64 and AArch64 prefetchers fetch together).
#[repr(C, align(128))]
struct ProducerCounters {
    dropped: AtomicU64,
}

/// A lane's ring (of format `F`: 56-byte events, or [`CompactFormat`]'s 16-byte
/// records) and the state both ends share.
pub(crate) struct LaneStorage<F: SlotFormat = EventFormat> {
    ring: SliceRing<Box<[F::Slot]>, F>,
    counters: ProducerCounters,
    producer_gone: AtomicBool,
    closed: AtomicBool,
}

/// The owner the lane's ring handles hold: a share of the whole [`LaneStorage`].
struct LaneRing<F: SlotFormat>(Arc<LaneStorage<F>>);

impl<F: SlotFormat> Clone for LaneRing<F> {
    fn clone(&self) -> Self {
        LaneRing(Arc::clone(&self.0))
    }
}

impl<F: SlotFormat> Deref for LaneRing<F> {
    type Target = SliceRing<Box<[F::Slot]>, F>;
    #[inline(always)]
    fn deref(&self) -> &Self::Target {
        &self.0.ring
    }
}

/// Makes a lane of `capacity` slots (a power of two; it holds `capacity − 1`
/// events). `None` if the core refuses the capacity, which the configuration checks
/// beforehand.
pub(crate) fn new_lane<F: SlotFormat>(capacity: u32) -> Option<(LaneProducer<F>, LaneConsumer<F>)> {
    let slots: Box<[F::Slot]> = (0..capacity).map(|_| F::empty()).collect();
    let storage = Arc::new(LaneStorage {
        ring: SliceRing::new_as(slots, Observability::Unobserved).ok()?,
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
pub(crate) struct LaneProducer<F: SlotFormat = EventFormat> {
    producer: Producer<LaneRing<F>>,
    storage: Arc<LaneStorage<F>>,
}

impl<F: SlotFormat> LaneProducer<F> {
    /// Pushes one event; `false` if the lane was full (the event is counted).
    #[inline(always)]
    pub(crate) fn push(&mut self, event: &F::Item) -> bool {
        self.push_with(|| *event)
    }

    /// [`push`](Self::push) of the event `event()` makes, straight into its slot.
    #[inline(always)]
    pub(crate) fn push_with(&mut self, event: impl FnOnce() -> F::Item) -> bool {
        match self.producer.push_with(event) {
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
    pub(crate) fn push_all(&mut self, events: &[F::Item]) -> bool {
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
    pub(crate) fn push_all_with(&mut self, n: usize, event: impl FnMut(usize) -> F::Item) -> bool {
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

impl<F: SlotFormat> Drop for LaneProducer<F> {
    fn drop(&mut self) {
        // Release: the flush that sees this flag also sees every event published.
        self.storage.producer_gone.store(true, Ordering::Release);
    }
}

/// The flush's end of a lane.
pub(crate) struct LaneConsumer<F: SlotFormat = EventFormat> {
    consumer: Consumer<LaneRing<F>>,
    storage: Arc<LaneStorage<F>>,
    /// Events taken out by [`drain`](Self::drain), in total.
    drained: u64,
    reported_dropped: u64,
}

impl<F: SlotFormat> LaneConsumer<F> {
    /// Whether the recording thread has exited. Check this *before* the last
    /// [`drain`](Self::drain): a lane whose producer was gone before a drain is empty
    /// after it.
    pub(crate) fn producer_gone(&self) -> bool {
        self.storage.producer_gone.load(Ordering::Acquire)
    }

    /// Takes every published item out, in order, passing each to `each`; returns how
    /// many.
    pub(crate) fn drain_with(&mut self, each: impl FnMut(&F::Item)) -> usize {
        let n = self.consumer.read_batch(usize::MAX, each);
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

    /// ([`written`](Self::written), [`dropped`](Self::dropped)).
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.written(), self.dropped())
    }

    /// Events the lane refused, in total.
    pub(crate) fn dropped(&self) -> u64 {
        self.storage.counters.dropped.load(Ordering::Relaxed)
    }
}

impl LaneConsumer {
    /// Moves every published event into `out`; returns how many.
    pub(crate) fn drain(&mut self, out: &mut Vec<Event>) -> usize {
        self.drain_with(|e| out.push(*e))
    }
}

impl<F: SlotFormat> Drop for LaneConsumer<F> {
    fn drop(&mut self) {
        self.storage.closed.store(true, Ordering::Release);
    }
}

/// A thread's lanes of one format, one per `Telemetry` it recorded into (by its
/// unique id), the most recently used first.
type ThreadLanes<F> = Vec<(u64, LaneProducer<F>)>;

/// A thread's lanes of one format as their thread-local holds them: a recording
/// call takes them out ([`LentLanes`]) and puts them back.
enum LanesHeld<F: SlotFormat> {
    /// In the thread-local; `None` until the thread registers its first lane.
    Here(Option<Box<ThreadLanes<F>>>),
    /// Lent to the recording call running on this thread: a call that re-enters it
    /// (a global allocator that records, say) finds no lane.
    Lent,
}

/// The thread-local of a thread's lanes of one format. `ManuallyDrop` leaves it
/// without drop glue, so the standard library keeps no destructor state for it and
/// an access is a plain thread-local access; [`LanesGuard`] drops the lanes instead.
type Lanes<F> = LocalKey<Cell<ManuallyDrop<LanesHeld<F>>>>;

thread_local! {
    /// Lanes of 56-byte events.
    static LANES: Cell<ManuallyDrop<LanesHeld<EventFormat>>> =
        const { Cell::new(ManuallyDrop::new(LanesHeld::Here(None))) };
    /// Compact lanes (built-in events of `Telemetry`s without timestamps).
    static COMPACT_LANES: Cell<ManuallyDrop<LanesHeld<CompactFormat>>> =
        const { Cell::new(ManuallyDrop::new(LanesHeld::Here(None))) };
    /// Drops the thread's lanes when the thread exits; armed by the first lane a
    /// thread registers.
    static LANES_GUARD: LanesGuard = const { LanesGuard };
}

/// A slot format with a thread-local of lanes, [`LANES`] or [`COMPACT_LANES`], known
/// from the type so that every access to it is direct.
trait ThreadLaneFormat: SlotFormat {
    /// This thread's lanes of this format.
    fn lanes_of_thread() -> &'static Lanes<Self>;
}

impl ThreadLaneFormat for EventFormat {
    #[inline(always)]
    fn lanes_of_thread() -> &'static Lanes<Self> {
        &LANES
    }
}

impl ThreadLaneFormat for CompactFormat {
    #[inline(always)]
    fn lanes_of_thread() -> &'static Lanes<Self> {
        &COMPACT_LANES
    }
}

/// The thread-exit destructor of [`LANES`] and [`COMPACT_LANES`]: it takes their lanes
/// out and drops them, so each [`LaneProducer`] marks its lane as gone and the flush
/// removes it after its last drain. Those two thread-locals have no destructor of
/// their own and stay accessible while thread-locals are destroyed; a lane a thread
/// would register after this guard ran is refused (the event is counted as dropped),
/// so no lane outlives its thread unseen.
struct LanesGuard;

impl Drop for LanesGuard {
    fn drop(&mut self) {
        fn release<F: ThreadLaneFormat>() {
            let lanes = F::lanes_of_thread()
                .try_with(|cell| cell.replace(ManuallyDrop::new(LanesHeld::Here(None))))
                .ok()
                .map(ManuallyDrop::into_inner);
            drop(lanes);
        }
        release::<EventFormat>();
        release::<CompactFormat>();
    }
}

/// A thread's lanes of format `F`, taken out of their thread-local for one recording
/// call, which leaves [`LanesHeld::Lent`] there; dropping it (at the call's end, or
/// while a panic unwinds) puts them back.
///
/// Lent rather than borrowed in place (a `RefCell`): a borrow must live inside the
/// thread-local's closure, so the push would run inside `LocalKey::try_with`, and
/// that closure, with the push and the event's making in it, grows past LLVM's
/// inlining threshold (a call per event, measured). Lending makes each closure a
/// load or a store, and the push inlines into the recording call.
struct LentLanes<F: ThreadLaneFormat> {
    lanes: Option<Box<ThreadLanes<F>>>,
}

impl<F: ThreadLaneFormat> LentLanes<F> {
    /// Takes this thread's lanes out; `None` if a recording call on this thread has
    /// them already (a re-entered call).
    #[inline(always)]
    fn take() -> Option<LentLanes<F>> {
        // A thread-local without drop glue is never destroyed: `try_with` cannot fail.
        let held = F::lanes_of_thread()
            .try_with(|cell| cell.replace(ManuallyDrop::new(LanesHeld::Lent)))
            .ok()?;
        match ManuallyDrop::into_inner(held) {
            LanesHeld::Here(lanes) => Some(LentLanes { lanes }),
            LanesHeld::Lent => None,
        }
    }
}

impl<F: ThreadLaneFormat> Drop for LentLanes<F> {
    #[inline(always)]
    fn drop(&mut self) {
        let held = LanesHeld::Here(self.lanes.take());
        // What it replaces is `Lent`, which owns nothing: no destructor to run.
        let _ = F::lanes_of_thread().try_with(|cell| cell.set(ManuallyDrop::new(held)));
    }
}

/// A compact lane's record of built-in event `index` (see the module docs).
#[inline(always)]
pub(crate) fn compact(index: usize, value: u64) -> CompactEvent {
    CompactEvent::new(index as u32, value)
}

/// Runs `f` on this thread's lane for the `Telemetry` with id `id`, registering one
/// through `register` on first use. `None` when there is no lane: the thread is
/// exiting (its thread-locals are gone), `register` failed, or a recording call
/// re-entered this one.
#[inline(always)]
pub(crate) fn with_lane<R>(
    id: u64,
    register: impl FnOnce() -> Option<LaneProducer>,
    f: impl FnOnce(&mut LaneProducer) -> R,
) -> Option<R> {
    with_lane_in(id, register, f)
}

/// [`with_lane`] for this thread's compact lane.
#[inline(always)]
pub(crate) fn with_compact_lane<R>(
    id: u64,
    register: impl FnOnce() -> Option<LaneProducer<CompactFormat>>,
    f: impl FnOnce(&mut LaneProducer<CompactFormat>) -> R,
) -> Option<R> {
    with_lane_in(id, register, f)
}

#[inline(always)]
fn with_lane_in<F: ThreadLaneFormat, R>(
    id: u64,
    register: impl FnOnce() -> Option<LaneProducer<F>>,
    f: impl FnOnce(&mut LaneProducer<F>) -> R,
) -> Option<R> {
    let mut lent = LentLanes::<F>::take()?;
    let lane = match &mut lent.lanes {
        Some(lanes) if lanes.first().is_some_and(|(first, _)| *first == id) => {
            lanes.first_mut().map(|(_, lane)| lane)
        }
        lanes => find_or_register(lanes, id, register),
    };
    lane.map(f)
}

/// The lane for `id` in this thread's lanes, moved first, or registered through
/// `register` (the list is made with the thread's first lane).
#[cold]
#[inline(never)]
fn find_or_register<F: SlotFormat>(
    lanes: &mut Option<Box<ThreadLanes<F>>>,
    id: u64,
    register: impl FnOnce() -> Option<LaneProducer<F>>,
) -> Option<&mut LaneProducer<F>> {
    let found = lanes
        .as_ref()
        .and_then(|l| l.iter().position(|(lane_id, _)| *lane_id == id));
    let lanes = match found {
        Some(i) => {
            let lanes = lanes.as_mut()?;
            lanes.swap(0, i);
            lanes
        }
        None => {
            // Arm the thread-exit release; refuse if the thread is past it (exiting),
            // so that no lane, and no list, is made only to be left behind.
            LANES_GUARD.try_with(|_| ()).ok()?;
            let lane = register()?;
            let lanes = lanes.get_or_insert_default();
            // Free the lanes of `Telemetry`s that are gone before adding one.
            lanes.retain(|(_, lane)| !lane.is_closed());
            lanes.insert(0, (id, lane));
            lanes
        }
    };
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
        let (mut p, mut c) = new_lane::<EventFormat>(8).unwrap();
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
    fn a_compact_lane_delivers_records_in_order_and_counts_what_it_refuses() {
        let (mut p, mut c) = new_lane::<CompactFormat>(8).unwrap();
        for v in 0..6 {
            assert!(p.push(&compact(v as usize % 3, v)));
        }
        assert!(!p.push_all_with(2, |i| compact(i, 100 + i as u64))); // 1 free slot
        assert!(p.push_all(&[compact(7, 7)]));
        let mut out = Vec::new();
        assert_eq!(c.drain_with(|r| out.push((r.type_id, r.value))), 7);
        assert_eq!(
            out,
            [(0, 0), (1, 1), (2, 2), (0, 3), (1, 4), (2, 5), (7, 7)]
        );
        assert_eq!((c.written(), c.dropped()), (7, 2));
    }

    #[test]
    fn push_all_writes_all_or_counts_all_as_dropped() {
        let (mut p, mut c) = new_lane::<EventFormat>(8).unwrap();
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
        let (mut p, mut c) = new_lane::<EventFormat>(8).unwrap();
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
        let (mut p, mut c) = new_lane::<EventFormat>(8).unwrap();
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
        let (p, mut c) = new_lane::<EventFormat>(16).unwrap();
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
    fn a_threads_lanes_of_both_kinds_are_released_when_it_exits() {
        let (full, full_consumer) = new_lane::<EventFormat>(4).unwrap();
        let (compact_lane, compact_consumer) = new_lane::<CompactFormat>(4).unwrap();
        std::thread::spawn(move || {
            let (mut full, mut compact_lane) = (Some(full), Some(compact_lane));
            assert_eq!(
                with_lane(u64::MAX - 3, || full.take(), |l| l.push(&ev(1))),
                Some(true)
            );
            let record = compact(0, 2);
            assert_eq!(
                with_compact_lane(u64::MAX - 3, || compact_lane.take(), |l| l.push(&record)),
                Some(true)
            );
        })
        .join()
        .unwrap();
        assert!(
            full_consumer.producer_gone(),
            "56-byte lane released at exit"
        );
        assert!(
            compact_consumer.producer_gone(),
            "compact lane released at exit"
        );
    }

    /// Records from a thread-local destructor that runs while the thread exits.
    struct RecordsOnExit(std::sync::mpsc::Sender<(Option<bool>, LaneConsumer)>);

    impl Drop for RecordsOnExit {
        fn drop(&mut self) {
            let (lane, consumer) = new_lane::<EventFormat>(4).unwrap();
            let mut lane = Some(lane);
            let pushed = with_lane(u64::MAX - 4, || lane.take(), |l| l.push(&ev(3)));
            let _ = self.0.send((pushed, consumer));
        }
    }

    #[test]
    fn a_lane_asked_for_while_the_thread_exits_is_refused_or_released() {
        thread_local! {
            static ON_EXIT: std::cell::RefCell<Option<RecordsOnExit>> =
                const { std::cell::RefCell::new(None) };
        }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Registered before the lanes' guard, so destroyed after it.
            ON_EXIT.with(|o| *o.borrow_mut() = Some(RecordsOnExit(tx)));
            let (lane, _consumer) = new_lane::<EventFormat>(4).unwrap();
            let mut lane = Some(lane);
            assert_eq!(
                with_lane(u64::MAX - 5, || lane.take(), |l| l.push(&ev(1))),
                Some(true)
            );
        })
        .join()
        .unwrap();
        let (pushed, consumer) = rx.recv().unwrap();
        // Either the exiting thread got no lane (the caller counts the event), or the
        // lane it got was released with the thread: none outlives it unseen.
        assert!(
            pushed.is_none() || consumer.producer_gone(),
            "pushed {pushed:?} into a lane that outlived its thread"
        );
    }

    #[test]
    fn a_call_re_entering_a_recording_call_finds_no_lane_and_the_lanes_come_back() {
        let (lane, mut consumer) = new_lane::<EventFormat>(8).unwrap();
        let mut lane = Some(lane);
        let id = u64::MAX - 6;
        let inner = with_lane(
            id,
            || lane.take(),
            |l| {
                assert!(l.push(&ev(1)));
                // Recording again from inside (a global allocator that records).
                with_lane(id, || panic!("no registration while lent"), |_| ())
            },
        );
        assert_eq!(inner, Some(None), "the re-entered call found a lane");
        // Put back: the next call finds the registered lane, no new registration.
        assert_eq!(
            with_lane(id, || panic!("registered twice"), |l| l.push(&ev(2))),
            Some(true)
        );
        let mut out = Vec::new();
        assert_eq!(consumer.drain(&mut out), 2);
    }

    #[test]
    fn lanes_lent_to_a_call_that_panics_are_put_back() {
        let (lane, mut consumer) = new_lane::<CompactFormat>(8).unwrap();
        let mut lane = Some(lane);
        let id = u64::MAX - 7;
        let record = compact(1, 5);
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_compact_lane(
                id,
                || lane.take(),
                |l| {
                    l.push(&record);
                    panic!("inside the recording call");
                },
            )
        }));
        assert!(unwound.is_err());
        assert_eq!(
            with_compact_lane(id, || panic!("registered twice"), |l| l.push(&record)),
            Some(true)
        );
        assert_eq!(consumer.drain_with(|_| ()), 2);
    }

    #[test]
    fn thread_lanes_of_a_closed_telemetry_are_freed_at_the_next_registration() {
        let (p1, c1) = new_lane::<EventFormat>(4).unwrap();
        let weak = Arc::downgrade(&c1.storage);
        let mut p1 = Some(p1);
        assert_eq!(with_lane(u64::MAX - 1, || p1.take(), |_| 1), Some(1));
        drop(c1); // the Telemetry went away
        let (p2, _c2) = new_lane::<EventFormat>(4).unwrap();
        let mut p2 = Some(p2);
        assert_eq!(with_lane(u64::MAX - 2, || p2.take(), |_| 2), Some(2));
        assert!(weak.upgrade().is_none(), "closed lane still allocated");
    }
}
