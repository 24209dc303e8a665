//! Finding ring files: the directory scan, taking up a new or revived agent, and the
//! rings that cannot be followed for want of file descriptors.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use telering_shm::ShmError;

use super::fd_limit::{out_of_descriptors, ring_budget};
use super::log_text::{self, ErrorText, path as escaped};
use super::{
    Expired, FileKey, Followed, NodeCollector, Reader, WriterCounters, fingerprint, start_series,
};

/// Why a ring file found by a scan was not followed.
enum Refused {
    /// No descriptor to open it with (the soft limit is reached).
    Descriptors,
    /// `max_agents` are followed already.
    MaxAgents,
    /// Another draining reader holds the ring (in [`ReadMode::Drain`](super::ReadMode)):
    /// a previous `serve --drain` on its way out, a `telering read`.
    Drained,
}

impl NodeCollector {
    /// Looks for new ring files now.
    pub fn scan(&mut self) {
        self.last_scan = Some(std::time::Instant::now());
        let entries = match std::fs::read_dir(&self.options.dir) {
            Ok(entries) => {
                if std::mem::take(&mut self.dir_unreadable) {
                    log::info!(
                        "the ring directory {} is readable again",
                        escaped(&self.options.dir)
                    );
                }
                entries
            }
            Err(e) => {
                if !std::mem::replace(&mut self.dir_unreadable, true) {
                    log::warn!(
                        "cannot read the ring directory {}: {}",
                        escaped(&self.options.dir),
                        ErrorText::of(&e)
                    );
                }
                return;
            }
        };
        let entries: Vec<std::fs::DirEntry> = entries.flatten().collect();
        self.forget_removed(&entries);
        let budget = ring_budget(self.options.limits.max_connections);
        let (mut descriptors, mut max_agents, mut drained) = (0usize, 0usize, 0usize);
        for entry in entries {
            let name = match entry.file_name().into_string() {
                Ok(name) => name,
                Err(raw) => {
                    if self.non_utf8.insert(raw) {
                        log::warn!(
                            "{}: skipped, the file name is not UTF-8, so it is no agent's ring file",
                            escaped(&entry.path())
                        );
                    }
                    continue;
                }
            };
            if name.starts_with('.') || self.followed.contains_key(&name) {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let kind = meta.file_type();
            if !kind.is_file() {
                if self.not_files.insert(name) {
                    let what = if kind.is_symlink() {
                        "a symbolic link: rings are read only at the path their writer made, never through a link"
                    } else if kind.is_dir() {
                        "a directory"
                    } else {
                        "not a regular file (a FIFO, socket or device)"
                    };
                    log::warn!("{}: skipped: {what}", escaped(&path));
                }
                continue;
            }
            // An empty file is a ring its writer is still sizing, or a file another
            // program just created: looked at once it holds something.
            if meta.len() == 0 {
                continue;
            }
            let key = (meta.dev(), meta.ino());
            if self.ignored.get(&name) == Some(&(key, meta.len())) {
                continue;
            }
            // An expired file stays expired until its writer does something again: it
            // writes, drops, beats or closes (a short run under the same name, or a
            // process that was stopped for longer than the TTL and continued).
            if self.expired.get(&name).is_some_and(|e| e.key == key) && !self.revived(&name) {
                continue;
            }
            let mut open = self.followed.len() + self.kept_readers();
            let own_reader = self.expired.get(&name).is_some_and(|e| e.reader.is_some());
            if open >= budget && !own_reader && self.close_a_kept_reader() {
                open -= 1;
            }
            let refused = if self.followed.len() >= self.options.max_agents {
                Some(Refused::MaxAgents)
            } else if open >= budget && self.expired.get(&name).is_none_or(|e| e.reader.is_none()) {
                Some(Refused::Descriptors)
            } else {
                self.follow(name, path, (key, meta.len()))
            };
            match refused {
                Some(Refused::Descriptors) => descriptors += 1,
                Some(Refused::MaxAgents) => max_agents += 1,
                Some(Refused::Drained) => drained += 1,
                None => {}
            }
        }
        self.report_not_followed(descriptors, max_agents, drained);
    }

    /// Forgets what it kept about names no longer in the directory: an expired ring's
    /// reader (its descriptor and mapping would keep the removed file's memory), and
    /// the names reported once, so that rings coming and going by the thousand leave
    /// nothing behind.
    fn forget_removed(&mut self, entries: &[std::fs::DirEntry]) {
        let names: HashSet<std::ffi::OsString> = entries.iter().map(|e| e.file_name()).collect();
        let present = |name: &String| names.contains(std::ffi::OsStr::new(name));
        self.expired.retain(|name, _| present(name));
        self.ignored.retain(|name, _| present(name));
        self.not_files.retain(present);
        self.non_utf8.retain(|raw| names.contains(raw));
    }

    /// Closes the reader kept for one expired ring, to make room for a ring that has
    /// none; `false` when no reader is kept. Such a ring, if its writer comes back, is
    /// read again from its oldest event as a new series.
    fn close_a_kept_reader(&mut self) -> bool {
        match self.expired.values_mut().find(|e| e.reader.is_some()) {
            Some(expired) => {
                expired.reader = None;
                true
            }
            None => false,
        }
    }

    /// Readers kept for expired files (each holds a descriptor).
    pub(super) fn kept_readers(&self) -> usize {
        self.expired.values().filter(|e| e.reader.is_some()).count()
    }

    /// Logs the number of rings a scan could not follow when it changes.
    fn report_not_followed(&mut self, descriptors: usize, max_agents: usize, drained: usize) {
        let total = descriptors + max_agents + drained;
        self.model.lock().set_rings_not_followed(&[
            ("fds", descriptors as u64),
            ("max_agents", max_agents as u64),
            ("drained", drained as u64),
        ]);
        if total == self.not_followed {
            return;
        }
        self.not_followed = total;
        let dir = escaped(&self.options.dir);
        if total == 0 {
            log::info!("every ring file in {dir} is followed again");
            return;
        }
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        log::warn!(
            "not following {total} ring files in {dir}: {descriptors} for want of file descriptors (open-file limit {}, {} rings followed; raise `ulimit -n`), {max_agents} past max_agents ({}), {drained} drained by another reader (a ring has one draining reader: stop the other one); they are retried at every scan",
            limit.map_or_else(|| "unlimited".to_owned(), |n| n.to_string()),
            self.followed.len(),
            self.options.max_agents,
        );
    }

    /// Whether the expired file `name` has a writer at work again: its trailer's
    /// fingerprint (writer pid, published and dropped counts, heartbeat, clean close)
    /// moved since the series expired.
    fn revived(&self, name: &str) -> bool {
        let Some(expired) = self.expired.get(name) else {
            return false;
        };
        let trailer = match &expired.reader {
            Some(reader) => reader.trailer(),
            None => telering_shm::stat(&self.options.dir.join(name))
                .ok()
                .and_then(|info| info.trailer),
        };
        trailer.is_some_and(|t| Some(fingerprint(&t)) != expired.fingerprint)
    }

    /// Starts following `name`; `Some` when it cannot for want of a resource (it is
    /// tried again at the next scan), `None` when it is followed or ignored for good.
    fn follow(&mut self, name: String, path: PathBuf, seen: (FileKey, u64)) -> Option<Refused> {
        let key = seen.0;
        let (kept, writer) = match self.expired.remove(&name) {
            Some(Expired {
                key: k,
                reader: Some(reader),
                writer,
                ..
            }) if k == key => (Some(reader), writer),
            _ => (None, WriterCounters::default()),
        };
        let opened = match kept {
            Some(reader) => Ok(reader),
            None => Reader::open(&path, self.options.mode),
        };
        match opened {
            Ok(reader) => {
                log::info!(
                    "following agent {} ({})",
                    log_text::name(&name),
                    escaped(&path)
                );
                self.ignored.remove(&name);
                start_series(&mut self.model.lock(), &name);
                self.followed
                    .insert(name, Followed::new(path, key, reader, writer));
                None
            }
            Err(e @ ShmError::DrainerRunning { .. }) => {
                log::debug!(
                    "not following {} yet: {}",
                    escaped(&path),
                    ErrorText::of(&e)
                );
                Some(Refused::Drained)
            }
            Err(e) if out_of_descriptors(&e) => {
                log::debug!(
                    "not following {} yet: {}",
                    escaped(&path),
                    ErrorText::of(&e)
                );
                Some(Refused::Descriptors)
            }
            // A file looked at again because its size changed (it may be becoming a
            // ring) was reported already: once is enough for a file that keeps growing.
            Err(e) if self.ignored.get(&name).is_some_and(|(k, _)| *k == key) => {
                log::debug!(
                    "still not following {}: {}",
                    escaped(&path),
                    ErrorText::of(&e)
                );
                self.ignored.insert(name, seen);
                None
            }
            Err(e @ ShmError::NoSlotStamps { .. }) => {
                log::warn!(
                    "not following {}: {}; if nothing else drains it, serve it as its draining reader (ReadMode::Drain, `telering serve --drain`)",
                    escaped(&path),
                    ErrorText::of(&e)
                );
                self.ignored.insert(name, seen);
                None
            }
            // The csv exporter's own files, when it writes beside the rings (the
            // demo's `--exporter buffer,csv`): known for what they are, no warning.
            Err(e) if is_telering_csv(&path) => {
                log::debug!(
                    "not following {}: a file of telering's csv exporter ({})",
                    escaped(&path),
                    ErrorText::of(&e)
                );
                self.ignored.insert(name, seen);
                None
            }
            Err(e) => {
                log::warn!("not following {}: {}", escaped(&path), ErrorText::of(&e));
                self.ignored.insert(name, seen);
                None
            }
        }
    }
}

/// Whether `path` starts with the header line of a file telering's csv exporter
/// writes (events or routes). Reads at most that many bytes, never through a link.
fn is_telering_csv(path: &std::path::Path) -> bool {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    use telering_std::export::{CSV_HEADER, CsvExporter};
    let mut start = [0u8; 256];
    let Ok(file) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(path)
    else {
        return false;
    };
    let mut len = 0;
    let mut file = file.take(start.len() as u64);
    while let Ok(n @ 1..) = file.read(&mut start[len..]) {
        len += n;
    }
    let start = &start[..len];
    [CSV_HEADER, CsvExporter::ROUTES_HEADER]
        .iter()
        .any(|header| {
            start.starts_with(header.as_bytes()) && start[header.len()..].starts_with(b"\r\n")
        })
}
