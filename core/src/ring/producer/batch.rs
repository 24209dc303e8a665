//! Batches: writes that become visible together.

use super::super::storage::{ItemOf, RingOwner};
use super::super::{Full, checked};
use super::Producer;
use core::fmt;

/// A batch of writes published together; see [`Producer::batch`]. Dropping it
/// publishes what was written.
pub struct Batch<'p, R: RingOwner> {
    pub(super) producer: &'p mut Producer<R>,
    pub(super) written: u32,
}

impl<R: RingOwner> fmt::Debug for Batch<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("written", &self.written)
            .finish()
    }
}

impl<R: RingOwner> Batch<'_, R> {
    /// Writes one event into the batch; under `DropNewest` a full ring refuses it and
    /// counts it as dropped. Each write into an observed ring has its own fence;
    /// [`Producer::push_slice`] shares one across the slice.
    #[inline]
    pub fn push(&mut self, item: &ItemOf<R>) -> Result<(), Full> {
        let producer = &mut *self.producer;
        let ring = checked(&producer.ring, producer.home);
        producer.head.write_one(ring, item)?;
        self.written += 1;
        Ok(())
    }

    /// Writes as many of `items` as fit into the batch, with one fence for all of them
    /// (see [`Producer::push_slice`]), and counts the rest as dropped under
    /// `DropNewest`. Returns how many were written.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
    /// let ring = Ring::<8>::new();
    /// let (mut producer, mut consumer) = ring.split(OverflowPolicy::DropNewest).unwrap();
    /// let e = Event::new(1, Category::Custom, event_name!("n"), 1);
    /// let mut batch = producer.batch();
    /// batch.push(&e).unwrap();
    /// assert_eq!(batch.push_slice(&[e; 10]), 6);
    /// assert_eq!(batch.len(), 7);
    /// drop(batch);
    /// assert_eq!((producer.events_dropped(), consumer.len()), (4, 7));
    /// ```
    pub fn push_slice(&mut self, items: &[ItemOf<R>]) -> usize {
        let producer = &mut *self.producer;
        let ring = checked(&producer.ring, producer.home);
        let n = producer.head.write_slice(ring, items);
        self.written += n as u32;
        n
    }

    /// Events written into this batch so far.
    pub fn len(&self) -> u32 {
        self.written
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// Publishes the batch (the same as dropping it).
    pub fn publish(self) {}
}

impl<R: RingOwner> Drop for Batch<'_, R> {
    fn drop(&mut self) {
        if self.written > 0 {
            let producer = &*self.producer;
            producer.head.publish(producer.storage());
        }
    }
}
