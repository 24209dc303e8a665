//! Each agent's route file (`DIR/.routes/<agent>`, written by the agent's `buffer`
//! exporter, see [`telering_std::route::file`]): looked at with one `stat` at every
//! poll, as the ring is read, so the route totals are as fresh as the ring's counters;
//! read again only when it changed (a new file renamed into place), into the agent's
//! route families.
//!
//! The file is foreign input: bounded, checked field by field by its reader. A file
//! that is refused (malformed, truncated, oversized, not a regular file) is counted in
//! `telering_route_files_rejected_total`, logged (a warning for the first of a
//! spell, then at debug level), and ignored: the agent keeps the routes of the last
//! file accepted. An agent without a route file (no routes recorded, a writer that is
//! not telering's) has no route series.
//!
//! A route file belongs to the ring's current writer only when the ring's trailer
//! names the same process (`writer_pid`): a file another run left (a ring since taken
//! over by another writer, NIXL's included, whose rings have no trailer) is ignored,
//! not counted as refused, and the agent shows no routes from it.

use std::os::unix::fs::MetadataExt;

use telering_std::route::file;

use super::NodeCollector;

const EMFILE: i32 = rustix::io::Errno::MFILE.raw_os_error();
const ENFILE: i32 = rustix::io::Errno::NFILE.raw_os_error();
use super::log_text::{self, ErrorText};

/// What the collector knows of one agent's route file.
#[derive(Debug, Default)]
pub(super) struct RouteFileSeen {
    /// Inode, change time and size of the file last read, and the ring's writer pid
    /// then, to read it again only once either changed (each write renames a new file
    /// into place).
    key: Option<(u64, i64, i64, u64, Option<u32>)>,
    /// Whether the file was refused at the last read (warned once per spell).
    refused: bool,
}

impl NodeCollector {
    /// Reads `name`'s route file if it changed since it was last read.
    pub(super) fn poll_route_file(&mut self, name: &str) {
        let Some(agent) = self.followed.get_mut(name) else {
            return;
        };
        let path = file::path_of(&self.options.dir, name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            agent.route_file.key = None;
            return;
        };
        let writer_pid = agent.reader.trailer().map(|t| t.writer_pid);
        let key = (
            meta.ino(),
            meta.ctime(),
            meta.ctime_nsec(),
            meta.len(),
            writer_pid,
        );
        if agent.route_file.key == Some(key) {
            return;
        }
        agent.route_file.key = Some(key);
        let seen = &mut agent.route_file;
        match file::read(&path) {
            Ok(Some(routes)) if Some(routes.writer_pid) != writer_pid => {
                log::debug!(
                    "{}: written by process {}, not by the ring's writer; ignored",
                    log_text::path(&path),
                    routes.writer_pid
                );
                self.model.lock().remove_routes(name);
            }
            Ok(Some(routes)) => {
                if std::mem::take(&mut seen.refused) {
                    log::info!("agent {}: its route file reads again", log_text::name(name));
                }
                self.model.lock().set_routes(name, routes.report());
            }
            Ok(None) => seen.key = None,
            // Out of descriptors is the collector's shortage, not the file's fault:
            // read it again at the next poll.
            Err(file::RouteFileError::Io(e)) if matches!(e.raw_os_error(), Some(n) if n == EMFILE || n == ENFILE) =>
            {
                seen.key = None;
                log::debug!("{}: not read yet: {e}", log_text::path(&path));
            }
            Err(e) => {
                self.model.lock().count_route_file_rejected(name);
                let text = ErrorText::of(&e);
                if std::mem::replace(&mut seen.refused, true) {
                    log::debug!("{}: refused: {text}", log_text::path(&path));
                } else {
                    log::warn!(
                        "{}: route file refused: {text}; agent {} keeps the routes of its last file accepted",
                        log_text::path(&path),
                        log_text::name(name)
                    );
                }
            }
        }
    }
}
