//! What the host-side link decoder hands out: events, epochs, clock readings, and
//! every loss with its cause (see `docs/LINK.md`, "Loss accounting on the receiver").

use super::wire::Hello;
use crate::frame::FrameError;
use telering_core::Event;

/// Why events did not arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LossCause {
    /// Frames carrying them arrived damaged (CRC-32 or COBS check failed).
    Damaged,
    /// Frames carrying them never arrived: a sequence gap with no damaged frame
    /// before it (lost on the line, or the device's write failed).
    Missing,
    /// Their name id is not in the name table: the table's frame was lost, or the
    /// receiver joined the link after it was sent.
    UnknownName,
}

impl LossCause {
    /// A short stable label: `damaged`, `missing`, `unknown_name`.
    pub fn label(self) -> &'static str {
        match self {
            LossCause::Damaged => "damaged",
            LossCause::Missing => "missing",
            LossCause::UnknownName => "unknown_name",
        }
    }
}

/// A device's hello, owned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Agent name.
    pub agent: String,
    /// Firmware version.
    pub firmware_version: String,
    /// Ticks per second of its clock.
    pub ticks_per_second: u32,
    /// Capacity of its event ring.
    pub ring_capacity: u32,
}

impl From<Hello<'_>> for DeviceInfo {
    fn from(h: Hello<'_>) -> Self {
        DeviceInfo {
            agent: h.agent.to_owned(),
            firmware_version: h.firmware_version.to_owned(),
            ticks_per_second: h.ticks_per_second,
            ring_capacity: h.ring_capacity,
        }
    }
}

/// What a link delivered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkItem {
    /// A new epoch: the device (re)started and said hello, or the receiver joined a
    /// running link and got its first hello. `reset` is true when an earlier epoch
    /// was seen on this stream: the device restarted (never counted as a gap).
    Epoch {
        /// The device.
        device: DeviceInfo,
        /// Whether this epoch follows another on this stream.
        reset: bool,
    },
    /// The device restarted but its hello was lost: sequence numbers went back.
    ResetWithoutHello,
    /// An event. From a version-2 batch its timestamp is in device ticks (see
    /// [`DeviceInfo::ticks_per_second`]); from a version-1 frame, as recorded.
    Event {
        /// The event.
        event: Event,
        /// The frame version it came in.
        version: u8,
    },
    /// A clock frame: the device's clock when it wrote the frame.
    Clock {
        /// Device ticks.
        ticks: u64,
    },
    /// Events that did not arrive, and why.
    Lost {
        /// How many.
        events: u64,
        /// Why.
        cause: LossCause,
    },
    /// Bytes that were not part of any frame.
    Noise {
        /// How many.
        bytes: u64,
    },
    /// A problem worth a log line (the losses it causes come as `Lost`/`Noise`).
    Problem(FrameError),
}
