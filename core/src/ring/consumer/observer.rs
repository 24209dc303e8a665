//! The read-only observers: followers of the stream that write nothing.

use super::super::format::SlotFormat;
use super::super::region::RingRegion;
use super::super::storage::sealed::Storage;
use super::super::storage::{ItemOf, RingOwner};
use super::super::{ObserverStart, checked};
use super::cursor::{Cursor, Losses};
use core::fmt;
use core::ops::Deref;

/// A read-only follower of the stream. It writes nothing — it can run over a
/// read-only mapping — and tells exactly how many events it missed when the producer
/// lapped it. Made by [`observe`](crate::ring::observe) (or [`Ring::observer`](crate::ring::Ring::observer)).
pub struct Observer<R: RingOwner> {
    ring: R,
    home: usize,
    cursor: Cursor,
    missed: Losses,
}

impl<R: RingOwner> fmt::Debug for Observer<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Observer")
            .field("capacity", &self.capacity())
            .field("cursor", &self.cursor)
            .field("missed", &self.missed)
            .finish()
    }
}

impl<R, M, F> Observer<R>
where
    R: Deref<Target = RingRegion<M, F>>,
    F: SlotFormat,
{
    /// An observer of a ring in caller-provided memory (regions always carry stamps);
    /// it only loads, so the region may be read-only.
    ///
    /// ```
    /// use telering_core::ring::{HeaderInfo, RingRegion};
    /// use telering_core::{event_name, Category, Event, Observer, ObserverStart, OverflowPolicy, Producer};
    /// let mut memory = vec![0u64; HeaderInfo::ring_bytes(8) as usize / 8];
    /// let (ptr, len) = (memory.as_mut_ptr().cast::<u8>(), memory.len() * 8);
    /// // SAFETY: `memory` is 8-aligned, `len` bytes, owned by the region and touched only
    /// // through it.
    /// let region = unsafe { RingRegion::init(memory, ptr, len, 8) }.unwrap();
    /// let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    /// producer.push(&Event::new(1, Category::Custom, event_name!("n"), 7)).unwrap();
    /// let mut observer = Observer::from_region(&region, ObserverStart::Oldest);
    /// assert_eq!(observer.poll().map(|e| e.value()), Some(7));
    /// // Observing moves nothing: the event is still there for the draining consumer.
    /// assert_eq!(region.header().read_pos.load_u64(), 0);
    /// ```
    pub fn from_region(region: R, start: ObserverStart) -> Observer<R> {
        Observer::new(region, 0, start)
    }
}

impl<R: RingOwner> Observer<R> {
    pub(in crate::ring) fn new(ring: R, home: usize, start: ObserverStart) -> Observer<R> {
        let cursor = match start {
            ObserverStart::Oldest => Cursor::at_oldest(&*ring),
            ObserverStart::Newest => Cursor::at_newest(&*ring),
        };
        Observer {
            ring,
            home,
            cursor,
            missed: Losses::default(),
        }
    }

    /// The owner of the ring this observer follows.
    ///
    /// ```
    /// use telering_core::{ObserverStart, Ring};
    /// let ring = Ring::<8>::new();
    /// let observer = ring.observer(ObserverStart::Oldest).unwrap();
    /// assert!(core::ptr::eq(*observer.owner(), &ring));
    /// ```
    pub fn owner(&self) -> &R {
        &self.ring
    }

    /// The next event, or `None` if the observer has caught up.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, _consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// let mut observer = ring.observer(ObserverStart::Newest).unwrap();
    /// for v in 0..3 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// assert_eq!(observer.poll().map(|e| e.value()), Some(0));
    /// for v in 3..9 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// // Events 1 to 4 were overwritten while the observer looked away; 5..=8 remain.
    /// assert_eq!(observer.poll().map(|e| e.value()), Some(5));
    /// assert_eq!(observer.events_missed(), 4);
    /// ```
    #[inline]
    pub fn poll(&mut self) -> Option<ItemOf<R>> {
        let ring = checked(&self.ring, self.home);
        self.cursor.read(ring, &mut self.missed)
    }

    /// Events the producer overwrote before this observer read them, counted
    /// exactly. See [`Observer::lag_unknown`] for losses that could not be counted.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, _consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// let mut observer = ring.observer(ObserverStart::Oldest).unwrap();
    /// for v in 0..10 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// let mut seen = 0;
    /// while observer.poll().is_some() {
    ///     seen += 1;
    /// }
    /// assert_eq!((seen, observer.events_missed()), (4, 6));
    /// ```
    pub fn events_missed(&self) -> u64 {
        self.missed.counted
    }

    /// How many times this observer found it had fallen 2²⁹ events or more behind,
    /// further than the slot stamps can count, with no 64-bit published count
    /// ([`Observer::set_published`]) to count by. Each time it missed an unknown
    /// number of events, not included in [`Observer::events_missed`], and resumed at
    /// the oldest readable event.
    ///
    /// ```
    /// use telering_core::{ObserverStart, Ring};
    /// let ring = Ring::<8>::new();
    /// let observer = ring.observer(ObserverStart::Oldest).unwrap();
    /// assert_eq!(observer.lag_unknown(), 0);
    /// ```
    pub fn lag_unknown(&self) -> u64 {
        self.missed.unknown
    }

    /// Supplies the writer's 64-bit count of events published so far (a ring file's
    /// trailer keeps one), loaded after the positions it covers were stored. With it,
    /// an observer lapped by any distance counts exactly what it missed, and
    /// [`Observer::lag_unknown`] stays 0. Call it before polls; a stale count is fine
    /// as long as it is within 2²⁹ of the truth.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, ObserverStart, OverflowPolicy, Ring};
    /// let ring = Ring::<4>::new();
    /// let (mut producer, _consumer) = ring.split(OverflowPolicy::OverwriteOldest).unwrap();
    /// let mut observer = ring.observer(ObserverStart::Newest).unwrap();
    /// observer.set_published(producer.events_published());
    /// for v in 0..9 {
    ///     producer.push(&Event::new(v, Category::Custom, event_name!("n"), v)).unwrap();
    /// }
    /// observer.set_published(producer.events_published());
    /// assert_eq!(observer.poll().map(|e| e.value()), Some(5));
    /// assert_eq!((observer.events_missed(), observer.lag_unknown()), (5, 0));
    /// ```
    pub fn set_published(&mut self, published: u64) {
        let ring = checked(&self.ring, self.home);
        self.cursor.set_published(ring, published);
    }

    /// Slots in the ring.
    ///
    /// ```
    /// use telering_core::{ObserverStart, Ring};
    /// let ring = Ring::<32>::new();
    /// assert_eq!(ring.observer(ObserverStart::Newest).unwrap().capacity(), 32);
    /// ```
    pub fn capacity(&self) -> u32 {
        self.ring.mask() + 1
    }
}
