#![doc = include_str!("../README.md")]
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
// The C names (`telering_status_t`, `TELERING_OK`) are the API.
#![allow(non_camel_case_types)]

pub mod backend;
pub mod event;
pub mod event_handle;
pub mod exporters;
mod handle;
pub mod logging;
pub mod names;
pub mod reader;
pub mod record;
pub mod recorder;
pub mod route;
pub mod status;
pub mod telemetry;
pub mod xfer;

pub use backend::*;
pub use event::*;
pub use event_handle::*;
pub use exporters::*;
pub use logging::*;
pub use names::*;
pub use reader::*;
pub use record::*;
pub use recorder::*;
pub use route::*;
pub use status::*;
pub use telemetry::*;
pub use xfer::*;
