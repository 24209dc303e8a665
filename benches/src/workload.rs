//! Event workloads shared by the benchmarks that feed a metric model.

use telering_core::builtin::{self, ErrorStatus};
use telering_core::{Category, Event, EventName};

/// A realistic flush batch of `len` events: one transfer = tx bytes, a request, a
/// latency and a post time; now and then an error and a custom event.
///
/// ```
/// let batch = telering_benches::workload::flush_batch(16);
/// assert_eq!(batch.len(), 16);
/// ```
pub fn flush_batch(len: usize) -> Vec<Event> {
    let custom = EventName::new("cache.hits").unwrap();
    (0..len as u64)
        .map(|i| match i % 8 {
            0 | 4 => Event::new(
                i,
                Category::Transfer,
                builtin::AGENT_TX_BYTES.name,
                4096 + i,
            ),
            1 => Event::new(i, Category::Transfer, builtin::AGENT_RX_BYTES.name, 8192),
            2 => Event::new(
                i,
                Category::Transfer,
                builtin::AGENT_TX_REQUESTS_NUM.name,
                1,
            ),
            3 => Event::new(
                i,
                Category::Performance,
                builtin::AGENT_XFER_TIME.name,
                37 * i % 20_000,
            ),
            5 => Event::new(
                i,
                Category::Performance,
                builtin::AGENT_XFER_POST_TIME.name,
                i % 300,
            ),
            6 => Event::new(i, Category::Error, ErrorStatus::Backend.event().name, 1),
            _ => Event::new(i, Category::Custom, custom, 3),
        })
        .collect()
}
