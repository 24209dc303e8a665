//! The flush thread's wake-up: a stop request, a lane past its high-water mark, or
//! the end of the run interval.
//!
//! A lane's producer signals [`FlushSignal::wake_early`] once per crossing of its
//! mark (see [`LaneProducer`](super::LaneProducer)), never per event, as perf's ring
//! wakes its reader at a watermark: one lock, one flag store and one `notify_one`
//! (a futex wake when the flush thread sleeps). A `Condvar` rather than a bare futex
//! or an eventfd: the flush thread already sleeps on one for its interval and its stop
//! request, and a crossing is rare (one per half a lane of events), so its cost is not
//! on the per-event path (see BENCHMARKS.md, "Early wake").

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// Why [`FlushSignal::wait_until`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// [`FlushSignal::stop`] was called: flush one last time and end.
    Stop,
    /// A lane crossed its high-water mark: flush now, keep the schedule.
    Early,
    /// The deadline passed.
    Deadline,
}

#[derive(Default)]
struct Requests {
    stop: bool,
    early: bool,
}

/// What the flush thread sleeps on.
#[derive(Default)]
pub(crate) struct FlushSignal {
    requests: Mutex<Requests>,
    wake: Condvar,
}

impl FlushSignal {
    fn requests(&self) -> MutexGuard<'_, Requests> {
        // Every update is a flag store: a poisoned lock holds consistent data.
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the flush thread to flush now (a lane is past its mark).
    #[cold]
    #[inline(never)]
    pub(crate) fn wake_early(&self) {
        self.requests().early = true;
        self.wake.notify_one();
    }

    /// Asks the flush thread to stop after one last flush.
    pub(crate) fn stop(&self) {
        self.requests().stop = true;
        self.wake.notify_all();
    }

    /// Sleeps until `deadline`, a stop request or an early wake-up, whichever comes
    /// first (a stop wins over the others).
    pub(crate) fn wait_until(&self, deadline: Instant) -> Woken {
        let mut requests = self.requests();
        loop {
            if requests.stop {
                return Woken::Stop;
            }
            if std::mem::take(&mut requests.early) {
                return Woken::Early;
            }
            let now = Instant::now();
            if now >= deadline {
                return Woken::Deadline;
            }
            requests = self
                .wake
                .wait_timeout(requests, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
