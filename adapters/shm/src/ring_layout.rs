//! Which layout the writer writes: NIXL's version 1 (telering's default) or version 4
//! (what NIXL ≥ 1.3.1 readers read), and which events version 4 can hold.
//!
//! Version 4 stores an event as a type number and a value (see
//! [`crate::Generation`]). NIXL's built-in events map to their type numbers and each
//! `NIXL_ERR_<STATUS>` error event to its `agent_err_<status>` type
//! ([`telering_core::builtin::nixl_type_of`]). Every other event — a custom or backend
//! event, or a built-in name under a category other than the one NIXL implies for it
//! — has no version-4 form: the writer does not write it, and counts it.

use std::fmt;
use std::str::FromStr;
use telering_core::Event;
use telering_core::builtin::{implied_category, nixl_type_name, nixl_type_of};

use crate::Generation;

/// The variable that chooses the layout of the ring file the shared-memory exporter
/// writes (telering's own namespace: NIXL has no such variable).
pub const RING_LAYOUT_VAR: &str = "TELERING_RING_LAYOUT";

/// The layout a writer gives its ring file.
///
/// ```
/// use telering_shm::RingLayout;
/// assert_eq!("v4".parse::<RingLayout>(), Ok(RingLayout::V4));
/// assert_eq!(RingLayout::default(), RingLayout::V1);
/// let error = "v3".parse::<RingLayout>().unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "TELERING_RING_LAYOUT=v3 is not a ring layout; use v1 (timestamps, categories and names; the default) or v4 (for NIXL 1.3.1 and later readers)"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RingLayout {
    /// NIXL's version 1: 56-byte slots with timestamp, category and name.
    #[default]
    V1,
    /// NIXL's version 4: 16-byte slots with a type number and a value, which NIXL
    /// 1.3.1 and later read; telering's slot stamps sit in the 4 bytes at offset 4.
    V4,
}

impl RingLayout {
    /// The name used by [`RING_LAYOUT_VAR`] and `telering demo --layout`.
    pub const fn as_str(self) -> &'static str {
        match self {
            RingLayout::V1 => "v1",
            RingLayout::V4 => "v4",
        }
    }

    /// The ring generation this layout writes.
    pub const fn generation(self) -> Generation {
        match self {
            RingLayout::V1 => Generation::V1,
            RingLayout::V4 => Generation::V4,
        }
    }
}

impl fmt::Display for RingLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A layout name that is neither `v1` nor `v4`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownLayout {
    /// The value given.
    pub value: String,
}

impl fmt::Display for UnknownLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{RING_LAYOUT_VAR}={} is not a ring layout; use v1 (timestamps, categories and names; the default) or v4 (for NIXL 1.3.1 and later readers)",
            self.value
        )
    }
}

impl std::error::Error for UnknownLayout {}

impl FromStr for RingLayout {
    type Err = UnknownLayout;

    /// `v1` or `v4`, ignoring ASCII case and surrounding blanks.
    fn from_str(value: &str) -> Result<RingLayout, UnknownLayout> {
        match value.trim().to_ascii_lowercase().as_str() {
            "v1" => Ok(RingLayout::V1),
            "v4" => Ok(RingLayout::V4),
            _ => Err(UnknownLayout {
                value: value.to_owned(),
            }),
        }
    }
}

/// The type number `event` is written as in a version-4 ring, or `None` if version 4
/// cannot represent it (see the module docs).
///
/// ```
/// use telering_core::{builtin, event_name, Category, Event};
/// use telering_shm::v4_type_of;
/// let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 64);
/// assert_eq!(v4_type_of(&tx), Some(0));
/// let err = builtin::ErrorStatus::Canceled.event();
/// assert_eq!(v4_type_of(&Event::new(1, err.category, err.name, 1)), Some(18));
/// assert_eq!(v4_type_of(&Event::new(1, Category::Custom, event_name!("queue_depth"), 3)), None);
/// // A built-in name under another category would be read back under the wrong one.
/// assert_eq!(v4_type_of(&Event::new(1, Category::Custom, builtin::AGENT_TX_BYTES.name, 64)), None);
/// ```
pub fn v4_type_of(event: &Event) -> Option<u32> {
    let type_number = nixl_type_of(event.name().ok()?)?;
    let implied = nixl_type_name(type_number).and_then(implied_category)?;
    (event.category().ok()? == implied).then_some(type_number)
}
