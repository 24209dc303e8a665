//! Rank store files: each rank's cumulative series, and whether the rank lives.
//!
//! A rank owns two files in the multiproc directory, named after its instance:
//!
//! - `rank-<instance>.lock`, created and `flock`ed exclusively at start and held for
//!   the life of the process. The kernel releases the lock when the process ends, how
//!   ever it ends (`kill -9` included), so a reader that can take the lock knows the
//!   rank is dead.
//! - `rank-<instance>.store`, the rank's identity and a [`snapshot`] of its series,
//!   rewritten by the rank's flush thread every run interval: written whole into a
//!   temporary file, then renamed over the store, so a reader sees the previous or the
//!   next snapshot, never a torn one. Its modification time is the rank's last flush.
//!
//! - `rank-<instance>.routes`, the rank's route totals when it recorded routes (the
//!   layout of [`telering_std::route::file`]), replaced whole the same way; deleted
//!   with the store.
//!
//! [`snapshot`]: crate::MetricModel::snapshot

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustix::fs::{FlockOperation, flock};

use super::route_files::{self, RouteFilesSeen};
use crate::model::MetricModel;

const MAGIC: &[u8; 8] = b"TLRMPST1";
const STORE_PREFIX: &str = "rank-";
const STORE_SUFFIX: &str = ".store";
const ROUTES_SUFFIX: &str = ".routes";

/// Who a rank is: the labels its series get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankIdentity {
    /// The agent's name (`agent_name` label).
    pub agent_name: String,
    /// Unique per agent start: `<pid>-<start time in ms since the epoch>-<n>`.
    pub instance: String,
    /// The `local_rank` label.
    pub local_rank: String,
    /// The process id.
    pub pid: u32,
}

impl RankIdentity {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.pid.to_le_bytes());
        for s in [&self.agent_name, &self.instance, &self.local_rank] {
            let bytes = &s.as_bytes()[..s.len().min(u16::MAX as usize)];
            out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            out.extend_from_slice(bytes);
        }
    }

    /// Splits a store file into the identity and the snapshot bytes.
    fn decode(bytes: &[u8]) -> Option<(RankIdentity, &[u8])> {
        let rest = bytes.strip_prefix(MAGIC)?;
        let (pid, mut rest) = rest.split_at_checked(4)?;
        let pid = u32::from_le_bytes(pid.try_into().ok()?);
        let mut strings = Vec::with_capacity(3);
        for _ in 0..3 {
            let (len, tail) = rest.split_at_checked(2)?;
            let len = u16::from_le_bytes(len.try_into().ok()?) as usize;
            let (s, tail) = tail.split_at_checked(len)?;
            strings.push(String::from_utf8(s.to_vec()).ok()?);
            rest = tail;
        }
        let local_rank = strings.pop()?;
        let instance = strings.pop()?;
        let agent_name = strings.pop()?;
        Some((
            RankIdentity {
                agent_name,
                instance,
                local_rank,
                pid,
            },
            rest,
        ))
    }
}

/// The writing side: one rank's lock and store.
#[derive(Debug)]
pub(crate) struct RankStore {
    identity: RankIdentity,
    /// Held (flocked) for the life of the store: the rank's liveness.
    _lock: File,
    path: PathBuf,
    tmp: PathBuf,
    buf: Vec<u8>,
}

fn lock_path(dir: &Path, instance: &str) -> PathBuf {
    dir.join(format!("{STORE_PREFIX}{instance}.lock"))
}

fn routes_name(instance: &str) -> String {
    format!("{STORE_PREFIX}{instance}{ROUTES_SUFFIX}")
}

impl RankStore {
    /// Creates the rank's lock (taken) and an empty store.
    pub(crate) fn create(dir: &Path, identity: RankIdentity) -> io::Result<RankStore> {
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(lock_path(dir, &identity.instance))?;
        flock(&lock, FlockOperation::NonBlockingLockExclusive).map_err(io::Error::from)?;
        let instance = &identity.instance;
        Ok(RankStore {
            path: dir.join(format!("{STORE_PREFIX}{instance}{STORE_SUFFIX}")),
            tmp: dir.join(format!(".{STORE_PREFIX}{instance}.tmp")),
            identity,
            _lock: lock,
            buf: Vec::new(),
        })
    }

    /// Replaces the store's content with `snapshot`.
    pub(crate) fn write(&mut self, snapshot: &[u8]) -> io::Result<()> {
        self.buf.clear();
        self.identity.encode(&mut self.buf);
        self.buf.extend_from_slice(snapshot);
        let mut file = File::create(&self.tmp)?;
        file.write_all(&self.buf)?;
        drop(file);
        fs::rename(&self.tmp, &self.path)
    }

    /// Replaces the rank's route file with `bytes`.
    pub(crate) fn write_routes(&mut self, bytes: &[u8]) -> io::Result<()> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        telering_std::route::file::replace(dir, &routes_name(&self.identity.instance), bytes)
    }
}

/// Whether the rank owning `instance`'s lock still runs.
fn is_alive(dir: &Path, instance: &str) -> bool {
    let Ok(lock) = File::open(lock_path(dir, instance)) else {
        return false;
    };
    // Taking the lock (released when `lock` drops) proves its owner has exited.
    flock(&lock, FlockOperation::NonBlockingLockShared).is_err()
}

/// A store's bytes and its age (since its last write; zero when unknown or in the
/// future), both from the one file opened.
fn read_store(path: &Path) -> io::Result<(Vec<u8>, Duration)> {
    let mut file = File::open(path)?;
    let meta = file.metadata()?;
    let age = meta
        .modified()
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default();
    // A store is replaced whole (written aside, renamed into place), so the file
    // opened keeps the length it was opened with: one read of exactly that many
    // bytes (`read_to_end` would ask for the length and position again and read once
    // more to see the end).
    let mut bytes = vec![0; meta.len() as usize];
    io::Read::read_exact(&mut file, &mut bytes)?;
    Ok((bytes, age))
}

/// Adds every live or recently dead rank's series in `dir` to `model`, labelled with
/// `pid`, `agent_instance` and `local_rank`. Stores of ranks dead for longer than
/// `stale_ttl` (by their last write) are deleted with their lock files. Each rank's
/// route file is polled through `route_files`, which forgets the ranks no longer
/// listed. Returns the number of ranks added.
pub(crate) fn load_all(
    dir: &Path,
    model: &mut MetricModel,
    stale_ttl: Duration,
    route_files: &RouteFilesSeen,
) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut route_files = route_files.lock();
    let mut listed = HashSet::new();
    let mut added = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(instance) = name
            .to_str()
            .and_then(|n| n.strip_prefix(STORE_PREFIX))
            .and_then(|n| n.strip_suffix(STORE_SUFFIX))
        else {
            continue;
        };
        // Remembered while its store is listed, even on a scrape that cannot read it
        // (out of descriptors), so its route-file count never starts again at zero.
        listed.insert(instance.to_owned());
        let path = entry.path();
        let Ok((bytes, age)) = read_store(&path) else {
            continue; // Deleted since the listing.
        };
        // A store written within the TTL is served whether its rank lives or not, so
        // only an older one costs a liveness check (opening and trying its lock).
        if age > stale_ttl && !is_alive(dir, instance) {
            let _ = fs::remove_file(&path);
            let _ = fs::remove_file(lock_path(dir, instance));
            let _ = fs::remove_file(dir.join(routes_name(instance)));
            listed.remove(instance);
            continue;
        }
        let Some((id, snapshot)) = RankIdentity::decode(&bytes) else {
            log::warn!(
                "prometheus_mp: {} is not a rank store; skipped",
                path.display()
            );
            continue;
        };
        let key = format!("{}\u{0}{}", id.agent_name, id.instance);
        let labels = vec![
            ("pid", id.pid.to_string()),
            ("agent_instance", id.instance.clone()),
            ("local_rank", id.local_rank.clone()),
        ];
        match model.insert_snapshot(&key, &id.agent_name, labels, snapshot) {
            Ok(()) => {
                added += 1;
                let seen = route_files.entry(instance.to_owned()).or_default();
                let path = dir.join(routes_name(instance));
                route_files::load(&path, id.pid, &key, seen, model);
            }
            Err(e) => log::warn!(
                "prometheus_mp: the store of agent {} ({}) is skipped: {e}",
                id.agent_name,
                path.display()
            ),
        }
    }
    route_files.retain(|instance, _| listed.contains(instance));
    added
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Buckets;

    fn identity(instance: &str) -> RankIdentity {
        RankIdentity {
            agent_name: "a".into(),
            instance: instance.into(),
            local_rank: "0".into(),
            pid: 7,
        }
    }

    #[test]
    fn identity_round_trips_and_garbage_is_refused() {
        let mut buf = Vec::new();
        identity("7-1").encode(&mut buf);
        buf.extend_from_slice(b"rest");
        let (id, rest) = RankIdentity::decode(&buf).unwrap();
        assert_eq!(id, identity("7-1"));
        assert_eq!(rest, b"rest");
        assert!(RankIdentity::decode(&buf[..12]).is_none());
        assert!(RankIdentity::decode(b"nonsense").is_none());
    }

    #[test]
    fn a_dead_ranks_store_stays_until_the_ttl_then_is_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let mut rank = MetricModel::new("h", Buckets::default());
        rank.add_agent("a");
        let mut store = RankStore::create(dir.path(), identity("7-1")).unwrap();
        store.write(&rank.snapshot("a").unwrap()).unwrap();
        let load = |ttl| {
            let mut m = MetricModel::new("h", Buckets::default());
            load_all(dir.path(), &mut m, ttl, &RouteFilesSeen::default())
        };
        assert_eq!(
            load(Duration::ZERO),
            1,
            "a live rank is served whatever its age"
        );
        drop(store);
        assert_eq!(load(Duration::from_secs(60)), 1, "dead, within the TTL");
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(load(Duration::from_millis(1)), 0, "dead, past the TTL");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_ranks_route_file_count_stays_while_its_store_is_listed_and_goes_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut rank = MetricModel::new("h", Buckets::default());
        rank.add_agent("a");
        let mut store = RankStore::create(dir.path(), identity("7-1")).unwrap();
        store.write(&rank.snapshot("a").unwrap()).unwrap();
        fs::write(dir.path().join(routes_name("7-1")), b"not a route file").unwrap();
        let seen = RouteFilesSeen::default();
        let rejected = |ttl| {
            let mut m = MetricModel::new("h", Buckets::default());
            load_all(dir.path(), &mut m, ttl, &seen);
            let page = m.into_shared().render(crate::Format::PrometheusText);
            page.lines()
                .find(|l| l.starts_with("telering_route_files_rejected_total{"))
                .map(|l| l.rsplit(' ').next().unwrap().to_owned())
        };
        let ttl = Duration::from_secs(60);
        assert_eq!(rejected(ttl).as_deref(), Some("1"));
        // A scrape that cannot read the store (here: a directory in its place) keeps
        // what it knows of the rank's route file.
        let store_path = dir.path().join("rank-7-1.store");
        let aside = dir.path().join("aside");
        fs::rename(&store_path, &aside).unwrap();
        fs::create_dir(&store_path).unwrap();
        assert_eq!(rejected(ttl), None);
        assert!(seen.lock().contains_key("7-1"));
        fs::remove_dir(&store_path).unwrap();
        fs::rename(&aside, &store_path).unwrap();
        assert_eq!(rejected(ttl).as_deref(), Some("1"), "not counted again");
        // Gone past the TTL: forgotten.
        drop(store);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(rejected(Duration::from_millis(1)), None);
        assert!(seen.lock().is_empty());
    }
}
