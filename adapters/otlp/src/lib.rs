//! OTLP/HTTP push of an agent's metrics to OpenTelemetry collectors.
//!
//! `NIXL_TELEMETRY_EXPORTER=otlp` folds the agent's events into the same metric model
//! as the `prometheus` exporter (the same families and labels) and pushes it every
//! `OTEL_METRIC_EXPORT_INTERVAL` as protobuf (`application/x-protobuf`) to
//! `/v1/metrics`, with cumulative temporality: counters as monotonic sums, gauges,
//! and explicit-bucket histograms with NIXL's bounds.
//!
//! - [`OtlpConfig`]: the standard `OTEL_*` variables (see [`config`]);
//! - [`OtlpExporter`], registered in a telering-std registry with [`register`];
//! - [`Pusher`], the push thread of any [`telering_prometheus::SharedModel`] (one
//!   agent's, or a node collector's for `telering serve --otlp`), and its retry rules;
//! - [`encode`], the model as one request, in the messages of [`proto`].
//!
//! No async runtime: `ureq` (blocking, TLS off unless the `tls` feature) on one thread.

#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]

pub mod config;
pub mod encode;
pub mod exporter;
pub mod proto;
pub mod push;
pub mod spans;

pub use config::{Compression, ConfigError, OtlpConfig};
pub use exporter::{EXPORTER_NAME, OtlpExporter, register};
pub use push::{MAX_RETRY_AFTER, Pusher};
