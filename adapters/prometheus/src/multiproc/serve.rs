//! Electing the serving rank, and the page it serves.
//!
//! Every rank runs an election thread that tries an exclusive `flock` on
//! `<dir>/owner.lock` every [`POLL`]. The one that gets it writes its pid and instance
//! into the file (for operators), binds the port and serves [`NodeSource`] until the
//! exporter shuts down. When the owner dies the kernel releases the lock and the next
//! rank to poll takes over: the port is back within one poll period plus a bind
//! (the listener sets `SO_REUSEADDR`, so the dead owner's sockets in `TIME_WAIT` do not
//! block the bind). A taken lock whose port cannot be bound (another program holds
//! it) is retried every poll, with one warning.

use std::fs::OpenOptions;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustix::fs::{FlockOperation, flock};

use super::route_files::RouteFilesSeen;
use super::store::load_all;
use crate::config::Buckets;
use crate::format::Format;
use crate::http::{HttpLimits, MetricsServer, MetricsSource};
use crate::model::MetricModel;

/// How often a rank that does not serve tries to take over.
pub const POLL: Duration = Duration::from_millis(100);

/// Every rank store of a directory, read on each scrape.
#[derive(Clone, Debug)]
pub struct NodeSource {
    /// The multiproc directory.
    pub dir: PathBuf,
    /// The `hostname` label.
    pub hostname: String,
    /// Histogram bounds every rank uses.
    pub buckets: Buckets,
    /// How long a dead rank's series stay.
    pub stale_ttl: Duration,
    /// Each rank's route file as the scrapes so far saw it, so that a refused file
    /// counts once per version in `telering_route_files_rejected_total` (shared by
    /// the clones of this source; see [`RouteFilesSeen`]).
    pub route_files: RouteFilesSeen,
}

impl NodeSource {
    /// Reads every store into one model.
    pub fn model(&self) -> MetricModel {
        let mut model = MetricModel::new(self.hostname.clone(), self.buckets.clone());
        load_all(&self.dir, &mut model, self.stale_ttl, &self.route_files);
        model
    }
}

impl MetricsSource for NodeSource {
    fn render(&self, format: Format) -> String {
        self.model().into_shared().render(format)
    }
}

/// The address this process serves the node page on while it is elected and its
/// server is up; `None` otherwise (another rank serves, or the port is taken).
#[derive(Clone, Debug, Default)]
pub(crate) struct Serving(Arc<Mutex<Option<SocketAddr>>>);

impl Serving {
    /// The address served now, if any.
    pub(crate) fn addr(&self) -> Option<SocketAddr> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, addr: Option<SocketAddr>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = addr;
    }
}

/// Runs the election until `stop`; serves while elected, saying so in `serving`.
pub(crate) fn run_election(
    source: NodeSource,
    addr: SocketAddr,
    identity: String,
    stop: Arc<AtomicBool>,
    serving: Serving,
) {
    let path = source.dir.join("owner.lock");
    let mut warned = false;
    while !stop.load(Ordering::Relaxed) {
        let file = match OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
        {
            Ok(file) => file,
            Err(e) => {
                if !std::mem::replace(&mut warned, true) {
                    log::warn!("prometheus_mp: cannot open {}: {e}", path.display());
                }
                std::thread::sleep(POLL);
                continue;
            }
        };
        if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
            std::thread::sleep(POLL);
            continue;
        }
        let _ = file.set_len(0);
        let _ = (&file).write_all(identity.as_bytes());
        let mut server = None;
        while !stop.load(Ordering::Relaxed) {
            if server.is_none() {
                match MetricsServer::start(addr, source.clone(), HttpLimits::default()) {
                    Ok(s) => {
                        log::info!("prometheus_mp: serving every rank of the node on {addr}");
                        serving.set(Some(s.local_addr()));
                        server = Some(s);
                    }
                    Err(e) => {
                        if !std::mem::replace(&mut warned, true) {
                            log::warn!(
                                "prometheus_mp: elected to serve but {e}; retrying every {POLL:?}"
                            );
                        }
                    }
                }
            }
            std::thread::sleep(POLL);
        }
        serving.set(None);
        if let Some(server) = server {
            server.shutdown();
        }
        // Dropping `file` releases the election lock.
    }
}
