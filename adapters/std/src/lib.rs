//! The host runtime of telering: an agent's telemetry on Linux.
//!
//! - [`config`]: the `NIXL_TELEMETRY_*` variables and the [`TelemetryBuilder`] that
//!   mirrors them;
//! - [`Telemetry`]: records events from any number of threads without locks or
//!   allocation (one lock-free SPSC lane per thread, see the `lane` module), flushes
//!   them every run interval, merged in timestamp order, to one exporter, and flushes
//!   everything when dropped;
//! - per-transfer telemetry ([`XferHandle`], [`XferTelemetry`]) and backend events
//!   ([`BackendTelemetry`]);
//! - [`export`]: the [`Exporter`] trait, the registry, and the built-in `buffer`
//!   (shared-memory ring file, NIXL-compatible), `csv` and `nop` exporters;
//! - [`clock`]: the realtime and the fast (coarse) clock.
//!
//! Every event is either exported or counted as dropped; losses are reported in-band
//! as `agent_telemetry_events_dropped` and in [`TelemetryStats`].
//!
//! # Cost
//!
//! Measured on a shared 2-vCPU AMD EPYC VM (`BENCHMARKS.md`, section telering-std):
//! recording one event costs about 8 ns with the default fast clock (26 ns with the
//! microsecond-exact realtime clock) against 42 ns for NIXL's mutex-and-vector
//! design; `add_xfer_stats` about 31 ns; a built-in metric the allowlist excludes
//! 0.5 ns. A thread's first event in a `Telemetry` allocates its lane
//! (`NIXL_TELEMETRY_BUFFER_SIZE` × 56 bytes, 224 KiB by default) and takes a lock
//! once; later events take no lock and allocate nothing (`tests/alloc.rs` counts).
//!
//! ```
//! use telering_std::{EnvSource, Telemetry, TelemetryBuilder};
//! use telering_core::builtin::ErrorStatus;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let env = EnvSource::from_pairs([
//!     ("NIXL_TELEMETRY_ENABLE", "y"),
//!     ("NIXL_TELEMETRY_DIR", dir.path().to_str().unwrap()),
//! ]);
//! // No exporter named and a directory set: the shared-memory ring `DIR/<agent>`.
//! let telemetry = TelemetryBuilder::from_env("agent-0", &env).unwrap().build().unwrap();
//! telemetry.update_rx_bytes(65536);
//! telemetry.update_error_count(ErrorStatus::Canceled);
//! drop(telemetry);
//! let info = telering_shm::stat(&dir.path().join("agent-0")).unwrap();
//! assert_eq!(info.fill, 2);
//! ```
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod backend;
pub mod clock;
pub mod config;
pub mod export;
mod lane;
mod telemetry;
mod xfer;

pub use backend::BackendTelemetry;
pub use clock::ClockSource;
pub use config::{ConfigError, ConfigWarning, EnvSource, Mode, ResolvedConfig, TelemetryBuilder};
pub use export::{ExportError, Exporter, ExporterContext, ExporterFactory, ExporterRegistry};
pub use telemetry::{Telemetry, TelemetryStats};
pub use xfer::{NoTelemetry, XferHandle, XferTelemetry};

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn telemetry_and_handles_are_send_and_sync() {
        assert_send_sync::<Telemetry>();
        assert_send_sync::<BackendTelemetry>();
        assert_send_sync::<XferHandle>();
    }
}
