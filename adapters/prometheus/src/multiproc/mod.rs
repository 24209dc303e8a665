//! The `prometheus_mp` exporter: one Prometheus endpoint for every rank of a node,
//! served by one of the ranks, without a daemon.
//!
//! Configured by NIXL's variables: `NIXL_TELEMETRY_MULTIPROC_DIR` (required, shared
//! by the node's ranks), `NIXL_TELEMETRY_PROMETHEUS_PORT` (and `_LOCAL`,
//! `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US`, as for `prometheus`),
//! `NIXL_TELEMETRY_MP_STALE_TTL` (seconds, default 30) and `NIXL_TELEMETRY_RANK_ENV`
//! (the variable holding the `local_rank` label, default `LOCAL_RANK`).
//!
//! # Protocol
//!
//! 1. **Every rank keeps its own counters.** Its flush thread folds events into its
//!    own [`MetricModel`] and, every run interval, rewrites its store file with the
//!    cumulative values ([`store`]). Counters therefore stay exact whether or not any
//!    rank serves, and the server only reads stores, so no failover can count an
//!    event twice or make a live rank's counter go backwards.
//! 2. **One rank serves.** The rank holding the `flock` on `owner.lock` serves every
//!    store on the port, built afresh on each scrape ([`serve`]). The kernel frees
//!    the lock when its holder dies, `kill -9` included, and another rank's election
//!    thread takes it within [`serve::POLL`] and binds the port.
//! 3. **Dead ranks fade out.** A rank is alive while it holds the `flock` on its own
//!    lock file. The series of a dead rank are served until `NIXL_TELEMETRY_MP_STALE_TTL`
//!    after its last store write (its last flush, within one run interval of its
//!    death), then its files are deleted.
//! 4. **A restart is a new instance.** `agent_instance` is `<pid>-<start ms>-<n>` (`n`
//!    counts the agents the process started), so a
//!    rank restarting under the same name gets new series; the old instance's fade
//!    out as in 3.
//!
//! Series carry the families and labels of the `prometheus` exporter plus `pid`,
//! `agent_instance` and `local_rank`. A rank's routes (its `telering_route_*`
//! families) go through a route file beside its store, `rank-<instance>.routes`, in
//! the route-file layout of [`telering_std::route::file`], rewritten after each flush
//! that changed them; the serving rank reads it with the store, as foreign input
//! (bounded, checked, read again only when it changed, a refused file counted once
//! per version in `telering_route_files_rejected_total`, see [`RouteFilesSeen`]). Ranks
//! must share histogram buckets; a store with other bounds is skipped with a warning.

mod config;
mod route_files;
pub mod serve;
pub mod store;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use telering_core::Event;
use telering_std::export::{ExportError, Exporter, ExporterContext};

pub use config::{
    DEFAULT_RANK_ENV, DEFAULT_STALE_TTL, ENV_MULTIPROC_DIR, ENV_RANK_ENV, ENV_STALE_TTL,
    MultiprocConfig, MultiprocConfigError, UNKNOWN_RANK,
};
pub use route_files::RouteFilesSeen;
pub use serve::NodeSource;
pub use store::RankIdentity;

use crate::model::MetricModel;
use store::RankStore;

/// Agents started in this process: part of `agent_instance`, since one process may
/// run several agents within one millisecond.
static AGENTS_STARTED: AtomicU32 = AtomicU32::new(0);

/// The name the exporter is registered under.
pub const EXPORTER_NAME: &str = "prometheus_mp";

/// One rank's side of the `prometheus_mp` protocol (see the [module docs](self)).
#[derive(Debug)]
pub struct MultiprocExporter {
    agent_name: String,
    model: MetricModel,
    store: RankStore,
    stop: Arc<AtomicBool>,
    election: Option<JoinHandle<()>>,
    /// Where this rank serves the node page, while it does.
    serving: serve::Serving,
    routes: telering_std::route::file::RouteFileBuilder,
    /// Whether the last route file write failed (warned once per failing spell).
    routes_failing: bool,
}

impl MultiprocExporter {
    /// Starts a rank: creates its store in `config.dir` (creating the directory) and
    /// its election thread.
    pub fn start(
        agent_name: &str,
        config: &MultiprocConfig,
    ) -> Result<MultiprocExporter, ExportError> {
        let io = |e| ExportError::io(EXPORTER_NAME, &config.dir, e);
        std::fs::create_dir_all(&config.dir).map_err(io)?;
        let pid = std::process::id();
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let identity = RankIdentity {
            agent_name: agent_name.to_owned(),
            instance: format!(
                "{pid}-{started}-{}",
                AGENTS_STARTED.fetch_add(1, Ordering::Relaxed)
            ),
            local_rank: config.local_rank.clone(),
            pid,
        };
        let owner_text = format!("pid={pid} agent_instance={}\n", identity.instance);
        let mut store = RankStore::create(&config.dir, identity).map_err(io)?;
        let mut model = MetricModel::new(crate::hostname(), config.prometheus.buckets.clone());
        model.add_agent(agent_name);
        if let Some(snapshot) = model.snapshot(agent_name) {
            store.write(&snapshot).map_err(io)?;
        }
        let source = NodeSource {
            dir: config.dir.clone(),
            hostname: crate::hostname(),
            buckets: config.prometheus.buckets.clone(),
            stale_ttl: config.stale_ttl,
            route_files: Default::default(),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let addr = config.prometheus.bind_addr();
        let thread_stop = stop.clone();
        let serving = serve::Serving::default();
        let thread_serving = serving.clone();
        let election = std::thread::Builder::new()
            .name("telering-prom-mp".into())
            .spawn(move || {
                serve::run_election(source, addr, owner_text, thread_stop, thread_serving)
            })
            .map_err(|e| ExportError::failed(EXPORTER_NAME, e))?;
        Ok(MultiprocExporter {
            agent_name: agent_name.to_owned(),
            model,
            store,
            stop,
            election: Some(election),
            serving,
            routes: Default::default(),
            routes_failing: false,
        })
    }

    /// The [`telering_std::ExporterFactory`].
    pub fn factory(context: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
        // The context holds the `NIXL_TELEMETRY_*` variables; the rank variable
        // (`LOCAL_RANK` or the one named by `NIXL_TELEMETRY_RANK_ENV`) comes from the
        // process environment.
        let lookup = |name: &str| {
            context.env.get(name).ok().flatten().or_else(|| {
                (!name.starts_with("NIXL_TELEMETRY_"))
                    .then(|| std::env::var(name).ok())
                    .flatten()
            })
        };
        let config = MultiprocConfig::from_lookup(lookup).map_err(|e| ExportError::Config {
            exporter: EXPORTER_NAME.into(),
            variable: e.variable().into(),
            value: e.value(),
            message: e.reason(),
        })?;
        Ok(Box::new(MultiprocExporter::start(
            &context.agent_name,
            &config,
        )?))
    }

    fn write_store(&mut self) -> Result<(), ExportError> {
        let Some(snapshot) = self.model.snapshot(&self.agent_name) else {
            return Ok(());
        };
        self.store
            .write(&snapshot)
            .map_err(|e| ExportError::failed(EXPORTER_NAME, e))
    }
}

impl Exporter for MultiprocExporter {
    fn name(&self) -> &str {
        EXPORTER_NAME
    }

    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        self.model.ingest(&self.agent_name, batch);
        // Written every run interval, events or not: the store's age is the rank's
        // heartbeat for the stale TTL.
        self.write_store()
    }

    /// Writes the rank's route file beside its store (see the module docs).
    fn export_routes(
        &mut self,
        report: &telering_std::route::RouteReport,
    ) -> Result<(), ExportError> {
        let Some(file) = self.routes.next(report) else {
            return Ok(());
        };
        match self.store.write_routes(&file.encode()) {
            Ok(()) => {
                self.routes.written();
                self.routes_failing = false;
                Ok(())
            }
            Err(e) => {
                if !std::mem::replace(&mut self.routes_failing, true) {
                    log::warn!("prometheus_mp: cannot write the rank's route file: {e}");
                }
                Err(ExportError::failed(
                    EXPORTER_NAME,
                    format!("route file: {e}"),
                ))
            }
        }
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        self.write_store()
    }

    /// The node page's address while this rank serves it (it holds the election
    /// lock and its server is up); `None` while another rank serves or none can.
    fn endpoint(&self) -> Option<String> {
        self.serving
            .addr()
            .map(|addr| format!("http://{addr}/metrics"))
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(election) = self.election.take() {
            let _ = election.join();
        }
        self.write_store()
    }
}

impl Drop for MultiprocExporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
