//! Prometheus metrics for telering: the `prometheus` exporter of one agent, and a node
//! collector that serves every agent ring in a directory on one endpoint.
//!
//! # Metric families
//!
//! Names and types are those of NIXL's Prometheus exporter, so its dashboards and
//! alerts keep working. Every series carries the labels `agent_name` and `hostname`.
//!
//! | family | type | fed by (event, category) |
//! |---|---|---|
//! | `agent_tx_bytes_total`, `agent_rx_bytes_total` | counter | `agent_tx_bytes`, `agent_rx_bytes` (transfer): sum of values |
//! | `agent_tx_requests_num_total`, `agent_rx_requests_num_total` | counter | `agent_tx_requests_num`, `agent_rx_requests_num` (transfer) |
//! | `agent_memory_registered_total`, `agent_memory_deregistered_total` | counter | `agent_memory_registered`, `agent_memory_deregistered` (memory) |
//! | `agent_xfer_time_total`, `agent_xfer_post_time_total` | counter | `agent_xfer_time`, `agent_xfer_post_time` (performance): sums in µs |
//! | `agent_telemetry_events_dropped_total` | counter | `agent_telemetry_events_dropped` (error) and losses reported to the exporter |
//! | `agent_errors_total{status}` | counter | `NIXL_ERR_*` (error); `status` is [`ErrorStatus::label`](telering_core::builtin::ErrorStatus::label) |
//! | `agent_tx_last_bytes`, `agent_rx_last_bytes` | gauge | last value of `agent_tx_bytes`, `agent_rx_bytes` |
//! | `agent_memory_registered_last_bytes`, `agent_memory_deregistered_last_bytes` | gauge | last value of the memory events |
//! | `agent_xfer_time`, `agent_xfer_post_time` | gauge | last value of the latency events, µs |
//! | `agent_xfer_time_us`, `agent_xfer_post_time_us` | histogram | the latency events; buckets from `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US` or [`DEFAULT_BUCKETS_US`] |
//!
//! telering adds two loss counters, so that nothing is lost silently:
//! `agent_telemetry_events_missed_total` (events an observing collector missed because
//! the writer lapped it) and `agent_telemetry_events_unexported_total` (events that
//! could not be decoded, or whose name came past the custom family cap).
//!
//! The node collector ([`collector`], `telering serve`) is the exporter of agents that
//! run elsewhere, so its pages also say how that export goes, per agent:
//! `agent_telemetry_events_delivered_total` (counter: events it read from the agent's
//! ring and exported) and `agent_telemetry_exporter_failing` (gauge: 1 while the
//! agent's ring writer is gone without a clean close or reads of its ring keep
//! failing). An in-process or multi-process exporter is the agent's own export and
//! shows neither.
//!
//! Custom and backend events (and any event that is not a built-in of its category)
//! become counters of the sum of their values under the name mapping documented in
//! [`names`]: `agent_<category>_event_<sanitized name>_total`.
//!
//! In the OpenMetrics format the counter family `agent_xfer_time` (samples
//! `agent_xfer_time_total`) and the gauge `agent_xfer_time` share a family name, as they
//! do in NIXL's exporter; the Prometheus text format names the counter family
//! `agent_xfer_time_total`, so there they are distinct. Prometheus ingests both.
//!
//! # Parts
//!
//! - [`MetricModel`] / [`SharedModel`]: events in, series out ([`model`]), rendered in
//!   a [`Format`];
//! - [`MetricsServer`]: the bounded HTTP endpoint, which also negotiates the
//!   [`Format`] of each scrape ([`http`]);
//! - [`PrometheusExporter`]: the `prometheus` exporter of one agent, registered in a
//!   telering-std registry with [`register`];
//! - [`NodeCollector`](collector::NodeCollector) and [`run_collector`](collector::run_collector): every ring file in a
//!   directory on one endpoint.
#![deny(missing_docs, missing_debug_implementations, unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod collector;
pub mod config;
pub mod exporter;
mod format;
pub mod http;
pub mod model;
pub mod multiproc;
pub mod names;

pub use config::{Buckets, ConfigError, DEFAULT_BUCKETS_US, DEFAULT_PORT, PrometheusConfig};
pub use exporter::{EXPORTER_NAME, PrometheusExporter, register};
pub use format::Format;
pub use http::{HttpLimits, MetricsServer, MetricsSource, Page, ServeError};
pub use model::{MetricModel, SharedModel};

/// The host name for the `hostname` label: the kernel's node name, or `unknown`.
pub fn hostname() -> String {
    let name = rustix::system::uname();
    let name = name.nodename().to_string_lossy().into_owned();
    if name.is_empty() {
        "unknown".into()
    } else {
        name
    }
}
