//! Route totals in the OTLP request: one point per route, the route as attributes,
//! the exact sums (the model as the in-process exporter fills it).

use telering_core::builtin::ErrorStatus;
use telering_otlp::proto::{any_value, metric, number_data_point};
use telering_prometheus::{Buckets, MetricModel};
use telering_std::route::{MemoryType, Operation, Route, RouteReport, RouteStats};

fn attr(kv: &[telering_otlp::proto::KeyValue], key: &str) -> Option<String> {
    kv.iter()
        .find(|a| a.key == key)
        .and_then(|a| match &a.value {
            Some(telering_otlp::proto::AnyValue {
                value: Some(any_value::Value::StringValue(s)),
            }) => Some(s.clone()),
            _ => None,
        })
}

#[test]
fn each_route_is_one_point_with_the_route_as_attributes() {
    let mut model = MetricModel::new("node7", Buckets::default());
    model.add_agent("prefill-0");
    let vram = Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        "decode-0",
    );
    let file = Route::new(
        Operation::Read,
        "POSIX",
        MemoryType::Dram,
        MemoryType::File,
        "",
    );
    let mut errors = [0; 12];
    errors[ErrorStatus::Backend as usize] = 2;
    let report = RouteReport {
        routes: vec![
            (
                vram,
                RouteStats {
                    bytes: 1 << 30,
                    transfers: 1024,
                    errors,
                    ..Default::default()
                },
            ),
            (
                file,
                RouteStats {
                    bytes: 4096,
                    transfers: 1,
                    ..Default::default()
                },
            ),
        ],
        slow: Vec::new(),
        folded: 3,
    };
    model.set_routes("prefill-0", report);
    let request = telering_otlp::encode::encode(&model, &[], 1, 2);
    let metrics = &request.resource_metrics[0].scope_metrics[0].metrics;
    let points = |name: &str| {
        let m = metrics
            .iter()
            .find(|m| m.name.starts_with(name))
            .unwrap_or_else(|| panic!("{name}"));
        match &m.data {
            Some(metric::Data::Sum(sum)) => sum.data_points.clone(),
            Some(metric::Data::Gauge(g)) => g.data_points.clone(),
            other => panic!("{name}: {other:?}"),
        }
    };
    let value = |p: &telering_otlp::proto::NumberDataPoint| match p.value {
        Some(number_data_point::Value::AsInt(v)) => v,
        ref other => panic!("{other:?}"),
    };
    let bytes = points("telering_route_bytes");
    assert_eq!(bytes.len(), 2);
    let by_peer: Vec<_> = bytes
        .iter()
        .map(|p| {
            (
                attr(&p.attributes, "peer").unwrap(),
                attr(&p.attributes, "remote_mem").unwrap(),
                value(p),
            )
        })
        .collect();
    assert!(
        by_peer.contains(&("decode-0".into(), "VRAM".into(), 1 << 30)),
        "{by_peer:?}"
    );
    assert!(
        by_peer.contains(&("".into(), "FILE".into(), 4096)),
        "{by_peer:?}"
    );
    let errors = points("telering_route_errors");
    assert_eq!(errors.len(), 1);
    assert_eq!(
        attr(&errors[0].attributes, "status").as_deref(),
        Some("backend")
    );
    assert_eq!(value(&errors[0]), 2);
    assert_eq!(value(&points("telering_routes_folded")[0]), 3);
}
