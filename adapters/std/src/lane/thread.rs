//! The recording thread's side: its lanes in a thread-local, lent to each recording
//! call.
//!
//! Registration takes the lane list's lock once per thread and `Telemetry`;
//! recording afterwards is a thread-local lookup (the most recently used lane sits
//! first) and a ring push: no lock, no allocation. A recording call takes the
//! thread's lane list out of its thread-local and puts it back when done
//! ([`LentLanes`]), so a call that re-enters it on the same thread (a global
//! allocator that records, say) finds no lane and its event is counted as dropped.
//! Recording from a signal handler is not supported: neither registration (which
//! allocates) nor the take and put-back (plain loads and stores) is async-signal-safe.
//! The lanes' thread-local has no destructor of its own (the guard drops its
//! contents), so the lookup tests no destructor state: it is a plain thread-local
//! access.
//!
//! Each lane's producer sits in an `Rc<RefCell<…>>` ([`SharedLane`]) so that the
//! thread's [`Recorder`](crate::Recorder) for the same `Telemetry` pushes into the very
//! same lane: one producer, one order of events, one set of counters. A call that
//! finds the lane borrowed (a recording call re-entered from inside another on the
//! same thread) finds no lane, as a re-entered lookup does.

use super::LaneProducer;
use std::cell::{Cell, RefCell};
use std::mem::ManuallyDrop;
use std::rc::Rc;

/// A lane's producer as the thread's lane list and its `Recorder`s hold it.
pub(crate) type SharedLane = Rc<RefCell<LaneProducer>>;

/// A thread's lanes, one per `Telemetry` it recorded into (by its unique id), the
/// most recently used first.
type ThreadLanes = Vec<(u64, SharedLane)>;

/// A thread's lanes as their thread-local holds them: a recording call takes them
/// out ([`LentLanes`]) and puts them back.
enum LanesHeld {
    /// In the thread-local; `None` until the thread registers its first lane.
    Here(Option<Box<ThreadLanes>>),
    /// Lent to the recording call running on this thread: a call that re-enters it
    /// (a global allocator that records, say) finds no lane.
    Lent,
}

thread_local! {
    /// The thread's lanes. `ManuallyDrop` leaves it without drop glue, so the
    /// standard library keeps no destructor state for it and an access is a plain
    /// thread-local access; [`LanesGuard`] drops the lanes instead.
    static LANES: Cell<ManuallyDrop<LanesHeld>> =
        const { Cell::new(ManuallyDrop::new(LanesHeld::Here(None))) };
    /// Drops the thread's lanes when the thread exits; armed by the first lane a
    /// thread registers.
    static LANES_GUARD: LanesGuard = const { LanesGuard };
}

/// The thread-exit destructor of [`LANES`]: it takes the lanes out and drops them, so
/// each [`LaneProducer`] marks its lane as gone and the flush removes it after its
/// last drain. `LANES` has no destructor of its own and stays accessible while
/// thread-locals are destroyed; a lane a thread would register after this guard ran
/// is refused (the event is counted as dropped), so no lane outlives its thread
/// unseen.
struct LanesGuard;

impl Drop for LanesGuard {
    fn drop(&mut self) {
        let lanes = LANES
            .try_with(|cell| cell.replace(ManuallyDrop::new(LanesHeld::Here(None))))
            .ok()
            .map(ManuallyDrop::into_inner);
        drop(lanes);
    }
}

/// A thread's lanes, taken out of their thread-local for one recording call, which
/// leaves [`LanesHeld::Lent`] there; dropping it (at the call's end, or while a panic
/// unwinds) puts them back.
///
/// Lent rather than borrowed in place (a `RefCell`): a borrow must live inside the
/// thread-local's closure, so the push would run inside `LocalKey::try_with`, and
/// that closure, with the push and the record's making in it, grows past LLVM's
/// inlining threshold (a call per event, measured). Lending makes each closure a
/// load or a store, and the push inlines into the recording call.
struct LentLanes {
    lanes: Option<Box<ThreadLanes>>,
}

impl LentLanes {
    /// Takes this thread's lanes out; `None` if a recording call on this thread has
    /// them already (a re-entered call).
    #[inline(always)]
    fn take() -> Option<LentLanes> {
        // A thread-local without drop glue is never destroyed: `try_with` cannot fail.
        let held = LANES
            .try_with(|cell| cell.replace(ManuallyDrop::new(LanesHeld::Lent)))
            .ok()?;
        match ManuallyDrop::into_inner(held) {
            LanesHeld::Here(lanes) => Some(LentLanes { lanes }),
            LanesHeld::Lent => None,
        }
    }
}

impl Drop for LentLanes {
    #[inline(always)]
    fn drop(&mut self) {
        let held = LanesHeld::Here(self.lanes.take());
        // What it replaces is `Lent`, which owns nothing: no destructor to run.
        let _ = LANES.try_with(|cell| cell.set(ManuallyDrop::new(held)));
    }
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
    let mut lent = LentLanes::take()?;
    let lane = match &mut lent.lanes {
        Some(lanes) if lanes.first().is_some_and(|(first, _)| *first == id) => {
            lanes.first().map(|(_, lane)| lane)
        }
        lanes => find_or_register(lanes, id, register),
    };
    with_shared(lane?, f)
}

/// Runs `f` on `lane` unless a call on this thread has it borrowed already (a
/// re-entered call): `None` then.
#[inline(always)]
pub(crate) fn with_shared<R>(
    lane: &RefCell<LaneProducer>,
    f: impl FnOnce(&mut LaneProducer) -> R,
) -> Option<R> {
    let mut lane = lane.try_borrow_mut().ok()?;
    Some(f(&mut lane))
}

/// This thread's lane for the `Telemetry` with id `id`, shared (for a `Recorder`),
/// registered through `register` if the thread has none yet. `None` as for
/// [`with_lane`].
pub(crate) fn shared_lane(
    id: u64,
    register: impl FnOnce() -> Option<LaneProducer>,
) -> Option<SharedLane> {
    let mut lent = LentLanes::take()?;
    find_or_register(&mut lent.lanes, id, register).map(Rc::clone)
}

/// The lane for `id` in this thread's lanes, moved first, or registered through
/// `register` (the list is made with the thread's first lane).
#[cold]
#[inline(never)]
fn find_or_register(
    lanes: &mut Option<Box<ThreadLanes>>,
    id: u64,
    register: impl FnOnce() -> Option<LaneProducer>,
) -> Option<&SharedLane> {
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
            let lane = Rc::new(RefCell::new(register()?));
            let lanes = lanes.get_or_insert_default();
            // Free the lanes of `Telemetry`s that are gone before adding one (a lane
            // borrowed by a call this one re-entered stays).
            lanes.retain(|(_, lane)| !lane.try_borrow().is_ok_and(|l| l.is_closed()));
            lanes.insert(0, (id, lane));
            lanes
        }
    };
    lanes.first().map(|(_, lane)| lane)
}
