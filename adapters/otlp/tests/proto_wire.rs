//! telering-otlp's own OTLP messages against `opentelemetry-proto`'s: a request with
//! every kind of metric telering sends decodes with the upstream types and encodes
//! back to the same bytes, so no field was dropped as unknown and none changed its
//! number or wire type.

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest as Upstream;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use prost::Message;
use telering_core::{Category, Event, builtin, event_name};
use telering_prometheus::{Buckets, MetricModel};

fn model() -> MetricModel {
    let mut model = MetricModel::new("node7", Buckets::default());
    let events = [
        Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 4096),
        Event::new(2, Category::Performance, builtin::AGENT_XFER_TIME.name, 35),
        Event::new(
            3,
            Category::Memory,
            builtin::AGENT_MEMORY_REGISTERED.name,
            1 << 20,
        ),
        Event::new(4, Category::Custom, event_name!("queue_depth"), 17),
    ];
    model.ingest("agent-0", &events);
    model.ingest("agent-1", &events[..2]);
    model
}

#[test]
fn a_request_reads_back_unchanged_with_the_upstream_messages() {
    let resource = [
        ("service.name".to_owned(), "node-collector".to_owned()),
        ("deployment.environment".to_owned(), "ci".to_owned()),
    ];
    let ours = telering_otlp::encode::encode(&model(), &resource, 1_000, 2_000).encode_to_vec();
    let upstream = Upstream::decode(ours.as_slice()).expect("upstream decodes our request");
    assert_eq!(
        upstream.encode_to_vec(),
        ours,
        "a field was lost or re-encoded"
    );

    let scope = &upstream.resource_metrics[0].scope_metrics[0];
    assert_eq!(scope.scope.as_ref().unwrap().name, "telering");
    let kinds: Vec<&str> = scope
        .metrics
        .iter()
        .map(|m| match &m.data {
            Some(Data::Sum(s)) if s.is_monotonic => "sum",
            Some(Data::Gauge(_)) => "gauge",
            Some(Data::Histogram(h)) if !h.data_points[0].explicit_bounds.is_empty() => "histogram",
            other => panic!("{}: unexpected data {other:?}", m.name),
        })
        .collect();
    for kind in ["sum", "gauge", "histogram"] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let tx = scope
        .metrics
        .iter()
        .find(|m| m.name == "agent_tx_bytes_total")
        .unwrap();
    let Some(Data::Sum(sum)) = &tx.data else {
        panic!("{tx:?}")
    };
    let point = &sum.data_points[0];
    assert_eq!(
        (point.start_time_unix_nano, point.time_unix_nano),
        (1_000, 2_000)
    );
    assert_eq!(point.attributes[0].key, "agent_name");
}
