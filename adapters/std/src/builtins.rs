//! The built-in events as recording uses them, and the filter that decides which
//! events are recorded.
//!
//! The table of built-in events lives once, in telering-core
//! ([`telering_core::builtin`]); here it is laid out by index — the nine
//! [`BUILTIN_EVENTS`](builtin::BUILTIN_EVENTS), then one error event per
//! [`ErrorStatus`] — an event's index being its id in lane records
//! ([`crate::names`]), and the [`Filter`]
//! evaluates the allowlist for every built-in once, when the telemetry is built.
//! Custom names go through telering-core's [`OwningAllowlist`], whose text is
//! classified once (literal, prefix and glob fast paths) when the telemetry is built.

use crate::Recorded;
use crate::config::Mode;
use telering_core::builtin::{self, BuiltinEvent, ErrorStatus};
use telering_core::{EventName, OwningAllowlist};

/// The index in [`BUILTINS`] of the built-in `event`, found at compile
/// time in core's table (a name that is not there fails the build).
const fn index_of(event: BuiltinEvent) -> usize {
    let mut i = 0;
    while i < builtin::BUILTIN_EVENTS.len() {
        let (a, b) = (builtin::BUILTIN_EVENTS[i].name.field(), event.name.field());
        let mut j = 0;
        while j < a.len() && a[j] == b[j] {
            j += 1;
        }
        if j == a.len() {
            return i;
        }
        i += 1;
    }
    panic!("not a built-in event of telering-core");
}

/// Index of each built-in event in [`BUILTINS`], derived from core's table.
pub(crate) mod idx {
    use super::index_of;
    use telering_core::builtin::*;
    pub const MEMORY_REGISTERED: usize = index_of(AGENT_MEMORY_REGISTERED);
    pub const MEMORY_DEREGISTERED: usize = index_of(AGENT_MEMORY_DEREGISTERED);
    pub const TX_BYTES: usize = index_of(AGENT_TX_BYTES);
    pub const RX_BYTES: usize = index_of(AGENT_RX_BYTES);
    pub const TX_REQUESTS_NUM: usize = index_of(AGENT_TX_REQUESTS_NUM);
    pub const RX_REQUESTS_NUM: usize = index_of(AGENT_RX_REQUESTS_NUM);
    pub const XFER_TIME: usize = index_of(AGENT_XFER_TIME);
    pub const XFER_POST_TIME: usize = index_of(AGENT_XFER_POST_TIME);
    #[cfg(test)]
    pub const EVENTS_DROPPED: usize = index_of(AGENT_TELEMETRY_EVENTS_DROPPED);
    /// The error events follow core's table, in [`ErrorStatus::ALL`] order.
    pub const FIRST_ERROR: usize = BUILTIN_EVENTS.len();
}

pub(crate) const BUILTIN_COUNT: usize = builtin::BUILTIN_EVENTS.len() + ErrorStatus::ALL.len();

/// Every built-in event, error events last in [`ErrorStatus::ALL`] order.
pub(crate) const BUILTINS: [BuiltinEvent; BUILTIN_COUNT] = {
    let mut all = [builtin::AGENT_TX_BYTES; BUILTIN_COUNT];
    let mut i = 0;
    while i < builtin::BUILTIN_EVENTS.len() {
        all[i] = builtin::BUILTIN_EVENTS[i];
        i += 1;
    }
    let mut s = 0;
    while s < ErrorStatus::ALL.len() {
        all[idx::FIRST_ERROR + s] = ErrorStatus::ALL[s].event();
        s += 1;
    }
    all
};

/// The index in [`BUILTINS`] of each of NIXL's event type numbers
/// ([`builtin::NIXL_TYPE_NAMES`]): the built-in events by name, the error types in
/// [`ErrorStatus::ALL`] order from [`builtin::NIXL_FIRST_ERROR_TYPE`].
pub(crate) const NIXL_TYPE_INDEX: [usize; builtin::NIXL_TYPE_NAMES.len()] = {
    let mut table = [0; builtin::NIXL_TYPE_NAMES.len()];
    let mut t = 0;
    while t < table.len() {
        let first_error = builtin::NIXL_FIRST_ERROR_TYPE as usize;
        table[t] = if t >= first_error && t < first_error + ErrorStatus::ALL.len() {
            idx::FIRST_ERROR + (t - first_error)
        } else {
            let mut i = 0;
            loop {
                let (a, b) = (
                    BUILTINS[i].name.field(),
                    builtin::NIXL_TYPE_NAMES[t].as_bytes(),
                );
                let mut j = 0;
                while j < b.len() && a[j] == b[j] {
                    j += 1;
                }
                if j == b.len() && (j == a.len() || a[j] == 0) {
                    break i;
                }
                i += 1;
            }
        };
        t += 1;
    }
    table
};

const _: () = {
    assert!(builtin::BUILTIN_EVENTS.len() == idx::FIRST_ERROR);
    assert!(idx::FIRST_ERROR + ErrorStatus::ALL.len() == BUILTIN_COUNT);
};

/// Which events get recorded: the allowlist, pre-evaluated for the built-in events so
/// that a disabled built-in metric costs one load and a branch.
#[derive(Clone, Debug)]
pub(crate) struct Filter {
    pub(crate) on: bool,
    /// What recording answers when it records nothing: why not.
    off: Recorded,
    /// The allowlist, its text classified once: what checks a name not resolved
    /// beforehand (built-ins and [`CustomEvent`](crate::CustomEvent)s are resolved
    /// once).
    allowlist: OwningAllowlist<Box<str>>,
    pub(crate) builtin: [bool; BUILTIN_COUNT],
    /// Whether all four events of a read (`[0]`) / write (`[1]`) transfer pass.
    pub(crate) xfer_all: [bool; 2],
    /// Whether all four events of transfers of both operations pass: a transfer on
    /// a route then needs no operation to check ([`crate::route`]).
    pub(crate) route_xfer_all: bool,
}

impl Filter {
    /// The filter of telemetry in `mode` with the allowlist `patterns`.
    pub(crate) fn new(mode: &Mode, patterns: &str) -> Filter {
        let (on, off) = match mode {
            Mode::Export { .. } => (true, Recorded::Filtered),
            Mode::Capture => (false, Recorded::CaptureOnly),
            Mode::Disabled => (false, Recorded::Disabled),
        };
        let allowlist = OwningAllowlist::new(Box::<str>::from(patterns));
        let list = allowlist.as_allowlist();
        let mut builtin = [false; BUILTIN_COUNT];
        for (allowed, event) in builtin.iter_mut().zip(BUILTINS.iter()) {
            *allowed = on && list.allows(event.name.as_str());
        }
        let all = |ids: [usize; 4]| ids.iter().all(|&i| builtin[i]);
        let timing = [idx::XFER_TIME, idx::XFER_POST_TIME];
        let xfer_all = [
            all([idx::RX_BYTES, idx::RX_REQUESTS_NUM, timing[0], timing[1]]),
            all([idx::TX_BYTES, idx::TX_REQUESTS_NUM, timing[0], timing[1]]),
        ];
        Filter {
            on,
            off,
            xfer_all,
            route_xfer_all: xfer_all[0] && xfer_all[1],
            builtin,
            allowlist,
        }
    }

    /// Why an event that [`allows`](Self::allows) (or the built-in table) refused is
    /// not recorded: telemetry disabled, capture only, or the allowlist.
    #[inline]
    pub(crate) fn refusal(&self) -> Recorded {
        self.off
    }

    /// Whether events are recorded and the allowlist lets `name` through.
    #[inline]
    pub(crate) fn allows(&self, name: &EventName) -> bool {
        self.on && self.matches(name)
    }

    /// Whether the allowlist lets `name` through.
    #[inline]
    pub(crate) fn matches(&self, name: &EventName) -> bool {
        self.allowlist.allows(name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telering_core::event_name;

    #[test]
    fn the_builtin_table_lists_every_builtin_event_at_its_index() {
        assert_eq!(BUILTINS[idx::TX_BYTES], builtin::AGENT_TX_BYTES);
        assert_eq!(BUILTINS[idx::XFER_POST_TIME], builtin::AGENT_XFER_POST_TIME);
        assert_eq!(
            BUILTINS[idx::EVENTS_DROPPED],
            builtin::AGENT_TELEMETRY_EVENTS_DROPPED
        );
        for s in ErrorStatus::ALL {
            assert_eq!(BUILTINS[idx::FIRST_ERROR + s as usize], s.event());
        }
        let names: Vec<_> = BUILTINS.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, builtin::all_builtin_names().collect::<Vec<_>>());
    }

    #[test]
    fn each_nixl_type_number_indexes_the_builtin_of_its_name() {
        for (t, &i) in NIXL_TYPE_INDEX.iter().enumerate() {
            let name = BUILTINS[i].name.as_str();
            assert_eq!(
                builtin::nixl_type_of(name),
                Some(t as u32),
                "type {t} -> {name}"
            );
        }
    }

    #[test]
    fn the_filter_evaluates_the_allowlist_for_builtins_once() {
        let export = Mode::Export {
            exporter: "nop".into(),
        };
        let f = Filter::new(&export, "agent_tx_*, NIXL_ERR_BACKEND");
        assert!(f.builtin[idx::TX_BYTES] && f.builtin[idx::TX_REQUESTS_NUM]);
        assert!(!f.builtin[idx::RX_BYTES]);
        assert!(f.builtin[idx::FIRST_ERROR + ErrorStatus::Backend as usize]);
        assert!(!f.builtin[idx::FIRST_ERROR + ErrorStatus::Unknown as usize]);
        assert_eq!(f.refusal(), Recorded::Filtered);
        for (mode, why) in [
            (Mode::Disabled, Recorded::Disabled),
            (Mode::Capture, Recorded::CaptureOnly),
        ] {
            let off = Filter::new(&mode, "");
            assert!(off.builtin.iter().all(|b| !b));
            assert!(!off.allows(&event_name!("x")));
            assert_eq!(off.refusal(), why);
        }
    }

    #[test]
    fn custom_names_match_by_cores_allowlist_rules() {
        let export = Mode::Export {
            exporter: "nop".into(),
        };
        let f = Filter::new(&export, " queue_*, exact ,q?_[!x]z");
        assert!(f.allows(&event_name!("queue_depth")));
        assert!(f.allows(&event_name!("exact")));
        assert!(!f.allows(&event_name!("exact2")));
        assert!(f.allows(&event_name!("qa_yz")));
        assert!(!f.allows(&event_name!("qa_xz")));
        assert!(Filter::new(&export, " , ").allows(&event_name!("anything")));
    }
}
