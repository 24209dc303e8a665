//! Per-thread lanes: one core SPSC ring of 16-byte records per (recording thread,
//! `Telemetry`) pair.
//!
//! # Protocol
//!
//! A lane is an unobserved [`SliceRing`] of [`LaneRecord`]s (no slot stamps, no
//! seqlock fence: nothing but the flush ever reads it) over a boxed slot array
//! allocated once, when a thread records its first event into a given `Telemetry`.
//! The lane has exactly one producer, the [`LaneProducer`] kept in the recording
//! thread's thread-local ([`thread`]), and exactly one consumer, the [`LaneConsumer`]
//! kept in the `Telemetry`'s lane list and used only by the flush (under the list's
//! lock). Both hold an `Arc` of the [`LaneStorage`] (the ring's handles through their
//! owner, the counters and flags through the same `Arc`), so the memory lives until
//! the later of the two is gone, with no `unsafe` anywhere:
//!
//! - the thread exits → its `LaneProducer` is dropped (by the thread-exit guard that
//!   the first registration arms) and sets `producer_gone`; the flush drains what is
//!   left and then removes the lane;
//! - the `Telemetry` is dropped → its `LaneConsumer`s are dropped and set `closed`;
//!   the thread frees its `LaneProducer` the next time it registers a lane, or when it
//!   exits.
//!
//! # Records
//!
//! A record is `{id: u16, stamp: low 48 bits, value: u64}` in 16 bytes
//! ([`LaneRecord`]): the id names the event through the `Telemetry`'s
//! [`NameTable`](crate::names::NameTable), the stamp is what the recording call read
//! (counter ticks, or realtime microseconds, or 0 when no sink needs timestamps), and
//! the flush expands each record back into a 56-byte [`Event`] for the exporters. A
//! lane of 56-byte events cost three and a half times the memory traffic per event,
//! which bounded a recording loop long before its instructions did; a lane of the
//! same memory now holds three and a half times the events.
//!
//! # Stamps: the high 16 bits
//!
//! A record keeps a stamp's low 48 bits (2⁴⁸ counter ticks are 26 hours at 3 GHz;
//! 2⁴⁸ µs, 8.9 years). The producer remembers the high 16 bits of the stamps it
//! wrote last (its *epoch*, 0 when the lane is new); a stamp whose high bits differ
//! is preceded by a *marker* record (id [`EPOCH_MARK`], value: the new high bits).
//! The consumer keeps the epoch of the last marker it read and puts it back on top of
//! each record's 48 bits. So a stamp is restored exactly however long a lane stays
//! undrained: a wrap of the low bits is detected where it happens, by the producer,
//! which compares every stamp's high bits with its epoch. If the marker finds the lane
//! full, the event it precedes is refused with it (and counted), and the epoch stays,
//! so the next event tries the marker again. Markers are no events: they count
//! neither as written nor as dropped.
//!
//! # Accounting
//!
//! Events written are counted by the consumer's side: the events it drained plus the
//! records the ring holds (its published `write_pos` less its own `read_pos`) less the
//! markers among them, so a push stores no counter of its own. Events refused because
//! the lane was full, and markers written, are counted by the producer, which mirrors
//! those counts into [`LaneStorage`] with relaxed stores (it is the only writer, so
//! plain stores, no read-modify-write) on the refusing and marking paths only. The
//! flush reads them to report new drops and to sum statistics; after the recording
//! threads have synchronised with the flush (a join, the `Telemetry`'s drop) the
//! values it reads are final, which is what makes the accounting exact.
//!
//! # High-water mark
//!
//! A lane made with a [`FlushSignal`] wakes the flush thread early when the records
//! waiting in it reach half its capacity: a starved flush otherwise meets a full lane
//! at its next interval. The producer compares the records it has published with the
//! count at which it next looks (`look_at`), one compare per push; only there does
//! it load the count the flush last drained (`LaneStorage::drained`) and, if half the
//! lane is waiting, signal, once per crossing: it signals again only after a drain.
//! Below the mark it next looks where the mark would be crossed if nothing more were
//! drained.
//!
//! # Batches
//!
//! [`LaneProducer::push_all_with`] writes a batch all or nothing with one publish
//! (the core's `Producer::push_all_with`). Its room check counts from the consumer
//! position the producer last loaded, a lower bound on the lane's free slots (only
//! the producer fills the lane, and the consumer only ever frees more), so most
//! batches check room without loading the consumer's cache line.

#[cfg(test)]
mod tests;
mod thread;
mod wake;

pub(crate) use thread::{SharedLane, shared_lane, with_lane, with_shared};
pub(crate) use wake::{FlushSignal, Woken};

use crate::names::{EPOCH_MARK, Named};
use rustc_hash::FxHashMap;
use std::ops::Deref;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use telering_core::ring::{
    self, CompactSlot, LaneRecord, LaneRecordFormat, Observability, SliceRing,
};
use telering_core::{Category, Consumer, Event, EventName, Producer};

/// A lane's ring.
type LaneRingStorage = SliceRing<Box<[CompactSlot]>, LaneRecordFormat>;

/// The counters only the producer writes, on their own cache line(s) so that the
/// producer's stores do not evict the ring header the consumer reads (128 bytes: the
/// pair of lines x86-64 and AArch64 prefetchers fetch together).
#[repr(C, align(128))]
struct ProducerCounters {
    dropped: AtomicU64,
    markers: AtomicU64,
}

/// A lane's ring and the state both ends share.
pub(crate) struct LaneStorage {
    ring: LaneRingStorage,
    counters: ProducerCounters,
    producer_gone: AtomicBool,
    closed: AtomicBool,
    /// Records the consumer has drained, markers included (for the producer's
    /// high-water check; written after each drain).
    drained: AtomicU64,
}

/// The owner the lane's ring handles hold: a share of the whole [`LaneStorage`].
#[derive(Clone)]
struct LaneRing(Arc<LaneStorage>);

impl Deref for LaneRing {
    type Target = LaneRingStorage;
    #[inline(always)]
    fn deref(&self) -> &Self::Target {
        &self.0.ring
    }
}

/// Makes a lane of `capacity` slots (a power of two; it holds `capacity − 1`
/// records). `None` if the core refuses the capacity, which the configuration checks
/// beforehand.
#[cfg(test)]
pub(crate) fn new_lane(capacity: u32) -> Option<(LaneProducer, LaneConsumer)> {
    new_lane_waking(capacity, None)
}

/// [`new_lane`] whose producer signals `signal` when half the lane is waiting (see
/// the module docs); `None`: it never signals.
pub(crate) fn new_lane_waking(
    capacity: u32,
    signal: Option<Arc<FlushSignal>>,
) -> Option<(LaneProducer, LaneConsumer)> {
    let slots: Box<[CompactSlot]> = (0..capacity).map(|_| CompactSlot::new()).collect();
    let storage = Arc::new(LaneStorage {
        ring: SliceRing::new_as(slots, Observability::Unobserved).ok()?,
        counters: ProducerCounters {
            dropped: AtomicU64::new(0),
            markers: AtomicU64::new(0),
        },
        producer_gone: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        drained: AtomicU64::new(0),
    });
    let mark = u64::from(capacity / 2).max(1);
    let (producer, consumer) = ring::split_records(LaneRing(Arc::clone(&storage))).ok()?;
    Some((
        LaneProducer {
            producer,
            storage: Arc::clone(&storage),
            epoch: 0,
            markers: 0,
            batch_dropped: 0,
            look_at: if signal.is_some() { mark } else { u64::MAX },
            mark,
            signalled_at: None,
            signal,
            names: FxHashMap::default(),
        },
        LaneConsumer {
            consumer,
            storage,
            epoch: 0,
            drained: 0,
            reported_dropped: 0,
        },
    ))
}

/// The high bits of `stamp` that a record does not keep.
#[inline(always)]
fn epoch_of(stamp: u64) -> u64 {
    stamp >> LaneRecord::STAMP_BITS
}

/// The recording thread's end of a lane.
pub(crate) struct LaneProducer {
    producer: Producer<LaneRing>,
    storage: Arc<LaneStorage>,
    /// The high bits of the stamps written since the last marker.
    epoch: u64,
    /// Markers written, in total.
    markers: u64,
    /// Events of batches refused at their marker, beyond the one the ring counted.
    batch_dropped: u64,
    /// Records published at which to look at the lane's fill next (`u64::MAX`: no
    /// signal to give).
    look_at: u64,
    /// Records waiting at which the flush is woken: half the lane.
    mark: u64,
    /// The drained count at the last signal: no second signal before a drain.
    signalled_at: Option<u64>,
    signal: Option<Arc<FlushSignal>>,
    /// This thread's cache of the `Telemetry`'s name ids (see [`crate::names`]).
    pub(crate) names: FxHashMap<(EventName, Category), u16>,
}

impl LaneProducer {
    /// Pushes one event, `id` stamped `stamp` with `value`; `false` if the lane was
    /// full (the event is counted).
    #[inline(always)]
    pub(crate) fn push(&mut self, id: u16, stamp: u64, value: u64) -> bool {
        if epoch_of(stamp) != self.epoch && !self.mark_epoch(stamp, 1) {
            return false;
        }
        match self
            .producer
            .push_with(|| LaneRecord::new(id, stamp, value))
        {
            Ok(()) => {
                self.check_mark();
                true
            }
            Err(_) => {
                self.mirror_dropped();
                false
            }
        }
    }

    /// Pushes the `n` events `part(0)`, …, `part(n − 1)` (each an id and a value), all
    /// stamped `stamp`, and publishes them together, or none of them if the lane lacks
    /// room for all (then all are counted as dropped). The room check uses the
    /// consumer position last loaded and loads it again only when that one shows too
    /// little room: only this thread fills the lane, and the consumer only ever frees
    /// more.
    #[inline(always)]
    pub(crate) fn push_all_with(
        &mut self,
        n: usize,
        stamp: u64,
        mut part: impl FnMut(usize) -> (u16, u64),
    ) -> bool {
        if epoch_of(stamp) != self.epoch && !self.mark_epoch(stamp, n) {
            return false;
        }
        let record = move |i| {
            let (id, value) = part(i);
            LaneRecord::new(id, stamp, value)
        };
        match self.producer.push_all_with(n, record) {
            Ok(()) => {
                self.check_mark();
                true
            }
            Err(_) => {
                self.mirror_dropped();
                false
            }
        }
    }

    /// Writes the marker of `stamp`'s high bits before the `events` events stamped
    /// with it; `false` if the lane is full, and then those events are counted as
    /// refused (the ring counted one).
    #[cold]
    #[inline(never)]
    fn mark_epoch(&mut self, stamp: u64, events: usize) -> bool {
        let epoch = epoch_of(stamp);
        match self.producer.push(&LaneRecord::new(EPOCH_MARK, 0, epoch)) {
            Ok(()) => {
                self.epoch = epoch;
                self.markers += 1;
                self.storage
                    .counters
                    .markers
                    .store(self.markers, Ordering::Relaxed);
                true
            }
            Err(_) => {
                self.batch_dropped += events.saturating_sub(1) as u64;
                self.mirror_dropped();
                false
            }
        }
    }

    /// One compare per push: whether the lane's fill is due a look.
    #[inline(always)]
    fn check_mark(&mut self) {
        if self.producer.events_published() >= self.look_at {
            self.look_at_fill();
        }
    }

    /// Signals the flush if half the lane is waiting and it has not been signalled
    /// since its last drain; sets where to look next.
    #[cold]
    #[inline(never)]
    fn look_at_fill(&mut self) {
        let published = self.producer.events_published();
        let drained = self.storage.drained.load(Ordering::Relaxed);
        if published.saturating_sub(drained) < self.mark {
            // Where the mark is crossed if nothing more is drained.
            self.look_at = drained + self.mark;
            return;
        }
        if self.signalled_at != Some(drained) {
            self.signalled_at = Some(drained);
            if let Some(signal) = &self.signal {
                signal.wake_early();
            }
        }
        // Look again after another eighth of the lane: by then a drain may have
        // happened, and a new crossing earns a new signal.
        self.look_at = published + (self.mark / 4).max(1);
    }

    #[cold]
    fn mirror_dropped(&self) {
        self.storage.counters.dropped.store(
            self.producer.events_dropped() + self.batch_dropped,
            Ordering::Relaxed,
        );
    }

    fn is_closed(&self) -> bool {
        self.storage.closed.load(Ordering::Acquire)
    }
}

impl Drop for LaneProducer {
    fn drop(&mut self) {
        // Release: the flush that sees this flag also sees every record published.
        self.storage.producer_gone.store(true, Ordering::Release);
    }
}

/// The flush's end of a lane.
pub(crate) struct LaneConsumer {
    consumer: Consumer<LaneRing>,
    storage: Arc<LaneStorage>,
    /// The high bits of the last marker read.
    epoch: u64,
    /// Records taken out by [`drain`](Self::drain), markers included.
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

    /// Takes every published record out, in order, and appends the events they stand
    /// for to `out`, with their stamps restored whole (timestamps still as the stamp
    /// reads them: the flush converts); `names` maps ids (see [`crate::names`]).
    /// Returns how many events.
    #[cfg(test)]
    pub(crate) fn drain(&mut self, names: &[Named], out: &mut Vec<Event>) -> usize {
        self.drain_routed(names, &mut crate::route::tally::Tally::new(0), out)
    }

    /// [`drain`](Self::drain), route records (see [`crate::route`]) going through
    /// `routes`, which expands them into their built-in events and counts them.
    pub(crate) fn drain_routed(
        &mut self,
        names: &[Named],
        routes: &mut crate::route::tally::Tally,
        out: &mut Vec<Event>,
    ) -> usize {
        let first = out.len();
        let mut epoch = self.epoch;
        let records = self.consumer.read_batch(usize::MAX, |r| {
            if r.id() == EPOCH_MARK {
                epoch = r.value();
                return;
            }
            if crate::route::tally::is_route_record(r.id()) {
                let stamp = epoch << LaneRecord::STAMP_BITS | r.stamp();
                routes.take(r.id(), stamp, r.value(), names, out);
                return;
            }
            // Every id was interned before a record carried it (see `names`).
            let named = names.get(usize::from(r.id()));
            debug_assert!(named.is_some(), "lane record of an id not in the table");
            if let Some(&(name, category)) = named {
                let stamp = epoch << LaneRecord::STAMP_BITS | r.stamp();
                out.push(Event::new(stamp, category, name, r.value()));
            }
        });
        self.epoch = epoch;
        self.drained += records as u64;
        self.storage.drained.store(self.drained, Ordering::Relaxed);
        out.len() - first
    }

    /// Events the lane refused since the previous call.
    pub(crate) fn take_new_drops(&mut self) -> u64 {
        let dropped = self.dropped();
        let new = dropped - self.reported_dropped;
        self.reported_dropped = dropped;
        new
    }

    /// Events written into the lane, in total: those drained and those waiting
    /// (records less markers).
    pub(crate) fn written(&self) -> u64 {
        let markers = self.storage.counters.markers.load(Ordering::Relaxed);
        (self.drained + u64::from(self.consumer.len())).saturating_sub(markers)
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

impl Drop for LaneConsumer {
    fn drop(&mut self) {
        self.storage.closed.store(true, Ordering::Release);
    }
}
