//! The header's positions checked against the ring's own trailer, before a draining
//! reader trusts them: `read_pos` and `write_pos` are plain numbers anyone with
//! write access can change, and a reader that believed impossible ones would return
//! slots nobody wrote (or old ones again) and advance `read_pos` over them. The rules
//! are in `docs/FORMAT.md` (trailer, `unread_at_start`).

use crate::error::ShmError;
use crate::file::{MappedRing, RingMemory, read_at};
use telering_core::OverflowPolicy;
use telering_core::ring::HEADER_SIZE;

impl MappedRing {
    /// Refuses a ring whose header contradicts its own trailer, before a draining
    /// reader trusts (and advances) its positions: the unread events
    /// (`write_pos − read_pos`) must be no more than the trailer's `published` plus
    /// the events the ring held when its writer took it over (`unread_at_start`),
    /// and under `DropNewest` the newest of them that the writer published must
    /// carry its stamps, one consecutive run ending at `write_pos − 1`. Only rings
    /// whose trailer records `unread_at_start` are checked (earlier writers' files
    /// are read as before); rings without a trailer have nothing to check against.
    ///
    /// A live writer stores `published` just after `write_pos`, so one look can see
    /// a batch in between: the check is repeated for a moment before it refuses.
    pub(crate) fn check_positions(&self) -> Result<(), ShmError> {
        const ATTEMPTS: u32 = 20;
        const PAUSE: std::time::Duration = std::time::Duration::from_millis(5);
        let Some(cells) = self.trailer() else {
            return Ok(());
        };
        let mut attempt = 1;
        loop {
            let (w, r) = self.positions();
            let trailer = cells.read();
            let Some(at_start) = trailer.unread_at_start else {
                return Ok(());
            };
            match self.positions_problem(w, r, trailer.published, at_start, trailer.policy) {
                Ok(()) => return Ok(()),
                Err(e) if attempt >= ATTEMPTS => return Err(e),
                Err(_) => {
                    attempt += 1;
                    std::thread::sleep(PAUSE);
                }
            }
        }
    }

    fn positions_problem(
        &self,
        w: u64,
        r: u64,
        published: u64,
        at_start: u64,
        policy: OverflowPolicy,
    ) -> Result<(), ShmError> {
        use telering_core::ring::{CompactFormat, EventFormat, SlotFormat};
        let mask = u64::from(self.capacity()) - 1;
        let unread = w.wrapping_sub(r) & mask;
        let allowed = published.saturating_add(at_start);
        if unread > allowed {
            return Err(ShmError::InconsistentPositions {
                path: self.path.clone(),
                field: "read_pos",
                offset: 8,
                found: r,
                reason: format!(
                    "with `write_pos` {w} it leaves {unread} unread events, but the writer published {published} (trailer `published`) and found {at_start} unread when it took the ring over (trailer `unread_at_start`)"
                ),
            });
        }
        let stamp_offset = match &self.memory {
            RingMemory::Events(_) => EventFormat::STAMP_OFFSET,
            RingMemory::Compact(_) => CompactFormat::STAMP_OFFSET,
            RingMemory::Plain(_) => return Ok(()),
        };
        // The newest unread events this writer published: their stamps are final
        // under `DropNewest` (the writer does not touch an unread slot).
        let newest = unread.min(published);
        if policy != OverflowPolicy::DropNewest || newest == 0 {
            return Ok(());
        }
        let stamp_seq = |slot: u64| -> Result<Option<u32>, ShmError> {
            let at = HEADER_SIZE as u64
                + slot * self.generation.slot_size() as u64
                + stamp_offset as u64;
            let mut b = [0u8; 4];
            let got = read_at(&self.file, &self.path, &mut b, at)?;
            let stamp = u32::from_le_bytes(b);
            Ok((got == 4 && stamp & 0b11 == 0b10).then_some(stamp >> 2))
        };
        let last = stamp_seq(w.wrapping_sub(1) & mask)?;
        let first = stamp_seq(w.wrapping_sub(newest) & mask)?;
        let run = (newest - 1) as u32;
        match (first, last) {
            (Some(first), Some(last)) if last.wrapping_sub(first) & ((1 << 30) - 1) == run => {
                Ok(())
            }
            _ => Err(ShmError::InconsistentPositions {
                path: self.path.clone(),
                field: "write_pos",
                offset: 0,
                found: w,
                reason: format!(
                    "the {newest} slots before it should hold the newest events the writer published, one stamped run, but they do not (slot stamps at offset {stamp_offset})"
                ),
            }),
        }
    }
}
