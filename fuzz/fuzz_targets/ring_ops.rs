//! Random sequences of ring operations, checked against a `VecDeque` model, in every
//! mode of the ring: an in-process ring read with plain copies, an unobserved ring, a
//! ring in caller-provided memory (the shm layout); `DropNewest` and
//! `OverwriteOldest`; single pushes, one-fence slices and batches; observers and
//! consumers attaching mid-stream and after whole laps; producers continuing a
//! sequence far from 0, and writers that run 2²⁹ events and more ahead of a reader,
//! with and without the 64-bit published count a ring file's trailer keeps.
//!
//! Every word of an event, name bytes included, is derived from its sequence number,
//! so the model checks each delivered event whole: FIFO order, exact drop and loss counts, the
//! distinct "missed an unknown number" signal exactly where the 30-bit stamps cannot
//! count, and observers that never invent, reorder or miscount events.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use telering_core::ring::{self, EventOwner, HeaderInfo, RingRegion};
use telering_core::{
    Category, Consumer, Event, EventName, Observer, ObserverStart, OverflowPolicy, Producer, Ring,
};

const N: u64 = 8;
/// Stamps carry 30 bits of sequence; a reader this far behind cannot count from them.
const HALF: u64 = 1 << 29;
/// Without a 64-bit published count a lag of 2³⁰ events looks like no lag at all, so
/// the model keeps every reader below this (beyond it the ring documents no answer).
const STAMP_LIMIT: u64 = (1 << 30) - 4 * N;

#[derive(Arbitrary, Debug)]
enum Storage {
    /// `Ring<8>` with stamps: the plain-read consumer under `DropNewest`.
    Observed,
    /// `Ring<8>` without stamps: plain stores, no observers.
    Unobserved,
    /// NIXL's header and slots in a buffer, continuing a sequence from `start`, with
    /// `unread` events left for the consumer that attaches.
    Region { start: Start, unread: u8 },
}

#[derive(Arbitrary, Debug)]
enum Start {
    Zero,
    Small(u8),
    /// Just below a 30-bit wrap of the stamps' sequence.
    BelowWrap(u8),
    /// Far from 0: whole 30-bit rounds and then some.
    Rounds(u8, u16),
    Any(u64),
}

#[derive(Arbitrary, Debug)]
enum Jump {
    Small(u8),
    Laps(u8),
    /// Just under 2²⁹: still counted exactly from the stamps.
    BelowHalf(u16),
    /// 2²⁹ and beyond: unknown without a published count, exact with one.
    AboveHalf(u16),
    /// Exactly whole rounds of 2³⁰ (only the published count can see them).
    Rounds(u8),
    Any(u32),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Push,
    PushSlice(u8),
    Batch(u8, u8),
    Pop,
    PopBatch(u8),
    PopInto(u8),
    Observe(u8, u8),
    Attach(u8, bool),
    Detach(u8),
    /// A new consumer attaches to the region where the last one left `read_pos`.
    ReattachConsumer,
    /// The writer runs ahead by many events while every reader looks away
    /// (`OverwriteOldest` regions only).
    Jump(Jump),
}

#[derive(Arbitrary, Debug)]
struct Input {
    storage: Storage,
    overwrite: bool,
    /// Readers get the writer's 64-bit published count before every read.
    published: bool,
    ops: Vec<Op>,
}

/// Event `seq`: every word of it, name bytes included, derived from `seq`.
fn ev(seq: u64) -> Event {
    // Low hex digits first, so that neighbours differ in the first name bytes too.
    let digits: String = format!("{seq:x}").chars().rev().collect();
    let name = format!("{digits}-{}", &"abcdefghijk"[..(seq % 12) as usize]);
    Event::new(
        seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555,
        Category::ALL[(seq % 8) as usize],
        EventName::new(&name).unwrap(),
        seq,
    )
}

fn stamp(seq: u64) -> u32 {
    ((seq as u32) & ((1 << 30) - 1)) << 2 | 0b10
}

/// The ring's contents as stamp-following readers see them: events `0..next` were
/// published, the last `N` (from `floor` on) are still in the slots.
struct RingModel {
    next: u64,
    /// The first event this ring ever held (a region continuing a sequence starts
    /// with events `start − N..start` in its slots).
    floor: u64,
    /// Where the 64-bit published count starts (the trailer counts from the first
    /// writer of the ring).
    counted_from: u64,
}

impl RingModel {
    fn oldest(&self) -> u64 {
        self.next.saturating_sub(N).max(self.floor)
    }
    fn wrapped(&self) -> bool {
        self.next >= self.floor + N
    }
    fn published(&self) -> u64 {
        self.next - self.counted_from
    }
}

/// A stamp-following reader (observer, or consumer under `OverwriteOldest`): the
/// event it reads next and what it has counted.
struct Cursor {
    next: u64,
    counted: u64,
    unknown: u64,
}

/// How a lapped reader must account for the events it passed over.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Count {
    /// Exactly this many, as events missed or lost.
    Exact(u64),
    /// Exactly this many, or (a little beyond 2²⁹ behind, where the stamps may
    /// still tell) the unknown signal.
    ExactOrUnknown(u64),
    /// 2²⁹ and more behind with no published count: the unknown signal, no count.
    Unknown,
}

/// What one read of a stamp-following reader should deliver, and how its counters
/// change.
struct Step {
    seq: u64,
    lapped: Option<Count>,
}

impl Cursor {
    fn step(&mut self, ring: &RingModel, published: bool) -> Option<Step> {
        if self.next == ring.next {
            return None;
        }
        let oldest = ring.oldest();
        let mut lapped = None;
        if self.next < oldest {
            let lag = ring.next - self.next;
            let lost = oldest - self.next;
            lapped = Some(if published || lag < HALF {
                Count::Exact(lost)
            } else if lag < HALF + N {
                Count::ExactOrUnknown(lost)
            } else {
                Count::Unknown
            });
            self.next = oldest;
        }
        let seq = self.next;
        self.next += 1;
        Some(Step { seq, lapped })
    }

    /// Checks the reader's counters after a read whose first step was `first`.
    fn check(&mut self, first: &Option<Step>, counted: u64, unknown: u64) {
        let delta = (
            counted.wrapping_sub(self.counted),
            unknown.wrapping_sub(self.unknown),
        );
        let ok = match first.as_ref().and_then(|s| s.lapped) {
            None => delta == (0, 0),
            Some(Count::Exact(lost)) => delta == (lost, 0),
            Some(Count::ExactOrUnknown(lost)) => delta == (lost, 0) || delta == (0, 1),
            Some(Count::Unknown) => delta == (0, 1),
        };
        assert!(
            ok,
            "expected {:?}, the reader counted {} and signalled unknown {} times",
            first.as_ref().and_then(|s| s.lapped),
            delta.0,
            delta.1
        );
        self.counted = counted;
        self.unknown = unknown;
    }
}

fn check_event(got: &Event, seq: u64) {
    assert_eq!(*got, ev(seq), "expected event {seq} intact");
}

/// The region's memory, for the harness to play a writer that ran far ahead.
struct Memory {
    base: *mut u8,
}

impl Memory {
    fn word(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: `base` is the start of the 8-aligned buffer the region owns (alive
        // as long as the region, which outlives every use), `offset` is a multiple of
        // 4 inside it, and the region accesses these bytes only atomically; the
        // harness is single-threaded, so these accesses never race the region's.
        unsafe { AtomicU32::from_ptr(self.base.add(offset).cast()) }
    }

    /// Writes the slots and `write_pos` as a writer that published events `..next`
    /// would have left them, for the events from `from` on.
    fn run_up_to(&self, from: u64, next: u64) {
        for slot in 0..N {
            if next <= slot {
                continue;
            }
            let seq = next - 1 - ((next - 1 - slot) % N);
            if seq < from {
                continue;
            }
            let at = 40 + slot as usize * 56;
            let bytes = ev(seq).to_wire_bytes();
            for (i, chunk) in bytes.chunks_exact(4).enumerate() {
                let word = if i == 11 {
                    stamp(seq)
                } else {
                    u32::from_le_bytes(chunk.try_into().unwrap())
                };
                self.word(at + 4 * i).store(word.to_le(), Ordering::Release);
            }
        }
        self.word(0)
            .store(((next % N) as u32).to_le(), Ordering::Release);
    }

    fn set_read_pos(&self, pos: u64) {
        self.word(8)
            .store(((pos % N) as u32).to_le(), Ordering::Release);
    }
}

/// What a run can do beyond the handles every storage has.
struct RegionOps<'a, R: EventOwner> {
    memory: Memory,
    producer: &'a dyn Fn() -> Producer<R>,
    consumer: &'a dyn Fn() -> Consumer<R>,
}

struct Run<R: EventOwner + Clone> {
    owner: R,
    policy: OverflowPolicy,
    observed: bool,
    published: bool,
    ring: RingModel,
    producer: Producer<R>,
    /// Events the current producer wrote and dropped.
    written: u64,
    dropped: u64,
    consumer: Consumer<R>,
    /// DropNewest: the events the consumer has yet to read.
    unread: VecDeque<u64>,
    /// OverwriteOldest: the consumer's cursor, and the `read_pos` it last stored.
    cursor: Cursor,
    read_pos: u64,
    observers: Vec<Option<(Observer<R>, Cursor)>>,
}

impl<R: EventOwner + Clone> Run<R> {
    fn overwrite(&self) -> bool {
        self.policy == OverflowPolicy::OverwriteOldest
    }

    fn max_lag(&self) -> u64 {
        let mut lag = 0;
        if self.overwrite() {
            lag = self.ring.next - self.cursor.next;
        }
        for (_, c) in self.observers.iter().flatten() {
            lag = lag.max(self.ring.next - c.next);
        }
        lag
    }

    /// Whether `events` more may be published without taking a reader to where,
    /// without a published count, the stamps can no longer tell anything.
    fn room_for(&self, events: u64) -> bool {
        self.published || self.max_lag() + events < STAMP_LIMIT
    }

    /// Records one write attempt of event `next` in the model; whether it fits.
    fn model_write(&mut self, pending: &mut u64) -> bool {
        if !self.overwrite() && self.unread.len() as u64 + *pending == N - 1 {
            self.dropped += 1;
            return false;
        }
        *pending += 1;
        true
    }

    /// Publishes `k` written events in the model.
    fn model_publish(&mut self, k: u64) {
        for _ in 0..k {
            if !self.overwrite() {
                self.unread.push_back(self.ring.next);
            }
            self.ring.next += 1;
            self.written += 1;
        }
    }

    fn check_producer(&self) {
        assert_eq!(self.producer.events_published(), self.written);
        assert_eq!(self.producer.events_dropped(), self.dropped);
        if !self.overwrite() {
            // A lower bound counted from the consumer position the producer last
            // loaded; it looks again (and is exact) when that one shows no room.
            let free = self.producer.free_slots() as u64;
            let exact = N - 1 - self.unread.len() as u64;
            assert!(free <= exact, "free_slots {free} > {exact} really free");
            assert!(free > 0 || exact == 0, "free_slots 0 with {exact} free");
            assert_eq!(self.consumer.len() as usize, self.unread.len());
            assert_eq!(self.consumer.is_empty(), self.unread.is_empty());
        }
    }

    fn push_slice(&mut self, n: u64) {
        if !self.room_for(n) {
            return;
        }
        let items: Vec<Event> = (0..n).map(|i| ev(self.ring.next + i)).collect();
        let mut pending = 0;
        for _ in 0..n {
            self.model_write(&mut pending);
        }
        assert_eq!(self.producer.push_slice(&items) as u64, pending);
        self.model_publish(pending);
    }

    fn batch(&mut self, singles: u64, slice: u64) {
        if !self.room_for(singles + slice) {
            return;
        }
        let overwrite = self.overwrite();
        let mut pending = 0;
        let mut batch = self.producer.batch();
        for _ in 0..singles {
            let e = ev(self.ring.next + pending);
            let fits = overwrite || self.unread.len() as u64 + pending < N - 1;
            assert_eq!(batch.push(&e).is_ok(), fits);
            if fits {
                pending += 1;
            } else {
                self.dropped += 1;
            }
        }
        let items: Vec<Event> = (0..slice)
            .map(|i| ev(self.ring.next + pending + i))
            .collect();
        let room = if overwrite {
            slice
        } else {
            slice.min(N - 1 - self.unread.len() as u64 - pending)
        };
        assert_eq!(batch.push_slice(&items) as u64, room);
        self.dropped += slice - room;
        pending += room;
        assert_eq!(batch.len() as u64, pending);
        drop(batch);
        self.model_publish(pending);
    }

    fn set_published_consumer(&mut self) {
        if self.published && self.overwrite() {
            self.consumer.set_published(self.ring.published());
        }
    }

    /// A consumer read of up to `max` events, through `read`.
    fn consume(&mut self, max: u64, read: impl FnOnce(&mut Consumer<R>) -> Vec<Event>) {
        self.set_published_consumer();
        let got = read(&mut self.consumer);
        assert!(got.len() as u64 <= max);
        if self.overwrite() {
            let mut first = None;
            let mut delivered = 0;
            while delivered < max {
                let Some(step) = self.cursor.step(&self.ring, self.published) else {
                    break;
                };
                assert!(
                    delivered < got.len() as u64,
                    "consumer stopped early at event {}",
                    step.seq
                );
                check_event(&got[delivered as usize], step.seq);
                assert!(step.lapped.is_none() || first.is_none(), "lapped mid-read");
                if first.is_none() {
                    first = Some(step);
                }
                delivered += 1;
            }
            assert_eq!(delivered, got.len() as u64, "consumer read past the model");
            let (lost, unknown) = (self.consumer.events_lost(), self.consumer.lag_unknown());
            self.cursor.check(&first, lost, unknown);
            self.read_pos = self.cursor.next;
        } else {
            let expected = max.min(self.unread.len() as u64) as usize;
            assert_eq!(got.len(), expected, "DropNewest consumer read count");
            for e in &got {
                check_event(e, self.unread.pop_front().unwrap());
            }
            assert_eq!(self.consumer.events_lost(), 0);
        }
    }

    fn observe(&mut self, index: usize, max: u64) {
        let published = self.published;
        let counted_now = self.ring.published();
        let Some(Some((observer, cursor))) = self.observers.get_mut(index) else {
            return;
        };
        if published {
            observer.set_published(counted_now);
        }
        for _ in 0..max {
            let got = observer.poll();
            let step = cursor.step(&self.ring, published);
            match (&got, &step) {
                (None, None) => {}
                (Some(e), Some(s)) => check_event(e, s.seq),
                (got, step) => panic!(
                    "observer gave {:?}, model expected {:?}",
                    got.map(|e| e.value()),
                    step.as_ref().map(|s| s.seq)
                ),
            }
            cursor.check(&step, observer.events_missed(), observer.lag_unknown());
            if step.is_none() {
                break;
            }
        }
    }

    fn attach(&mut self, index: usize, newest: bool) {
        let start = if newest {
            ObserverStart::Newest
        } else {
            ObserverStart::Oldest
        };
        let made = ring::observe(self.owner.clone(), start);
        if !self.observed {
            assert!(made.is_err(), "an unobserved ring must refuse observers");
            return;
        }
        let mut observer = made.unwrap();
        if self.published {
            observer.set_published(self.ring.published());
        }
        let next = if newest {
            self.ring.next
        } else {
            self.ring.oldest()
        };
        let cursor = Cursor {
            next,
            counted: 0,
            unknown: 0,
        };
        if self.observers.len() <= index {
            self.observers.resize_with(index + 1, || None);
        }
        self.observers[index] = Some((observer, cursor));
    }

    /// The reading position a consumer attaching now starts from.
    fn attached_cursor(&self) -> Cursor {
        let mut unread = (self.ring.next % N + N - self.read_pos % N) % N;
        if unread == 0 && self.ring.wrapped() {
            // `read_pos == write_pos` after whole laps: the whole ring is read again.
            unread = N;
        }
        let unread = unread.min(self.ring.next - self.ring.floor.min(self.ring.next));
        Cursor {
            next: self.ring.next - unread,
            counted: 0,
            unknown: 0,
        }
    }

    fn reattach_consumer(&mut self, ops: &RegionOps<'_, R>) {
        self.consumer = (ops.consumer)();
        if self.overwrite() {
            self.cursor = self.attached_cursor();
            if self.published {
                self.consumer.set_published(self.ring.published());
            }
        }
        // DropNewest: the new consumer starts at the `read_pos` the last one stored.
    }

    fn jump(&mut self, jump: &Jump, ops: &RegionOps<'_, R>) {
        if !self.overwrite() {
            return; // a DropNewest writer cannot run ahead of its consumer
        }
        let mut k = match *jump {
            Jump::Small(n) => n as u64,
            Jump::Laps(n) => n as u64 * N + n as u64 % 3,
            Jump::BelowHalf(d) => (HALF - 1).saturating_sub(d as u64 + self.max_lag()),
            Jump::AboveHalf(d) => HALF + d as u64,
            Jump::Rounds(r) => (r as u64 % 4 + 1) << 30,
            Jump::Any(n) => n as u64,
        };
        if !self.published {
            k = k.min(STAMP_LIMIT.saturating_sub(1 + self.max_lag()));
        }
        if k == 0 {
            return;
        }
        // The writer that ran ahead is this process's producer, restarted: it
        // continues the sequence from the stamps.
        let from = self.ring.next;
        ops.memory.run_up_to(from, from + k);
        self.ring.next += k;
        self.producer = (ops.producer)();
        self.written = 0;
        self.dropped = 0;
    }

    fn apply(&mut self, op: &Op, region: Option<&RegionOps<'_, R>>) {
        match op {
            Op::Push => {
                if !self.room_for(1) {
                    return;
                }
                let mut pending = 0;
                let fits = self.model_write(&mut pending);
                assert_eq!(self.producer.push(&ev(self.ring.next)).is_ok(), fits);
                self.model_publish(pending);
            }
            Op::PushSlice(n) => self.push_slice(*n as u64 % 24),
            Op::Batch(singles, slice) => self.batch(*singles as u64 % 12, *slice as u64 % 24),
            Op::Pop => self.consume(1, |c| c.pop().into_iter().collect()),
            Op::PopBatch(n) => {
                let max = *n as u64 % 20;
                self.consume(max, |c| {
                    let mut got = Vec::new();
                    let n = c.read_batch(max as usize, |e| got.push(*e));
                    assert_eq!(n, got.len());
                    got
                })
            }
            Op::PopInto(n) => {
                let max = *n as u64 % 20;
                self.consume(max, |c| {
                    let mut out = vec![ev(0); max as usize];
                    let n = c.pop_into(&mut out);
                    out.truncate(n);
                    out
                })
            }
            Op::Observe(i, max) => self.observe(*i as usize % 3, *max as u64 % 24 + 1),
            Op::Attach(i, newest) => self.attach(*i as usize % 3, *newest),
            Op::Detach(i) => {
                if let Some(o) = self.observers.get_mut(*i as usize % 3) {
                    *o = None;
                }
            }
            Op::ReattachConsumer => {
                if let Some(ops) = region {
                    self.reattach_consumer(ops);
                }
            }
            Op::Jump(jump) => {
                if let Some(ops) = region {
                    self.jump(jump, ops);
                }
            }
        }
        self.check_producer();
    }

    /// Drains the consumer and every observer: all that was published is delivered
    /// or counted.
    fn finish(&mut self) {
        self.consume(u64::MAX, |c| {
            let mut got = Vec::new();
            c.read_batch(usize::MAX, |e| got.push(*e));
            got
        });
        assert!(self.consumer.pop().is_none());
        for i in 0..self.observers.len() {
            self.observe(i, u64::MAX);
        }
    }
}

fn run<R: EventOwner + Clone>(
    input: &Input,
    owner: R,
    (producer, consumer): (Producer<R>, Consumer<R>),
    observed: bool,
    ring: RingModel,
    region: Option<&RegionOps<'_, R>>,
    unread: u64,
) {
    let policy = producer.policy();
    let mut run = Run {
        owner,
        policy,
        observed,
        published: input.published,
        read_pos: ring.next - unread,
        ring,
        producer,
        written: 0,
        dropped: 0,
        consumer,
        unread: VecDeque::new(),
        cursor: Cursor {
            next: 0,
            counted: 0,
            unknown: 0,
        },
        observers: Vec::new(),
    };
    run.unread = (run.ring.next - unread..run.ring.next).collect();
    if run.overwrite() {
        run.unread.clear();
        run.cursor = run.attached_cursor();
        run.set_published_consumer();
    }
    for op in &input.ops {
        run.apply(op, region);
    }
    run.finish();
}

fuzz_target!(|input: Input| {
    let policy = if input.overwrite {
        OverflowPolicy::OverwriteOldest
    } else {
        OverflowPolicy::DropNewest
    };
    let fresh = RingModel {
        next: 0,
        floor: 0,
        counted_from: 0,
    };
    match input.storage {
        Storage::Observed => {
            let ring = Ring::<{ N as usize }>::new();
            run(
                &input,
                &ring,
                ring.split(policy).unwrap(),
                true,
                fresh,
                None,
                0,
            );
        }
        Storage::Unobserved => {
            let ring = Ring::<{ N as usize }>::new_unobserved();
            run(
                &input,
                &ring,
                ring.split(policy).unwrap(),
                false,
                fresh,
                None,
                0,
            );
        }
        Storage::Region { ref start, unread } => {
            let start = match *start {
                Start::Zero => 0,
                Start::Small(n) => n as u64,
                Start::BelowWrap(n) => (1 << 30) - 1 - n as u64,
                Start::Rounds(r, n) => ((r as u64 % 8) << 30) + n as u64,
                Start::Any(n) => n & ((1 << 44) - 1),
            };
            let mut buffer = vec![0u64; HeaderInfo::ring_bytes(N).div_ceil(8) as usize];
            let (ptr, len) = (buffer.as_mut_ptr().cast::<u8>(), buffer.len() * 8);
            // SAFETY: the buffer is 8-aligned, `len` bytes, owned by the region (a
            // `Vec` keeps its heap memory where it is when moved), and touched only
            // through the region and the harness's atomics.
            let region = unsafe { RingRegion::init(buffer, ptr, len, N as u32) }.unwrap();
            let memory = Memory { base: ptr };
            let floor = start.saturating_sub(N);
            memory.run_up_to(floor, start);
            let unread = (unread as u64 % N).min(start - floor);
            memory.set_read_pos(start - unread);
            let owner = &region;
            let make_producer = || Producer::from_region(owner, policy).unwrap();
            let make_consumer = || Consumer::from_region(owner, policy).unwrap();
            let ops = RegionOps {
                memory,
                producer: &make_producer,
                consumer: &make_consumer,
            };
            let handles = (make_producer(), make_consumer());
            let ring = RingModel {
                next: start,
                floor,
                counted_from: start,
            };
            run(&input, owner, handles, true, ring, Some(&ops), unread);
        }
    }
});
