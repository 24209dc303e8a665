//! The slowest transfers as OTLP spans: one span per transfer each flush interval
//! kept whole ([`telering_std::route`]), its route as attributes, pushed to the
//! traces endpoint (`…/v1/traces` beside `…/v1/metrics`) after each metrics push.
//!
//! The messages are declared here as the metric ones are in [`crate::proto`], with
//! the field numbers of `opentelemetry/proto/collector/trace/v1` and `trace/v1`;
//! only the fields telering fills. Spans wait in a bounded [`SpanQueue`]: past
//! [`SpanQueue::CAPACITY`] the newest are refused and counted, and a push that fails
//! loses its spans, counted too ([`SpanQueue::dropped`]): a span is an example, not a
//! total, so it is not retried.
//!
//! A span's trace and span ids are [`SlowXfer::trace_ids`]: the same ids the
//! in-process Prometheus exporter puts on the transfer's exemplar and the `csv`
//! exporter on its route row, so a person can go from either to the span.

use crate::proto::{AnyValue, InstrumentationScope, KeyValue, Resource, any_value};
use prost::Message;
use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use telering_std::route::{Route, SlowXfer};

/// `opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest`.
#[derive(Clone, PartialEq, Message)]
pub struct ExportTraceServiceRequest {
    /// One entry per resource (telering sends one).
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

/// `opentelemetry.proto.trace.v1.ResourceSpans`.
#[derive(Clone, PartialEq, Message)]
pub struct ResourceSpans {
    /// The process the spans describe.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The spans, by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
    /// The schema of the resource's attributes (empty: none).
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `opentelemetry.proto.trace.v1.ScopeSpans`.
#[derive(Clone, PartialEq, Message)]
pub struct ScopeSpans {
    /// Who made the spans (`telering` and its version).
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The spans.
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<Span>,
    /// The schema (empty: none).
    #[prost(string, tag = "3")]
    pub schema_url: String,
}

/// `opentelemetry.proto.trace.v1.Span`, the fields telering fills.
#[derive(Clone, PartialEq, Message)]
pub struct Span {
    /// 16 bytes, not all zero.
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    /// 8 bytes, not all zero.
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    /// `telering.transfer`.
    #[prost(string, tag = "5")]
    pub name: String,
    /// `SPAN_KIND_CLIENT` (3).
    #[prost(int32, tag = "6")]
    pub kind: i32,
    /// Start, Unix nanoseconds.
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    /// End, Unix nanoseconds.
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    /// The route and the transfer's numbers.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
}

/// One kept transfer waiting to be pushed.
#[derive(Clone, Debug)]
pub struct PendingSpan {
    /// The agent that recorded it.
    pub agent: String,
    /// Its route.
    pub route: Route,
    /// The transfer.
    pub xfer: SlowXfer,
    /// Its position in the flush's [`RouteReport::slow`](telering_std::route::RouteReport::slow),
    /// which its ids depend on ([`SlowXfer::trace_ids`]).
    pub position: usize,
}

/// Kept transfers waiting for the next push (see the module docs).
#[derive(Debug, Default)]
pub struct SpanQueue {
    pending: Mutex<VecDeque<PendingSpan>>,
    dropped: AtomicU64,
    pushed: AtomicU64,
}

impl SpanQueue {
    /// The most spans waiting; more are refused and counted.
    pub const CAPACITY: usize = 4096;

    /// Queues `spans`, refusing (and counting) those past the capacity.
    pub fn offer(&self, spans: impl IntoIterator<Item = PendingSpan>) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        for span in spans {
            if pending.len() < Self::CAPACITY {
                pending.push_back(span);
            } else {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Takes every waiting span.
    pub(crate) fn take(&self) -> Vec<PendingSpan> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.drain(..).collect()
    }

    pub(crate) fn count_dropped(&self, spans: u64) {
        self.dropped.fetch_add(spans, Ordering::Relaxed);
    }

    pub(crate) fn count_pushed(&self, spans: u64) {
        self.pushed.fetch_add(spans, Ordering::Relaxed);
    }

    /// Spans refused by a full queue or lost with a failed push.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Spans a collector took (a 2xx answer).
    pub fn pushed(&self) -> u64 {
        self.pushed.load(Ordering::Relaxed)
    }
}

/// The traces URL beside a metrics URL: `…/v1/metrics` becomes `…/v1/traces`; any
/// other metrics URL gets `/v1/traces` on its scheme and authority.
///
/// ```
/// use telering_otlp::spans::traces_endpoint;
/// assert_eq!(traces_endpoint("http://c:4318/v1/metrics"), "http://c:4318/v1/traces");
/// assert_eq!(traces_endpoint("http://c:4318/custom"), "http://c:4318/v1/traces");
/// ```
pub fn traces_endpoint(metrics: &str) -> String {
    if let Some(base) = metrics.strip_suffix("/v1/metrics") {
        return format!("{base}/v1/traces");
    }
    let after_scheme = metrics.find("://").map_or(0, |i| i + 3);
    let end = metrics[after_scheme..]
        .find('/')
        .map_or(metrics.len(), |i| after_scheme + i);
    format!("{}/v1/traces", &metrics[..end])
}

fn string(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
    }
}

fn int(key: &str, value: u64) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::IntValue(
                i64::try_from(value).unwrap_or(i64::MAX),
            )),
        }),
    }
}

/// The request carrying `spans` under `resource` attributes.
///
/// ```
/// use telering_otlp::spans::{encode_spans, PendingSpan};
/// use telering_std::route::{MemoryType, Operation, Route, SlowXfer};
/// let route = Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "decode-0");
/// let xfer = SlowXfer { xfer_us: 900, start_us: 1_000, post_us: 4, bytes: 4096, descriptors: 2, route_index: 0, operation: Operation::Write };
/// let ids = xfer.trace_ids("a", &route, 0);
/// let request = encode_spans(&[], vec![PendingSpan { agent: "a".into(), route, xfer, position: 0 }]);
/// let span = &request.resource_spans[0].scope_spans[0].spans[0];
/// assert_eq!((span.start_time_unix_nano, span.end_time_unix_nano), (1_000_000, 1_900_000));
/// assert_eq!((&span.trace_id[..], &span.span_id[..]), (&ids.trace_id[..], &ids.span_id[..]));
/// ```
pub fn encode_spans(
    resource: &[(String, String)],
    spans: Vec<PendingSpan>,
) -> ExportTraceServiceRequest {
    let spans = spans
        .into_iter()
        .map(|p| {
            let r = &p.route;
            let x = &p.xfer;
            let ids = x.trace_ids(&p.agent, r, p.position);
            let start_ns = x.start_us.saturating_mul(1_000);
            Span {
                trace_id: ids.trace_id.to_vec(),
                span_id: ids.span_id.to_vec(),
                name: "telering.transfer".to_owned(),
                kind: 3,
                start_time_unix_nano: start_ns,
                end_time_unix_nano: start_ns.saturating_add(x.xfer_us.saturating_mul(1_000)),
                attributes: vec![
                    string("telering.agent_name", &p.agent),
                    string("telering.operation", r.operation.as_str()),
                    string("telering.backend", &r.backend),
                    string("telering.local_mem", r.local.as_str()),
                    string("telering.remote_mem", r.remote.as_str()),
                    string("telering.peer", &r.peer),
                    int("telering.bytes", x.bytes),
                    int("telering.descriptors", x.descriptors),
                    int("telering.post_time_us", x.post_us),
                    int("telering.xfer_time_us", x.xfer_us),
                ],
            }
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: resource.iter().map(|(k, v)| string(k, v)).collect(),
                dropped_attributes_count: 0,
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "telering".to_owned(),
                    version: env!("CARGO_PKG_VERSION").to_owned(),
                    attributes: Vec::new(),
                    dropped_attributes_count: 0,
                }),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}
