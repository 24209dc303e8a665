//! The writer's check that the path still names its file, and making the file again
//! when another program unlinked it (see the `writer` module's docs, "Writing").

use super::ShmWriter;
use crate::file::FileId;
use crate::layout::realtime_us;
use crate::leftover::RingShape;
use rustix::fs::AtFlags;

impl ShmWriter {
    /// Whether the path still names this writer's file: linked (`st_nlink` above 0)
    /// and the same inode at the path.
    fn still_linked(&self) -> bool {
        let linked = rustix::fs::fstat(&self.locked_file).map_or(true, |s| s.st_nlink > 0);
        let at_path = rustix::fs::statat(
            &self.dir,
            self.agent_name.as_str(),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .map(|s| FileId::of(&s) == self.id);
        linked && !matches!(at_path, Ok(false) | Err(rustix::io::Errno::NOENT))
    }

    /// Makes the file again if someone unlinked it (see the module docs); the events
    /// published into the unlinked file since the previous check are counted as lost.
    pub(super) fn relink_if_unlinked(&mut self) {
        self.link_checked_us = realtime_us();
        if self.still_linked() {
            self.published_at_check = self.events_published();
            return;
        }
        let lost = self
            .events_published()
            .saturating_sub(self.published_at_check);
        self.dropped_unlinked = self.dropped_unlinked.saturating_add(lost);
        let shape = RingShape {
            generation: self.options.layout.generation(),
            capacity: self.options.capacity as u64,
        };
        let made = crate::place::place(&self.options, &self.dir, &self.path, shape);
        let warn = !self.warned_unlinked;
        self.warned_unlinked = true;
        match made {
            Ok(parts) => {
                if warn {
                    log::warn!(
                        "{}: the ring file was unlinked or replaced by another program while this writer ran (NIXL's reader unlinks ring files of another version); made it again; {lost} events written into the unlinked file are counted as dropped (loss cause \"ring unlinked\"; in the new file's dropped_staging)",
                        self.path.display()
                    );
                }
                self.retired_published = self
                    .retired_published
                    .saturating_add(self.producer.events_published());
                self.retired_ring_full = self
                    .retired_ring_full
                    .saturating_add(self.producer.events_dropped());
                self.dropped_replaced = self.dropped_replaced.saturating_add(parts.lost_replaced);
                self.producer = parts.producer;
                self.locked_file = parts.file;
                self.id = parts.id;
                self.mapped_len = parts.mapped_len;
                self.truncated = false;
                self.published_at_check = self.events_published();
                self.store_dropped_staging();
                self.update_trailer();
            }
            Err(e) => {
                // Something else is at the path now: leave it alone. What this writer
                // writes from here on reaches no reader; count it as dropped.
                if warn {
                    log::warn!(
                        "{}: the ring file was unlinked or replaced by another program while this writer ran, and it cannot be made again ({e}); {lost} events written into the unlinked file and every further event are counted as dropped (loss cause \"ring unlinked\")",
                        self.path.display()
                    );
                }
                self.truncated = true;
                self.published_at_check = self.events_published();
            }
        }
    }
}
