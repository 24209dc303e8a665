//! The version-2 frame layout in one place: its constants and the hello record (see
//! `docs/LINK.md`). The encoder writes it; `parse` reads it back.

/// The link format version of hello, name-table, event-batch and clock frames.
pub const LINK_VERSION: u8 = 2;
/// Kind of a hello frame: who the device is (agent name, firmware version, clock,
/// ring capacity). Sequence number 0 starts a new epoch.
pub const KIND_HELLO: u8 = 1;
/// Kind of a name-table frame: `(id, category, name)` entries.
pub const KIND_NAMES: u8 = 2;
/// Kind of an event-batch frame: compact events referring to the name table.
pub const KIND_EVENTS: u8 = 3;
/// Kind of a clock frame: the device's clock when the frame was written.
pub const KIND_CLOCK: u8 = 4;
/// Longest version-2 body (before COBS): COBS then adds exactly one byte, so an
/// encoded frame and its delimiter take at most 255 bytes.
pub const MAX_BODY_V2: usize = 253;
/// Version, kind and sequence number.
pub const HEADER_LEN: usize = 6;
/// The CRC-32 trailer.
pub const CRC_LEN: usize = 4;
/// Longest agent name a hello carries.
pub const MAX_AGENT_LEN: usize = 64;
/// Longest firmware version string a hello carries.
pub const MAX_VERSION_LEN: usize = 32;
/// In an event batch, the tag of an event whose name is written inline (the name
/// table was full): category and name follow the tag.
pub const TAG_INLINE: u64 = 0;

const _: () = {
    assert!(cobs::max_encoding_length(MAX_BODY_V2) == MAX_BODY_V2 + 1);
    assert!(MAX_BODY_V2 < 254);
};

/// What a device says about itself in its hello frame.
///
/// ```
/// use telering_embedded_io::link::Hello;
/// let hello = Hello { agent: "dpu0-fw", firmware_version: "1.4.2", ticks_per_second: 1_000_000, ring_capacity: 64 };
/// assert_eq!(hello.agent, "dpu0-fw");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello<'a> {
    /// The agent name its events are filed under (at most [`MAX_AGENT_LEN`] bytes).
    pub agent: &'a str,
    /// The firmware's version (at most [`MAX_VERSION_LEN`] bytes).
    pub firmware_version: &'a str,
    /// Clock unit: event timestamps and clock frames count ticks of this many per
    /// second.
    pub ticks_per_second: u32,
    /// Capacity of the device's event ring.
    pub ring_capacity: u32,
}
