//! The model's families as one OTLP `ExportMetricsServiceRequest`.
//!
//! Counters become monotonic cumulative sums, gauges gauges, and the latency
//! histograms cumulative explicit-bucket histograms over the configured bounds
//! (`NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US`). Metric names are those of the Prometheus
//! page (counters with `_total`), so one query works on scraped and pushed data; every
//! point carries `agent_name` and `hostname` (and any extra labels).

use crate::proto::{
    AggregationTemporality, AnyValue, ExportMetricsServiceRequest, Gauge, Histogram,
    HistogramDataPoint, InstrumentationScope, KeyValue, Metric, NumberDataPoint, Resource,
    ResourceMetrics, ScopeMetrics, Sum, any_value, metric, number_data_point,
};
use telering_prometheus::MetricModel;
use telering_prometheus::model::{FamilyKind, SeriesValue};

fn attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
    }
}

/// Encodes every family of `model` with `resource` attributes; points start at
/// `start_ns` and are stamped `now_ns` (Unix nanoseconds).
pub fn encode(
    model: &MetricModel,
    resource: &[(String, String)],
    start_ns: u64,
    now_ns: u64,
) -> ExportMetricsServiceRequest {
    let bounds = model.buckets().bounds().to_vec();
    let cumulative = AggregationTemporality::Cumulative as i32;
    let mut metrics = Vec::new();
    // The views are owned: their label strings move into the attributes, uncopied.
    for family in model.families() {
        let attrs = |labels: Vec<(String, String)>| {
            labels
                .into_iter()
                .map(|(key, value)| KeyValue {
                    key,
                    value: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(value)),
                    }),
                })
                .collect::<Vec<_>>()
        };
        let unit = unit_of(&family.name).to_owned();
        let series = family.series;
        let data = match family.kind {
            FamilyKind::Counter | FamilyKind::Gauge => {
                let points = series
                    .into_iter()
                    .filter_map(|s| {
                        let value = match s.value {
                            // OTLP integers are signed; counts past i64::MAX saturate.
                            SeriesValue::Number(v) => i64::try_from(v).unwrap_or(i64::MAX),
                            SeriesValue::Signed(v) => v,
                            SeriesValue::Histogram { .. } => return None,
                        };
                        Some(NumberDataPoint {
                            attributes: attrs(s.labels),
                            start_time_unix_nano: start_ns,
                            time_unix_nano: now_ns,
                            value: Some(number_data_point::Value::AsInt(value)),
                            ..Default::default()
                        })
                    })
                    .collect::<Vec<_>>();
                match family.kind {
                    FamilyKind::Counter => metric::Data::Sum(Sum {
                        data_points: points,
                        aggregation_temporality: cumulative,
                        is_monotonic: true,
                    }),
                    _ => metric::Data::Gauge(Gauge {
                        data_points: points,
                    }),
                }
            }
            FamilyKind::Histogram => metric::Data::Histogram(Histogram {
                data_points: series
                    .into_iter()
                    .filter_map(|s| match s.value {
                        SeriesValue::Histogram {
                            bucket_counts,
                            sum,
                            count,
                        } => Some(HistogramDataPoint {
                            attributes: attrs(s.labels),
                            start_time_unix_nano: start_ns,
                            time_unix_nano: now_ns,
                            count,
                            sum: Some(sum as f64),
                            bucket_counts,
                            explicit_bounds: bounds.clone(),
                            ..Default::default()
                        }),
                        SeriesValue::Number(_) | SeriesValue::Signed(_) => None,
                    })
                    .collect(),
                aggregation_temporality: cumulative,
            }),
        };
        metrics.push(Metric {
            name: family.name,
            description: family.help,
            unit,
            data: Some(data),
            ..Default::default()
        });
    }
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: resource.iter().map(|(k, v)| attribute(k, v)).collect(),
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "telering".to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    ..Default::default()
                }),
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

/// UCUM units: where the name says them, and for the memory counters, whose
/// events' values are the bytes registered and deregistered.
fn unit_of(name: &str) -> &'static str {
    const BYTE_COUNTERS: [&str; 2] = [
        "agent_memory_registered_total",
        "agent_memory_deregistered_total",
    ];
    if name.contains("bytes") || BYTE_COUNTERS.contains(&name) {
        "By"
    } else if name.contains("xfer_time") || name.contains("post_time") {
        "us"
    } else {
        "1"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telering_core::{Category, Event, builtin};
    use telering_prometheus::Buckets;

    #[test]
    fn counters_are_cumulative_monotonic_sums_with_agent_attributes() {
        let mut model = MetricModel::new("node7", Buckets::default());
        let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 100);
        model.ingest("a1", &[tx, tx, tx]);
        let req = encode(&model, &[("service.name".into(), "s".into())], 1, 2);
        let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
        let m = metrics
            .iter()
            .find(|m| m.name == "agent_tx_bytes_total")
            .unwrap();
        let Some(metric::Data::Sum(sum)) = &m.data else {
            panic!("not a sum: {m:?}")
        };
        assert!(sum.is_monotonic);
        assert_eq!(
            sum.aggregation_temporality,
            AggregationTemporality::Cumulative as i32
        );
        let p = &sum.data_points[0];
        assert_eq!(p.value, Some(number_data_point::Value::AsInt(300)));
        assert_eq!(
            p.attributes,
            vec![
                attribute("agent_name", "a1"),
                attribute("hostname", "node7")
            ]
        );
    }

    #[test]
    fn the_bridges_clock_offset_is_a_gauge_that_may_be_negative() {
        let mut model = MetricModel::new("n", Buckets::default());
        let name = telering_core::EventName::new("telering_link_clock_offset_us").unwrap();
        let offset = |v: i64| Event::new(1, Category::System, name, v as u64);
        model.ingest("dev", &[offset(40), offset(-3)]);
        let req = encode(&model, &[], 1, 2);
        let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
        let m = metrics
            .iter()
            .find(|m| m.name == "agent_system_event_telering_link_clock_offset_us")
            .unwrap();
        let Some(metric::Data::Gauge(gauge)) = &m.data else {
            panic!("not a gauge: {m:?}")
        };
        let value = gauge.data_points[0].value;
        assert_eq!(value, Some(number_data_point::Value::AsInt(-3)));
    }

    #[test]
    fn byte_counters_have_unit_by_and_latencies_us() {
        let mut model = MetricModel::new("n", Buckets::default());
        let events = [
            Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 4096),
            Event::new(
                1,
                Category::Transfer,
                builtin::AGENT_TX_REQUESTS_NUM.name,
                1,
            ),
            Event::new(
                1,
                Category::Memory,
                builtin::AGENT_MEMORY_REGISTERED.name,
                1 << 20,
            ),
            Event::new(
                1,
                Category::Memory,
                builtin::AGENT_MEMORY_DEREGISTERED.name,
                1 << 20,
            ),
            Event::new(1, Category::Performance, builtin::AGENT_XFER_TIME.name, 7),
        ];
        model.ingest("a", &events);
        let req = encode(&model, &[], 0, 0);
        let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
        let unit = |name: &str| {
            let m = metrics.iter().find(|m| m.name == name);
            m.unwrap_or_else(|| panic!("no {name} in {metrics:?}"))
                .unit
                .clone()
        };
        for bytes in [
            "agent_tx_bytes_total",
            "agent_memory_registered_total",
            "agent_memory_deregistered_total",
            "agent_memory_registered_last_bytes",
        ] {
            assert_eq!(unit(bytes), "By", "{bytes}");
        }
        assert_eq!(unit("agent_tx_requests_num_total"), "1");
        assert_eq!(unit("agent_xfer_time_us"), "us");
    }

    #[test]
    fn histograms_carry_the_configured_bounds() {
        let mut model = MetricModel::new("n", Buckets::default());
        let t = Event::new(1, Category::Performance, builtin::AGENT_XFER_TIME.name, 7);
        model.ingest("a", &[t]);
        let req = encode(&model, &[], 0, 0);
        let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
        let m = metrics
            .iter()
            .find(|m| m.name == "agent_xfer_time_us")
            .unwrap();
        let Some(metric::Data::Histogram(h)) = &m.data else {
            panic!("{m:?}")
        };
        let p = &h.data_points[0];
        assert_eq!(p.explicit_bounds, Buckets::default().bounds());
        assert_eq!(p.bucket_counts.len(), p.explicit_bounds.len() + 1);
        assert_eq!((p.count, p.sum), (1, Some(7.0)));
    }
}
