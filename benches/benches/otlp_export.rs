//! telering-otlp: CPU time and bytes on the wire per OTLP export of 64 agents' series,
//! against the path `opentelemetry-otlp` takes per export for the same series (the
//! OpenTelemetry SDK's collect, `opentelemetry-proto`'s conversion to the request,
//! `prost` encoding), with and without gzip; and beside them the Prometheus text page of
//! the same model (what one scrape of the node renders). See `BENCHMARKS.md`.
//!
//! Both contenders are measured up to the request body: the HTTP POST is the same for
//! both and is left out. One thread does all the work, so its wall time is its CPU time
//! (on a machine shared with other builds, rounds that were preempted show as the max).

use std::hint::black_box;
use std::sync::{Arc, Weak};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::data::ResourceMetrics;
use opentelemetry_sdk::metrics::reader::MetricReader;
use opentelemetry_sdk::metrics::{
    InstrumentKind, ManualReader, Pipeline, SdkMeterProvider, Temporality,
};
use prost::Message;
use telering_benches::workload::flush_batch;
use telering_benches::{Contender, compare, rounds};
use telering_otlp::{Compression, push::compress};
use telering_prometheus::model::{FamilyKind, SeriesValue};
use telering_prometheus::{Buckets, Format, MetricModel};

const AGENTS: usize = 64;
const EXPORTS: usize = 20;
const RESOURCE: [(&str, &str); 2] = [
    ("service.name", "node-collector"),
    ("deployment.environment", "bench"),
];

fn telering_model() -> MetricModel {
    let mut model = MetricModel::new("bench-host-01", Buckets::default());
    let events = flush_batch(64);
    for i in 0..AGENTS {
        model.ingest(&format!("agent-{i:04}"), &events);
    }
    model
}

/// Shares a [`ManualReader`] between the meter provider (which owns its readers) and
/// the benchmark, which calls `collect` as a periodic reader's thread would.
#[derive(Debug, Clone)]
struct SharedReader(Arc<ManualReader>);

impl MetricReader for SharedReader {
    fn register_pipeline(&self, pipeline: Weak<Pipeline>) {
        self.0.register_pipeline(pipeline)
    }
    fn collect(&self, rm: &mut ResourceMetrics) -> OTelSdkResult {
        self.0.collect(rm)
    }
    fn force_flush(&self) -> OTelSdkResult {
        self.0.force_flush()
    }
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
    fn temporality(&self, kind: InstrumentKind) -> Temporality {
        self.0.temporality(kind)
    }
}

/// The model's series recorded through the SDK's instruments (cumulative, as the
/// telering model is): counters added, gauges set, and each histogram bucket's count
/// recorded as that many values at the bucket's upper bound.
fn sdk_with_the_same_series(model: &MetricModel) -> (SdkMeterProvider, SharedReader) {
    let reader = SharedReader(Arc::new(ManualReader::builder().build()));
    let resource = Resource::builder_empty()
        .with_attributes(RESOURCE.iter().map(|(k, v)| KeyValue::new(*k, *v)))
        .build();
    let provider = SdkMeterProvider::builder()
        .with_resource(resource)
        .with_reader(reader.clone())
        .build();
    let meter = provider.meter("telering");
    let bounds: Vec<f64> = model.buckets().bounds().to_vec();
    for family in model.families() {
        let attrs = |labels: &[(String, String)]| -> Vec<KeyValue> {
            labels
                .iter()
                .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
                .collect()
        };
        match family.kind {
            FamilyKind::Counter => {
                let c = meter.u64_counter(family.name.clone()).build();
                for s in &family.series {
                    if let SeriesValue::Number(v) = s.value {
                        c.add(v, &attrs(&s.labels));
                    }
                }
            }
            FamilyKind::Gauge => {
                let g = meter.u64_gauge(family.name.clone()).build();
                for s in &family.series {
                    if let SeriesValue::Number(v) = s.value {
                        g.record(v, &attrs(&s.labels));
                    }
                }
            }
            FamilyKind::Histogram => {
                let h = meter
                    .u64_histogram(family.name.clone())
                    .with_boundaries(bounds.clone())
                    .build();
                for s in &family.series {
                    if let SeriesValue::Histogram { bucket_counts, .. } = &s.value {
                        let a = attrs(&s.labels);
                        for (i, n) in bucket_counts.iter().enumerate() {
                            let at = bounds.get(i).map_or(u64::MAX, |b| *b as u64);
                            for _ in 0..*n {
                                h.record(at, &a);
                            }
                        }
                    }
                }
            }
        }
    }
    (provider, reader)
}

fn telering_export(model: &MetricModel, compression: Compression) -> Vec<u8> {
    let resource: Vec<(String, String)> = RESOURCE
        .iter()
        .map(|(k, v)| ((*k).into(), (*v).into()))
        .collect();
    let body = telering_otlp::encode::encode(model, &resource, 1, 2).encode_to_vec();
    compress(body, compression)
}

fn sdk_export(reader: &SharedReader, compression: Compression) -> Vec<u8> {
    let mut rm = ResourceMetrics::default();
    reader.collect(&mut rm).expect("collect");
    compress(
        ExportMetricsServiceRequest::from(&rm).encode_to_vec(),
        compression,
    )
}

fn points(body: &[u8]) -> usize {
    let req = ExportMetricsServiceRequest::decode(body).expect("a request");
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    req.resource_metrics
        .iter()
        .flat_map(|r| &r.scope_metrics)
        .flat_map(|s| &s.metrics)
        .map(|m| match &m.data {
            Some(Data::Sum(s)) => s.data_points.len(),
            Some(Data::Gauge(g)) => g.data_points.len(),
            Some(Data::Histogram(h)) => h.data_points.len(),
            _ => 0,
        })
        .sum()
}

/// Exports counted by instructions under callgrind (`TELERING_OTLP_CALLGRIND=1`).
const COUNTED: usize = 10;

#[inline(never)]
fn measure_telering(model: &telering_prometheus::SharedModel) {
    for _ in 0..COUNTED {
        black_box(telering_export(&model.lock(), Compression::None));
    }
}

#[inline(never)]
fn measure_sdk(reader: &SharedReader) {
    for _ in 0..COUNTED {
        black_box(sdk_export(reader, Compression::None));
    }
}

#[inline(never)]
fn measure_page(model: &telering_prometheus::SharedModel) {
    for _ in 0..COUNTED {
        black_box(model.render(Format::PrometheusText));
    }
}

fn main() {
    let shared = telering_model().into_shared();
    if std::env::var_os("TELERING_OTLP_CALLGRIND").is_some() {
        // Only the counted functions run: `valgrind --tool=callgrind
        // --toggle-collect='otlp_export::measure_*'` (see BENCHMARKS.md).
        let (_provider, reader) = sdk_with_the_same_series(&shared.lock());
        measure_telering(&shared);
        measure_sdk(&reader);
        measure_page(&shared);
        return;
    }
    let model = shared.lock();
    let (_provider, reader) = sdk_with_the_same_series(&model);
    let ours = telering_export(&model, Compression::None);
    let theirs = sdk_export(&reader, Compression::None);
    let (our_points, their_points) = (points(&ours), points(&theirs));
    assert_eq!(
        our_points, their_points,
        "both requests carry the same data points"
    );
    let ours_gz = telering_export(&model, Compression::Gzip).len();
    drop(model);
    let page = shared.render(Format::PrometheusText);
    let page_gz = telering_prometheus::http::gzip_bytes(page.as_bytes());
    println!("## OTLP export of {AGENTS} agents ({our_points} data points)\n");
    println!("| request body | bytes | gzip bytes |\n|---|---|---|");
    for (name, plain, gz) in [
        ("telering-otlp", ours.len(), ours_gz),
        (
            "opentelemetry SDK + opentelemetry-proto",
            theirs.len(),
            sdk_export(&reader, Compression::Gzip).len(),
        ),
        (
            "Prometheus text page (same model)",
            page.len(),
            page_gz.len(),
        ),
    ] {
        println!("| {name} | {plain} | {gz} |");
    }
    println!();
    let per_export = |f: &mut dyn FnMut() -> usize| {
        for _ in 0..EXPORTS {
            black_box(f());
        }
    };
    for compression in [Compression::None, Compression::Gzip] {
        let c = compare(
            &format!("OTLP export, {AGENTS} agents, {compression:?} (work: exports)"),
            EXPORTS as u64,
            rounds(7),
            "opentelemetry SDK collect + opentelemetry-proto + prost",
            vec![
                Contender::timed("telering-otlp (lock, encode, prost)", || {
                    per_export(&mut || telering_export(&shared.lock(), compression).len())
                }),
                Contender::timed(
                    "opentelemetry SDK collect + opentelemetry-proto + prost",
                    || per_export(&mut || sdk_export(&reader, compression).len()),
                ),
                Contender::timed("Prometheus text page of the same model", || {
                    per_export(&mut || {
                        let page = shared.render(Format::PrometheusText);
                        match compression {
                            Compression::None => page.len(),
                            Compression::Gzip => {
                                telering_prometheus::http::gzip_bytes(page.as_bytes()).len()
                            }
                        }
                    })
                }),
            ],
        );
        println!("{}", c.to_markdown());
        for (name, thr, _) in &c.rows {
            println!(
                "- {name}: {:.1} µs per export (min–max {:.1}–{:.1})",
                1e6 / thr.median,
                1e6 / thr.max,
                1e6 / thr.min
            );
        }
        println!();
    }
}
