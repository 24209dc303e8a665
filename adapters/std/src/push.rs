//! The recording paths [`Telemetry`](crate::Telemetry) and [`Recorder`](crate::Recorder)
//! share: the allowlist check, the stamp and the push, into a lane reached through a
//! [`LaneAccess`]: the thread-local lookup ([`ThreadLane`]) or a recorder's own
//! reference to the same lane. Everything here is inlined into the public call, so
//! each handle's path is compiled with its own way of reaching the lane.

use crate::Recorded;
use crate::builtins::{Filter, idx};
use crate::flush::Shared;
use crate::lane::{self, LaneProducer};
use std::cell::RefCell;
use telering_core::{Category, EventName};

/// Events one transfer records: bytes, requests, transfer time, post time.
pub(crate) const XFER_PARTS: usize = 4;

/// How a recording call reaches the calling thread's lane, and what it tests first.
pub(crate) trait LaneAccess: Copy {
    /// Runs `f` on the lane; `None` if there is none (counted by the caller).
    fn with<R>(self, shared: &Shared, f: impl FnOnce(&mut LaneProducer) -> R) -> Option<R>;

    /// Whether built-in `index` may be recorded. By default its gate (see
    /// [`crate::gates`]): shut once the telemetry closes, for a handle that may
    /// outlive it.
    #[inline(always)]
    fn builtin_open(self, shared: &Shared, index: usize) -> bool {
        shared.gates.builtin[index].open()
    }

    /// Whether all four events of a transfer may be recorded (gate by default).
    #[inline(always)]
    fn xfer_open(self, shared: &Shared, is_write: bool) -> bool {
        shared.gates.xfer_all[is_write as usize].open()
    }

    /// Whether custom events may be recorded, the allowlist aside (gate by default).
    #[inline(always)]
    fn on(self, shared: &Shared) -> bool {
        shared.gates.on.open()
    }

    /// What a call whose test above failed answers: by default
    /// [`Shared::gate_refusal`], told whether the filter `allowed` its `events`.
    #[inline(always)]
    fn refusal(self, shared: &Shared, allowed: impl FnOnce() -> bool, events: u64) -> Recorded {
        match allowed() {
            true => shared.outcome(None, events),
            false => shared.filter.refusal(),
        }
    }
}

/// Through the thread-local lane list, registering a lane on first use.
#[derive(Clone, Copy)]
pub(crate) struct ThreadLane;

impl LaneAccess for ThreadLane {
    #[inline(always)]
    fn with<R>(self, shared: &Shared, f: impl FnOnce(&mut LaneProducer) -> R) -> Option<R> {
        lane::with_lane(shared.id, || shared.register_lane(), f)
    }

    // A `Telemetry` is never called once closed (the close takes it by value or
    // drops it), so it reads the filter itself: a plain byte, which x86 tests in one
    // instruction where a gate's atomic load takes two (+1 per call under callgrind).
    #[inline(always)]
    fn builtin_open(self, shared: &Shared, index: usize) -> bool {
        shared.filter.builtin[index]
    }

    #[inline(always)]
    fn xfer_open(self, shared: &Shared, is_write: bool) -> bool {
        shared.filter.xfer_all[is_write as usize]
    }

    #[inline(always)]
    fn on(self, shared: &Shared) -> bool {
        shared.filter.on
    }

    // Only the filter refuses a `Telemetry`'s call: its answer, inline (a call to
    // the gates' cold function cost 2 to 3 instructions per custom event).
    #[inline(always)]
    fn refusal(self, shared: &Shared, _: impl FnOnce() -> bool, _: u64) -> Recorded {
        shared.filter.refusal()
    }
}

/// Through a recorder's reference to its thread's lane: no lookup. A recorder may
/// outlive its telemetry; after the close no flush drains its lane, so its events
/// must be refused and counted instead of reported written. Every recording path
/// tests its gate first ([`LaneAccess::builtin_open`] and the like, whose defaults
/// this access keeps), and the close shuts every gate: a path that reaches a lane
/// without testing a gate must test [`Shared::closed`] itself.
impl LaneAccess for &RefCell<LaneProducer> {
    #[inline(always)]
    fn with<R>(self, _shared: &Shared, f: impl FnOnce(&mut LaneProducer) -> R) -> Option<R> {
        lane::with_shared(self, f)
    }
}

impl Shared {
    /// Pushes event `id` (see [`crate::names`]) stamped `now` with `value` into the
    /// lane. Always inlined, as `record_builtin` is: outlined, the pair cost a call and
    /// five register saves per event (−14 instructions per event under callgrind).
    #[inline(always)]
    pub(crate) fn push_record(
        &self,
        lane: impl LaneAccess,
        id: u16,
        now: u64,
        value: u64,
    ) -> Recorded {
        let pushed = lane.with(
            self,
            #[inline(always)]
            |l| l.push(id, now, value),
        );
        self.outcome(pushed, 1)
    }

    /// Records built-in `index` with `value`, unless the allowlist refuses it.
    #[inline(always)]
    pub(crate) fn record_builtin(
        &self,
        lane: impl LaneAccess,
        index: usize,
        value: u64,
    ) -> Recorded {
        if !lane.builtin_open(self, index) {
            return lane.refusal(self, || self.filter.builtin[index], 1);
        }
        // A built-in's id is its index (see `names`).
        let now = self.stamper.stamp();
        self.push_record(lane, index as u16, now, value)
    }

    /// The four events of one transfer with their values in microseconds, stamped at
    /// duration tick `completed` (`None`: read the stamp now).
    #[inline(always)]
    pub(crate) fn record_xfer(
        &self,
        lane: impl LaneAccess,
        completed: Option<u64>,
        is_write: bool,
        bytes: u64,
        xfer_us: u64,
        post_us: u64,
    ) -> Recorded {
        let (bytes_idx, requests_idx) = if is_write {
            (idx::TX_BYTES, idx::TX_REQUESTS_NUM)
        } else {
            (idx::RX_BYTES, idx::RX_REQUESTS_NUM)
        };
        if !lane.xfer_open(self, is_write) {
            let parts = [
                (bytes_idx, bytes),
                (requests_idx, 1),
                (idx::XFER_TIME, xfer_us),
                (idx::XFER_POST_TIME, post_us),
            ];
            return self.record_xfer_filtered(lane, completed, parts);
        }
        // The common case, every part allowed: each record is made straight into its
        // lane slot, the part chosen by `xfer_part`'s `match` on constants.
        let now = self.xfer_stamp(completed);
        let part = move |i: usize| {
            let (index, value) = xfer_part(i, is_write, bytes, xfer_us, post_us);
            (index as u16, value)
        };
        let pushed = lane.with(
            self,
            #[inline(always)]
            |l| l.push_all_with(XFER_PARTS, now, part),
        );
        self.outcome(pushed, XFER_PARTS as u64)
    }

    /// The stamp of a transfer's events: the tick `completed` was read at (the
    /// counter), else the stamp now (0 when no sink needs timestamps).
    #[inline(always)]
    pub(crate) fn xfer_stamp(&self, completed: Option<u64>) -> u64 {
        let stamper = &self.stamper;
        match completed {
            Some(tick) => stamper.stamp_at(tick),
            None => stamper.stamp(),
        }
    }

    /// [`record_xfer`](Self::record_xfer) when the allowlist leaves some parts out.
    #[cold]
    #[inline(never)]
    fn record_xfer_filtered(
        &self,
        lane: impl LaneAccess,
        completed: Option<u64>,
        parts: [(usize, u64); 4],
    ) -> Recorded {
        let filter = &self.filter;
        let allowed_count = parts.iter().filter(|&&(i, _)| filter.builtin[i]).count();
        if allowed_count == 0 || self.is_closed() {
            return self.gate_refusal(allowed_count != 0, allowed_count as u64);
        }
        let now = self.xfer_stamp(completed);
        let mut allowed = [(0u16, 0u64); 4];
        let n = allowed_parts(parts, filter, &mut allowed, |i, value| (i as u16, value));
        let pushed = lane.with(self, |l| l.push_all_with(n, now, |i| allowed[i]));
        self.outcome(pushed, n as u64)
    }

    /// What a call whose gate is shut answers: the filter's refusal, or, when the
    /// filter allows its `events` (`allowed`), the close shut the gate: they are
    /// dropped, and counted.
    #[cold]
    #[inline(never)]
    pub(crate) fn gate_refusal(&self, allowed: bool, events: u64) -> Recorded {
        if allowed {
            return self.outcome(None, events);
        }
        self.filter.refusal()
    }

    /// Whether the telemetry was closed (a cold path's test; hot paths test gates).
    fn is_closed(&self) -> bool {
        self.closed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Records a custom event with a name checked beforehand, unless the allowlist
    /// refuses it.
    #[inline(always)]
    pub(crate) fn record_event(
        &self,
        lane: impl LaneAccess,
        category: Category,
        name: &EventName,
        value: u64,
    ) -> Recorded {
        if !(lane.on(self) && self.filter.matches(name)) {
            return lane.refusal(self, || self.filter.allows(name), 1);
        }
        let now = self.stamper.stamp();
        let pushed = lane.with(self, |l| {
            // The thread's cache first; a name new to this thread takes the table's
            // lock once (see `names`). No id left: counted, no lane push.
            let id = match l.names.get(&(*name, category)) {
                Some(&id) => id,
                None => {
                    let id = self.names.intern(name, category)?;
                    l.names.insert((*name, category), id);
                    id
                }
            };
            Some(l.push(id, now, value))
        });
        self.outcome(pushed.flatten(), 1)
    }
}

/// Writes the parts the allowlist lets through, in order, into `out` as `make` makes
/// them; returns how many.
fn allowed_parts<T>(
    parts: [(usize, u64); 4],
    filter: &Filter,
    out: &mut [T; 4],
    make: impl Fn(usize, u64) -> T,
) -> usize {
    let mut n = 0;
    for (i, value) in parts {
        if filter.builtin[i] {
            out[n] = make(i, value);
            n += 1;
        }
    }
    n
}

/// Part `i` (0 to 3) of a transfer's events, as (built-in index, value). A `match` on
/// constants, not a table lookup: once the four writes are unrolled, each event's
/// template and value are known where it is written (no bounds checks, no staging).
#[inline(always)]
fn xfer_part(i: usize, is_write: bool, bytes: u64, xfer_us: u64, post_us: u64) -> (usize, u64) {
    match (i, is_write) {
        (0, true) => (idx::TX_BYTES, bytes),
        (0, false) => (idx::RX_BYTES, bytes),
        (1, true) => (idx::TX_REQUESTS_NUM, 1),
        (1, false) => (idx::RX_REQUESTS_NUM, 1),
        (2, _) => (idx::XFER_TIME, xfer_us),
        _ => (idx::XFER_POST_TIME, post_us),
    }
}
