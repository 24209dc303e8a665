//! Recording through a [`Telemetry`]: the built-in events, transfers and custom
//! events, each pushed into the calling thread's lane (found through its
//! thread-local, see `crate::lane`).

use super::{Telemetry, micros};
use crate::Recorded;
use crate::builtins::{Filter, idx};
use crate::lane;
use std::time::Duration;
use telering_core::builtin::ErrorStatus;
use telering_core::{Category, EventName, NameError};

/// Events one transfer records: bytes, requests, transfer time, post time.
pub(crate) const XFER_PARTS: usize = 4;

impl Telemetry {
    /// Pushes event `id` (see [`crate::names`]) stamped `now` with `value` into this
    /// thread's lane. Always inlined, as `record_builtin` is: outlined, the pair cost a
    /// call and five register saves per event (−14 instructions per event under
    /// callgrind).
    #[inline(always)]
    pub(crate) fn push_record(&self, id: u16, now: u64, value: u64) -> Recorded {
        let shared = &*self.shared;
        let pushed = lane::with_lane(
            shared.id,
            || shared.register_lane(),
            #[inline(always)]
            |l| l.push(id, now, value),
        );
        shared.outcome(pushed, 1)
    }

    #[inline(always)]
    fn record_builtin(&self, index: usize, value: u64) -> Recorded {
        if !self.shared.filter.builtin[index] {
            return self.shared.filter.refusal();
        }
        // A built-in's id is its index (see `names`).
        let now = self.shared.stamper.stamp();
        self.push_record(index as u16, now, value)
    }

    /// Records `agent_tx_bytes`: bytes sent.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_tx_bytes").build().unwrap();
    /// assert_eq!(t.update_tx_bytes(4096), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_tx_bytes(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::TX_BYTES, bytes)
    }

    /// Records `agent_rx_bytes`: bytes received.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_rx_bytes").build().unwrap();
    /// assert_eq!(t.update_rx_bytes(4096), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_rx_bytes(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::RX_BYTES, bytes)
    }

    /// Records `agent_tx_requests_num`: send requests.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_tx_requests_num").build().unwrap();
    /// assert_eq!(t.update_tx_requests_num(2), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_tx_requests_num(&self, requests: u64) -> Recorded {
        self.record_builtin(idx::TX_REQUESTS_NUM, requests)
    }

    /// Records `agent_rx_requests_num`: receive requests.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_rx_requests_num").build().unwrap();
    /// assert_eq!(t.update_rx_requests_num(2), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_rx_requests_num(&self, requests: u64) -> Recorded {
        self.record_builtin(idx::RX_REQUESTS_NUM, requests)
    }

    /// Records `agent_memory_registered`: bytes registered.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_memory_registered").build().unwrap();
    /// assert_eq!(t.update_memory_registered(1048576), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_memory_registered(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::MEMORY_REGISTERED, bytes)
    }

    /// Records `agent_memory_deregistered`: bytes deregistered.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("agent_memory_deregistered").build().unwrap();
    /// assert_eq!(t.update_memory_deregistered(1048576), Recorded::Written);
    /// assert_eq!(t.stats().events_recorded, 1);
    /// ```
    #[inline]
    pub fn update_memory_deregistered(&self, bytes: u64) -> Recorded {
        self.record_builtin(idx::MEMORY_DEREGISTERED, bytes)
    }

    /// Records one occurrence of `status`: an `ERROR` event named by the status
    /// (`NIXL_ERR_BACKEND`, …) with value 1.
    ///
    /// ```
    /// use telering_core::builtin::ErrorStatus;
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").enabled_metrics("NIXL_ERR_BACKEND").build().unwrap();
    /// assert_eq!(t.update_error_count(ErrorStatus::Backend), Recorded::Written);
    /// assert_eq!(t.update_error_count(ErrorStatus::Canceled), Recorded::Filtered);
    /// ```
    #[inline]
    pub fn update_error_count(&self, status: ErrorStatus) -> Recorded {
        self.record_builtin(idx::FIRST_ERROR + status as usize, 1)
    }

    /// Records one completed transfer, all or none: `agent_tx_bytes` (or
    /// `agent_rx_bytes` for a read), `agent_tx_requests_num` (or `rx`) = 1,
    /// `agent_xfer_time` and `agent_xfer_post_time` in microseconds, with one
    /// timestamp. Events the allowlist excludes are left out; if the lane lacks room
    /// for the rest, all of them are counted as dropped.
    ///
    /// ```
    /// use std::time::Duration;
    /// use telering_std::Recorded;
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = telemetry.add_xfer_stats(Duration::from_micros(120), false, 1 << 20, Duration::from_micros(4));
    /// assert_eq!(r, Recorded::Written);
    /// assert_eq!(telemetry.stats().events_recorded, 4);
    /// ```
    #[inline]
    pub fn add_xfer_stats(
        &self,
        xfer_time: Duration,
        is_write: bool,
        bytes: u64,
        post_time: Duration,
    ) -> Recorded {
        self.record_xfer(None, is_write, bytes, micros(xfer_time), micros(post_time))
    }

    /// [`add_xfer_stats`](Self::add_xfer_stats) with both times already in
    /// microseconds, as NIXL's `addXferStats` takes them (`std::chrono::microseconds`)
    /// and as the C and Python APIs receive them: no conversion from `Duration`.
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let telemetry = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(telemetry.add_xfer_stats_us(120, true, 4096, 4), Recorded::Written);
    /// assert_eq!(telemetry.stats().events_recorded, 4);
    /// ```
    #[inline]
    pub fn add_xfer_stats_us(
        &self,
        xfer_time_us: u64,
        is_write: bool,
        bytes: u64,
        post_time_us: u64,
    ) -> Recorded {
        self.record_xfer(None, is_write, bytes, xfer_time_us, post_time_us)
    }

    /// The four events of one transfer with their values in microseconds, stamped at
    /// duration tick `completed` (`None`: read the stamp now).
    #[inline(always)]
    pub(crate) fn record_xfer(
        &self,
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
        if !self.shared.filter.xfer_all[is_write as usize] {
            let parts = [
                (bytes_idx, bytes),
                (requests_idx, 1),
                (idx::XFER_TIME, xfer_us),
                (idx::XFER_POST_TIME, post_us),
            ];
            return self.record_xfer_filtered(completed, parts);
        }
        // The common case, every part allowed: each record is made straight into its
        // lane slot, the part chosen by `xfer_part`'s `match` on constants.
        let now = self.xfer_stamp(completed);
        let shared = &*self.shared;
        let part = move |i: usize| {
            let (index, value) = xfer_part(i, is_write, bytes, xfer_us, post_us);
            (index as u16, value)
        };
        let pushed = lane::with_lane(
            shared.id,
            || shared.register_lane(),
            #[inline(always)]
            |l| l.push_all_with(XFER_PARTS, now, part),
        );
        shared.outcome(pushed, XFER_PARTS as u64)
    }

    /// The stamp of a transfer's events: the tick `completed` was read at (the
    /// counter), else the stamp now (0 when no sink needs timestamps).
    #[inline(always)]
    fn xfer_stamp(&self, completed: Option<u64>) -> u64 {
        let stamper = &self.shared.stamper;
        match completed {
            Some(tick) => stamper.stamp_at(tick),
            None => stamper.stamp(),
        }
    }

    /// [`record_xfer`](Self::record_xfer) when the allowlist leaves some parts out.
    #[cold]
    #[inline(never)]
    fn record_xfer_filtered(&self, completed: Option<u64>, parts: [(usize, u64); 4]) -> Recorded {
        let filter = &self.shared.filter;
        if !parts.iter().any(|&(i, _)| filter.builtin[i]) {
            return filter.refusal();
        }
        let shared = &*self.shared;
        let now = self.xfer_stamp(completed);
        let mut allowed = [(0u16, 0u64); 4];
        let n = allowed_parts(parts, filter, &mut allowed, |i, value| (i as u16, value));
        let pushed = lane::with_lane(
            shared.id,
            || shared.register_lane(),
            |l| l.push_all_with(n, now, |i| allowed[i]),
        );
        shared.outcome(pushed, n as u64)
    }

    /// Records a custom event. The name (1 to 31 bytes, no NUL) is checked; the
    /// allowlist applies to it as to built-in names.
    ///
    /// ```
    /// use telering_core::Category;
    /// use telering_std::Recorded;
    /// use telering_std::Telemetry;
    /// let telemetry = Telemetry::builder("a")
    ///     .enabled(true)
    ///     .exporter("nop")
    ///     .enabled_metrics("queue_*")
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(telemetry.record(Category::Custom, "queue_depth", 17), Ok(Recorded::Written));
    /// assert_eq!(telemetry.record(Category::Custom, "other", 1), Ok(Recorded::Filtered));
    /// assert!(telemetry.record(Category::Custom, "", 1).is_err());
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

    /// Records a custom event with a name checked beforehand (for example a
    /// `const` made with [`event_name!`](telering_core::event_name)).
    ///
    /// ```
    /// use telering_core::{event_name, Category, EventName};
    /// use telering_std::{Recorded, Telemetry};
    /// const QUEUE_DEPTH: EventName = event_name!("queue_depth");
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.record_event(Category::Custom, &QUEUE_DEPTH, 3), Recorded::Written);
    /// ```
    #[inline]
    pub fn record_event(&self, category: Category, name: &EventName, value: u64) -> Recorded {
        if !self.shared.filter.allows(name) {
            return self.shared.filter.refusal();
        }
        let now = self.shared.stamper.stamp();
        let shared = &*self.shared;
        let pushed = lane::with_lane(
            shared.id,
            || shared.register_lane(),
            |l| {
                // The thread's cache first; a name new to this thread takes the
                // table's lock once (see `names`). No id left: counted, no lane push.
                let id = match l.names.get(&(*name, category)) {
                    Some(&id) => id,
                    None => {
                        let id = shared.names.intern(name, category)?;
                        l.names.insert((*name, category), id);
                        id
                    }
                };
                Some(l.push(id, now, value))
            },
        );
        shared.outcome(pushed.flatten(), 1)
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
