//! Bulk reads for NumPy: events go from the ring straight into one `bytearray` laid
//! out as the NIXL version-1 slot (56 bytes, little-endian), which
//! `telering._arrays` views as a structured array without copying again. No Python
//! object is made per event.
//!
//! The draining reader knows how many events wait (`fill`), so the `bytearray` is
//! allocated once at that size and filled in place with the GIL released. An observer
//! does not know how far behind it is; it reads into a growing buffer (GIL released)
//! and the result is copied once into the `bytearray`.

use crate::errors::shm_error;
use crate::records::{Lenient, RingReader};
use pyo3::prelude::*;
use pyo3::types::PyByteArray;
use telering_core::EVENT_SIZE;

/// Events read in one step by an observer's bulk read.
const OBSERVER_CHUNK: usize = 1 << 14;

/// Events in a `bytearray`, `count` of them (the array may be longer).
#[derive(Debug)]
pub(crate) struct Raw<'py> {
    bytes: Bound<'py, PyByteArray>,
    count: usize,
}

/// Reads up to `limit` events into a `bytearray`, each as found (those that do not
/// validate are noted in `lenient`). `sized`: `limit` events are known to be waiting (a draining
/// reader), so the array is allocated at that size up front.
pub(crate) fn read_into_bytearray<'py, R: RingReader>(
    py: Python<'py>,
    reader: &mut R,
    limit: usize,
    sized: bool,
    lenient: &mut Lenient,
) -> PyResult<Raw<'py>> {
    if sized {
        let mut count = 0;
        let bytes = PyByteArray::new_with(py, limit * EVENT_SIZE, |buf| {
            py.detach(|| {
                let mut slots = buf.chunks_exact_mut(EVENT_SIZE);
                reader.batch(limit, &mut |record| {
                    if !record.problems().is_empty() {
                        lenient.note(&record);
                    }
                    if let Some(slot) = slots.next() {
                        slot.copy_from_slice(&record.to_wire_bytes());
                        count += 1;
                    }
                })
            })
            .map(drop)
            .map_err(|e| shm_error(py, e))
        })?;
        return Ok(Raw { bytes, count });
    }
    let mut buf: Vec<u8> = Vec::new();
    let mut count = 0;
    py.detach(|| {
        let mut consumed = 0;
        while consumed < limit {
            let step = OBSERVER_CHUNK.min(limit - consumed);
            let n = reader.batch(step, &mut |record| {
                if !record.problems().is_empty() {
                    lenient.note(&record);
                }
                buf.extend_from_slice(&record.to_wire_bytes());
                count += 1;
            })?;
            consumed += n;
            if n < step {
                break; // caught up with the writer
            }
        }
        Ok::<(), telering_shm::ShmError>(())
    })
    .map_err(|e| shm_error(py, e))?;
    Ok(Raw {
        bytes: PyByteArray::new(py, &buf),
        count,
    })
}

/// Raises `ImportError` (saying how to install it) unless NumPy can be imported;
/// called before a bulk read takes anything from a ring.
pub(crate) fn require_numpy(py: Python<'_>) -> PyResult<()> {
    py.import("telering._arrays")?
        .call_method0("event_dtype")
        .map(drop)
}

/// The NumPy structured array over `raw` (`telering._arrays.from_buffer`).
pub(crate) fn to_numpy<'py>(py: Python<'py>, raw: Raw<'py>) -> PyResult<Bound<'py, PyAny>> {
    py.import("telering._arrays")?
        .call_method1("from_buffer", (raw.bytes, raw.count))
}
