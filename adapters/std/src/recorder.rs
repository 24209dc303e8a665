//! [`Recorder`]: a [`Telemetry`]'s recording calls bound to one thread, pushing
//! straight into that thread's lane with no thread-local lookup.
//!
//! A recording call through a `Telemetry` finds the calling thread's lane for that
//! `Telemetry` through a thread-local (lending the thread's lane list out and
//! checking the lane's owner: 19 instructions of a 73-instruction event, see
//! BENCHMARKS.md). A `Recorder` is made on the thread that records, once, and keeps
//! a reference to that very lane, so each of its calls is the allowlist check, the
//! stamp and the push. It shares the lane with the thread's calls through the
//! `Telemetry`: events recorded through either keep the thread's order, and every
//! count (written, dropped, per lane) is the lane's own, counted once.
//!
//! A `Recorder` is neither `Send` nor `Sync`: it stays on the thread that made it.
//! It keeps the telemetry's shared state alive but not its flush: once the
//! `Telemetry` is dropped (or closed), every event recorded through it is refused,
//! [`Recorded::Dropped`], and counted as dropped ([`Recorder::is_closed`] tells why),
//! never reported written into a lane no flush drains.

use crate::flush::Shared;
use crate::lane::{self, LaneProducer, SharedLane};
use crate::telemetry::{Telemetry, micros};
use crate::{Recorded, XferError, XferHandle};
use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;
use telering_core::builtin::ErrorStatus;
use telering_core::{Category, EventName, NameError};

use crate::builtins::idx;

/// A [`Telemetry`]'s recording calls for the thread that made it
/// ([`Telemetry::recorder`]): the same calls, each a direct push into the thread's
/// lane. Not `Send`: it belongs to its thread.
///
/// ```
/// use std::time::Duration;
/// use telering_std::{Recorded, Telemetry};
/// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let recorder = telemetry.recorder(); // this thread's lane, registered once
///         for i in 0..1000 {
///             recorder.update_tx_bytes(i);
///         }
///         recorder.add_xfer_stats(Duration::from_micros(40), true, 4096, Duration::from_micros(3));
///         // The Telemetry's calls on this thread go into the same lane.
///         assert_eq!(telemetry.update_rx_bytes(1), Recorded::Written);
///     });
/// });
/// assert_eq!(telemetry.stats().events_recorded, 1005);
/// ```
///
/// It cannot be sent to another thread:
///
/// ```compile_fail
/// let telemetry = telering_std::Telemetry::disabled("a");
/// let recorder = telemetry.recorder();
/// std::thread::spawn(move || drop(recorder)); // `Rc` inside: not `Send`
/// ```
pub struct Recorder {
    pub(crate) shared: Arc<Shared>,
    lane: SharedLane,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("agent_name", &self.shared.config.agent_name)
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// A [`Recorder`] for the calling thread: its lane for this telemetry (registered
    /// now if the thread has none), shared with the thread's calls through the
    /// telemetry. Make it once, outside the loop that records.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let recorder = telemetry.recorder();
    /// assert_eq!(recorder.update_tx_bytes(64), Recorded::Written);
    /// assert_eq!(telemetry.stats().lanes, 1);
    /// ```
    pub fn recorder(&self) -> Recorder {
        let shared = &self.shared;
        let lane = if shared.filter.on {
            // The thread's lane; if the thread-local cannot give one (the thread is
            // exiting, or this is called from inside a recording call), a lane of
            // the recorder's own, still drained and counted by the flush; if no lane
            // of the configured capacity can be made (logged), the smallest one.
            lane::shared_lane(shared.id, || shared.register_lane())
                .or_else(|| shared.register_lane().map(|l| Rc::new(RefCell::new(l))))
        } else {
            None
        };
        Recorder {
            shared: Arc::clone(shared),
            lane: lane.unwrap_or_else(|| shared.idle_lane()),
        }
    }
}

impl Recorder {
    #[inline(always)]
    pub(crate) fn lane(&self) -> &RefCell<LaneProducer> {
        &self.lane
    }

    /// Whether its telemetry was dropped or closed: every event recorded through it
    /// since is [`Recorded::Dropped`] (counted), as nothing will export it.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let recorder = telemetry.recorder();
    /// assert!(!recorder.is_closed());
    /// drop(telemetry);
    /// assert!(recorder.is_closed());
    /// assert_eq!(recorder.update_tx_bytes(64), Recorded::Dropped);
    /// ```
    pub fn is_closed(&self) -> bool {
        self.shared
            .closed
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Records `agent_tx_bytes`: bytes sent ([`Telemetry::update_tx_bytes`]).
    ///
    /// ```
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.recorder().update_tx_bytes(4096), telering_std::Recorded::Written);
    /// ```
    #[inline]
    pub fn update_tx_bytes(&self, bytes: u64) -> Recorded {
        self.shared
            .record_builtin(self.lane(), idx::TX_BYTES, bytes)
    }

    /// Records `agent_rx_bytes`: bytes received ([`Telemetry::update_rx_bytes`]).
    ///
    /// ```
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.recorder().update_rx_bytes(4096), telering_std::Recorded::Written);
    /// ```
    #[inline]
    pub fn update_rx_bytes(&self, bytes: u64) -> Recorded {
        self.shared
            .record_builtin(self.lane(), idx::RX_BYTES, bytes)
    }

    /// Records `agent_tx_requests_num`: send requests
    /// ([`Telemetry::update_tx_requests_num`]).
    ///
    /// ```
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.recorder().update_tx_requests_num(2), telering_std::Recorded::Written);
    /// ```
    #[inline]
    pub fn update_tx_requests_num(&self, requests: u64) -> Recorded {
        self.shared
            .record_builtin(self.lane(), idx::TX_REQUESTS_NUM, requests)
    }

    /// Records `agent_rx_requests_num`: receive requests
    /// ([`Telemetry::update_rx_requests_num`]).
    ///
    /// ```
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.recorder().update_rx_requests_num(2), telering_std::Recorded::Written);
    /// ```
    #[inline]
    pub fn update_rx_requests_num(&self, requests: u64) -> Recorded {
        self.shared
            .record_builtin(self.lane(), idx::RX_REQUESTS_NUM, requests)
    }

    /// Records `agent_memory_registered`: bytes registered
    /// ([`Telemetry::update_memory_registered`]).
    ///
    /// ```
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.recorder().update_memory_registered(1 << 20), telering_std::Recorded::Written);
    /// ```
    #[inline]
    pub fn update_memory_registered(&self, bytes: u64) -> Recorded {
        self.shared
            .record_builtin(self.lane(), idx::MEMORY_REGISTERED, bytes)
    }

    /// Records `agent_memory_deregistered`: bytes deregistered
    /// ([`Telemetry::update_memory_deregistered`]).
    ///
    /// ```
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.recorder().update_memory_deregistered(1 << 20), telering_std::Recorded::Written);
    /// ```
    #[inline]
    pub fn update_memory_deregistered(&self, bytes: u64) -> Recorded {
        self.shared
            .record_builtin(self.lane(), idx::MEMORY_DEREGISTERED, bytes)
    }

    /// Records one occurrence of `status` ([`Telemetry::update_error_count`]).
    ///
    /// ```
    /// use telering_core::builtin::ErrorStatus;
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.recorder().update_error_count(ErrorStatus::Backend), telering_std::Recorded::Written);
    /// ```
    #[inline]
    pub fn update_error_count(&self, status: ErrorStatus) -> Recorded {
        self.shared
            .record_builtin(self.lane(), idx::FIRST_ERROR + status as usize, 1)
    }

    /// Records one completed transfer, all or none ([`Telemetry::add_xfer_stats`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.recorder().add_xfer_stats(Duration::from_micros(120), false, 1 << 20, Duration::from_micros(4));
    /// assert_eq!((r, t.stats().events_recorded), (telering_std::Recorded::Written, 4));
    /// ```
    #[inline]
    pub fn add_xfer_stats(
        &self,
        xfer_time: Duration,
        is_write: bool,
        bytes: u64,
        post_time: Duration,
    ) -> Recorded {
        let (xfer_us, post_us) = (micros(xfer_time), micros(post_time));
        self.shared
            .record_xfer(self.lane(), None, is_write, bytes, xfer_us, post_us)
    }

    /// [`add_xfer_stats`](Self::add_xfer_stats) with both times in microseconds
    /// ([`Telemetry::add_xfer_stats_us`]).
    ///
    /// ```
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.recorder().add_xfer_stats_us(120, true, 4096, 4), telering_std::Recorded::Written);
    /// ```
    #[inline]
    pub fn add_xfer_stats_us(
        &self,
        xfer_time_us: u64,
        is_write: bool,
        bytes: u64,
        post_time_us: u64,
    ) -> Recorded {
        self.shared.record_xfer(
            self.lane(),
            None,
            is_write,
            bytes,
            xfer_time_us,
            post_time_us,
        )
    }

    /// Records a custom event by name ([`Telemetry::record`]).
    ///
    /// ```
    /// use telering_core::Category;
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.recorder().record(Category::Custom, "queue_depth", 17), Ok(telering_std::Recorded::Written));
    /// assert!(t.recorder().record(Category::Custom, "", 1).is_err());
    /// ```
    #[inline]
    pub fn record(
        &self,
        category: Category,
        name: &str,
        value: u64,
    ) -> Result<Recorded, NameError> {
        let name = EventName::new(name)?;
        Ok(self.record_event(category, &name, value))
    }

    /// Records a custom event with a name checked beforehand
    /// ([`Telemetry::record_event`]).
    ///
    /// ```
    /// use telering_core::{event_name, Category, EventName};
    /// const QUEUE_DEPTH: EventName = event_name!("queue_depth");
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.recorder().record_event(Category::Custom, &QUEUE_DEPTH, 3), telering_std::Recorded::Written);
    /// ```
    #[inline]
    pub fn record_event(&self, category: Category, name: &EventName, value: u64) -> Recorded {
        self.shared.record_event(self.lane(), category, name, value)
    }

    /// Starts a transfer's telemetry ([`Telemetry::start_xfer`]); the handle belongs
    /// to the telemetry this recorder records into.
    ///
    /// ```
    /// # let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.recorder();
    /// let mut xfer = r.start_xfer(true, 4096, 1);
    /// r.xfer_posted(&mut xfer).unwrap();
    /// assert_eq!(r.xfer_completed(&mut xfer), Ok(telering_std::Recorded::Written));
    /// assert!(t.xfer_telemetry(&xfer).unwrap().post_duration <= t.xfer_telemetry(&xfer).unwrap().xfer_duration);
    /// ```
    #[inline]
    pub fn start_xfer(
        &self,
        is_write: bool,
        total_bytes: u64,
        descriptor_count: u64,
    ) -> XferHandle {
        self.shared
            .start_xfer(is_write, total_bytes, descriptor_count)
    }

    /// Marks the transfer posted ([`Telemetry::xfer_posted`]).
    ///
    /// ```
    /// # let t = telering_std::Telemetry::builder("a").capture_telemetry(true).build().unwrap();
    /// let r = t.recorder();
    /// let mut xfer = r.start_xfer(false, 64, 1);
    /// assert_eq!(r.xfer_posted(&mut xfer), Ok(()));
    /// ```
    #[inline]
    pub fn xfer_posted(&self, xfer: &mut XferHandle) -> Result<(), XferError> {
        self.shared.xfer_posted(xfer)
    }

    /// Marks the transfer complete and records its four events once
    /// ([`Telemetry::xfer_completed`]).
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry, XferError};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.recorder();
    /// let mut xfer = r.start_xfer(true, 4096, 1);
    /// assert_eq!(r.xfer_completed(&mut xfer), Ok(Recorded::Written));
    /// assert_eq!(r.xfer_completed(&mut xfer), Ok(Recorded::AlreadyCompleted));
    /// let other = Telemetry::disabled("b");
    /// let mut theirs = other.start_xfer(true, 1, 1);
    /// assert_eq!(r.xfer_completed(&mut theirs), Err(XferError::OtherTelemetry));
    /// ```
    #[inline]
    pub fn xfer_completed(&self, xfer: &mut XferHandle) -> Result<Recorded, XferError> {
        self.shared.xfer_completed(self.lane(), xfer)
    }
}
