#![doc = include_str!("../README.md")]
// Only the plug-in loader (`plugin`) may use `unsafe`, to call a C ABI.
#![deny(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod backend;
mod build;
mod builder;
mod builtins;
pub mod clock;
pub mod config;
mod custom;
mod dir;
pub mod env;
pub mod export;
pub mod fanout;
mod flush;
mod gates;
mod lane;
mod names;
pub mod parse;
pub mod plugin;
mod push;
mod recorded;
mod recorder;
pub mod route;
mod telemetry;
mod xfer;

pub use backend::BackendTelemetry;
pub use clock::ClockSource;
pub use config::{ConfigError, ConfigWarning, Mode, ResolvedConfig, TelemetryBuilder};
#[doc(hidden)]
pub use custom::__event_name;
pub use custom::CustomEvent;
pub use env::{EnvError, EnvSource};
pub use export::{
    ExportError, Exporter, ExporterCheck, ExporterContext, ExporterFactory, ExporterRegistry,
};
pub use fanout::ExporterStats;
pub use flush::TelemetryStats;
pub use recorded::Recorded;
pub use recorder::Recorder;
pub use telemetry::Telemetry;
pub use xfer::{XferError, XferHandle, XferTelemetry};

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
