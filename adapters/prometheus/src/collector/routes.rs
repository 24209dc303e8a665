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
//!
//! # Runs
//!
//! A route file holds one run's totals (a new writer removes the previous run's file
//! as it starts, and its own totals start from zero), while the agent's plain series
//! go on across a restart. So that the route families keep breaking the plain totals
//! down, and never go backwards, the collector carries each run's last totals when the
//! run ends (a route file or a ring written by another process, or no route file
//! while the ring has another writer): they are kept per route label and added to
//! every later run's totals, as the plain counters carry the earlier runs' events. A
//! route that the new run does not use keeps its carried totals. The carried totals
//! go with the agent's series (a new series, after the TTL or a reset, starts from
//! the file alone). A new run of the same process id (telemetry opened again, a
//! container's pid 1 restarted) is told by its totals: a file whose totals are below
//! the last one's for some route is another run's.

use std::os::unix::fs::MetadataExt;

use telering_std::route::file::{self, Polled, RouteFileWatch};
use telering_std::route::{RouteReport, RouteStats};

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
    /// The totals of the agent's earlier runs, per route label (see "Runs").
    carried: RouteReport,
    /// The current run's latest report, with the process that wrote it.
    current: Option<(u32, RouteReport)>,
}

impl RouteFileSeen {
    /// Ends the current run: its last totals are carried.
    fn end_run(&mut self) {
        if let Some((_, report)) = self.current.take() {
            self.carried = sum(std::mem::take(&mut self.carried), report);
        }
    }

    /// What the agent shows: the carried totals plus the current run's; `None` when
    /// it has no route at all.
    fn shown(&self) -> Option<RouteReport> {
        match &self.current {
            Some((_, report)) => some(sum(self.carried.clone(), report.clone())),
            None => self.carried_only(),
        }
    }

    /// The carried totals alone (while the file at the path is another process's).
    fn carried_only(&self) -> Option<RouteReport> {
        let mut carried = self.carried.clone();
        carried.slow.clear();
        some(carried)
    }
}

/// `report`, or `None` when it has no route.
fn some(report: RouteReport) -> Option<RouteReport> {
    (!report.routes.is_empty() || report.folded > 0).then_some(report)
}

/// `carried` with `run`'s totals added route by route; the slow transfers are `run`'s
/// (they belong to its latest interval).
fn sum(mut carried: RouteReport, run: RouteReport) -> RouteReport {
    for (route, stats) in run.routes {
        match carried.routes.iter_mut().find(|(r, _)| *r == route) {
            Some((_, total)) => add(total, &stats),
            None => carried.routes.push((route, stats)),
        }
    }
    carried.slow = run.slow;
    carried.folded = carried.folded.saturating_add(run.folded);
    carried
}

/// Whether `now` holds less than `before` did for some route (or the folded count):
/// a run's totals only grow, so `now` is another run's.
fn went_down(now: &RouteReport, before: &RouteReport) -> bool {
    let counts = |s: &RouteStats| -> Vec<u64> {
        let mut v = vec![s.bytes, s.transfers, s.descriptors];
        v.extend(s.xfer_time.counts);
        v.extend(s.post_time.counts);
        v.extend(s.errors);
        v
    };
    now.folded < before.folded
        || before.routes.iter().any(|(route, was)| {
            match now.routes.iter().find(|(r, _)| r == route) {
                Some((_, is)) => counts(is).iter().zip(counts(was)).any(|(a, b)| *a < b),
                None => true,
            }
        })
}

fn add(total: &mut RouteStats, more: &RouteStats) {
    total.bytes = total.bytes.saturating_add(more.bytes);
    total.transfers = total.transfers.saturating_add(more.transfers);
    total.descriptors = total.descriptors.saturating_add(more.descriptors);
    for (t, m) in [
        (&mut total.xfer_time, &more.xfer_time),
        (&mut total.post_time, &more.post_time),
    ] {
        for (a, b) in t.counts.iter_mut().zip(m.counts) {
            *a = a.saturating_add(b);
        }
        t.sum_us = t.sum_us.saturating_add(m.sum_us);
    }
    for (a, b) in total.errors.iter_mut().zip(more.errors) {
        *a = a.saturating_add(b);
    }
}

impl NodeCollector {
    /// Reads `name`'s route file if it changed since it was last read.
    pub(super) fn poll_route_file(&mut self, name: &str) {
        let Some(agent) = self.followed.get_mut(name) else {
            return;
        };
        let path = file::path_of(&self.options.dir, name);
        let writer_pid = agent.reader.trailer().map(|t| t.writer_pid);
        let polled = agent.route_file.watch.poll(&path, writer_pid);
        let seen = &mut agent.route_file;
        // The run whose routes are held ended: the ring or the file has another writer.
        let ended = match (&polled, &seen.current) {
            (_, None) => false,
            // A run of the same process id (telemetry opened again, a container's
            // pid 1 restarted) starts from zero: totals that go down.
            (Polled::Read(f), Some((pid, held))) => {
                f.writer_pid != *pid || went_down(&f.report(), held)
            }
            (Polled::Absent | Polled::Foreign(_), Some((pid, _))) => writer_pid != Some(*pid),
            _ => false,
        };
        if ended {
            seen.end_run();
        }
        match polled {
            Polled::Unchanged | Polled::Absent if !ended => {}
            Polled::Unchanged | Polled::Absent => {
                show(&mut self.model.lock(), name, seen.shown());
            }
            Polled::Foreign(pid) => {
                log::debug!(
                    "{}: written by process {pid}, not by the ring's writer; ignored",
                    log_text::path(&path),
                );
                // The next run's file, written before the reader took up the ring that
                // replaced the one it reads: the routes shown stay those of the ring
                // read, until the reader takes up the new one (and reads the file again).
                let followed = agent.reader.file_id();
                let at_path = std::fs::metadata(&agent.path)
                    .ok()
                    .map(|m| (m.dev(), m.ino()));
                if ended || at_path == Some(followed) {
                    show(&mut self.model.lock(), name, seen.carried_only());
                }
            }
            Polled::Read(routes) => {
                if std::mem::take(&mut seen.refused) {
                    log::info!("agent {}: its route file reads again", log_text::name(name));
                }
                seen.current = Some((routes.writer_pid, routes.report()));
                show(&mut self.model.lock(), name, seen.shown());
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

/// Puts `routes` into the model as `name`'s, or none.
fn show(model: &mut crate::model::MetricModel, name: &str, routes: Option<RouteReport>) {
    match routes {
        Some(report) => model.set_routes(name, report),
        None => model.remove_routes(name),
    }
}
