//! The exposition formats a metrics page can be rendered in. Which one a scrape gets is
//! negotiated by the HTTP endpoint (the `http` module); the model renders either, and
//! the in-process exporter adds its routes' exemplars to the OpenMetrics page
//! (`exemplars`).

pub(crate) mod exemplars;

/// The exposition format of a scrape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format version 0.0.4.
    PrometheusText,
    /// OpenMetrics 1.0 text format (with exemplars on the in-process exporter's route
    /// transfer-time buckets).
    OpenMetrics,
}
