#![doc = include_str!("../README.md")]
#![no_std]
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[cfg(test)]
extern crate std;

pub mod allowlist;
pub mod builtin;
pub mod clock;
pub mod drop_report;
pub mod event;
pub mod record;
pub mod ring;
mod sync;
pub mod text;

pub use allowlist::{Allowlist, OwningAllowlist};
pub use clock::Clock;
pub use event::{Category, DecodeError, EVENT_SIZE, Event, EventName, NameError, UnknownCategory};
pub use record::{Recorded, Recorder};
pub use ring::{
    AlreadySplit, Batch, Consumer, Full, Observability, Observer, ObserverStart, OverflowPolicy,
    Producer, Ring, Unobserved,
};
