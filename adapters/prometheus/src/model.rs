//! The metric model: events in, per-agent counters, gauges and histograms out.
//!
//! [`MetricModel`] holds plain integers per agent (no atomics, no per-series
//! allocation): ingesting an event is one hash lookup of its 32-byte name field and
//! category, then an add. [`SharedModel`] puts the model behind a mutex that the
//! exporter's flush thread (ingest) and the HTTP workers (render) share; the agent's
//! recording path never touches it. Rendering goes through `prometheus-client`: the
//! shared model is a [`Collector`] that encodes every family on each scrape, in the
//! Prometheus text format 0.0.4 or in OpenMetrics 1.0.
//!
//! Counters only ever grow (saturating at `u64::MAX`) while an agent's series exist;
//! [`MetricModel::restart_agent`] starts a restarted agent's series from zero, which
//! Prometheus reads as a counter reset.
//!
//! Parts: `tables` says which families each built-in event feeds (derived from
//! telering-core's built-in table); [`families`](MetricModel::families) gives the
//! same series as structured values for other encoders; `snapshot` moves a model
//! between processes. Which [`Format`] a scrape gets is the HTTP endpoint's choice.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use telering_core::builtin::{BuiltinEvent, ErrorStatus};
use telering_core::event::NAME_FIELD_SIZE;
use telering_core::{Category, Event};

use crate::config::Buckets;
use crate::names::custom_family_name;

mod families;
mod labels;
mod routes;
mod snapshot;
mod tables;

pub use crate::format::Format;
pub use families::{FamilyKind, FamilyView, SeriesValue, SeriesView};
use tables::{
    COUNTERS, CUSTOM_HELP, DELIVERED_FAMILY, ERROR_FAMILY, EVENTS_DROPPED, EVENTS_MISSED,
    EVENTS_UNEXPORTED, Effect, FAILING_FAMILY, GAUGES, HISTOGRAMS,
};

pub use snapshot::SnapshotError;

/// Default cap on distinct custom counter families (over all agents).
pub const DEFAULT_MAX_CUSTOM_FAMILIES: usize = 1024;

type NameKey = ([u8; NAME_FIELD_SIZE], i32);

fn key_of(event: &BuiltinEvent) -> NameKey {
    (*event.name.field(), event.category as i32)
}

/// One histogram: per-bucket (not cumulative) counts with the `+Inf` bucket last.
#[derive(Clone, Debug)]
struct Histogram {
    counts: Box<[u64]>,
    sum: u64,
    count: u64,
}

impl Histogram {
    fn new(bounds: usize) -> Histogram {
        Histogram {
            counts: vec![0; bounds + 1].into_boxed_slice(),
            sum: 0,
            count: 0,
        }
    }

    fn observe(&mut self, bounds: &[f64], value: u64) {
        // `le` semantics: the first bound >= value; bounds are sorted.
        let idx = bounds.partition_point(|&b| b < value as f64);
        self.counts[idx] = self.counts[idx].saturating_add(1);
        self.sum = self.sum.saturating_add(value);
        self.count = self.count.saturating_add(1);
    }
}

/// The metrics of one agent.
#[derive(Clone, Debug)]
struct AgentMetrics {
    counters: [u64; COUNTERS],
    errors: [u64; ErrorStatus::ALL.len()],
    gauges: [u64; GAUGES],
    histograms: [Histogram; HISTOGRAMS],
    custom: BTreeMap<u32, u64>,
    /// The last value of each of [`tables::STATE_GAUGES`], once one arrived.
    states: [Option<u64>; tables::STATE_GAUGES.len()],
    /// Exporter health as seen by a node collector, which exports what another
    /// process wrote; `None` (and no series) where nothing outside the agent watches
    /// its export.
    health: Option<ExporterHealth>,
    /// The `agent_name` label when it differs from the model's key for the agent, and
    /// labels after `hostname` (the multi-process exporter's `pid`, `agent_instance`,
    /// `local_rank`).
    labels: SeriesLabels,
}

/// `agent_telemetry_events_delivered_total` and `agent_telemetry_exporter_failing`.
#[derive(Clone, Copy, Debug, Default)]
struct ExporterHealth {
    delivered: u64,
    failing: bool,
}

#[derive(Clone, Debug, Default)]
struct SeriesLabels {
    agent_name: Option<String>,
    extra: Vec<(&'static str, String)>,
}

impl AgentMetrics {
    fn new(bounds: usize) -> AgentMetrics {
        AgentMetrics {
            counters: [0; COUNTERS],
            errors: [0; ErrorStatus::ALL.len()],
            gauges: [0; GAUGES],
            histograms: std::array::from_fn(|_| Histogram::new(bounds)),
            custom: BTreeMap::new(),
            states: [None; tables::STATE_GAUGES.len()],
            health: None,
            labels: SeriesLabels::default(),
        }
    }
}

/// Which effect each event name has, and the custom families learned so far.
#[derive(Debug)]
struct NameTable {
    /// Bounded: built-ins plus at most `4 * max_custom_families + 64` learned names.
    effects: HashMap<NameKey, Effect, NameHasher>,
    custom_families: Vec<String>,
    custom_index: HashMap<String, u32>,
    max_custom_families: usize,
}

impl NameTable {
    fn effect_of(&mut self, event: &Event) -> Option<Effect> {
        let key = (*event.name_field(), event.raw_category());
        if let Some(effect) = self.effects.get(&key) {
            return Some(*effect);
        }
        // Not a built-in: validate before trusting bytes that may come from a file.
        let category = event.category().ok()?;
        let name = event.name().ok()?;
        if category == Category::System {
            if let Some(i) = tables::STATE_GAUGES.iter().position(|g| g.0 == name) {
                self.effects.insert(key, Effect::State(i));
                return Some(Effect::State(i));
            }
        }
        let family = custom_family_name(category, name);
        let idx = match self.custom_index.get(&family) {
            Some(&idx) => idx,
            None if self.custom_families.len() < self.max_custom_families => {
                let idx = self.custom_families.len() as u32;
                self.custom_families.push(family.clone());
                self.custom_index.insert(family, idx);
                idx
            }
            None => return None,
        };
        // Several names can share a family; the cache stays bounded all the same.
        if self.effects.len() < 4 * self.max_custom_families + 64 {
            self.effects.insert(key, Effect::Custom(idx));
        }
        Some(Effect::Custom(idx))
    }
}

/// Hashing of the 36-byte name key: a lookup per event is on the ingest path, so the
/// table uses `rustc-hash`'s Fx hasher rather than SipHash (see the ingest figures in
/// `BENCHMARKS.md`). The table is bounded (see [`NameTable::effects`]), so names chosen
/// to collide can lengthen a probe sequence but never grow the table.
type NameHasher = rustc_hash::FxBuildHasher;

/// Per-agent metrics of every agent this process exports, plus the name tables.
///
/// ```
/// use telering_core::{builtin, Category, Event, EventName};
/// use telering_prometheus::{Buckets, Format, MetricModel};
/// let mut model = MetricModel::new("node1", Buckets::default());
/// let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 4096);
/// model.ingest("agent-a", &[tx, tx]);
/// assert_eq!(model.counter("agent-a", "agent_tx_bytes"), Some(8192));
/// let text = model.into_shared().render(Format::PrometheusText);
/// assert!(text.contains(r#"agent_tx_bytes_total{agent_name="agent-a",hostname="node1"} 8192"#));
/// ```
#[derive(Debug)]
pub struct MetricModel {
    hostname: String,
    buckets: Buckets,
    names: NameTable,
    agents: BTreeMap<String, AgentMetrics>,
    /// Each agent's latest route report ([`MetricModel::set_routes`]).
    routes: BTreeMap<String, telering_std::route::RouteReport>,
    /// Route files refused per agent (a node collector's), `telering_route_files_rejected_total`.
    route_files_rejected: BTreeMap<String, u64>,
    /// A node collector's ring files it cannot follow, by reason
    /// ([`MetricModel::set_rings_not_followed`]); empty for an in-process model.
    rings_not_followed: Vec<(&'static str, u64)>,
}

impl MetricModel {
    /// An empty model whose series carry `hostname`, with latency histograms over
    /// `buckets`.
    pub fn new(hostname: impl Into<String>, buckets: Buckets) -> MetricModel {
        let effects = tables::effects()
            .map(|(event, effect)| (key_of(&event), effect))
            .collect();
        MetricModel {
            hostname: hostname.into(),
            buckets,
            names: NameTable {
                effects,
                custom_families: Vec::new(),
                custom_index: HashMap::new(),
                max_custom_families: DEFAULT_MAX_CUSTOM_FAMILIES,
            },
            agents: BTreeMap::new(),
            routes: BTreeMap::new(),
            route_files_rejected: BTreeMap::new(),
            rings_not_followed: Vec::new(),
        }
    }

    /// Caps the number of distinct custom counter families (default
    /// [`DEFAULT_MAX_CUSTOM_FAMILIES`]); events of new names past the cap are counted in
    /// `agent_telemetry_events_unexported_total` instead, so a program that invents
    /// names without end cannot grow the scrape without bound.
    pub fn with_max_custom_families(mut self, max: usize) -> MetricModel {
        self.names.max_custom_families = max;
        self
    }

    /// The `hostname` label value.
    pub fn hostname(&self) -> &str {
        &self.hostname
    }

    /// The histogram buckets.
    pub fn buckets(&self) -> &Buckets {
        &self.buckets
    }

    /// Adds an agent with all-zero series if it is not there yet. Agents also appear on
    /// their first [`MetricModel::ingest`].
    pub fn add_agent(&mut self, agent: &str) {
        if !self.agents.contains_key(agent) {
            let bounds = self.buckets.bounds().len();
            self.agents
                .insert(agent.to_owned(), AgentMetrics::new(bounds));
        }
    }

    /// Removes an agent and all its series; returns whether it was there.
    pub fn remove_agent(&mut self, agent: &str) -> bool {
        self.routes.remove(agent);
        self.route_files_rejected.remove(agent);
        self.agents.remove(agent).is_some()
    }

    /// Sets how many ring files a node collector cannot follow, by reason (`fds`: for
    /// want of file descriptors, `max_agents`: past its agent limit, `drained`: drained
    /// by another reader), served as the gauge
    /// `telering_collector_rings_not_followed{hostname,reason}`, so a scrape never
    /// looks complete while rings go unread. An in-process model never sets it.
    ///
    /// ```
    /// use telering_prometheus::{Buckets, Format, MetricModel};
    /// let mut model = MetricModel::new("node1", Buckets::default());
    /// model.set_rings_not_followed(&[("fds", 12), ("max_agents", 0), ("drained", 0)]);
    /// let text = model.into_shared().render(Format::PrometheusText);
    /// assert!(text.contains(r#"telering_collector_rings_not_followed{hostname="node1",reason="fds"} 12"#));
    /// ```
    pub fn set_rings_not_followed(&mut self, by_reason: &[(&'static str, u64)]) {
        self.rings_not_followed = by_reason.to_vec();
    }

    fn encode_not_followed(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        if self.rings_not_followed.is_empty() {
            return Ok(());
        }
        let mut family = encoder.encode_descriptor(
            "telering_collector_rings_not_followed",
            "Ring files in the folder the node collector cannot follow, by reason; their events stay unread in their files",
            None,
            MetricType::Gauge,
        )?;
        for (reason, n) in &self.rings_not_followed {
            let labels = labels::EncodedLabels::new([
                ("hostname", self.hostname.as_str()),
                ("reason", *reason),
            ]);
            family
                .encode_family(&labels)?
                .encode_gauge(&i64::try_from(*n).unwrap_or(i64::MAX))?;
        }
        Ok(())
    }

    /// Starts a restarted agent's series from zero.
    pub fn restart_agent(&mut self, agent: &str) {
        self.remove_agent(agent);
        self.add_agent(agent);
    }

    /// Names of the agents with series, in order.
    pub fn agents(&self) -> impl Iterator<Item = &str> {
        self.agents.keys().map(String::as_str)
    }

    /// Number of agents with series.
    pub fn agent_count(&self) -> usize {
        self.agents.len()
    }

    /// Applies `events` to `agent`'s metrics (adding the agent if new).
    pub fn ingest(&mut self, agent: &str, events: &[Event]) {
        self.ingest_counting(agent, events);
    }

    /// Like [`ingest`](Self::ingest), for an exporter that delivers another process's
    /// events (the node collector): also adds the events that were exported (all but
    /// those counted in `agent_telemetry_events_unexported_total`, and but the in-band
    /// `agent_telemetry_events_dropped` reports, which are no recorded events) to
    /// `agent_telemetry_events_delivered_total`, and so gives the agent the
    /// exporter-health families.
    ///
    /// ```
    /// use telering_core::{builtin, Category, Event};
    /// use telering_prometheus::{Buckets, Format, MetricModel};
    /// let mut model = MetricModel::new("node1", Buckets::default());
    /// let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 64);
    /// let report = Event::new(2, Category::Error, builtin::AGENT_TELEMETRY_EVENTS_DROPPED.name, 5);
    /// model.ingest_delivered("agent-a", &[tx, tx, report]);
    /// assert_eq!(model.counter("agent-a", "agent_telemetry_events_delivered"), Some(2));
    /// assert_eq!(model.exporter_failing("agent-a"), Some(false));
    /// let page = model.into_shared().render(Format::PrometheusText);
    /// assert!(page.contains(r#"agent_telemetry_exporter_failing{agent_name="agent-a",hostname="node1"} 0"#));
    /// ```
    pub fn ingest_delivered(&mut self, agent: &str, events: &[Event]) {
        let exported = self.ingest_counting(agent, events);
        // An in-band loss report is not a recorded event: delivered counts what the
        // agent recorded, as every other surface does (docs/LOSS.md).
        let reports = events
            .iter()
            .filter(|e| {
                e.name_field()
                    == telering_core::builtin::AGENT_TELEMETRY_EVENTS_DROPPED
                        .name
                        .field()
            })
            .count() as u64;
        if let Some(m) = self.agents.get_mut(agent) {
            let health = m.health.get_or_insert_with(ExporterHealth::default);
            health.delivered = health
                .delivered
                .saturating_add(exported.saturating_sub(reports));
        }
    }

    /// Sets `agent_telemetry_exporter_failing` of `agent` (adding the agent, and its
    /// exporter-health families, if not there yet).
    pub fn set_exporter_failing(&mut self, agent: &str, failing: bool) {
        self.add_agent(agent);
        if let Some(m) = self.agents.get_mut(agent) {
            m.health.get_or_insert_with(ExporterHealth::default).failing = failing;
        }
    }

    /// The value of `agent_telemetry_exporter_failing` of `agent`; `None` for an
    /// unknown agent or one without exporter-health families.
    pub fn exporter_failing(&self, agent: &str) -> Option<bool> {
        Some(self.agents.get(agent)?.health?.failing)
    }

    /// Ingests `events`; returns how many were exported (not counted unexported).
    fn ingest_counting(&mut self, agent: &str, events: &[Event]) -> u64 {
        if !self.agents.contains_key(agent) {
            self.add_agent(agent);
        }
        // The agent exists (added above); one lookup per batch, not per event.
        let Some(metrics) = self.agents.get_mut(agent) else {
            return 0;
        };
        let bounds = self.buckets.bounds();
        let mut exported = 0;
        for event in events {
            let effect = self.names.effect_of(event);
            exported += u64::from(effect.is_some());
            apply(metrics, bounds, effect, event.value());
        }
        exported
    }

    /// Counts events lost upstream of this model into
    /// `agent_telemetry_events_dropped_total` (losses that are not reported in-band).
    pub fn add_dropped(&mut self, agent: &str, events: u64) {
        self.add_to(agent, EVENTS_DROPPED, events);
    }

    /// The former name of [`add_dropped`](Self::add_dropped): it adds, it does not
    /// count.
    #[deprecated(note = "renamed `add_dropped`; this name read like a getter")]
    pub fn count_dropped(&mut self, agent: &str, events: u64) {
        self.add_dropped(agent, events);
    }

    /// Counts events an observing reader missed into
    /// `agent_telemetry_events_missed_total`.
    pub fn count_missed(&mut self, agent: &str, events: u64) {
        self.add_to(agent, EVENTS_MISSED, events);
    }

    /// Counts events that could not be exported (undecodable) into
    /// `agent_telemetry_events_unexported_total`.
    pub fn count_unexported(&mut self, agent: &str, events: u64) {
        self.add_to(agent, EVENTS_UNEXPORTED, events);
    }

    fn add_to(&mut self, agent: &str, counter: usize, events: u64) {
        self.add_agent(agent);
        if let Some(m) = self.agents.get_mut(agent) {
            m.counters[counter] = m.counters[counter].saturating_add(events);
        }
    }

    /// The value of a built-in or custom counter family (name without `_total`) of an
    /// agent, for tests and tools; `None` for an unknown agent or family.
    pub fn counter(&self, agent: &str, family: &str) -> Option<u64> {
        let m = self.agents.get(agent)?;
        if family == DELIVERED_FAMILY.0 {
            return Some(m.health?.delivered);
        }
        if let Some(i) = tables::counter_families().position(|(n, _)| n == family) {
            return Some(m.counters[i]);
        }
        let idx = *self.names.custom_index.get(family)?;
        Some(m.custom.get(&idx).copied().unwrap_or(0))
    }

    /// The value of `agent_errors_total{status}` of an agent.
    pub fn errors(&self, agent: &str, status: ErrorStatus) -> Option<u64> {
        let i = ErrorStatus::ALL.iter().position(|s| *s == status)?;
        Some(self.agents.get(agent)?.errors[i])
    }

    /// Wraps the model for sharing between an ingesting thread and HTTP workers.
    pub fn into_shared(self) -> SharedModel {
        SharedModel(Arc::new(Mutex::new(self)))
    }

    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let host = self.hostname.as_str();
        // The label set of every agent's series, encoded once per scrape.
        let series: Vec<(&AgentMetrics, labels::EncodedLabels)> = self
            .agents
            .iter()
            .map(|(key, m)| {
                let name = m.labels.agent_name.as_deref().unwrap_or(key);
                let extra = m.labels.extra.iter().map(|(k, v)| (*k, v.as_str()));
                let pairs = [("agent_name", name), ("hostname", host)];
                (
                    m,
                    labels::EncodedLabels::new(pairs.into_iter().chain(extra)),
                )
            })
            .collect();
        for (i, (name, help)) in tables::counter_families().enumerate() {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (m, labels) in &series {
                family
                    .encode_family(labels)?
                    .encode_counter::<NoLabelSet, _, u64>(&m.counters[i], None)?;
            }
        }
        // Exporter health, only where a collector tracks it (see `ExporterHealth`).
        let watched = || series.iter().filter_map(|(m, l)| Some((m.health?, l)));
        if watched().next().is_some() {
            let (name, help) = DELIVERED_FAMILY;
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (health, labels) in watched() {
                family
                    .encode_family(labels)?
                    .encode_counter::<NoLabelSet, _, u64>(&health.delivered, None)?;
            }
        }
        {
            let (name, help) = ERROR_FAMILY;
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (m, labels) in &series {
                for (i, status) in ErrorStatus::ALL.iter().enumerate() {
                    family
                        .encode_family(&(labels, [("status", status.label())]))?
                        .encode_counter::<NoLabelSet, _, u64>(&m.errors[i], None)?;
                }
            }
        }
        for (i, (name, help)) in tables::gauge_families().enumerate() {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (m, labels) in &series {
                family.encode_family(labels)?.encode_gauge(&m.gauges[i])?;
            }
        }
        if watched().next().is_some() {
            let (name, help) = FAILING_FAMILY;
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (health, labels) in watched() {
                family
                    .encode_family(labels)?
                    .encode_gauge(&u64::from(health.failing))?;
            }
        }
        let bounds = self.buckets.bounds();
        let mut buckets: Vec<(f64, u64)> = Vec::with_capacity(bounds.len() + 1);
        for (i, (name, help)) in tables::histogram_families().enumerate() {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
            for (m, labels) in &series {
                let h = &m.histograms[i];
                buckets.clear();
                buckets.extend(
                    bounds
                        .iter()
                        .copied()
                        .chain(std::iter::once(f64::INFINITY))
                        .zip(h.counts.iter().copied()),
                );
                family
                    .encode_family(labels)?
                    .encode_histogram::<NoLabelSet>(h.sum as f64, h.count, &buckets, None)?;
            }
        }
        for (idx, name) in self.names.custom_families.iter().enumerate() {
            let idx = idx as u32;
            if !self.agents.values().any(|m| m.custom.contains_key(&idx)) {
                continue;
            }
            let mut family =
                encoder.encode_descriptor(name, CUSTOM_HELP, None, MetricType::Counter)?;
            for (m, labels) in &series {
                if let Some(value) = m.custom.get(&idx) {
                    family
                        .encode_family(labels)?
                        .encode_counter::<NoLabelSet, _, u64>(value, None)?;
                }
            }
        }
        for (i, (name, signed, help)) in tables::STATE_GAUGES.iter().enumerate() {
            if !self.agents.values().any(|m| m.states[i].is_some()) {
                continue;
            }
            let family_name = custom_family_name(Category::System, name);
            let mut family =
                encoder.encode_descriptor(&family_name, help, None, MetricType::Gauge)?;
            for (m, labels) in &series {
                if let Some(value) = m.states[i] {
                    family
                        .encode_family(labels)?
                        .encode_gauge(&tables::state_value(value, *signed))?;
                }
            }
        }
        self.encode_routes(&mut encoder)?;
        self.encode_not_followed(&mut encoder)?;
        Ok(())
    }
}

fn apply(m: &mut AgentMetrics, bounds: &[f64], effect: Option<Effect>, value: u64) {
    match effect {
        Some(Effect::Builtin {
            counter,
            last,
            histogram,
        }) => {
            m.counters[counter] = m.counters[counter].saturating_add(value);
            if let Some(g) = last {
                m.gauges[g] = value;
            }
            if let Some(h) = histogram {
                m.histograms[h].observe(bounds, value);
            }
        }
        Some(Effect::Error(i)) => m.errors[i] = m.errors[i].saturating_add(value),
        Some(Effect::Custom(idx)) => {
            let slot = m.custom.entry(idx).or_insert(0);
            *slot = slot.saturating_add(value);
        }
        Some(Effect::State(i)) => m.states[i] = Some(value),
        None => {
            m.counters[EVENTS_UNEXPORTED] = m.counters[EVENTS_UNEXPORTED].saturating_add(1);
        }
    }
}

/// A [`MetricModel`] shared between the thread that ingests and the HTTP workers that
/// render it. Cloning shares the same model.
#[derive(Clone, Debug)]
pub struct SharedModel(Arc<Mutex<MetricModel>>);

impl SharedModel {
    /// Locks the model. A panic in another holder does not make the metrics unusable:
    /// the integers stay consistent (every update is a single store), so a poisoned lock
    /// is recovered.
    pub fn lock(&self) -> MutexGuard<'_, MetricModel> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Renders every family in `format`.
    pub fn render(&self, format: Format) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.clone()));
        let mut out = String::new();
        let result = match format {
            Format::PrometheusText => {
                prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
            }
            Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
        };
        // Writing into a String cannot fail and every name and label is valid, so an
        // error here means an encoder bug; serve what was encoded rather than nothing.
        if let Err(e) = result {
            log::error!("encoding metrics failed: {e}");
        }
        out
    }
}

impl Collector for SharedModel {
    fn encode(&self, encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        self.lock().encode(encoder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telering_core::{Category, EventName};

    fn ev(category: Category, name: &str, value: u64) -> Event {
        Event::new(0, category, EventName::new(name).unwrap(), value)
    }

    fn model() -> MetricModel {
        MetricModel::new("host1", Buckets::parse("10,100").unwrap())
    }

    #[test]
    fn transfer_events_feed_counters_and_last_value_gauges() {
        let mut m = model();
        m.ingest(
            "a",
            &[
                ev(Category::Transfer, "agent_tx_bytes", 100),
                ev(Category::Transfer, "agent_tx_bytes", 50),
                ev(Category::Transfer, "agent_tx_requests_num", 1),
                ev(Category::Transfer, "agent_tx_requests_num", 1),
            ],
        );
        assert_eq!(m.counter("a", "agent_tx_bytes"), Some(150));
        assert_eq!(m.counter("a", "agent_tx_requests_num"), Some(2));
        let text = m.into_shared().render(Format::PrometheusText);
        assert!(text.contains(r#"agent_tx_last_bytes{agent_name="a",hostname="host1"} 50"#));
    }

    #[test]
    fn latencies_feed_sum_gauge_and_histogram_with_le_semantics() {
        let mut m = model();
        let t = |v| ev(Category::Performance, "agent_xfer_time", v);
        m.ingest("a", &[t(10), t(11), t(1000)]);
        let text = m.into_shared().render(Format::PrometheusText);
        let l = r#"agent_name="a",hostname="host1""#;
        for line in [
            format!("agent_xfer_time_total{{{l}}} 1021"),
            format!("agent_xfer_time{{{l}}} 1000"),
            format!("agent_xfer_time_us_bucket{{{l},le=\"10\"}} 1"),
            format!("agent_xfer_time_us_bucket{{{l},le=\"100\"}} 2"),
            format!("agent_xfer_time_us_bucket{{{l},le=\"+Inf\"}} 3"),
            format!("agent_xfer_time_us_count{{{l}}} 3"),
            format!("agent_xfer_time_us_sum{{{l}}} 1021.0"),
        ] {
            assert!(text.contains(&line), "missing {line} in\n{text}");
        }
    }

    #[test]
    fn error_events_count_under_their_status_label() {
        let mut m = model();
        m.ingest(
            "a",
            &[
                ev(Category::Error, "NIXL_ERR_BACKEND", 2),
                ev(Category::Error, "NIXL_ERR_REMOTE_DISCONNECT", 1),
            ],
        );
        assert_eq!(m.errors("a", ErrorStatus::Backend), Some(2));
        let text = m.into_shared().render(Format::PrometheusText);
        assert!(text.contains(
            r#"agent_errors_total{agent_name="a",hostname="host1",status="remote_disconnect"} 1"#
        ));
        for status in ErrorStatus::ALL {
            assert!(text.contains(&format!("status=\"{}\"", status.label())));
        }
    }

    #[test]
    fn custom_and_backend_events_become_sanitized_counters() {
        let mut m = model();
        m.ingest(
            "a",
            &[
                ev(Category::Custom, "cache.hits", 3),
                ev(Category::Custom, "cache-hits", 4),
                ev(Category::Backend, "ucx_retries", 5),
                // A built-in name in the wrong category is not the built-in.
                ev(Category::Custom, "agent_tx_bytes", 7),
            ],
        );
        assert_eq!(m.counter("a", "agent_custom_event_cache_hits"), Some(7));
        assert_eq!(m.counter("a", "agent_tx_bytes"), Some(0));
        let text = m.into_shared().render(Format::PrometheusText);
        assert!(text.contains(
            r#"agent_backend_event_ucx_retries_total{agent_name="a",hostname="host1"} 5"#
        ));
        assert!(text.contains(
            r#"agent_custom_event_agent_tx_bytes_total{agent_name="a",hostname="host1"} 7"#
        ));
    }

    #[test]
    fn names_past_the_custom_family_cap_are_counted_as_unexported() {
        let mut m = model().with_max_custom_families(2);
        let events: Vec<Event> = (0..5)
            .map(|i| ev(Category::Custom, &format!("n{i}"), 1))
            .collect();
        m.ingest("a", &events);
        m.ingest("a", &events);
        assert_eq!(m.counter("a", "agent_custom_event_n0"), Some(2));
        assert_eq!(m.counter("a", "agent_custom_event_n1"), Some(2));
        assert_eq!(m.counter("a", "agent_custom_event_n2"), None);
        assert_eq!(m.counter("a", "agent_telemetry_events_unexported"), Some(6));
    }

    #[test]
    fn losses_reported_by_readers_land_in_their_own_counters() {
        let mut m = model();
        m.count_unexported("a", 1);
        m.count_missed("a", 2);
        m.add_dropped("a", 3);
        assert_eq!(m.counter("a", "agent_telemetry_events_unexported"), Some(1));
        assert_eq!(m.counter("a", "agent_telemetry_events_missed"), Some(2));
        assert_eq!(m.counter("a", "agent_telemetry_events_dropped"), Some(3));
    }

    #[test]
    fn exporter_health_families_appear_only_where_a_collector_delivers() {
        let mut m = model().with_max_custom_families(1);
        m.ingest("own", &[ev(Category::Transfer, "agent_tx_bytes", 1)]);
        let events = [
            ev(Category::Transfer, "agent_tx_bytes", 1),
            ev(Category::Custom, "first", 1),
            ev(Category::Custom, "past_the_cap", 1),
        ];
        m.ingest_delivered("watched", &events);
        assert_eq!(
            m.counter("watched", "agent_telemetry_events_delivered"),
            Some(2)
        );
        assert_eq!(
            m.counter("watched", "agent_telemetry_events_unexported"),
            Some(1)
        );
        assert_eq!(m.counter("own", "agent_telemetry_events_delivered"), None);
        assert_eq!(m.exporter_failing("own"), None);
        m.set_exporter_failing("watched", true);
        assert_eq!(m.exporter_failing("watched"), Some(true));
        let names: Vec<String> = m.families().into_iter().map(|f| f.name).collect();
        assert!(names.contains(&"agent_telemetry_events_delivered_total".to_owned()));
        assert!(names.contains(&"agent_telemetry_exporter_failing".to_owned()));
        let text = m.into_shared().render(Format::PrometheusText);
        let l = r#"agent_name="watched",hostname="host1""#;
        assert!(text.contains(&format!("agent_telemetry_events_delivered_total{{{l}}} 2")));
        assert!(text.contains(&format!("agent_telemetry_exporter_failing{{{l}}} 1")));
        assert!(text.contains("# TYPE agent_telemetry_exporter_failing gauge"));
        assert!(!text.contains(r#"agent_telemetry_events_delivered_total{agent_name="own""#));
        assert!(!text.contains(r#"agent_telemetry_exporter_failing{agent_name="own""#));
    }

    #[test]
    fn a_model_nobody_watches_has_no_exporter_health_families() {
        let mut m = model();
        m.ingest("a", &[ev(Category::Transfer, "agent_tx_bytes", 1)]);
        assert!(m.families().iter().all(|f| !f.name.contains("delivered")));
        let text = m.into_shared().render(Format::OpenMetrics);
        assert!(!text.contains("agent_telemetry_events_delivered"), "{text}");
        assert!(!text.contains("agent_telemetry_exporter_failing"), "{text}");
    }

    #[test]
    fn counters_saturate_instead_of_wrapping() {
        let mut m = model();
        let tx = |v| ev(Category::Transfer, "agent_tx_bytes", v);
        m.ingest("a", &[tx(u64::MAX - 1), tx(5)]);
        assert_eq!(m.counter("a", "agent_tx_bytes"), Some(u64::MAX));
    }

    #[test]
    fn a_restarted_agent_starts_from_zero_and_removed_agents_vanish() {
        let mut m = model();
        m.ingest("a", &[ev(Category::Transfer, "agent_rx_bytes", 9)]);
        m.ingest("b", &[ev(Category::Transfer, "agent_rx_bytes", 1)]);
        m.restart_agent("a");
        assert_eq!(m.counter("a", "agent_rx_bytes"), Some(0));
        assert!(m.remove_agent("b"));
        let text = m.into_shared().render(Format::OpenMetrics);
        assert!(!text.contains("agent_name=\"b\""));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn every_builtin_event_has_an_effect() {
        let m = model();
        for e in telering_core::builtin::BUILTIN_EVENTS {
            assert!(m.names.effects.contains_key(&key_of(&e)), "{:?}", e.name);
        }
        for s in ErrorStatus::ALL {
            assert!(m.names.effects.contains_key(&key_of(&s.event())));
        }
    }
}
