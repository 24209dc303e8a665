//! `defmt::Format` for [`Event`], [`Category`] and [`EventName`], through the
//! [`Defmt`] view: `defmt::info!("{}", Defmt(&event))`.
//!
//! The implementations live here, not in telering-core behind a feature, so that
//! defmt's symbols (its interned format strings are linker symbols named by JSON
//! text) are linked only into programs that use this crate: a `cdylib` such as
//! libtelering links telering-core and must export no such symbol, which no linker
//! version script can name.
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

use telering_core::{Category, Event, EventName};

/// A telering value shown in a defmt log statement: `Defmt(&event)`,
/// `Defmt(&Category::Transfer)`, `Defmt(&name)`.
///
/// ```no_run
/// use telering_core::{event_name, Category, Event};
/// use telering_defmt::Defmt;
/// let event = Event::new(1500, Category::Transfer, event_name!("agent_tx_bytes"), 4096);
/// defmt::info!("got {}", Defmt(&event)); // 1500us TRANSFER agent_tx_bytes=4096
/// defmt::info!("category {}", Defmt(&Category::Transfer));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Defmt<'a, T: ?Sized>(pub &'a T);

impl defmt::Format for Defmt<'_, Category> {
    fn format(&self, f: defmt::Formatter<'_>) {
        match self.0 {
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

impl defmt::Format for Defmt<'_, EventName> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.0.as_str())
    }
}

impl defmt::Format for Defmt<'_, Event> {
    fn format(&self, f: defmt::Formatter<'_>) {
        let event = self.0;
        match (event.category(), event.name()) {
            (Ok(category), Ok(name)) => defmt::write!(
                f,
                "{=u64}us {} {=str}={=u64}",
                event.timestamp_us(),
                Defmt(&category),
                name,
                event.value()
            ),
            _ => defmt::write!(
                f,
                "{=u64}us invalid event: category {=i32}, name field {=[u8]}={=u64}",
                event.timestamp_us(),
                event.raw_category(),
                &event.name_field()[..],
                event.value()
            ),
        }
    }
}
