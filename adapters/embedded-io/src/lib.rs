//! telering events over a byte stream: a UART, a USB CDC port, a socket — anything
//! that implements [`embedded_io::Write`].
//!
//! The [`FrameExporter`] drains a ring and writes each event as one self-delimiting,
//! versioned, checksummed frame. It is `no_std`, allocates nothing and needs 68 bytes
//! of stack per frame. Behind the `std` feature, the `FrameDecoder` turns the byte
//! stream back into events on the host: it resynchronises after garbage and reports
//! every damaged, missing or out-of-order frame as a typed [`FrameError`].
//!
//! # Frame format, version 1
//!
//! One event is one frame. The frame body is:
//!
//! | offset | field | type |
//! |---|---|---|
//! | 0 | format version = [`FORMAT_VERSION`] | `u8` |
//! | 1 | frame kind = [`KIND_EVENT`] | `u8` |
//! | 2 | sequence number, +1 per frame the exporter attempts, from 0 | `u32` LE |
//! | 6 | the event's 56-byte wire record ([`telering_core::Event::to_wire_bytes`]) | `[u8; 56]` |
//! | 62 | CRC-32/ISO-HDLC (the zlib/Ethernet CRC) of bytes 0..62 | `u32` LE |
//!
//! The 66-byte body is COBS-encoded (Consistent Overhead Byte Stuffing: no zero byte
//! remains, at the cost of one byte) and followed by a single `0x00` delimiter, so a
//! frame is exactly [`ENCODED_FRAME_LEN`] + 1 = 68 bytes on the wire. The exporter also
//! writes one `0x00` before its first frame, which ends whatever noise the line
//! carried before.
//!
//! Version 2 (the [`link`] module, `docs/LINK.md`) adds a hello, clock frames and
//! batches of compact events; `link::LinkDecoder` reads both versions.
//!
//! Rules every later version keeps, so that a version-1 decoder can reject what it
//! does not understand instead of misreading it: byte 0 is the version, the last four
//! bytes are the CRC-32 of everything before them, and frames are COBS-encoded and
//! delimited by `0x00`.
//!
//! # Loss accounting
//!
//! The sequence number makes losses on the link visible: the decoder reports a gap as
//! [`FrameErrorKind::FramesMissing`] with the exact number of frames that never
//! arrived, whether the line dropped them or the writer failed half-way through one.
//! A frame with sequence number 0 starts a new stream (the device restarted). Losses
//! *before* the exporter — a full ring — arrive in-band as
//! `agent_telemetry_events_dropped` events, written by the recorder.
//!
//! ```
//! use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
//! use telering_embedded_io::{FrameExporter, FRAME_WIRE_LEN};
//!
//! static RING: Ring<16> = Ring::new();
//! let (mut producer, mut consumer) = RING.split(OverflowPolicy::DropNewest).unwrap();
//! producer.push(&Event::new(5, Category::Transfer, event_name!("agent_tx_bytes"), 4096)).unwrap();
//!
//! let mut line = [0u8; 256];
//! let mut exporter = FrameExporter::new(&mut line[..]);
//! assert_eq!(exporter.drain(&mut consumer, usize::MAX), Ok(1));
//! assert_eq!(exporter.frames_written(), 1);
//! // One synchronising zero, then one 68-byte frame ending in a zero.
//! assert_eq!(line[0], 0);
//! assert_eq!(line[FRAME_WIRE_LEN], 0);
//! assert!(line[1..FRAME_WIRE_LEN].iter().all(|&b| b != 0));
//! ```
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

#[cfg(feature = "std")]
mod chunker;
#[cfg(feature = "std")]
mod decoder;
mod exporter;
mod frame;
pub mod link;
#[cfg(feature = "std")]
mod seq_window;

#[cfg(feature = "std")]
pub use decoder::FrameDecoder;
pub use exporter::FrameExporter;
pub use frame::{
    BODY_LEN, ENCODED_FRAME_LEN, FORMAT_VERSION, FRAME_WIRE_LEN, Frame, FrameError, FrameErrorKind,
    KIND_EVENT, decode_frame, encode_frame,
};
