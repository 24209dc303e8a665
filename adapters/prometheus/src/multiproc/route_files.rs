//! What the serving rank remembers of each rank's route file across scrapes (see
//! [`RouteFilesSeen`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use telering_core::text::Escaped;
use telering_std::route::RouteReport;
use telering_std::route::file::{self, Polled, RouteFileWatch};

use crate::model::MetricModel;

const EMFILE: i32 = rustix::io::Errno::MFILE.raw_os_error();
const ENFILE: i32 = rustix::io::Errno::NFILE.raw_os_error();

/// Every rank's route file as the serving process last saw it, shared by the clones
/// of one [`NodeSource`](super::NodeSource).
///
/// The node page is built afresh on every scrape ([`serve`](super::serve)), but a refusal is
/// counted once per version of the file, for the life of the serving process, exactly
/// as `telering serve`'s collector counts `telering_route_files_rejected_total`: each
/// rank's file is followed by one [`RouteFileWatch`] (read again only when its inode,
/// change time or size moved, that is when the rank renamed a new file into place),
/// so one increment is one refusal of one version of the file. A refused file that
/// stays as it is counts once however many scrapes see it; a file refused again after
/// it changed counts again. The rank keeps the routes of its last file accepted.
///
/// Not counted: a file that cannot be opened for want of descriptors (the reader's
/// shortage, read again at the next scrape), and a file another process wrote (its
/// `writer_pid` is not the rank's), which is ignored and gives the rank no routes.
///
/// The count lives in the serving process: when another rank takes over serving, it
/// counts again from the files it finds refused, which Prometheus reads as a counter
/// reset. A rank whose store is gone (deleted past the stale TTL) is forgotten.
///
/// ```
/// use telering_prometheus::multiproc::RouteFilesSeen;
/// let seen = RouteFilesSeen::default();
/// let same = seen.clone(); // shares what `seen` remembers
/// # drop((seen, same));
/// ```
#[derive(Clone, Debug, Default)]
pub struct RouteFilesSeen {
    ranks: Arc<Mutex<HashMap<String, RankRouteFile>>>,
}

/// One rank's route file, by its instance.
#[derive(Debug, Default)]
pub(crate) struct RankRouteFile {
    watch: RouteFileWatch,
    /// The routes of the last file accepted.
    report: Option<RouteReport>,
    /// Versions of the file refused so far.
    rejected: u64,
    /// Whether the latest version was refused (warned once per spell).
    refused: bool,
}

impl RouteFilesSeen {
    /// Locks the map for one scrape; a scrape that panicked leaves counts that are
    /// still whole (each is one `u64` written at once), so a poisoned lock is taken.
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<String, RankRouteFile>> {
        self.ranks.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Adds the routes of the rank `instance` (process `pid`, its series under `key`) to
/// `model` from its route file at `path`, polled through `seen`.
pub(crate) fn load(
    path: &Path,
    pid: u32,
    key: &str,
    seen: &mut RankRouteFile,
    model: &mut MetricModel,
) {
    match seen.watch.poll(path, Some(pid)) {
        Polled::Unchanged => {}
        Polled::Absent => seen.report = None,
        Polled::Foreign(other) => {
            log::debug!(
                "prometheus_mp: the route file {} was written by process {other}, not by the rank's; ignored",
                Escaped::bytes(path.as_os_str().as_encoded_bytes())
            );
            seen.report = None;
        }
        Polled::Read(f) => {
            if std::mem::take(&mut seen.refused) {
                log::info!(
                    "prometheus_mp: the route file {} reads again",
                    Escaped::bytes(path.as_os_str().as_encoded_bytes())
                );
            }
            seen.report = Some(f.report());
        }
        Polled::Refused(file::RouteFileError::Io(e)) if matches!(e.raw_os_error(), Some(n) if n == EMFILE || n == ENFILE) =>
        {
            seen.watch.forget();
            log::debug!(
                "prometheus_mp: the route file {} is not read yet: {e}",
                Escaped::bytes(path.as_os_str().as_encoded_bytes())
            );
        }
        Polled::Refused(e) => {
            seen.rejected = seen.rejected.saturating_add(1);
            let (path, e) = (
                Escaped::bytes(path.as_os_str().as_encoded_bytes()),
                e.to_string(),
            );
            if std::mem::replace(&mut seen.refused, true) {
                log::debug!(
                    "prometheus_mp: the route file {path} is refused: {}",
                    Escaped::new(&e)
                );
            } else {
                log::warn!(
                    "prometheus_mp: the route file {path} is refused: {}; the rank keeps the routes of its last file accepted",
                    Escaped::new(&e)
                );
            }
        }
    }
    if let Some(report) = &seen.report {
        model.set_routes(key, report.clone());
    }
    if seen.rejected > 0 {
        model.set_route_files_rejected(key, seen.rejected);
    }
}
