//! telering events logged with [defmt](https://defmt.ferrous-systems.com), the
//! deferred-formatting logger for microcontrollers.
//!
//! This crate implements `defmt::Format` for [`Event`], [`Category`] and
//! [`EventName`] through the [`Defmt`] view, so they can appear in any defmt log
//! statement (`defmt::info!("{}", Defmt(&event))`); and it provides the
//! [`DefmtExporter`], which drains a ring and logs each event as one compact line:
//!
//! ```text
//! telering 1500us TRANSFER agent_tx_bytes=4096
//! ```
//!
//! defmt transmits the index of each format string and the arguments' bytes; the host
//! tools (`defmt-print`, `probe-rs`, the `defmt-decoder` crate) put the text back
//! together from the firmware's ELF file. What that saves on the device is the
//! formatting code and time, not bytes: the timestamp and value travel as 8 bytes
//! each and the name as its bytes with a 4-byte length, so the line above is 48
//! bytes before defmt's framing, against 44 as text (measured in `tests/encoding.rs`).
//! The exporter logs with `defmt::println!`, which no `DEFMT_LOG` level filter
//! removes: telemetry is data, not a diagnostic that a release build may compile out.
//!
//! The firmware links one defmt global logger (for example `defmt-rtt`, or
//! `defmt-semihosting` under QEMU) and the `defmt.x` linker script; this crate needs
//! neither.
//!
//! ```no_run
//! use telering_core::{event_name, Category, Event, OverflowPolicy, Ring};
//! use telering_defmt::{Defmt, DefmtExporter};
//!
//! static RING: Ring<64> = Ring::new();
//! let (mut producer, mut consumer) = RING.split(OverflowPolicy::DropNewest).unwrap();
//! producer.push(&Event::new(1500, Category::Transfer, event_name!("agent_tx_bytes"), 4096)).unwrap();
//!
//! let mut exporter = DefmtExporter::new();
//! assert_eq!(exporter.drain(&mut consumer, usize::MAX), 1);
//! // Any defmt statement can show telering types too:
//! defmt::info!("category {}", Defmt(&Category::Transfer));
//! ```
#![cfg_attr(not(test), no_std)]
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod format;

pub use format::Defmt;
pub use telering_core::{Category, Event, EventName};

use telering_core::Consumer;
use telering_core::ring::EventOwner;

/// Logs drained events with defmt, one line per event. See the crate docs.
#[derive(Debug, Default)]
pub struct DefmtExporter {
    events_logged: u64,
}

impl DefmtExporter {
    /// An exporter that has logged nothing yet.
    pub const fn new() -> DefmtExporter {
        DefmtExporter { events_logged: 0 }
    }

    /// Logs one event as `telering <timestamp>us <CATEGORY> <name>=<value>`.
    #[inline]
    pub fn export(&mut self, event: &Event) {
        defmt::println!("telering {}", Defmt(event));
        self.events_logged += 1;
    }

    /// Takes up to `max` events from `consumer` and logs each; returns how many.
    /// defmt's transport cannot fail from the caller's point of view (a full RTT
    /// buffer drops or blocks as the logger is configured), so this returns no error.
    pub fn drain<R: EventOwner>(&mut self, consumer: &mut Consumer<R>, max: usize) -> usize {
        consumer.read_batch(max, |event| self.export(event))
    }

    /// Events logged so far.
    pub fn events_logged(&self) -> u64 {
        self.events_logged
    }
}
