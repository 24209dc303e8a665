//! `defmt::Format` for [`Event`], [`Category`] and [`EventName`] (feature `defmt`).
//!
//! defmt sends format strings as 2-byte indices, not text: an event costs its
//! timestamp and value (8 bytes each), its name's bytes after a 4-byte length, and
//! 2-byte indices and markers for the format strings, the category's interned short
//! name among them (48 bytes for `agent_tx_bytes` under telering-defmt's exporter).
//! An event read from foreign memory with an invalid category or name is still
//! logged, with the raw category number and the raw name bytes.
//!
//! The line for an event is `<timestamp>us <CATEGORY> <name>=<value>`, for example
//! `1500us TRANSFER agent_tx_bytes=4096`.

use crate::event::{Category, Event, EventName};

impl defmt::Format for Category {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self {
            Category::Memory => defmt::write!(f, "MEMORY"),
            Category::Transfer => defmt::write!(f, "TRANSFER"),
            Category::Connection => defmt::write!(f, "CONNECTION"),
            Category::Backend => defmt::write!(f, "BACKEND"),
            Category::Error => defmt::write!(f, "ERROR"),
            Category::Performance => defmt::write!(f, "PERFORMANCE"),
            Category::System => defmt::write!(f, "SYSTEM"),
            Category::Custom => defmt::write!(f, "CUSTOM"),
        }
    }
}

impl defmt::Format for EventName {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.as_str())
    }
}

impl defmt::Format for Event {
    fn format(&self, f: defmt::Formatter<'_>) {
        match (self.category(), self.name()) {
            (Ok(category), Ok(name)) => defmt::write!(
                f,
                "{=u64}us {} {=str}={=u64}",
                self.timestamp_us(),
                category,
                name,
                self.value()
            ),
            _ => defmt::write!(
                f,
                "{=u64}us invalid event: category {=i32}, name field {=[u8]}={=u64}",
                self.timestamp_us(),
                self.raw_category(),
                &self.name_field()[..],
                self.value()
            ),
        }
    }
}
