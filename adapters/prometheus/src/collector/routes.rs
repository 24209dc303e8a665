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

use telering_std::route::file::{self, Polled, RouteFileWatch};

use super::NodeCollector;
use super::log_text::{self, ErrorText};

const EMFILE: i32 = rustix::io::Errno::MFILE.raw_os_error();
const ENFILE: i32 = rustix::io::Errno::NFILE.raw_os_error();

/// What the collector knows of one agent's route file.
#[derive(Debug, Default)]
pub(super) struct RouteFileSeen {
    /// The file followed across polls (read again only once it or the ring's writer
    /// changed).
    watch: RouteFileWatch,
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
        let writer_pid = agent.reader.trailer().map(|t| t.writer_pid);
        let seen = &mut agent.route_file;
        match seen.watch.poll(&path, writer_pid) {
            Polled::Unchanged | Polled::Absent => {}
            Polled::Foreign(pid) => {
                log::debug!(
                    "{}: written by process {pid}, not by the ring's writer; ignored",
                    log_text::path(&path),
                );
                self.model.lock().remove_routes(name);
            }
            Polled::Read(routes) => {
                if std::mem::take(&mut seen.refused) {
                    log::info!("agent {}: its route file reads again", log_text::name(name));
                }
                self.model.lock().set_routes(name, routes.report());
            }
            // Out of descriptors is the collector's shortage, not the file's fault:
            // read it again at the next poll.
            Polled::Refused(file::RouteFileError::Io(e)) if matches!(e.raw_os_error(), Some(n) if n == EMFILE || n == ENFILE) =>
            {
                seen.watch.forget();
                log::debug!("{}: not read yet: {e}", log_text::path(&path));
            }
            Polled::Refused(e) => {
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
