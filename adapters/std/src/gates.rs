//! What a recording call tests first: the allowlist's answer, cleared when the
//! telemetry closes.
//!
//! A [`Recorder`](crate::Recorder) may outlive its telemetry, and after the close no
//! flush drains its lane, so its events must be refused and counted. Testing a
//! separate `closed` flag on every record cost 4 to 8 instructions per call under
//! callgrind (BENCHMARKS.md, "A `Recorder` of a closed telemetry refuses its
//! events"). Instead, each gate holds "the allowlist lets this through and the
//! telemetry is open": the one test every recording call already made. Closing
//! clears every gate, so a refused call lands in the cold branch, which tells an
//! allowlist refusal (the unchanging [`Filter`]) from a closed telemetry (the filter
//! allowed it: only the close clears an allowed gate).
//!
//! Each gate is read with a relaxed load. x86 tests it in two instructions (a load,
//! a test) where a plain `bool` takes one compare with memory, so only handles that
//! can outlive the telemetry test gates; a `Telemetry`'s own calls read the
//! [`Filter`] (see `LaneAccess` in `push.rs`). Under callgrind a recorder's event,
//! `add_xfer_stats` or transfer costs 0 or 1 instruction more than with no closed
//! test at all, 4 to 7 fewer than with the separate test. The close is ordered against
//! the last flush as the separate test was: a recorder that saw its gate open before
//! the close writes into a lane that flush drains.

use crate::builtins::{BUILTIN_COUNT, Filter};
use std::sync::atomic::{AtomicBool, Ordering};

/// One "allowed and open" answer.
#[derive(Debug)]
pub(crate) struct Gate(AtomicBool);

impl Gate {
    fn new(allowed: bool) -> Gate {
        Gate(AtomicBool::new(allowed))
    }

    /// Whether the call may record: allowed by the filter and the telemetry open.
    #[inline(always)]
    pub(crate) fn open(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn close(&self) {
        self.0.store(false, Ordering::Relaxed);
    }
}

/// The gates of one telemetry, mirroring its [`Filter`].
#[derive(Debug)]
pub(crate) struct Gates {
    /// Per built-in event: [`Filter::builtin`].
    pub(crate) builtin: [Gate; BUILTIN_COUNT],
    /// Per transfer direction: [`Filter::xfer_all`].
    pub(crate) xfer_all: [Gate; 2],
    /// Whether events are recorded for export at all: [`Filter::on`] (custom events
    /// then ask the allowlist).
    pub(crate) on: Gate,
}

impl Gates {
    /// Gates open wherever `filter` lets events through.
    pub(crate) fn new(filter: &Filter) -> Gates {
        Gates {
            builtin: std::array::from_fn(|i| Gate::new(filter.builtin[i])),
            xfer_all: std::array::from_fn(|i| Gate::new(filter.xfer_all[i])),
            on: Gate::new(filter.on),
        }
    }

    /// Closes every gate: from now on every recording call takes its cold branch.
    pub(crate) fn close(&self) {
        self.builtin.iter().for_each(Gate::close);
        self.xfer_all.iter().for_each(Gate::close);
        self.on.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;

    #[test]
    fn gates_mirror_the_filter_until_closed_and_none_is_open_after() {
        let export = Mode::Export {
            exporter: "nop".into(),
        };
        for (mode, patterns) in [
            (export.clone(), "agent_tx_*, NIXL_ERR_*"),
            (export, ""),
            (Mode::Capture, "*"),
            (Mode::Disabled, "*"),
        ] {
            let filter = Filter::new(&mode, patterns);
            let gates = Gates::new(&filter);
            for i in 0..BUILTIN_COUNT {
                assert_eq!(gates.builtin[i].open(), filter.builtin[i], "{i}");
            }
            assert_eq!(gates.xfer_all[0].open(), filter.xfer_all[0]);
            assert_eq!(gates.xfer_all[1].open(), filter.xfer_all[1]);
            assert_eq!(gates.on.open(), filter.on);
            gates.close();
            assert!(gates.builtin.iter().all(|g| !g.open()));
            assert!(gates.xfer_all.iter().all(|g| !g.open()) && !gates.on.open());
        }
    }
}
