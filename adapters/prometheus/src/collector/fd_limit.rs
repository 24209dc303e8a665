//! File descriptors: each followed ring holds one (its reader keeps the file open to
//! check its size and its writer's lock), and so does each HTTP connection. A node of a
//! thousand agents is past the usual soft limit of 1024, so the collector raises its
//! soft `RLIMIT_NOFILE` to the hard limit, and follows no more rings than leave room
//! for the endpoint's connections under it: the rings past that are counted and named
//! in the log (and in [`NodeStatus::rings_not_followed`](super::NodeStatus)), not a
//! reason to exit.

use rustix::process::{Resource, getrlimit, setrlimit};

/// Descriptors kept free for everything that is not a ring: the listening socket,
/// standard streams, the directory scan, the log, a push connection.
const SPARE: u64 = 32;

/// Raises the soft limit on open files to the hard limit, once per process start (a
/// process inherits the soft limit, often 1024, while the hard one is usually far
/// higher). Returns the soft limit now in force, `None` if it is unlimited.
///
/// ```
/// let soft = telering_prometheus::collector::raise_fd_limit();
/// assert!(soft.is_none_or(|n| n > 0));
/// ```
pub fn raise_fd_limit() -> Option<u64> {
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let before = limit.current;
        limit.current = limit.maximum;
        match setrlimit(Resource::Nofile, limit) {
            Ok(()) => log::debug!(
                "open-file limit raised from {} to {}",
                shown(before),
                shown(limit.maximum)
            ),
            Err(e) => log::warn!(
                "cannot raise the open-file limit from {} to {}: {e}",
                shown(before),
                shown(limit.maximum)
            ),
        }
    }
    getrlimit(Resource::Nofile).current
}

fn shown(limit: Option<u64>) -> String {
    limit.map_or_else(|| "unlimited".to_owned(), |n| n.to_string())
}

/// How many rings may be open at once under the current soft limit, leaving room for
/// `connections` HTTP connections (at most a quarter of the limit) and [`SPARE`].
pub(super) fn ring_budget(connections: usize) -> usize {
    let Some(soft) = getrlimit(Resource::Nofile).current else {
        return usize::MAX;
    };
    let connections = (connections as u64).min(soft / 4);
    usize::try_from(soft.saturating_sub(connections + SPARE)).unwrap_or(usize::MAX)
}

/// Whether opening failed because the process or the system is out of descriptors.
pub(super) fn out_of_descriptors(e: &telering_shm::ShmError) -> bool {
    let source = match e {
        telering_shm::ShmError::Io { source, .. } => source,
        _ => return false,
    };
    matches!(
        source.raw_os_error(),
        Some(code) if code == rustix::io::Errno::MFILE.raw_os_error()
            || code == rustix::io::Errno::NFILE.raw_os_error()
    )
}
