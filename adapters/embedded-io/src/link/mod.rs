//! Link format version 2: a hello, clock frames, and batches of compact events that
//! refer to a name table (see `docs/LINK.md` for the byte layout and the rules).
//!
//! - [`LinkEncoder`] (`no_std`, no allocation): the device side.
//! - `LinkDecoder` (feature `std`): the host side; it reads version-1 frames too, and
//!   reports every event that did not arrive as [`LinkItem::Lost`] with its cause.
//!
//! A version-1 frame carries one 56-byte event in 68 bytes on the wire. A version-2
//! batch carries up to a few dozen events, each as a name id, a timestamp delta and a
//! value in LEB128 (typically 4 to 7 bytes), behind one header, one sequence number
//! and one CRC-32: the demo mix takes about 6 bytes per event (BENCHMARKS.md).

#[cfg(feature = "std")]
mod decoder;
mod encoder;
#[cfg(feature = "std")]
mod item;
mod out;
#[cfg(feature = "std")]
mod parse;
pub mod varint;
mod wire;

#[cfg(feature = "std")]
pub use decoder::LinkDecoder;
pub use encoder::LinkEncoder;
#[cfg(feature = "std")]
pub use item::{DeviceInfo, LinkItem, LossCause};
pub use wire::{
    Hello, KIND_CLOCK, KIND_EVENTS, KIND_HELLO, KIND_NAMES, LINK_VERSION, MAX_AGENT_LEN,
    MAX_BODY_V2, MAX_VERSION_LEN,
};
