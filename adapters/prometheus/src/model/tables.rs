//! The family tables: which Prometheus families each built-in event feeds, with their
//! names and help texts.
//!
//! The events themselves come from core's built-in table
//! ([`telering_core::builtin`]): a counter family is named after its event, and the
//! error family has one `status` per [`ErrorStatus::ALL`]. Only what Prometheus adds is
//! written here: help texts, the last-value gauges and histograms NIXL's exporter
//! shows, and telering's two extra loss counters. [`effects`] turns the table into the
//! name → [`Effect`] map the model's ingest path looks up.

use telering_core::builtin::{self, BuiltinEvent, ErrorStatus};

/// A family's exposed name (a counter's without `_total`) and help text.
pub(super) type Family = (&'static str, &'static str);

/// The families one built-in event feeds.
#[derive(Debug)]
pub(super) struct BuiltinFamilies {
    /// The event; its name is the counter family's name.
    pub event: BuiltinEvent,
    /// Help text of the counter (sum of values).
    pub counter_help: &'static str,
    /// The gauge of the last value, if the event has one: its name and help text.
    pub last: Option<(GaugeName, &'static str)>,
    /// The histogram of the values, if the event has one.
    pub histogram: Option<Family>,
}

/// A last-value gauge's name.
#[derive(Clone, Copy, Debug)]
pub(super) enum GaugeName {
    /// The event's own name (NIXL exposes the latency gauges so; the counter of the same
    /// event is exposed with `_total`).
    OfEvent,
    /// A name of its own.
    Own(&'static str),
}

/// The built-in events' families, in NIXL's exporter order (the order of
/// [`builtin::NIXL_TYPE_NAMES`]). A `static`, so that names borrowed from it live for
/// the program.
pub(super) static BUILTIN_FAMILIES: [BuiltinFamilies; 9] = [
    BuiltinFamilies {
        event: builtin::AGENT_TX_BYTES,
        counter_help: "Bytes sent",
        last: Some((
            GaugeName::Own("agent_tx_last_bytes"),
            "Bytes sent by the last transfer",
        )),
        histogram: None,
    },
    BuiltinFamilies {
        event: builtin::AGENT_RX_BYTES,
        counter_help: "Bytes received",
        last: Some((
            GaugeName::Own("agent_rx_last_bytes"),
            "Bytes received by the last transfer",
        )),
        histogram: None,
    },
    BuiltinFamilies {
        event: builtin::AGENT_TX_REQUESTS_NUM,
        counter_help: "Send requests",
        last: None,
        histogram: None,
    },
    BuiltinFamilies {
        event: builtin::AGENT_RX_REQUESTS_NUM,
        counter_help: "Receive requests",
        last: None,
        histogram: None,
    },
    BuiltinFamilies {
        event: builtin::AGENT_MEMORY_REGISTERED,
        counter_help: "Bytes of memory registered",
        last: Some((
            GaugeName::Own("agent_memory_registered_last_bytes"),
            "Bytes of the last memory registration",
        )),
        histogram: None,
    },
    BuiltinFamilies {
        event: builtin::AGENT_MEMORY_DEREGISTERED,
        counter_help: "Bytes of memory deregistered",
        last: Some((
            GaugeName::Own("agent_memory_deregistered_last_bytes"),
            "Bytes of the last memory deregistration",
        )),
        histogram: None,
    },
    BuiltinFamilies {
        event: builtin::AGENT_XFER_TIME,
        counter_help: "Sum of transfer durations in microseconds",
        last: Some((
            GaugeName::OfEvent,
            "Duration of the last transfer in microseconds",
        )),
        histogram: Some(("agent_xfer_time_us", "Transfer durations in microseconds")),
    },
    BuiltinFamilies {
        event: builtin::AGENT_XFER_POST_TIME,
        counter_help: "Sum of transfer post times in microseconds",
        last: Some((
            GaugeName::OfEvent,
            "Post time of the last transfer in microseconds",
        )),
        histogram: Some((
            "agent_xfer_post_time_us",
            "Transfer post times in microseconds",
        )),
    },
    BuiltinFamilies {
        event: builtin::AGENT_TELEMETRY_EVENTS_DROPPED,
        counter_help: "Telemetry events the agent lost before export (ring or staging full)",
        last: None,
        histogram: None,
    },
];

/// Counters telering adds for losses no event reports, after the built-in counters.
const LOSS_FAMILIES: [Family; 2] = [
    (
        "agent_telemetry_events_missed",
        "Telemetry events a collector observing the ring missed because the writer lapped it",
    ),
    (
        "agent_telemetry_events_unexported",
        "Telemetry events received but not exported (undecodable, or over the custom family cap)",
    ),
];

/// The node collector's exporter-health counter: what it read and exported per agent.
/// Only series whose model tracks exporter health have it (see
/// [`MetricModel::ingest_delivered`](super::MetricModel::ingest_delivered)); an
/// in-process or multi-process exporter *is* the agent's exporter and has no outside
/// view of its health, so it never shows this family.
pub(super) const DELIVERED_FAMILY: Family = (
    "agent_telemetry_events_delivered",
    "Telemetry events the collector read from the agent's ring and exported: what reached this endpoint",
);

/// The node collector's exporter-health gauge (see [`DELIVERED_FAMILY`] for who shows
/// it).
pub(super) const FAILING_FAMILY: Family = (
    "agent_telemetry_exporter_failing",
    "1 while the agent's ring writer is gone without a clean close (a crash, or a heartbeat older than stale_after) or while the collector's reads of its ring keep failing; 0 otherwise, including after a clean close",
);

/// Number of counters per agent: one per built-in event, then the loss counters.
pub(super) const COUNTERS: usize = BUILTIN_FAMILIES.len() + LOSS_FAMILIES.len();
/// Number of last-value gauges per agent.
pub(super) const GAUGES: usize = count_rows(false);
/// Number of histograms per agent.
pub(super) const HISTOGRAMS: usize = count_rows(true);

/// Counter index of `agent_telemetry_events_dropped`.
pub(super) const EVENTS_DROPPED: usize = position(builtin::AGENT_TELEMETRY_EVENTS_DROPPED);
/// Counter index of `agent_telemetry_events_missed`.
pub(super) const EVENTS_MISSED: usize = BUILTIN_FAMILIES.len();
/// Counter index of `agent_telemetry_events_unexported`.
pub(super) const EVENTS_UNEXPORTED: usize = BUILTIN_FAMILIES.len() + 1;

/// The family of the error events; one series per status.
pub(super) const ERROR_FAMILY: Family = ("agent_errors", "Errors by NIXL status");

/// Help text of every custom or backend family.
/// Events whose value is a state, not an amount: a `SYSTEM` event of one of these
/// names sets a gauge (its last value) instead of adding to a custom counter. They are
/// the clock mapping `telering bridge` writes into a device's ring (docs/LINK.md):
/// name, whether the value is an `i64` in two's complement, help text. The family is
/// named as a custom family would be, without `_total`.
pub(super) const STATE_GAUGES: [(&str, bool, &str); 3] = [
    (
        "telering_link_clock_offset_us",
        true,
        "Host minus device time at the newest clock point, microseconds (telering bridge)",
    ),
    (
        "telering_link_clock_drift_ppb",
        true,
        "Device clock rate minus one, parts per billion (telering bridge)",
    ),
    (
        "telering_link_clock_bound_us",
        false,
        "Bound on the host-time error of the events mapped in the last report, microseconds (telering bridge)",
    ),
];

/// A state gauge's value as exposed: an `i64` read from its two's complement, or the
/// `u64` itself, saturating at `i64::MAX`.
pub(super) fn state_value(raw: u64, signed: bool) -> i64 {
    if signed {
        raw as i64
    } else {
        i64::try_from(raw).unwrap_or(i64::MAX)
    }
}

pub(super) const CUSTOM_HELP: &str =
    "Sum of the values of a custom or backend event (see the telering-prometheus name mapping)";

/// Rows with a histogram (`true`) or with a last-value gauge (`false`).
const fn count_rows(histogram: bool) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < BUILTIN_FAMILIES.len() {
        let row = &BUILTIN_FAMILIES[i];
        let has = if histogram {
            row.histogram.is_some()
        } else {
            row.last.is_some()
        };
        if has {
            n += 1;
        }
        i += 1;
    }
    n
}

const fn position(event: BuiltinEvent) -> usize {
    let mut i = 0;
    while i < BUILTIN_FAMILIES.len() {
        if same_name(BUILTIN_FAMILIES[i].event.name.field(), event.name.field()) {
            return i;
        }
        i += 1;
    }
    panic!("event missing from BUILTIN_FAMILIES")
}

const fn same_name(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Every counter family in index order: the built-ins, then the loss counters.
pub(super) fn counter_families() -> impl Iterator<Item = Family> {
    BUILTIN_FAMILIES
        .iter()
        .map(|f| (f.event.name.as_str(), f.counter_help))
        .chain(LOSS_FAMILIES)
}

/// Every gauge family in index order.
pub(super) fn gauge_families() -> impl Iterator<Item = Family> {
    BUILTIN_FAMILIES.iter().filter_map(|f| {
        let (name, help) = f.last?;
        let name = match name {
            GaugeName::OfEvent => f.event.name.as_str(),
            GaugeName::Own(name) => name,
        };
        Some((name, help))
    })
}

/// Every histogram family in index order.
pub(super) fn histogram_families() -> impl Iterator<Item = Family> {
    BUILTIN_FAMILIES.iter().filter_map(|f| f.histogram)
}

/// What one event name does to an agent's metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Effect {
    /// Add to counter `counter`; set gauge `last` to the value; observe the value in
    /// histogram `histogram`.
    Builtin {
        counter: usize,
        last: Option<usize>,
        histogram: Option<usize>,
    },
    /// Add to `agent_errors_total{status}`, status index into [`ErrorStatus::ALL`].
    Error(usize),
    /// Add to a custom counter family.
    Custom(u32),
    /// Set state gauge `i` of [`STATE_GAUGES`].
    State(usize),
}

/// The effect of every built-in event, error events included.
pub(super) fn effects() -> impl Iterator<Item = (BuiltinEvent, Effect)> {
    let mut gauges = 0;
    let mut histograms = 0;
    let builtins = BUILTIN_FAMILIES
        .iter()
        .enumerate()
        .map(move |(counter, f)| {
            let next = |has: bool, n: &mut usize| {
                has.then(|| {
                    *n += 1;
                    *n - 1
                })
            };
            let last = next(f.last.is_some(), &mut gauges);
            let histogram = next(f.histogram.is_some(), &mut histograms);
            (
                f.event,
                Effect::Builtin {
                    counter,
                    last,
                    histogram,
                },
            )
        });
    let errors = ErrorStatus::ALL
        .into_iter()
        .enumerate()
        .map(|(i, status)| (status.event(), Effect::Error(i)));
    builtins.chain(errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_core_builtin_event_has_exactly_one_row() {
        for event in builtin::BUILTIN_EVENTS {
            let rows = BUILTIN_FAMILIES.iter().filter(|f| f.event == event).count();
            assert_eq!(rows, 1, "{}", event.name);
        }
        assert_eq!(BUILTIN_FAMILIES.len(), builtin::BUILTIN_EVENTS.len());
    }

    #[test]
    fn rows_follow_nixl_type_order() {
        let names: Vec<&str> = BUILTIN_FAMILIES
            .iter()
            .map(|f| f.event.name.as_str())
            .collect();
        let mut nixl: Vec<&str> = builtin::NIXL_TYPE_NAMES
            .iter()
            .copied()
            .filter(|n| builtin::find_builtin(n).is_some())
            .collect();
        nixl.dedup();
        assert_eq!(names, nixl);
    }

    #[test]
    fn indices_name_the_families_they_count() {
        let counters: Vec<&str> = counter_families().map(|(n, _)| n).collect();
        assert_eq!(counters.len(), COUNTERS);
        assert_eq!(counters[EVENTS_DROPPED], "agent_telemetry_events_dropped");
        assert_eq!(counters[EVENTS_MISSED], "agent_telemetry_events_missed");
        assert_eq!(
            counters[EVENTS_UNEXPORTED],
            "agent_telemetry_events_unexported"
        );
        assert_eq!(gauge_families().count(), GAUGES);
        assert_eq!(histogram_families().count(), HISTOGRAMS);
        let gauges: Vec<usize> = effects()
            .filter_map(|(_, e)| match e {
                Effect::Builtin { last, .. } => last,
                _ => None,
            })
            .collect();
        assert_eq!(gauges, (0..GAUGES).collect::<Vec<_>>());
    }
}
