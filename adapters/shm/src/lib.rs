//! The shared-memory ring file of telering, byte-compatible with NIXL's telemetry
//! readers: it writes NIXL's version-1 layout (the default) or version 4
//! ([`RingLayout`]), and reads every generation NIXL has written ([`Generation`]).
//!
//! An agent's events go to `$NIXL_TELEMETRY_DIR/<agent_name>`: NIXL's 40-byte header,
//! `capacity` 56-byte slots (16-byte slots in version 4), and after the last slot a
//! telering trailer that NIXL's readers never look at (writer pid, exact loss counters, heartbeat, clock,
//! clean-close flag). The ring algorithm is `telering_core`'s, run over the mapping
//! (`telering_core::ring::RingRegion`); this crate adds the file: safe creation,
//! locking, validation, mapping and the trailer. The complete byte layout is in
//! `docs/FORMAT.md` and in [`layout`].
//!
//! - [`ShmWriter`]: creates the file (blocks reserved, built under a temporary name and
//!   put in place without replacing anything, so no reader sees a half-initialised ring
//!   and of writers starting at once exactly one wins), holds an exclusive `flock` for
//!   its lifetime (a second writer for the agent fails), reuses a dead writer's ring of
//!   the same shape in place so running readers keep following it, and is the ring's
//!   one producer. A file that is not provably a dead writer's ring is left untouched.
//! - [`DrainingReader`]: the one consumer, advancing `read_pos` like NIXL's readers.
//! - [`ObserverReader`]: any number of read-only followers that never write the file
//!   and count exactly the events they missed.
//! - [`stat`]: what a file holds, without changing it.
//!
//! Readers validate everything before they trust it and never modify, truncate or
//! delete a file they cannot read. Another process truncating a mapped file cannot
//! kill a writer or reader with `SIGBUS`: the fault is caught, and the writer counts
//! what it can no longer write while readers return [`ShmError::Truncated`]. They
//! also read rings without a trailer: files NIXL's own writer made (any generation,
//! see [`Generation`]; draining readers only, since they carry no slot stamps), and
//! raw windows laid out by `telering_core` alone
//! ([`ObserverReader::open_core_window`]). [`RingRecord`]s show what a slot holds even
//! when it does not validate as a telering [`telering_core::Event`].
//!
//! ```
//! # let dir = std::env::temp_dir().join(format!("telering-doc-lib-{}", std::process::id()));
//! use telering_core::{event_name, Category, Event, ObserverStart};
//! use telering_shm::{stat, DrainingReader, ObserverReader, ShmWriter, WriterOptions};
//!
//! let mut writer = ShmWriter::create(WriterOptions::new(&dir, "agent-0"))?;
//! let mut reader = DrainingReader::open(writer.path())?;
//! let mut observer = ObserverReader::open(writer.path(), ObserverStart::Oldest)?;
//!
//! writer.write_batch(&[Event::new(1, Category::Transfer, event_name!("agent_tx_bytes"), 4096)]);
//! assert_eq!(reader.pop()?.map(|e| e.value()), Some(4096));
//! assert_eq!(observer.poll()?.map(|e| e.value()), Some(4096));
//!
//! let path = writer.path().to_path_buf();
//! writer.close()?;
//! let info = stat(&path)?;
//! assert!(info.trailer.unwrap().clean_close && !info.writer_alive);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), telering_shm::ShmError>(())
//! ```

#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

mod carry;
mod create;
mod detect;
mod drain;
mod drain_lock;
mod error;
mod file;
mod generation;
mod guard;
pub mod layout;
mod leftover;
mod mapping;
mod observer;
mod options;
mod place;
mod plain;
mod positions;
mod reader;
mod ring_layout;
mod ring_producer;
mod window;
mod writer;

pub use error::ShmError;
pub use file::{RingFileInfo, stat};
pub use generation::{Generation, RecordProblem, RingRecord};
pub use layout::{ClockId, TrailerInfo};
pub use observer::ObserverReader;
pub use options::{DEFAULT_MODE, MAX_AGENT_NAME_LEN, WriterOptions, validate_agent_name};
pub use reader::DrainingReader;
pub use ring_layout::{RING_LAYOUT_VAR, RingLayout, UnknownLayout, v4_type_of};
pub use writer::ShmWriter;
