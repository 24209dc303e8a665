//! Recording through a [`Telemetry`]: the built-in events, transfers and custom
//! events, each pushed into the calling thread's lane (found through its
//! thread-local, see `crate::lane`).

use super::{Telemetry, micros};
use crate::Recorded;
use crate::builtins::{NIXL_TYPE_INDEX, idx};
use crate::push::ThreadLane;
use std::time::Duration;
use telering_core::builtin::ErrorStatus;
use telering_core::{Category, EventName, NameError};

impl Telemetry {
    /// Pushes event `id` (see [`crate::names`]) stamped `now` with `value` into this
    /// thread's lane.
    #[inline(always)]
    pub(crate) fn push_record(&self, id: u16, now: u64, value: u64) -> Recorded {
        self.shared.push_record(ThreadLane, id, now, value)
    }

    /// Records NIXL's event type number `type_number` ([`nixl_type_name`]: 0
    /// `agent_tx_bytes` … 20 `agent_telemetry_events_dropped`) with `value`, stamped
    /// now, as NIXL's telemetry hands its events to an exporter; `None` (nothing
    /// recorded) for a number no NIXL release defines. An
    /// `agent_telemetry_events_dropped` recorded so reaches the exporter as a loss
    /// report, like the telemetry's own.
    ///
    /// [`nixl_type_name`]: telering_core::builtin::nixl_type_name
    ///
    /// ```
    /// use telering_std::{Recorded, Telemetry};
    /// let t = Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// assert_eq!(t.record_nixl_type(0, 4096), Some(Recorded::Written)); // agent_tx_bytes
    /// assert_eq!(t.record_nixl_type(10, 1), Some(Recorded::Written)); // agent_err_backend
    /// assert_eq!(t.record_nixl_type(21, 1), None);
    /// assert_eq!(t.stats().events_recorded, 2);
    /// ```
    #[inline]
    pub fn record_nixl_type(&self, type_number: u32, value: u64) -> Option<Recorded> {
        let index = *NIXL_TYPE_INDEX.get(type_number as usize)?;
        Some(self.shared.record_builtin(ThreadLane, index, value))
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
        self.shared.record_builtin(ThreadLane, idx::TX_BYTES, bytes)
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
        self.shared.record_builtin(ThreadLane, idx::RX_BYTES, bytes)
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
        self.shared
            .record_builtin(ThreadLane, idx::TX_REQUESTS_NUM, requests)
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
        self.shared
            .record_builtin(ThreadLane, idx::RX_REQUESTS_NUM, requests)
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
        self.shared
            .record_builtin(ThreadLane, idx::MEMORY_REGISTERED, bytes)
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
        self.shared
            .record_builtin(ThreadLane, idx::MEMORY_DEREGISTERED, bytes)
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
        self.shared
            .record_builtin(ThreadLane, idx::FIRST_ERROR + status as usize, 1)
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
        self.shared.record_xfer(
            ThreadLane,
            None,
            is_write,
            bytes,
            micros(xfer_time),
            micros(post_time),
        )
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
        self.shared.record_xfer(
            ThreadLane,
            None,
            is_write,
            bytes,
            xfer_time_us,
            post_time_us,
        )
    }

    /// Records a custom event. The name (1 to 31 bytes, no NUL or control character)
    /// is checked; the allowlist applies to it as to built-in names.
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
        self.shared.record_event(ThreadLane, category, name, value)
    }
}
