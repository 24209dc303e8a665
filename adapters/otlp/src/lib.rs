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
//! - the push thread and its retry rules: see the `push` module.
//!
//! No async runtime: `ureq` (blocking, TLS off unless the `tls` feature) on one thread.

#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]

pub mod config;
pub mod encode;
pub mod exporter;
mod push;

pub use config::{ConfigError, OtlpConfig};
pub use exporter::{EXPORTER_NAME, OtlpExporter, register};
