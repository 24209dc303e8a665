//! The collector's reader of one ring: an observer or the draining reader.

use std::path::Path;

use telering_core::{Event, ObserverStart};
use telering_shm::{
    DrainingReader, Generation, ObserverReader, RingFileInfo, ShmError, TrailerInfo,
};

use super::ReadMode;

pub(super) enum Reader {
    Observe(ObserverReader),
    Drain(DrainingReader),
}

impl Reader {
    pub(super) fn open(path: &Path, mode: ReadMode) -> Result<Reader, ShmError> {
        Ok(match mode {
            ReadMode::Observe => {
                Reader::Observe(ObserverReader::open(path, ObserverStart::Oldest)?)
            }
            ReadMode::Drain => Reader::Drain(DrainingReader::open(path)?),
        })
    }

    /// Of the events a writer that replaced the ring counted lost ("replaced"), those
    /// this reader had read in the replaced file (a draining reader keeps the
    /// replaced file's events: none are lost then).
    pub(super) fn replaced_already_read(&self) -> u64 {
        match self {
            Reader::Observe(r) => r.replaced_already_read(),
            Reader::Drain(_) => 0,
        }
    }

    /// The device and inode of the file being read.
    pub(super) fn file_id(&self) -> (u64, u64) {
        match self {
            Reader::Observe(r) => r.file_id(),
            Reader::Drain(r) => r.file_id(),
        }
    }

    pub(super) fn read_batch(
        &mut self,
        max: usize,
        each: impl FnMut(Result<Event, ShmError>),
    ) -> Result<usize, ShmError> {
        match self {
            Reader::Observe(r) => r.read_batch(max, each),
            Reader::Drain(r) => r.read_batch(max, each),
        }
    }

    /// Events lost to this reader (overwritten before it read them).
    pub(super) fn lost(&self) -> u64 {
        match self {
            Reader::Observe(r) => r.events_missed(),
            Reader::Drain(r) => r.events_lost(),
        }
    }

    pub(super) fn info(&self) -> RingFileInfo {
        match self {
            Reader::Observe(r) => r.info(),
            Reader::Drain(r) => r.info(),
        }
    }

    pub(super) fn generation(&self) -> Generation {
        match self {
            Reader::Observe(r) => r.generation(),
            Reader::Drain(r) => r.generation(),
        }
    }

    /// The trailer as the writer last published it, read from the mapping.
    pub(super) fn trailer(&self) -> Option<TrailerInfo> {
        match self {
            Reader::Observe(r) => r.trailer(),
            Reader::Drain(r) => r.trailer(),
        }
    }
}
