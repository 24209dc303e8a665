//! A structured view of every family and series of a [`MetricModel`], for encoders other
//! than the Prometheus text formats (OTLP): the same families, names, help texts and
//! labels a scrape shows.

use telering_core::Category;
use telering_core::builtin::ErrorStatus;

use super::MetricModel;
use super::tables::{self, CUSTOM_HELP, DELIVERED_FAMILY, ERROR_FAMILY, FAILING_FAMILY};
use crate::names::custom_family_name;

/// What a family measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FamilyKind {
    /// A monotonic cumulative sum.
    Counter,
    /// The value of the last operation.
    Gauge,
    /// Explicit-bucket histogram over [`MetricModel::buckets`].
    Histogram,
}

/// One series' value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeriesValue {
    /// A counter's or gauge's value.
    Number(u64),
    /// A gauge's value that may be negative (the bridge's clock offset and drift).
    Signed(i64),
    /// Per-bucket (not cumulative) counts, the `+Inf` bucket last, with sum and count.
    Histogram {
        /// Count per bucket; one more than there are bounds.
        bucket_counts: Vec<u64>,
        /// Sum of the observed values.
        sum: u64,
        /// Number of observations.
        count: u64,
    },
}

/// One series: labels (`agent_name`, `hostname`, then any extra) and value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesView {
    /// Label names and values, in scrape order.
    pub labels: Vec<(String, String)>,
    /// The value.
    pub value: SeriesValue,
}

/// One family as a scrape shows it. Counter names are given as exposed, with `_total`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FamilyView {
    /// The exposed name (`agent_tx_bytes_total`, `agent_xfer_time`, …).
    pub name: String,
    /// The help text.
    pub help: String,
    /// Counter, gauge or histogram.
    pub kind: FamilyKind,
    /// Every agent's series.
    pub series: Vec<SeriesView>,
}

impl MetricModel {
    /// Every family with every agent's series, as the Prometheus page shows them.
    ///
    /// ```
    /// use telering_core::{builtin, Category, Event};
    /// use telering_prometheus::{Buckets, MetricModel};
    /// use telering_prometheus::model::SeriesValue;
    /// let mut model = MetricModel::new("node1", Buckets::default());
    /// let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 4096);
    /// model.ingest("agent-a", &[tx, tx]);
    /// let families = model.families();
    /// let tx = families.iter().find(|f| f.name == "agent_tx_bytes_total").unwrap();
    /// assert_eq!(tx.series[0].value, SeriesValue::Number(8192));
    /// ```
    pub fn families(&self) -> Vec<FamilyView> {
        let host = self.hostname.as_str();
        let series: Vec<(&super::AgentMetrics, Vec<(String, String)>)> = self
            .agents
            .iter()
            .map(|(key, m)| {
                let name = m.labels.agent_name.as_deref().unwrap_or(key);
                let mut labels = vec![
                    ("agent_name".to_owned(), name.to_owned()),
                    ("hostname".to_owned(), host.to_owned()),
                ];
                labels.extend(
                    m.labels
                        .extra
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), v.clone())),
                );
                (m, labels)
            })
            .collect();
        let mut out = Vec::new();
        let numbers = |name: String,
                       help: &str,
                       kind: FamilyKind,
                       value: &dyn Fn(&super::AgentMetrics) -> Option<u64>| {
            FamilyView {
                name,
                help: help.to_owned(),
                kind,
                series: series
                    .iter()
                    .filter_map(|(m, labels)| {
                        value(m).map(|v| SeriesView {
                            labels: labels.clone(),
                            value: SeriesValue::Number(v),
                        })
                    })
                    .collect(),
            }
        };
        for (i, (name, help)) in tables::counter_families().enumerate() {
            out.push(numbers(
                format!("{name}_total"),
                help,
                FamilyKind::Counter,
                &|m| Some(m.counters[i]),
            ));
        }
        // Exporter health: only agents a collector watches have these series.
        let watched = |family: FamilyView| (!family.series.is_empty()).then_some(family);
        out.extend(watched(numbers(
            format!("{}_total", DELIVERED_FAMILY.0),
            DELIVERED_FAMILY.1,
            FamilyKind::Counter,
            &|m| Some(m.health?.delivered),
        )));
        let mut errors = FamilyView {
            name: format!("{}_total", ERROR_FAMILY.0),
            help: ERROR_FAMILY.1.to_owned(),
            kind: FamilyKind::Counter,
            series: Vec::new(),
        };
        for (m, labels) in &series {
            for (i, status) in ErrorStatus::ALL.iter().enumerate() {
                let mut labels = labels.clone();
                labels.push(("status".to_owned(), status.label().to_owned()));
                errors.series.push(SeriesView {
                    labels,
                    value: SeriesValue::Number(m.errors[i]),
                });
            }
        }
        out.push(errors);
        for (i, (name, help)) in tables::gauge_families().enumerate() {
            out.push(numbers(name.to_owned(), help, FamilyKind::Gauge, &|m| {
                Some(m.gauges[i])
            }));
        }
        out.extend(watched(numbers(
            FAILING_FAMILY.0.to_owned(),
            FAILING_FAMILY.1,
            FamilyKind::Gauge,
            &|m| Some(u64::from(m.health?.failing)),
        )));
        for (i, (name, help)) in tables::histogram_families().enumerate() {
            out.push(FamilyView {
                name: name.to_owned(),
                help: help.to_owned(),
                kind: FamilyKind::Histogram,
                series: series
                    .iter()
                    .map(|(m, labels)| {
                        let h = &m.histograms[i];
                        SeriesView {
                            labels: labels.clone(),
                            value: SeriesValue::Histogram {
                                bucket_counts: h.counts.to_vec(),
                                sum: h.sum,
                                count: h.count,
                            },
                        }
                    })
                    .collect(),
            });
        }
        for (idx, name) in self.names.custom_families.iter().enumerate() {
            let idx = idx as u32;
            let family = numbers(
                format!("{name}_total"),
                CUSTOM_HELP,
                FamilyKind::Counter,
                &|m| m.custom.get(&idx).copied(),
            );
            if !family.series.is_empty() {
                out.push(family);
            }
        }
        for (i, (name, signed, help)) in tables::STATE_GAUGES.iter().enumerate() {
            let family = FamilyView {
                name: custom_family_name(Category::System, name),
                help: (*help).to_owned(),
                kind: FamilyKind::Gauge,
                series: series
                    .iter()
                    .filter_map(|(m, labels)| {
                        m.states[i].map(|v| SeriesView {
                            labels: labels.clone(),
                            value: SeriesValue::Signed(tables::state_value(v, *signed)),
                        })
                    })
                    .collect(),
            };
            if !family.series.is_empty() {
                out.push(family);
            }
        }
        out.extend(self.route_families());
        out
    }
}
