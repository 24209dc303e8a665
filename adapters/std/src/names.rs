//! Names become ids once: the table that maps a lane record's 16-bit id to the name
//! and category of the event it stands for.
//!
//! Lanes carry 16-byte [`LaneRecord`](telering_core::ring::LaneRecord)s, which have
//! no room for a 31-byte name. Each `Telemetry` keeps one [`NameTable`]:
//!
//! - the built-in events take ids `0 .. BUILTIN_COUNT`, in [`BUILTINS`]' order, when
//!   the table is made (their ids are compile-time constants at every call site);
//! - a [`CustomEvent`](crate::CustomEvent) takes its id when the handle is made;
//! - [`Telemetry::record`](crate::Telemetry::record) and `record_event` find the id
//!   in a cache of their lane, owned by the recording thread, so a name already seen
//!   by that thread costs a hash lookup and no lock; a name new to the thread takes
//!   the table's lock once ([`NameTable::intern`]).
//!
//! Ids are never reused or removed, so the flush, which expands records back into
//! events, reads the table once per flush under the same lock. An id is interned
//! before any record carries it, and records reach the flush through the lane's
//! release/acquire publication, so every id the flush meets is in the table.
//!
//! The id [`EPOCH_MARK`] is no name's: it marks a change of the stamps' high bits
//! (see [`crate::lane`]); the 8 192 ids from `0xE000` are the routes'
//! ([`crate::route`]). That leaves 57 344 ids, of which the built-ins take
//! [`BUILTIN_COUNT`]; a `(name, category)` pair met after the table is full is
//! counted as dropped, with one warning.

use crate::builtins::{BUILTIN_COUNT, BUILTINS};
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use telering_core::{Category, EventName};

/// The id of the marker record that carries the stamps' new high bits.
pub(crate) const EPOCH_MARK: u16 = u16::MAX;

/// How many ids a table can hand out: those below the routes' ids
/// ([`crate::route`]), which end at [`EPOCH_MARK`].
pub(crate) const MAX_IDS: usize = crate::route::ROUTE_BASE as usize;

/// What an id stands for.
pub(crate) type Named = (EventName, Category);

/// The ids of one `Telemetry` (see the module docs).
#[derive(Debug)]
pub(crate) struct NameTable {
    inner: Mutex<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Id → name and category; ids are indices.
    names: Vec<Named>,
    ids: HashMap<Named, u16>,
    /// Whether the table being full was logged.
    warned_full: bool,
}

impl NameTable {
    /// A table holding the built-in events at ids `0 .. BUILTIN_COUNT`.
    pub(crate) fn new() -> NameTable {
        let names: Vec<Named> = BUILTINS.iter().map(|b| (b.name, b.category)).collect();
        let ids = names
            .iter()
            .enumerate()
            .map(|(id, named)| (*named, id as u16))
            .collect();
        NameTable {
            inner: Mutex::new(Inner {
                names,
                ids,
                warned_full: false,
            }),
        }
    }

    /// The id of `name` in `category`, given it now if it has none; `None` (warned
    /// once) when every id is taken.
    pub(crate) fn intern(&self, name: &EventName, category: Category) -> Option<u16> {
        let mut inner = self.lock();
        let named = (*name, category);
        if let Some(&id) = inner.ids.get(&named) {
            return Some(id);
        }
        if inner.names.len() >= MAX_IDS {
            if !inner.warned_full {
                inner.warned_full = true;
                log::warn!(
                    "telemetry has {MAX_IDS} distinct event names: events of new names (first `{name}`) are counted as dropped"
                );
            }
            return None;
        }
        let id = inner.names.len() as u16;
        inner.names.push(named);
        inner.ids.insert(named, id);
        Some(id)
    }

    /// The table as the flush reads it: id → name and category.
    pub(crate) fn read(&self) -> NamesGuard<'_> {
        NamesGuard(self.lock())
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The table locked for reading (see [`NameTable::read`]).
pub(crate) struct NamesGuard<'a>(MutexGuard<'a, Inner>);

impl NamesGuard<'_> {
    /// Id → name and category.
    pub(crate) fn names(&self) -> &[Named] {
        &self.0.names
    }
}

const _: () = assert!(BUILTIN_COUNT < MAX_IDS);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::idx;
    use telering_core::event_name;

    #[test]
    fn built_ins_hold_their_indices_and_new_names_get_the_next_ids_once() {
        let table = NameTable::new();
        {
            let read = table.read();
            assert_eq!(read.names().len(), BUILTIN_COUNT);
            assert_eq!(read.names()[idx::TX_BYTES].0.as_str(), "agent_tx_bytes");
        }
        let q = event_name!("queue_depth");
        let a = table.intern(&q, Category::Custom).unwrap();
        assert_eq!(a as usize, BUILTIN_COUNT);
        assert_eq!(table.intern(&q, Category::Custom), Some(a));
        // Another category is another event.
        let b = table.intern(&q, Category::System).unwrap();
        assert_eq!(b, a + 1);
        // A built-in name in its own category is the built-in's id.
        let tx = table.intern(&event_name!("agent_tx_bytes"), Category::Transfer);
        assert_eq!(tx, Some(idx::TX_BYTES as u16));
        assert_eq!(table.read().names()[b as usize], (q, Category::System));
    }

    #[test]
    fn a_full_table_refuses_new_names_and_keeps_the_old() {
        let table = NameTable::new();
        let mut last = None;
        for i in 0..(MAX_IDS - BUILTIN_COUNT) {
            let name = EventName::new(&format!("n{i}")).unwrap();
            last = Some((name, table.intern(&name, Category::Custom).unwrap()));
        }
        let (name, id) = last.unwrap();
        assert_eq!(id as usize, MAX_IDS - 1);
        assert_ne!(id, EPOCH_MARK);
        assert_eq!(
            table.intern(&event_name!("one_too_many"), Category::Custom),
            None
        );
        assert_eq!(table.intern(&name, Category::Custom), Some(id));
    }
}
