//! The OTLP protobuf messages telering sends: an `ExportMetricsServiceRequest` with
//! gauges, monotonic sums and explicit-bucket histograms, as `prost` messages.
//!
//! Written here, with the field numbers of the OpenTelemetry protocol's `.proto` files
//! (`opentelemetry/proto/collector/metrics/v1`, `metrics/v1`, `common/v1`,
//! `resource/v1`), instead of taken from the `opentelemetry-proto` crate: that crate
//! depends on the OpenTelemetry SDK and its futures stack (a dozen crates) even when
//! only its messages are used. Only the messages and fields telering fills are
//! declared; a test checks that the bytes decode unchanged with `opentelemetry-proto`'s
//! own types, so every field keeps its number and wire type.

use prost::{Enumeration, Message, Oneof};

/// `opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest`.
///
/// ```
/// use prost::Message;
/// use telering_otlp::proto::ExportMetricsServiceRequest;
/// let empty = ExportMetricsServiceRequest::default();
/// assert!(empty.encode_to_vec().is_empty());
/// ```
#[derive(Clone, PartialEq, Message)]
pub struct ExportMetricsServiceRequest {
    /// One entry per resource (telering sends one).
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// `opentelemetry.proto.metrics.v1.ResourceMetrics`.
#[derive(Clone, PartialEq, Message)]
pub struct ResourceMetrics {
    /// The process or node the metrics describe.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The metrics, by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
    /// The schema of the resource's attributes (empty: none).
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `opentelemetry.proto.resource.v1.Resource`.
#[derive(Clone, PartialEq, Message)]
pub struct Resource {
    /// `service.name`, `host.name` and the `OTEL_RESOURCE_ATTRIBUTES`.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    /// Attributes left out.
    #[prost(uint32, tag = "2")]
    pub dropped_attributes_count: u32,
}

/// `opentelemetry.proto.metrics.v1.ScopeMetrics`.
#[derive(Clone, PartialEq, Message)]
pub struct ScopeMetrics {
    /// Who made the metrics (`telering` and its version).
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The metrics.
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
    /// The schema of the metrics (empty: none).
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `opentelemetry.proto.common.v1.InstrumentationScope`.
#[derive(Clone, PartialEq, Message)]
pub struct InstrumentationScope {
    /// The library's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The library's version.
    #[prost(string, tag = "2")]
    pub version: String,
    /// The scope's attributes.
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
    /// Attributes left out.
    #[prost(uint32, tag = "4")]
    pub dropped_attributes_count: u32,
}

/// `opentelemetry.proto.common.v1.KeyValue`.
#[derive(Clone, PartialEq, Message)]
pub struct KeyValue {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Its value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `opentelemetry.proto.common.v1.AnyValue`, the scalar kinds.
#[derive(Clone, PartialEq, Message)]
pub struct AnyValue {
    /// The value.
    #[prost(oneof = "any_value::Value", tags = "1, 2, 3, 4")]
    pub value: Option<any_value::Value>,
}

/// The kinds of [`AnyValue`].
pub mod any_value {
    use super::Oneof;

    /// `AnyValue.value`.
    #[derive(Clone, PartialEq, Oneof)]
    pub enum Value {
        /// `string_value`.
        #[prost(string, tag = "1")]
        StringValue(String),
        /// `bool_value`.
        #[prost(bool, tag = "2")]
        BoolValue(bool),
        /// `int_value`.
        #[prost(int64, tag = "3")]
        IntValue(i64),
        /// `double_value`.
        #[prost(double, tag = "4")]
        DoubleValue(f64),
    }
}

/// `opentelemetry.proto.metrics.v1.Metric`.
#[derive(Clone, PartialEq, Message)]
pub struct Metric {
    /// The metric's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// What it measures.
    #[prost(string, tag = "2")]
    pub description: String,
    /// Its UCUM unit.
    #[prost(string, tag = "3")]
    pub unit: String,
    /// The points.
    #[prost(oneof = "metric::Data", tags = "5, 7, 9")]
    pub data: Option<metric::Data>,
    /// Metadata about the metric (not attributes of its points).
    #[prost(message, repeated, tag = "12")]
    pub metadata: Vec<KeyValue>,
}

/// The kinds of [`Metric`] telering sends.
pub mod metric {
    use super::Oneof;

    /// `Metric.data`.
    #[derive(Clone, PartialEq, Oneof)]
    pub enum Data {
        /// `gauge`.
        #[prost(message, tag = "5")]
        Gauge(super::Gauge),
        /// `sum`.
        #[prost(message, tag = "7")]
        Sum(super::Sum),
        /// `histogram`.
        #[prost(message, tag = "9")]
        Histogram(super::Histogram),
    }
}

/// `opentelemetry.proto.metrics.v1.Gauge`.
#[derive(Clone, PartialEq, Message)]
pub struct Gauge {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// `opentelemetry.proto.metrics.v1.Sum`.
#[derive(Clone, PartialEq, Message)]
pub struct Sum {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    /// An [`AggregationTemporality`] as its number.
    #[prost(enumeration = "AggregationTemporality", tag = "2")]
    pub aggregation_temporality: i32,
    /// Whether the sum only grows (a counter).
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// `opentelemetry.proto.metrics.v1.Histogram`.
#[derive(Clone, PartialEq, Message)]
pub struct Histogram {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    /// An [`AggregationTemporality`] as its number.
    #[prost(enumeration = "AggregationTemporality", tag = "2")]
    pub aggregation_temporality: i32,
}

/// `opentelemetry.proto.metrics.v1.AggregationTemporality`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Enumeration)]
#[repr(i32)]
pub enum AggregationTemporality {
    /// Not set.
    Unspecified = 0,
    /// Each point covers the time since the previous one.
    Delta = 1,
    /// Each point covers the time since the start.
    Cumulative = 2,
}

/// `opentelemetry.proto.metrics.v1.NumberDataPoint`.
#[derive(Clone, PartialEq, Message)]
pub struct NumberDataPoint {
    /// The series' labels.
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    /// Start of the cumulation, Unix nanoseconds.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// When the value was taken, Unix nanoseconds.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// The value.
    #[prost(oneof = "number_data_point::Value", tags = "4, 6")]
    pub value: Option<number_data_point::Value>,
    /// Flags (none set by telering).
    #[prost(uint32, tag = "8")]
    pub flags: u32,
}

/// The kinds of [`NumberDataPoint`] values.
pub mod number_data_point {
    use super::Oneof;

    /// `NumberDataPoint.value`.
    #[derive(Clone, Copy, PartialEq, Oneof)]
    pub enum Value {
        /// `as_double`.
        #[prost(double, tag = "4")]
        AsDouble(f64),
        /// `as_int`.
        #[prost(sfixed64, tag = "6")]
        AsInt(i64),
    }
}

/// `opentelemetry.proto.metrics.v1.HistogramDataPoint`.
#[derive(Clone, PartialEq, Message)]
pub struct HistogramDataPoint {
    /// The series' labels.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// Start of the cumulation, Unix nanoseconds.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// When the value was taken, Unix nanoseconds.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// Observations.
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    /// Their sum.
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    /// Observations per bucket, one more than `explicit_bounds`.
    #[prost(fixed64, repeated, tag = "6")]
    pub bucket_counts: Vec<u64>,
    /// The buckets' upper bounds.
    #[prost(double, repeated, tag = "7")]
    pub explicit_bounds: Vec<f64>,
    /// Flags (none set by telering).
    #[prost(uint32, tag = "10")]
    pub flags: u32,
    /// The smallest observation, when known.
    #[prost(double, optional, tag = "11")]
    pub min: Option<f64>,
    /// The largest observation, when known.
    #[prost(double, optional, tag = "12")]
    pub max: Option<f64>,
}
