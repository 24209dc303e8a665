//! Finding ring files: the directory scan, taking up a new or revived agent, and the
//! rings that cannot be followed for want of file descriptors.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use telering_core::text::Escaped;
use telering_shm::ShmError;

use super::fd_limit::{out_of_descriptors, ring_budget};
use super::{
    Expired, FileKey, Followed, NodeCollector, Reader, WriterCounters, fingerprint, start_series,
};

/// Why a ring file found by a scan was not followed.
enum Refused {
    /// No descriptor to open it with (the soft limit is reached).
    Descriptors,
    /// `max_agents` are followed already.
    MaxAgents,
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
                        self.options.dir.display()
                    );
                }
                entries
            }
            Err(e) => {
                if !std::mem::replace(&mut self.dir_unreadable, true) {
                    log::warn!(
                        "cannot read the ring directory {}: {e}",
                        self.options.dir.display()
                    );
                }
                return;
            }
        };
        let budget = ring_budget(self.options.limits.max_connections);
        let (mut descriptors, mut max_agents) = (0usize, 0usize);
        for entry in entries.flatten() {
            let name = match entry.file_name().into_string() {
                Ok(name) => name,
                Err(raw) => {
                    if self.non_utf8.insert(raw) {
                        log::warn!(
                            "{}: skipped, the file name is not UTF-8, so it is no agent's ring file",
                            entry.path().display()
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
                    log::warn!("{}: skipped: {what}", path.display());
                }
                continue;
            }
            let key = (meta.dev(), meta.ino());
            if self.ignored.get(&name) == Some(&key) {
                continue;
            }
            // An expired file stays expired until its writer does something again: it
            // writes, drops, beats or closes (a short run under the same name, or a
            // process that was stopped for longer than the TTL and continued).
            if self.expired.get(&name).is_some_and(|e| e.key == key) && !self.revived(&name) {
                continue;
            }
            let open = self.followed.len() + self.kept_readers();
            let refused = if self.followed.len() >= self.options.max_agents {
                Some(Refused::MaxAgents)
            } else if open >= budget && self.expired.get(&name).is_none_or(|e| e.reader.is_none()) {
                Some(Refused::Descriptors)
            } else {
                self.follow(name, path, key)
            };
            match refused {
                Some(Refused::Descriptors) => descriptors += 1,
                Some(Refused::MaxAgents) => max_agents += 1,
                None => {}
            }
        }
        self.report_not_followed(descriptors, max_agents);
    }

    /// Readers kept for expired files (each holds a descriptor).
    pub(super) fn kept_readers(&self) -> usize {
        self.expired.values().filter(|e| e.reader.is_some()).count()
    }

    /// Logs the number of rings a scan could not follow when it changes.
    fn report_not_followed(&mut self, descriptors: usize, max_agents: usize) {
        let total = descriptors + max_agents;
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
            "not following {total} ring files in {dir}: {descriptors} for want of file descriptors (open-file limit {}, {} rings followed; raise `ulimit -n`), {max_agents} past max_agents ({}); they are retried at every scan",
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
    fn follow(&mut self, name: String, path: PathBuf, key: FileKey) -> Option<Refused> {
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
                log::info!("following agent {name} ({})", path.display());
                self.ignored.remove(&name);
                start_series(&mut self.model.lock(), &name);
                self.followed
                    .insert(name, Followed::new(path, key, reader, writer));
                None
            }
            Err(e) if out_of_descriptors(&e) => {
                log::debug!("not following {} yet: {e}", escaped(&path));
                Some(Refused::Descriptors)
            }
            Err(e @ ShmError::NoSlotStamps { .. }) => {
                log::warn!(
                    "not following {}: {e}; if nothing else drains it, serve it as its draining reader (ReadMode::Drain, `telering serve --drain`)",
                    path.display()
                );
                self.ignored.insert(name, key);
                None
            }
            Err(e) => {
                log::warn!("not following {}: {e}", path.display());
                self.ignored.insert(name, key);
                None
            }
        }
    }
}

/// A path as the log shows text telering did not make.
fn escaped(path: &Path) -> Escaped<'_> {
    Escaped::bytes(path.as_os_str().as_bytes())
}
