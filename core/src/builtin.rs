//! The built-in events every agent reports, with their category and unit, and the
//! twelve NIXL error statuses (one error event each).
//!
//! Names, categories and units match NIXL's telemetry so that existing readers,
//! dashboards and alerts understand them.

use crate::event::{Category, EventName};

/// What a built-in event's value counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unit {
    /// Bytes.
    Bytes,
    /// A plain count.
    Count,
    /// Microseconds.
    Microseconds,
}

/// A built-in event: its wire name, its category and the unit of its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BuiltinEvent {
    /// The name on the wire.
    pub name: EventName,
    /// Its category.
    pub category: Category,
    /// The unit of its value.
    pub unit: Unit,
}

const fn builtin(name: &'static str, category: Category, unit: Unit) -> BuiltinEvent {
    BuiltinEvent {
        name: EventName::from_static(name),
        category,
        unit,
    }
}

/// Bytes of memory registered.
pub const AGENT_MEMORY_REGISTERED: BuiltinEvent =
    builtin("agent_memory_registered", Category::Memory, Unit::Bytes);
/// Bytes of memory deregistered.
pub const AGENT_MEMORY_DEREGISTERED: BuiltinEvent =
    builtin("agent_memory_deregistered", Category::Memory, Unit::Bytes);
/// Bytes sent by one transfer.
pub const AGENT_TX_BYTES: BuiltinEvent = builtin("agent_tx_bytes", Category::Transfer, Unit::Bytes);
/// Bytes received by one transfer.
pub const AGENT_RX_BYTES: BuiltinEvent = builtin("agent_rx_bytes", Category::Transfer, Unit::Bytes);
/// Number of send requests.
pub const AGENT_TX_REQUESTS_NUM: BuiltinEvent =
    builtin("agent_tx_requests_num", Category::Transfer, Unit::Count);
/// Number of receive requests.
pub const AGENT_RX_REQUESTS_NUM: BuiltinEvent =
    builtin("agent_rx_requests_num", Category::Transfer, Unit::Count);
/// Duration of one transfer, from post to completion.
pub const AGENT_XFER_TIME: BuiltinEvent =
    builtin("agent_xfer_time", Category::Performance, Unit::Microseconds);
/// Time spent posting one transfer.
pub const AGENT_XFER_POST_TIME: BuiltinEvent = builtin(
    "agent_xfer_post_time",
    Category::Performance,
    Unit::Microseconds,
);
/// Events lost since the previous report (ring full, staging full, lapped).
pub const AGENT_TELEMETRY_EVENTS_DROPPED: BuiltinEvent = builtin(
    "agent_telemetry_events_dropped",
    Category::Error,
    Unit::Count,
);

/// The non-error built-in events, in NIXL's order.
pub const BUILTIN_EVENTS: [BuiltinEvent; 9] = [
    AGENT_MEMORY_REGISTERED,
    AGENT_MEMORY_DEREGISTERED,
    AGENT_TX_BYTES,
    AGENT_RX_BYTES,
    AGENT_TX_REQUESTS_NUM,
    AGENT_RX_REQUESTS_NUM,
    AGENT_XFER_TIME,
    AGENT_XFER_POST_TIME,
    AGENT_TELEMETRY_EVENTS_DROPPED,
];

/// NIXL's error statuses. Each has an error event named by its status string
/// (category [`Category::Error`], value = count).
///
/// ```
/// use telering_core::builtin::ErrorStatus;
/// let s = ErrorStatus::RemoteDisconnect;
/// assert_eq!(s.as_str(), "NIXL_ERR_REMOTE_DISCONNECT");
/// assert_eq!(s.label(), "remote_disconnect");
/// assert_eq!(s.event().name.as_str(), "NIXL_ERR_REMOTE_DISCONNECT");
/// assert_eq!(ErrorStatus::from_name("nixl_err_canceled"), Some(ErrorStatus::Canceled));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorStatus {
    /// `NIXL_ERR_NOT_POSTED`.
    NotPosted,
    /// `NIXL_ERR_INVALID_PARAM`.
    InvalidParam,
    /// `NIXL_ERR_BACKEND`.
    Backend,
    /// `NIXL_ERR_NOT_FOUND`.
    NotFound,
    /// `NIXL_ERR_MISMATCH`.
    Mismatch,
    /// `NIXL_ERR_NOT_ALLOWED`.
    NotAllowed,
    /// `NIXL_ERR_REPOST_ACTIVE`.
    RepostActive,
    /// `NIXL_ERR_UNKNOWN`.
    Unknown,
    /// `NIXL_ERR_NOT_SUPPORTED`.
    NotSupported,
    /// `NIXL_ERR_REMOTE_DISCONNECT`.
    RemoteDisconnect,
    /// `NIXL_ERR_CANCELED`.
    Canceled,
    /// `NIXL_ERR_NO_TELEMETRY`.
    NoTelemetry,
}

impl ErrorStatus {
    /// All twelve statuses.
    pub const ALL: [ErrorStatus; 12] = [
        ErrorStatus::NotPosted,
        ErrorStatus::InvalidParam,
        ErrorStatus::Backend,
        ErrorStatus::NotFound,
        ErrorStatus::Mismatch,
        ErrorStatus::NotAllowed,
        ErrorStatus::RepostActive,
        ErrorStatus::Unknown,
        ErrorStatus::NotSupported,
        ErrorStatus::RemoteDisconnect,
        ErrorStatus::Canceled,
        ErrorStatus::NoTelemetry,
    ];

    /// The status string, which is also the error event's name.
    ///
    /// ```
    /// use telering_core::builtin::ErrorStatus;
    /// assert_eq!(ErrorStatus::NotPosted.as_str(), "NIXL_ERR_NOT_POSTED");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorStatus::NotPosted => "NIXL_ERR_NOT_POSTED",
            ErrorStatus::InvalidParam => "NIXL_ERR_INVALID_PARAM",
            ErrorStatus::Backend => "NIXL_ERR_BACKEND",
            ErrorStatus::NotFound => "NIXL_ERR_NOT_FOUND",
            ErrorStatus::Mismatch => "NIXL_ERR_MISMATCH",
            ErrorStatus::NotAllowed => "NIXL_ERR_NOT_ALLOWED",
            ErrorStatus::RepostActive => "NIXL_ERR_REPOST_ACTIVE",
            ErrorStatus::Unknown => "NIXL_ERR_UNKNOWN",
            ErrorStatus::NotSupported => "NIXL_ERR_NOT_SUPPORTED",
            ErrorStatus::RemoteDisconnect => "NIXL_ERR_REMOTE_DISCONNECT",
            ErrorStatus::Canceled => "NIXL_ERR_CANCELED",
            ErrorStatus::NoTelemetry => "NIXL_ERR_NO_TELEMETRY",
        }
    }

    /// The lower-case label without the `NIXL_ERR_` prefix (`not_posted`), as used in
    /// the Prometheus `status` label.
    ///
    /// ```
    /// use telering_core::builtin::ErrorStatus;
    /// assert_eq!(ErrorStatus::InvalidParam.label(), "invalid_param");
    /// ```
    pub const fn label(self) -> &'static str {
        match self {
            ErrorStatus::NotPosted => "not_posted",
            ErrorStatus::InvalidParam => "invalid_param",
            ErrorStatus::Backend => "backend",
            ErrorStatus::NotFound => "not_found",
            ErrorStatus::Mismatch => "mismatch",
            ErrorStatus::NotAllowed => "not_allowed",
            ErrorStatus::RepostActive => "repost_active",
            ErrorStatus::Unknown => "unknown",
            ErrorStatus::NotSupported => "not_supported",
            ErrorStatus::RemoteDisconnect => "remote_disconnect",
            ErrorStatus::Canceled => "canceled",
            ErrorStatus::NoTelemetry => "no_telemetry",
        }
    }

    /// The error event for this status.
    ///
    /// ```
    /// use telering_core::{builtin::ErrorStatus, Category};
    /// let event = ErrorStatus::Canceled.event();
    /// assert_eq!(event.name.as_str(), "NIXL_ERR_CANCELED");
    /// assert_eq!(event.category, Category::Error);
    /// ```
    pub const fn event(self) -> BuiltinEvent {
        BuiltinEvent {
            name: EventName::from_static(self.as_str()),
            category: Category::Error,
            unit: Unit::Count,
        }
    }

    /// Finds a status by its status string or its label, ignoring ASCII case.
    ///
    /// ```
    /// use telering_core::builtin::ErrorStatus;
    /// assert_eq!(ErrorStatus::from_name("NIXL_ERR_BACKEND"), Some(ErrorStatus::Backend));
    /// assert_eq!(ErrorStatus::from_name("Not_Found"), Some(ErrorStatus::NotFound));
    /// assert_eq!(ErrorStatus::from_name("NIXL_ERR_BOGUS"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<ErrorStatus> {
        ErrorStatus::ALL
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(name) || s.label().eq_ignore_ascii_case(name))
    }
}

/// Finds the built-in event (including the error events) with this name.
///
/// ```
/// use telering_core::builtin::{find_builtin, Unit};
/// assert_eq!(find_builtin("agent_xfer_time").unwrap().unit, Unit::Microseconds);
/// assert!(find_builtin("NIXL_ERR_BACKEND").is_some());
/// assert!(find_builtin("my_counter").is_none());
/// ```
pub fn find_builtin(name: &str) -> Option<BuiltinEvent> {
    BUILTIN_EVENTS
        .into_iter()
        .find(|e| e.name.as_str() == name)
        .or_else(|| {
            ErrorStatus::ALL
                .into_iter()
                .find(|s| s.as_str() == name)
                .map(ErrorStatus::event)
        })
}

/// Every built-in event name, error events included, for checks such as "does this
/// allowlist pattern match any built-in event".
///
/// ```
/// use telering_core::builtin::all_builtin_names;
/// let names: Vec<&str> = all_builtin_names().collect();
/// assert_eq!(names.len(), 9 + 12);
/// assert!(names.contains(&"agent_tx_bytes") && names.contains(&"NIXL_ERR_NO_TELEMETRY"));
/// ```
pub fn all_builtin_names() -> impl Iterator<Item = &'static str> {
    // A `static` copy, so that the names borrowed from it live for the program.
    static EVENTS: [BuiltinEvent; BUILTIN_EVENTS.len()] = BUILTIN_EVENTS;
    EVENTS
        .iter()
        .map(|e| e.name.as_str())
        .chain(ErrorStatus::ALL.into_iter().map(ErrorStatus::as_str))
}

/// NIXL's event type numbers, which ring files of versions 2 to 4 store instead of
/// a name: index = type number. Type 20 exists in version 4 only.
///
/// The error types are named `agent_err_<label>` (the [`ErrorStatus::label`] of the
/// status), where telering's own events are named by the status string
/// (`NIXL_ERR_<LABEL>`); [`nixl_type_of`] maps both forms.
pub const NIXL_TYPE_NAMES: [&str; 21] = [
    "agent_tx_bytes",
    "agent_rx_bytes",
    "agent_tx_requests_num",
    "agent_rx_requests_num",
    "agent_memory_registered",
    "agent_memory_deregistered",
    "agent_xfer_time",
    "agent_xfer_post_time",
    "agent_err_not_posted",
    "agent_err_invalid_param",
    "agent_err_backend",
    "agent_err_not_found",
    "agent_err_mismatch",
    "agent_err_not_allowed",
    "agent_err_repost_active",
    "agent_err_unknown",
    "agent_err_not_supported",
    "agent_err_remote_disconnect",
    "agent_err_canceled",
    "agent_err_no_telemetry",
    "agent_telemetry_events_dropped",
];

/// The type number of the first error type, `agent_err_not_posted`; the twelve error
/// types follow in [`ErrorStatus::ALL`] order.
pub const NIXL_FIRST_ERROR_TYPE: u32 = 8;
/// The type number of `agent_telemetry_events_dropped` (ring version 4 only).
pub const NIXL_EVENTS_DROPPED_TYPE: u32 = 20;

/// The name of NIXL event type `type_number`, or `None` for a number no NIXL
/// release defines.
///
/// ```
/// use telering_core::builtin::nixl_type_name;
/// assert_eq!(nixl_type_name(0), Some("agent_tx_bytes"));
/// assert_eq!(nixl_type_name(9), Some("agent_err_invalid_param"));
/// assert_eq!(nixl_type_name(20), Some("agent_telemetry_events_dropped"));
/// assert_eq!(nixl_type_name(21), None);
/// ```
pub fn nixl_type_name(type_number: u32) -> Option<&'static str> {
    NIXL_TYPE_NAMES.get(type_number as usize).copied()
}

/// The NIXL type number an event of this name is stored as in a version-4 ring:
/// the built-in events by name, and each error event either by its status string
/// (`NIXL_ERR_BACKEND`, telering's name) or by its type name (`agent_err_backend`).
/// `None` for every other name: custom and backend events have no type number.
///
/// ```
/// use telering_core::builtin::nixl_type_of;
/// assert_eq!(nixl_type_of("agent_xfer_time"), Some(6));
/// assert_eq!(nixl_type_of("NIXL_ERR_BACKEND"), Some(10));
/// assert_eq!(nixl_type_of("agent_err_backend"), Some(10));
/// assert_eq!(nixl_type_of("agent_telemetry_events_dropped"), Some(20));
/// assert_eq!(nixl_type_of("my_counter"), None);
/// ```
pub fn nixl_type_of(name: &str) -> Option<u32> {
    if let Some(i) = NIXL_TYPE_NAMES.iter().position(|n| *n == name) {
        return Some(i as u32);
    }
    ErrorStatus::ALL
        .iter()
        .position(|s| s.as_str() == name)
        .map(|i| NIXL_FIRST_ERROR_TYPE + i as u32)
}

/// The category NIXL implies from a type name, for ring generations that store no
/// category: `agent_memory_` MEMORY, `agent_tx_`/`agent_rx_` TRANSFER, `agent_xfer_`
/// PERFORMANCE, `agent_err_` and the dropped-events counter ERROR. `None` for a name
/// without one of these prefixes.
///
/// ```
/// use telering_core::{builtin::implied_category, Category};
/// assert_eq!(implied_category("agent_rx_requests_num"), Some(Category::Transfer));
/// assert_eq!(implied_category("agent_err_canceled"), Some(Category::Error));
/// assert_eq!(implied_category("unknown_type_77"), None);
/// ```
pub fn implied_category(name: &str) -> Option<Category> {
    if name.starts_with("agent_memory_") {
        Some(Category::Memory)
    } else if name.starts_with("agent_tx_") || name.starts_with("agent_rx_") {
        Some(Category::Transfer)
    } else if name.starts_with("agent_xfer_") {
        Some(Category::Performance)
    } else if name.starts_with("agent_err_") || name == AGENT_TELEMETRY_EVENTS_DROPPED.name.as_str()
    {
        Some(Category::Error)
    } else {
        None
    }
}

/// The error status of an `agent_err_<label>` type name.
///
/// ```
/// use telering_core::builtin::{error_status_of_type_name, ErrorStatus};
/// assert_eq!(error_status_of_type_name("agent_err_mismatch"), Some(ErrorStatus::Mismatch));
/// assert_eq!(error_status_of_type_name("agent_tx_bytes"), None);
/// ```
pub fn error_status_of_type_name(name: &str) -> Option<ErrorStatus> {
    let label = name.strip_prefix("agent_err_")?;
    ErrorStatus::ALL.into_iter().find(|s| s.label() == label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event_name;

    #[test]
    fn builtin_names_match_the_name_list() {
        let mut listed = all_builtin_names();
        for e in BUILTIN_EVENTS {
            assert_eq!(listed.next(), Some(e.name.as_str()));
        }
        for s in ErrorStatus::ALL {
            assert_eq!(listed.next(), Some(s.as_str()));
            assert_eq!(find_builtin(s.as_str()), Some(s.event()));
        }
        assert_eq!(listed.next(), None);
    }

    #[test]
    fn error_labels_are_the_status_without_prefix_in_lower_case() {
        for s in ErrorStatus::ALL {
            let upper = &s.as_str()["NIXL_ERR_".len()..];
            assert!(upper.eq_ignore_ascii_case(s.label()));
        }
    }

    #[test]
    fn the_event_name_macro_works_in_this_module() {
        assert_eq!(event_name!("agent_tx_bytes"), AGENT_TX_BYTES.name);
    }

    #[test]
    fn nixl_type_numbers_follow_the_published_table() {
        // The table of NIXL's type numbers, written out independently of the array.
        let expected = [
            (0, "agent_tx_bytes"),
            (1, "agent_rx_bytes"),
            (2, "agent_tx_requests_num"),
            (3, "agent_rx_requests_num"),
            (4, "agent_memory_registered"),
            (5, "agent_memory_deregistered"),
            (6, "agent_xfer_time"),
            (7, "agent_xfer_post_time"),
            (20, "agent_telemetry_events_dropped"),
        ];
        for (n, name) in expected {
            assert_eq!(nixl_type_name(n), Some(name));
            assert_eq!(nixl_type_of(name), Some(n));
            assert!(find_builtin(name).is_some(), "{name}");
            assert_eq!(
                implied_category(name),
                find_builtin(name).map(|e| e.category)
            );
        }
        for (i, s) in ErrorStatus::ALL.into_iter().enumerate() {
            let n = 8 + i as u32;
            let type_name = nixl_type_name(n).unwrap();
            assert_eq!(type_name.strip_prefix("agent_err_"), Some(s.label()));
            assert_eq!(nixl_type_of(s.as_str()), Some(n));
            assert_eq!(nixl_type_of(type_name), Some(n));
            assert_eq!(error_status_of_type_name(type_name), Some(s));
            assert_eq!(implied_category(type_name), Some(Category::Error));
        }
        assert_eq!(nixl_type_name(21), None);
        assert_eq!(nixl_type_name(u32::MAX), None);
    }
}
