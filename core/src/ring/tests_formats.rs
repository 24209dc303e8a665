//! Storages, formats and fast paths: unobserved rings, plain copies, one-fence
//! batches, slice rings, version-4 regions. Run under Miri in CI, which checks the
//! plain copies for data races.

use super::*;
use crate::event::{Category, Event, EventName};
use crate::event_name;
use std::boxed::Box;
use std::sync::Arc;
use std::vec;
use std::vec::Vec;

/// An event that differs from every other in every word, name bytes included.
fn ev(value: u64) -> Event {
    let mut name = [b'a'; 31];
    for (i, b) in name.iter_mut().enumerate() {
        *b = b'a' + ((value as usize + i) % 26) as u8;
    }
    let name = core::str::from_utf8(&name).unwrap();
    Event::new(
        value,
        Category::Custom,
        EventName::new(name).unwrap(),
        value,
    )
}

fn assert_intact(e: &Event) {
    assert_eq!(*e, ev(e.value()), "torn event");
}

const TOTAL: u64 = if cfg!(miri) { 250 } else { 200_000 };

#[test]
fn an_unobserved_ring_refuses_observers_with_a_typed_error() {
    let ring = Ring::<8>::new_unobserved();
    assert_eq!(ring.observer(ObserverStart::Oldest).err(), Some(Unobserved));
    let slots: Box<[Slot]> = (0..8).map(|_| Slot::new()).collect();
    let slice = SliceRing::new(slots, Observability::Unobserved).unwrap();
    assert_eq!(
        observe(&slice, ObserverStart::Newest).err(),
        Some(Unobserved)
    );
    assert!(observe(&Ring::<8>::new(), ObserverStart::Newest).is_ok());
}

#[test]
fn an_unobserved_ring_writes_no_stamps_and_delivers_in_order() {
    let ring = Ring::<8>::new_unobserved();
    let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    for v in 0..10 {
        let _ = p.push(&ev(v));
    }
    assert_eq!((p.events_published(), p.events_dropped()), (7, 3));
    assert!(
        ring.slots
            .iter()
            .all(|s| s.stamp.load(Ordering::Relaxed) == 0)
    );
    let mut got = Vec::new();
    c.read_batch(usize::MAX, |e| {
        assert_intact(e);
        got.push(e.value())
    });
    assert_eq!(got, (0..7).collect::<Vec<_>>());
}

#[test]
fn overwrite_oldest_stamps_even_an_unobserved_ring() {
    let ring = Ring::<4>::new_unobserved();
    let (mut p, mut c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    for v in 0..6 {
        p.push(&ev(v)).unwrap();
    }
    assert_eq!(c.pop().map(|e| e.value()), Some(2));
    assert_eq!(c.events_lost(), 2);
}

/// Producer and consumer on two threads, every event counted; `make` builds the ring.
fn two_threads<R: RingOwner<Target: RingStorage<Format = EventFormat>> + Clone + Send>(
    owner: R,
    policy: OverflowPolicy,
    batch: bool,
) where
    Producer<R>: Send,
{
    let (mut p, mut c) = split(owner, policy).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let producer = s.spawn(|| {
            let mut v = 0;
            let mut buf = Vec::new();
            while v < TOTAL {
                if batch {
                    buf.clear();
                    buf.extend((v..TOTAL.min(v + v % 13 + 1)).map(ev));
                    p.push_slice(&buf);
                    v += buf.len() as u64;
                } else {
                    let _ = p.push(&ev(v));
                    v += 1;
                }
            }
            done.store(true, std::sync::atomic::Ordering::Release);
            (p.events_published(), p.events_dropped())
        });
        let (mut expected, mut delivered) = (0u64, 0u64);
        // Losses counted since the previous delivered event: a read may count a lap
        // and still find nothing readable yet.
        let mut before = 0;
        loop {
            let finished = done.load(std::sync::atomic::Ordering::Acquire);
            match c.pop() {
                Some(e) => {
                    assert_intact(&e);
                    assert!(e.value() >= expected, "out of order");
                    if policy == OverflowPolicy::OverwriteOldest {
                        assert_eq!(e.value() - expected, c.events_lost() - before);
                        before = c.events_lost();
                    }
                    expected = e.value() + 1;
                    delivered += 1;
                }
                None if finished => break,
                None => std::thread::yield_now(),
            }
        }
        let (published, dropped) = producer.join().unwrap();
        assert_eq!(published + dropped, TOTAL);
        assert_eq!(delivered + dropped + c.events_lost(), TOTAL);
    });
}

#[test]
fn plain_copies_of_an_unobserved_ring_deliver_every_event_across_threads() {
    for batch in [false, true] {
        let ring = Ring::<32>::new_unobserved();
        two_threads(&ring, OverflowPolicy::DropNewest, batch);
    }
}

#[test]
fn plain_reads_of_an_observed_ring_deliver_every_event_with_an_observer_running() {
    let ring = Ring::<32>::new();
    let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    let mut observer = ring.observer(ObserverStart::Oldest).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut v = 0;
            while v < TOTAL {
                let events: Vec<Event> = (v..TOTAL.min(v + 5)).map(ev).collect();
                v += p.push_slice(&events) as u64;
            }
            done.store(true, std::sync::atomic::Ordering::Release);
        });
        s.spawn(|| {
            let mut last = None;
            loop {
                let finished = done.load(std::sync::atomic::Ordering::Acquire);
                match observer.poll() {
                    Some(e) => {
                        assert_intact(&e);
                        assert!(last < Some(e.value()));
                        last = Some(e.value());
                    }
                    None if finished => break,
                    None => std::thread::yield_now(),
                }
            }
        });
        let mut expected = 0;
        while expected < TOTAL {
            match c.pop() {
                Some(e) => {
                    assert_intact(&e);
                    assert_eq!(e.value(), expected);
                    expected += 1;
                }
                None => std::thread::yield_now(),
            }
        }
    });
}

#[test]
fn slice_rings_shared_through_arc_deliver_every_event() {
    for (observability, policy) in [
        (Observability::Unobserved, OverflowPolicy::DropNewest),
        (Observability::Observed, OverflowPolicy::DropNewest),
        (Observability::Observed, OverflowPolicy::OverwriteOldest),
    ] {
        let slots: Box<[Slot]> = (0..16).map(|_| Slot::new()).collect();
        let ring = Arc::new(SliceRing::new(slots, observability).unwrap());
        two_threads(Arc::clone(&ring), policy, true);
    }
}

#[test]
fn two_slice_rings_over_one_borrowed_slice_never_race() {
    // Safe code can build two rings over the same slots; each is split once, so the
    // uniqueness of its handles says nothing about the slots. Under Miri this fails
    // with a data race if either ring copies slots with plain accesses.
    let slots: Box<[Slot]> = (0..4).map(|_| Slot::new()).collect();
    let a = SliceRing::new(&slots[..], Observability::Unobserved).unwrap();
    let b = SliceRing::new(&slots[..], Observability::Unobserved).unwrap();
    let (mut pa, mut ca) = split(&a, OverflowPolicy::DropNewest).unwrap();
    let (mut pb, _cb) = split(&b, OverflowPolicy::DropNewest).unwrap();
    let rounds: u64 = if cfg!(miri) { 20 } else { 2_000 };
    std::thread::scope(|s| {
        s.spawn(|| {
            for v in 0..rounds {
                let _ = pb.push(&ev(v));
            }
        });
        for v in 0..rounds {
            let _ = pa.push(&ev(v));
            // The other ring's writes may garble what this one reads, never more.
            let _ = ca.pop();
        }
    });
}

#[test]
fn a_slice_ring_refuses_a_capacity_that_is_not_a_power_of_two() {
    let slots: Vec<Slot> = (0..12).map(|_| Slot::new()).collect();
    assert_eq!(
        SliceRing::new(slots, Observability::Observed).err(),
        Some(CapacityError { capacity: 12 })
    );
}

#[test]
fn push_slice_stamps_a_whole_batch_for_observers_and_overwrites_in_rounds() {
    let ring = Ring::<8>::new();
    let (mut p, mut c) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    let mut observer = ring.observer(ObserverStart::Oldest).unwrap();
    let events: Vec<Event> = (0..20).map(ev).collect();
    assert_eq!(p.push_slice(&events), 20);
    // Written in rounds of 7; the last 8 (one per slot) survive, every older one is
    // counted as missed, and each survivor is intact.
    let seen: Vec<u64> = core::iter::from_fn(|| {
        observer.poll().map(|e| {
            assert_intact(&e);
            e.value()
        })
    })
    .collect();
    assert_eq!(seen, (12..20).collect::<Vec<_>>());
    assert_eq!(observer.events_missed(), 12);
    assert_eq!(c.pop().map(|e| e.value()), Some(12));
    assert_eq!(c.events_lost(), 12);
}

/// An owner whose `Deref` answers with another ring after a while.
struct Fickle<'a> {
    rings: [&'a Ring<4>; 2],
    calls: core::cell::Cell<u32>,
}

impl Clone for Fickle<'_> {
    fn clone(&self) -> Self {
        Fickle {
            rings: self.rings,
            calls: core::cell::Cell::new(0),
        }
    }
}

impl core::ops::Deref for Fickle<'_> {
    type Target = Ring<4>;
    fn deref(&self) -> &Ring<4> {
        let n = self.calls.get();
        self.calls.set(n + 1);
        self.rings[(n >= 8) as usize]
    }
}

#[test]
#[should_panic(expected = "dereferenced to another ring")]
fn a_handle_whose_owner_changes_ring_panics_instead_of_racing() {
    let (a, b) = (Ring::<4>::new_unobserved(), Ring::<4>::new_unobserved());
    let owner = Fickle {
        rings: [&a, &b],
        calls: core::cell::Cell::new(0),
    };
    let (mut p, _c) = split(owner, OverflowPolicy::DropNewest).unwrap();
    for v in 0..20 {
        let _ = p.push(&ev(v));
    }
}

/// An 8-aligned buffer that owns the memory of a region (a `Vec`: moving it keeps
/// its buffer in place and asserts no uniqueness, unlike a `Box`).
/// An 8-byte word aligned to 8 on every target (`u64` is only 4-aligned on i686).
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct Word(#[allow(dead_code)] u64);

fn buffer(bytes: usize) -> (Vec<Word>, *mut u8, usize) {
    let mut memory = vec![Word(0); bytes.div_ceil(8)];
    let ptr = memory.as_mut_ptr().cast::<u8>();
    (memory, ptr, bytes)
}

#[test]
fn a_version_4_region_holds_compact_events_at_nixl_offsets() {
    let len = HeaderInfo::ring_bytes_for(8, CompactFormat::SLOT_SIZE) as usize;
    assert_eq!(len, 40 + 8 * 16);
    let (memory, ptr, len) = buffer(len);
    // SAFETY: the buffer is 8-aligned, `len` bytes, owned by the region, and only
    // touched through it until the region is gone.
    let region = unsafe {
        RingRegion::<_, CompactFormat>::init_as(memory, ptr, len, 8, CompactFormat::HEADER_VERSION)
    }
    .unwrap();
    let region = Arc::new(region);
    let (mut p, mut c) = split(Arc::clone(&region), OverflowPolicy::DropNewest).unwrap();
    let mut observer = observe(Arc::clone(&region), ObserverStart::Oldest).unwrap();
    p.push(&CompactEvent::new(7, 0x0102_0304_0506_0708))
        .unwrap();
    p.push_slice(&[CompactEvent::new(8, 1), CompactEvent::new(9, 2)]);
    assert_eq!(region.header().version.load(), 4);
    assert_eq!(region.header().expected_version.load(), 4);
    assert_eq!(region.header().write_pos.load_u64(), 3);
    {
        // The wire bytes: type @0, stamp @4 (seq 0, written; little-endian like every
        // field), value @8.
        let bytes = region.owner();
        // SAFETY: reading the buffer as bytes while no handle writes (single thread).
        let raw = unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<u8>(), len) };
        let slot0 = &raw[HEADER_SIZE..HEADER_SIZE + 16];
        assert_eq!(&slot0[0..4], &7u32.to_le_bytes());
        assert_eq!(&slot0[4..8], &stamp_done(0).to_le_bytes());
        assert_eq!(&slot0[8..16], &0x0102_0304_0506_0708u64.to_le_bytes());
    }
    assert_eq!(
        observer.poll(),
        Some(CompactEvent::new(7, 0x0102_0304_0506_0708))
    );
    let mut got = Vec::new();
    assert_eq!(c.read_batch(usize::MAX, |e| got.push(*e)), 3);
    assert_eq!(got[2], CompactEvent::new(9, 2));
    assert_eq!(region.check_stamps(), Ok(()));
}

#[test]
fn attaching_checks_the_version_and_the_slot_size_of_the_format() {
    let len = HeaderInfo::ring_bytes_for(4, CompactFormat::SLOT_SIZE) as usize;
    let (memory, ptr, len) = buffer(len);
    // SAFETY: as above. The first region owns the buffer; the others borrow it.
    let v4 = unsafe { RingRegion::<_, CompactFormat>::init_as(memory, ptr, len, 4, 4) }.unwrap();
    // SAFETY: `v4` keeps the memory alive for the whole block; all access is atomic.
    unsafe {
        assert_eq!(
            RingRegion::attach(&v4, ptr, len).err(),
            Some(RegionError::UnsupportedVersion {
                found: 4,
                expected: 1
            })
        );
        let again = RingRegion::<_, CompactFormat>::attach_as(&v4, ptr, len, 4, false).unwrap();
        assert_eq!(again.capacity(), 4);
        assert!(split(&again, OverflowPolicy::DropNewest).is_err());
        assert_eq!(
            Producer::from_region(&again, OverflowPolicy::DropNewest).err(),
            Some(ReadOnlyRegion)
        );
        assert!(observe(&again, ObserverStart::Oldest).is_ok());
        // A version-1 header with 56-byte slots would need more memory than this.
        v4.header().version.store(1);
        assert!(matches!(
            RingRegion::attach(&v4, ptr, len).err(),
            Some(RegionError::TooShort { .. })
        ));
    }
}

#[test]
fn compact_rings_run_the_same_algorithm_in_process() {
    let ring = Ring::<4, CompactFormat>::new();
    let (mut p, mut c) = ring.split(OverflowPolicy::DropNewest).unwrap();
    let mut o = ring.observer(ObserverStart::Oldest).unwrap();
    for v in 0..5 {
        let _ = p.push(&CompactEvent::new(v as u32, v));
    }
    assert_eq!(p.events_dropped(), 2);
    assert_eq!(o.poll(), Some(CompactEvent::new(0, 0)));
    assert_eq!(c.pop(), Some(CompactEvent::new(0, 0)));
    let unobserved = Ring::<4, CompactFormat>::new_unobserved();
    let (mut p, mut c) = unobserved.split(OverflowPolicy::DropNewest).unwrap();
    p.push(&CompactEvent::new(u32::MAX, u64::MAX)).unwrap();
    assert_eq!(c.pop(), Some(CompactEvent::new(u32::MAX, u64::MAX)));
}

#[test]
fn an_unobserved_ring_can_live_in_a_static() {
    static RING: Ring<2> = Ring::new_unobserved();
    let (mut p, mut c) = RING.split(OverflowPolicy::DropNewest).unwrap();
    p.push(&ev(1)).unwrap();
    assert_eq!(c.pop(), Some(ev(1)));
}

/// Batches of every size from 0 to past the capacity, from every start position
/// (wrapping or not), through `push_all_with` under `DropNewest`, against a model:
/// a batch that fits is delivered whole and in order, one that does not is refused
/// whole and counted.
fn push_all_with_matches_the_model<
    R: RingOwner<Target: RingStorage<Format = EventFormat>> + Clone,
>(
    owner: R,
) {
    let (mut p, mut c) = split(owner, OverflowPolicy::DropNewest).unwrap();
    let capacity = p.free_slots() as usize; // an empty ring: capacity − 1
    let (mut next, mut dropped, mut read) = (0u64, 0u64, 0u64);
    // Under Miri, which interprets every instruction, the edges only: around an empty
    // and a full ring, and batches that just fit or just do not.
    let starts: Vec<usize> = if cfg!(miri) {
        vec![0, 1, capacity - 1, capacity]
    } else {
        (0..=capacity).collect()
    };
    for start in starts {
        let sizes: Vec<usize> = if cfg!(miri) {
            vec![0, 1, capacity - start, capacity - start + 1]
        } else {
            (0..=capacity + 2).collect()
        };
        for n in sizes {
            // Move the positions on by `start` (the batch's first slot changes from
            // one case to the next, so that many batches wrap), then fill `start`
            // slots: the batch finds `capacity − start` free.
            for _ in 0..start {
                p.push(&ev(next)).unwrap();
                next += 1;
            }
            while let Some(e) = c.pop() {
                assert_eq!(e, ev(read), "start {start}, n {n}");
                read += 1;
            }
            for _ in 0..start {
                p.push(&ev(next)).unwrap();
                next += 1;
            }
            let first = next;
            let fits = start + n <= capacity;
            assert_eq!(p.push_all_with(n, |i| ev(first + i as u64)).is_ok(), fits);
            if fits {
                next += n as u64;
            } else {
                dropped += n as u64;
            }
            while let Some(e) = c.pop() {
                assert_eq!(e, ev(read), "start {start}, n {n}");
                read += 1;
            }
            assert_eq!(read, next, "start {start}, n {n}: not delivered");
            assert_eq!(p.events_dropped(), dropped, "start {start}, n {n}");
        }
    }
}

#[test]
fn batches_made_in_their_slots_are_whole_in_order_or_counted_in_every_storage() {
    push_all_with_matches_the_model(&Ring::<8>::new_unobserved());
    push_all_with_matches_the_model(&Ring::<8>::new());
    for observability in [Observability::Unobserved, Observability::Observed] {
        let slots: Box<[Slot]> = (0..8).map(|_| Slot::new()).collect();
        push_all_with_matches_the_model(Arc::new(SliceRing::new(slots, observability).unwrap()));
    }
}

/// A version-1 ring laid out byte by byte, little-endian as the format says (what a
/// little-endian host writes): every field, the slot stamps included, reads back on
/// any host. Miri runs this on s390x (big-endian), where a stamp read in native order
/// would not match the sequence.
#[test]
fn a_ring_laid_out_little_endian_reads_back_on_every_host() {
    const CAPACITY: usize = 8;
    let len = HeaderInfo::ring_bytes(CAPACITY as u64) as usize;
    let mut bytes = vec![0u8; len];
    let put = |bytes: &mut [u8], at: usize, field: &[u8]| {
        bytes[at..at + field.len()].copy_from_slice(field)
    };
    put(&mut bytes, 0, &3u64.to_le_bytes()); // write_pos
    put(&mut bytes, 8, &0u64.to_le_bytes()); // read_pos
    put(&mut bytes, 16, &1i32.to_le_bytes()); // version
    put(&mut bytes, 20, &1i32.to_le_bytes()); // expected_version
    put(&mut bytes, 24, &(CAPACITY as u64).to_le_bytes());
    put(&mut bytes, 32, &(CAPACITY as u64 - 1).to_le_bytes());
    let events = [
        Event::new(
            1_000,
            Category::Transfer,
            event_name!("agent_tx_bytes"),
            4096,
        ),
        Event::new(1_001, Category::Error, event_name!("NIXL_ERR_BACKEND"), 1),
        Event::new(
            0x0102_0304_0506,
            Category::Custom,
            event_name!("q"),
            u64::MAX - 7,
        ),
    ];
    for (seq, e) in events.iter().enumerate() {
        let at = HEADER_SIZE + seq * crate::event::EVENT_SIZE;
        put(&mut bytes, at, &e.timestamp_us().to_le_bytes());
        put(&mut bytes, at + 8, &e.raw_category().to_le_bytes());
        put(&mut bytes, at + 12, e.name_field());
        put(&mut bytes, at + 44, &stamp_done(seq as u32).to_le_bytes());
        put(&mut bytes, at + 48, &e.value().to_le_bytes());
    }
    let (memory, ptr, len) = buffer(len);
    // SAFETY: `ptr` is the start of `memory`'s `len` bytes, which nothing else touches.
    unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, len) };
    // SAFETY: the buffer is 8-aligned, `len` bytes, owned by the region, and only
    // touched through it until the region is gone.
    let region = Arc::new(unsafe { RingRegion::attach(memory, ptr, len) }.unwrap());
    assert_eq!(region.check_stamps(), Ok(()));
    let mut observer = observe(Arc::clone(&region), ObserverStart::Oldest).unwrap();
    let mut seen = Vec::new();
    while let Some(e) = observer.poll() {
        seen.push(e);
    }
    assert_eq!(seen, events);
    let mut producer = Producer::from_region(&*region, OverflowPolicy::DropNewest).unwrap();
    producer.push(&ev(4)).unwrap();
    // The next stamp follows the sequence the little-endian stamps told.
    let next = &region_bytes(&region, len)[HEADER_SIZE + 3 * 56 + 44..][..4];
    assert_eq!(next, &stamp_done(3).to_le_bytes());
    assert_eq!(observer.poll(), Some(ev(4)));
}

/// The region's bytes, read while no handle writes (single thread).
fn region_bytes<M: core::ops::Deref<Target = [Word]>>(region: &RingRegion<M>, len: usize) -> &[u8] {
    // SAFETY: the region owns `len` bytes of `Word`s; nothing writes while the borrow
    // lives (this test is single-threaded and the borrow ends before the next push).
    unsafe { core::slice::from_raw_parts(region.owner().as_ptr().cast::<u8>(), len) }
}
