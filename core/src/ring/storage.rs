//! The storages one ring algorithm runs over, and the owners handles hold them by.
//!
//! A handle ([`Producer`](super::Producer), [`Consumer`](super::Consumer),
//! [`Observer`](super::Observer)) holds an *owner* `R` of its storage: anything that
//! dereferences to a [`RingStorage`] ([`RingOwner`] is implemented for every such
//! type). So the same handle type borrows a `static` ring (`&Ring<N>`), shares a heap
//! ring (`Arc<SliceRing<Box<[Slot]>>>`) or a mapped region
//! (`Arc<RingRegion<Mapping>>`), and the algorithm exists once, monomorphised per
//! storage:
//!
//! - [`Ring<N>`]: `const`-constructible, usable in a `static`; its mask is the
//!   constant `N − 1` and indexing it is branch-free.
//! - [`SliceRing<S>`]: slots in any container `S: AsRef<[Slot]>` (a `Box<[Slot]>`
//!   in std); built without `unsafe`.
//! - [`RingRegion`](super::RingRegion): NIXL's header and slots in caller-provided
//!   memory, kept alive by an owner value.
//!
//! Only [`Ring<N>`] is read and written with plain (non-atomic) copies where the
//! protocol excludes a concurrent write: only this program's safe code reaches its
//! memory, through handles whose uniqueness [`split`](super::split) enforces, and a
//! position always names the same slot. Each handle remembers the address of the
//! ring it was made for and checks, before a plain copy, that its owner still
//! dereferences to it (an owner whose `Deref` changes its answer panics the handle
//! instead of racing another ring's handles). A `SliceRing`'s container and a
//! region's foreign memory (other programs may write it at any time) are always
//! accessed with atomic words.

use super::format::{EventFormat, SlotFormat};
use super::slot::{AtomicLeU64, Slot};
use super::{AlreadySplit, CapacityError, MAX_CAPACITY};
use crate::sync::{AtomicBool, Ordering};
use core::fmt;
use core::marker::PhantomData;
use core::ops::Deref;

pub(crate) mod sealed {
    use super::super::format::SlotFormat;
    use super::super::slot::AtomicLeU64;

    /// What the algorithm needs from a storage; sealed, because plain accesses are
    /// sound only for storages whose every handle this crate hands out.
    pub trait Storage {
        /// The slot format.
        type Format: SlotFormat;
        /// Whether the handles may copy slots with plain accesses where the protocol
        /// excludes a concurrent write: only this program's safe code reaches the
        /// memory, and a position always names the same slot.
        const PLAIN_ACCESS: bool;
        /// `capacity − 1` when it is a compile-time constant (`Ring<N>`), so that the
        /// handles mask with an immediate instead of a loaded value.
        const FIXED_MASK: Option<u32> = None;
        /// Whether the room reload of a push is a call that takes and returns values
        /// (`Ring<N>`, whose pushes run in their callers' loops), so that the caller
        /// keeps the producer's state in registers. The other storages reload the
        /// room through an out-of-line call on the producer's state, which keeps their
        /// push small enough to inline into a recording call.
        const PUSH_INLINE: bool = false;
        /// The producer's position.
        fn write_pos(&self) -> &AtomicLeU64;
        /// The draining consumer's position.
        fn read_pos(&self) -> &AtomicLeU64;
        /// `capacity − 1`.
        fn mask(&self) -> u32;
        /// The slot at `pos & mask`.
        fn slot(&self, pos: u32) -> &<Self::Format as SlotFormat>::Slot;
        /// Up to `n` consecutive slots from `pos & mask`, stopping at the end of the
        /// array (a batch wraps in at most two runs): the bounds are checked once per
        /// run instead of once per slot. Empty when the storage offers no runs; then
        /// the handles go slot by slot.
        #[inline(always)]
        fn slot_run(&self, pos: u32, n: usize) -> &[<Self::Format as SlotFormat>::Slot] {
            let _ = (pos, n);
            &[]
        }
        /// Exactly `n` consecutive slots from `pos & mask`, or `None` if they would
        /// run past the end of the array (or the storage offers no runs): one bounds
        /// check, for a batch written whole when it does not wrap.
        #[inline(always)]
        fn slot_run_exact(
            &self,
            pos: u32,
            n: usize,
        ) -> Option<&[<Self::Format as SlotFormat>::Slot]> {
            let run = self.slot_run(pos, n);
            (run.len() == n).then_some(run)
        }
        /// Whether the ring writes stamps so that observers can follow it.
        fn observed(&self) -> bool;
        /// Claims the one producer and one consumer; `false` if already claimed.
        fn claim_split(&self) -> bool;
    }
}

use sealed::Storage;

/// A storage the ring algorithm runs over: [`Ring`], [`SliceRing`] or
/// [`RingRegion`](super::RingRegion).
pub trait RingStorage: sealed::Storage {}

impl<T: sealed::Storage + ?Sized> RingStorage for T {}

/// An owner of a ring storage that handles hold: `&Ring<N>`, `Arc<SliceRing<…>>`,
/// `Arc<RingRegion<…>>`, or any other pointer that dereferences to a
/// [`RingStorage`].
pub trait RingOwner: Deref<Target: RingStorage> {}

impl<R: Deref<Target: RingStorage>> RingOwner for R {}

/// An owner of a ring of NIXL version-1 [`Event`](crate::Event) slots: what the event
/// sinks (recorder, exporters) accept, whatever the storage.
pub trait EventOwner: RingOwner<Target: RingStorage<Format = EventFormat>> {}

impl<R: RingOwner<Target: RingStorage<Format = EventFormat>>> EventOwner for R {}

/// The slot format of an owner's storage.
pub type FormatOf<R> = <<R as Deref>::Target as Storage>::Format;
/// The item an owner's ring holds ([`Event`](crate::Event) for [`EventFormat`]).
pub type ItemOf<R> = <FormatOf<R> as SlotFormat>::Item;

/// Whether the ring writes stamps so that observers can follow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Observability {
    /// Slots carry stamps; any number of observers may follow (the default).
    #[default]
    Observed,
    /// No stamps, no seqlock fence: the cheapest ring, for a producer and consumer
    /// alone (std's per-thread lanes). Attaching an observer fails with
    /// [`Unobserved`](super::Unobserved). Under
    /// [`OverwriteOldest`](super::OverflowPolicy::OverwriteOldest) the consumer needs
    /// the stamps, so the ring writes them anyway.
    Unobserved,
}

/// Pads and aligns a value to its own cache line(s), so that the producer's and the
/// consumer's positions do not share one: otherwise every push would invalidate the
/// consumer's cached copy of `read_pos` and vice versa (false sharing). 128 bytes on
/// x86-64 and AArch64, because their prefetchers fetch cache lines in pairs (the value
/// crossbeam and rtrb use); 8 bytes on small cores, where RAM is what matters and
/// there is one core.
#[cfg_attr(
    any(target_arch = "x86_64", target_arch = "aarch64"),
    repr(C, align(128))
)]
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    repr(C, align(8))
)]
struct CachePadded<T>(T);

/// The two positions and the split flag every in-process ring has.
struct Positions {
    write_pos: CachePadded<AtomicLeU64>,
    read_pos: CachePadded<AtomicLeU64>,
    split: AtomicBool,
    /// Kept negated so that the default ring (observed) is all zero bytes: a `static`
    /// ring then lies in `.bss`, not as an initial image in a firmware's flash.
    unobserved: bool,
}

impl Positions {
    /// Positions of a new ring; observed only if asked and its slots have stamps
    /// (`stamped`).
    #[cfg(not(loom))]
    const fn new(observability: Observability, stamped: bool) -> Positions {
        Positions {
            write_pos: CachePadded(AtomicLeU64::new()),
            read_pos: CachePadded(AtomicLeU64::new()),
            split: AtomicBool::new(false),
            unobserved: !(stamped && matches!(observability, Observability::Observed)),
        }
    }

    #[cfg(loom)]
    fn new(observability: Observability, stamped: bool) -> Positions {
        Positions {
            write_pos: CachePadded(AtomicLeU64::new()),
            read_pos: CachePadded(AtomicLeU64::new()),
            split: AtomicBool::new(false),
            unobserved: !(stamped && matches!(observability, Observability::Observed)),
        }
    }

    fn claim(&self) -> bool {
        !self.split.swap(true, Ordering::AcqRel)
    }
}

/// A ring with owned storage of `N` slots (`N` a power of two, 2 ≤ `N` ≤ 2²⁸), usable
/// in a `static`. Its handles borrow it (`&Ring<N>`).
///
/// ```
/// use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
/// static RING: Ring<64> = Ring::new();
/// let (mut producer, mut consumer) = RING.split(OverflowPolicy::DropNewest).unwrap();
/// producer.push(&Event::new(10, Category::Transfer, event_name!("agent_tx_bytes"), 4096)).unwrap();
/// let e = consumer.pop().unwrap();
/// assert_eq!((e.name(), e.value()), (Ok("agent_tx_bytes"), 4096));
/// assert!(RING.split(OverflowPolicy::DropNewest).is_err()); // one producer, one consumer
/// ```
pub struct Ring<const N: usize, F: SlotFormat = EventFormat> {
    positions: Positions,
    pub(crate) slots: [F::Slot; N],
}

impl<const N: usize, F: SlotFormat> fmt::Debug for Ring<N, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_storage(self, "Ring", f)
    }
}

impl<const N: usize, F: SlotFormat> Ring<N, F> {
    const VALID_CAPACITY: () = assert!(
        N.is_power_of_two() && N >= 2 && N <= MAX_CAPACITY as usize,
        "ring capacity must be a power of two between 2 and 2^28"
    );

    /// An empty ring whose slots carry stamps, so that observers can follow it.
    #[cfg(not(loom))]
    pub const fn new() -> Ring<N, F> {
        Ring::with_observability(Observability::Observed)
    }

    /// An empty ring without stamps: no observer can attach, and pushes skip the
    /// stamps and the seqlock fence.
    ///
    /// ```
    /// use telering_core::{ObserverStart, Ring, Unobserved};
    /// let ring = Ring::<8>::new_unobserved();
    /// assert_eq!(ring.observer(ObserverStart::Oldest).err(), Some(Unobserved));
    /// ```
    #[cfg(not(loom))]
    pub const fn new_unobserved() -> Ring<N, F> {
        Ring::with_observability(Observability::Unobserved)
    }

    /// An empty ring.
    #[cfg(not(loom))]
    pub const fn with_observability(observability: Observability) -> Ring<N, F> {
        #[allow(clippy::let_unit_value)]
        let () = Self::VALID_CAPACITY;
        Ring {
            positions: Positions::new(observability, F::STAMPED),
            slots: [const { F::EMPTY }; N],
        }
    }

    /// An empty ring whose slots carry stamps.
    #[cfg(loom)]
    pub fn new() -> Ring<N, F> {
        Ring::with_observability(Observability::Observed)
    }

    /// An empty ring without stamps.
    #[cfg(loom)]
    pub fn new_unobserved() -> Ring<N, F> {
        Ring::with_observability(Observability::Unobserved)
    }

    /// An empty ring.
    #[cfg(loom)]
    pub fn with_observability(observability: Observability) -> Ring<N, F> {
        #[allow(clippy::let_unit_value)]
        let () = Self::VALID_CAPACITY;
        Ring {
            positions: Positions::new(observability, F::STAMPED),
            slots: core::array::from_fn(|_| F::empty()),
        }
    }

    /// Slots in the ring; it holds `N − 1` events.
    pub const fn capacity(&self) -> u32 {
        N as u32
    }

    /// Hands out the ring's one producer and one consumer, both with `policy`. A
    /// second call fails: the ring is single-producer, single-consumer.
    #[allow(clippy::type_complexity)]
    pub fn split(
        &self,
        policy: super::OverflowPolicy,
    ) -> Result<(super::Producer<&Self>, super::Consumer<&Self>), AlreadySplit> {
        super::split(self, policy)
    }

    /// A read-only observer of the stream; any number may exist. Fails on a ring made
    /// with [`Ring::new_unobserved`].
    pub fn observer(
        &self,
        start: super::ObserverStart,
    ) -> Result<super::Observer<&Self>, super::Unobserved> {
        super::observe(self, start)
    }

    /// Under loom only: a consumer made the way a reader attaching to a ring in
    /// shared memory makes one (from the current positions and stamps), so models can
    /// race its construction against a running producer. The caller must have dropped
    /// the consumer `split` gave.
    #[cfg(loom)]
    #[doc(hidden)]
    pub fn attach_consumer(&self, policy: super::OverflowPolicy) -> super::Consumer<&Self> {
        super::Consumer::new(self, super::address_of(self), policy)
    }
}

#[cfg(not(loom))]
impl<const N: usize, F: SlotFormat> Default for Ring<N, F> {
    fn default() -> Self {
        Ring::new()
    }
}

impl<const N: usize, F: SlotFormat> Storage for Ring<N, F> {
    type Format = F;
    const PLAIN_ACCESS: bool = true;
    const FIXED_MASK: Option<u32> = Some(N as u32 - 1);
    const PUSH_INLINE: bool = true;

    #[inline(always)]
    fn write_pos(&self) -> &AtomicLeU64 {
        &self.positions.write_pos.0
    }

    #[inline(always)]
    fn read_pos(&self) -> &AtomicLeU64 {
        &self.positions.read_pos.0
    }

    #[inline(always)]
    fn mask(&self) -> u32 {
        N as u32 - 1
    }

    #[inline(always)]
    fn slot(&self, pos: u32) -> &F::Slot {
        // `N` is a power of two, so the masked index is below `N` and the compiler
        // drops the bounds check: no branch.
        &self.slots[pos as usize & (N - 1)]
    }

    #[inline(always)]
    fn slot_run(&self, pos: u32, n: usize) -> &[F::Slot] {
        run_of(&self.slots, pos, n)
    }

    #[inline(always)]
    fn observed(&self) -> bool {
        !self.positions.unobserved
    }

    fn claim_split(&self) -> bool {
        self.positions.claim()
    }
}

/// A ring over slots in a container the caller provides — in std, a `Box<[Slot]>`
/// of a capacity chosen at run time, shared by the handles through an `Arc`. No
/// `unsafe` is needed to build or share it.
///
/// ```
/// use std::sync::Arc;
/// use telering_core::ring::{self, Observability, SliceRing, Slot};
/// use telering_core::{event_name, Category, Event, OverflowPolicy};
/// let slots: Box<[Slot]> = (0..64).map(|_| Slot::new()).collect();
/// let ring = Arc::new(SliceRing::new(slots, Observability::Unobserved).unwrap());
/// let (mut producer, mut consumer) = ring::split(Arc::clone(&ring), OverflowPolicy::DropNewest).unwrap();
/// // The handles own a share of the ring: they may move to other threads.
/// std::thread::spawn(move || {
///     producer.push(&Event::new(1, Category::Custom, event_name!("lane"), 9)).unwrap();
/// }).join().unwrap();
/// assert_eq!(consumer.pop().map(|e| e.value()), Some(9));
/// ```
pub struct SliceRing<S, F: SlotFormat = EventFormat> {
    positions: Positions,
    mask: u32,
    slots: S,
    format: PhantomData<fn() -> F>,
}

impl<S: AsRef<[F::Slot]>, F: SlotFormat> fmt::Debug for SliceRing<S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_storage(self, "SliceRing", f)
    }
}

impl<S: AsRef<[Slot]>> SliceRing<S> {
    /// A ring of version-1 event slots over `slots`, whose number must be a power of
    /// two from 2 to 2²⁸. The slots' stamps are reset, so a container reused from an
    /// earlier ring is fine.
    pub fn new(slots: S, observability: Observability) -> Result<Self, CapacityError> {
        SliceRing::new_as(slots, observability)
    }
}

impl<S: AsRef<[F::Slot]>, F: SlotFormat> SliceRing<S, F> {
    /// A ring of slots of format `F` over `slots` (see [`SliceRing::new`]):
    /// `SliceRing::<_, CompactFormat>::new_as(slots, observability)`.
    pub fn new_as(slots: S, observability: Observability) -> Result<Self, CapacityError> {
        let len = slots.as_ref().len();
        if !len.is_power_of_two() || !(2..=MAX_CAPACITY as usize).contains(&len) {
            return Err(CapacityError { capacity: len });
        }
        for slot in slots.as_ref() {
            F::stamp(slot).store(0, Ordering::Relaxed);
        }
        Ok(SliceRing {
            positions: Positions::new(observability, F::STAMPED),
            mask: len as u32 - 1,
            slots,
            format: PhantomData,
        })
    }

    /// Slots in the ring; it holds `capacity − 1` events.
    pub fn capacity(&self) -> u32 {
        self.mask + 1
    }
}

impl<S: AsRef<[F::Slot]>, F: SlotFormat> Storage for SliceRing<S, F> {
    type Format = F;
    // Atomic words only: the container need not own its slots (`&[Slot]` is an
    // `AsRef<[Slot]>` too), so two slice rings, each split once, may share them, and
    // plain copies would then race.
    const PLAIN_ACCESS: bool = false;

    #[inline(always)]
    fn write_pos(&self) -> &AtomicLeU64 {
        &self.positions.write_pos.0
    }

    #[inline(always)]
    fn read_pos(&self) -> &AtomicLeU64 {
        &self.positions.read_pos.0
    }

    #[inline(always)]
    fn mask(&self) -> u32 {
        self.mask
    }

    #[inline(always)]
    fn slot(&self, pos: u32) -> &F::Slot {
        // Masked with the slice's own length, so the index is in bounds for any
        // non-empty slice the container's `AsRef` returns; the bounds check stays (one
        // branch, taken only if that `AsRef`, the caller's code, returns an empty
        // slice after construction checked the length: then the handle panics).
        let slots = self.slots.as_ref();
        &slots[pos as usize & slots.len().wrapping_sub(1)]
    }

    #[inline(always)]
    fn slot_run(&self, pos: u32, n: usize) -> &[F::Slot] {
        run_of(self.slots.as_ref(), pos, n)
    }

    #[inline(always)]
    fn slot_run_exact(&self, pos: u32, n: usize) -> Option<&[F::Slot]> {
        exact_run_of(self.slots.as_ref(), pos, n)
    }

    #[inline(always)]
    fn observed(&self) -> bool {
        !self.positions.unobserved
    }

    fn claim_split(&self) -> bool {
        self.positions.claim()
    }
}

/// Up to `n` slots of `slots` (a power-of-two length) from `pos` masked to it, not
/// past the end. Slicing checks the bounds once; an empty or odd-length `slots` (a
/// caller's `AsRef` changing its answer) yields a shorter or empty run, never a panic.
/// Exactly `n` slots of `slots` (a power-of-two length) from `pos` masked to it, or
/// `None` if they would pass the end (a batch that wraps; or an empty or odd-length
/// `slots`): one bounds check, never a panic.
#[inline(always)]
fn exact_run_of<T>(slots: &[T], pos: u32, n: usize) -> Option<&[T]> {
    let start = pos as usize & slots.len().wrapping_sub(1);
    slots.get(start..start.saturating_add(n))
}

#[inline(always)]
fn run_of<T>(slots: &[T], pos: u32, n: usize) -> &[T] {
    let start = pos as usize & slots.len().wrapping_sub(1);
    let rest = slots.get(start..).unwrap_or(&[]);
    &rest[..n.min(rest.len())]
}

pub(crate) fn debug_storage<S: Storage + ?Sized>(
    storage: &S,
    name: &str,
    f: &mut fmt::Formatter<'_>,
) -> fmt::Result {
    f.debug_struct(name)
        .field("capacity", &(storage.mask() + 1))
        .field(
            "write_pos",
            &storage.write_pos().load_low(Ordering::Relaxed),
        )
        .field("read_pos", &storage.read_pos().load_low(Ordering::Relaxed))
        .field("observed", &storage.observed())
        .finish()
}
