#![doc = include_str!("../README.md")]
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod abi;
pub mod degraded;
pub mod exporter;
pub mod logging;

pub use exporter::{CreateError, EXPORTERS_VAR, PluginExporter};
