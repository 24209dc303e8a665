//! Content negotiation: which exposition [`Format`] and `Content-Type` a scrape gets from
//! its `Accept` header.

use crate::format::Format;

impl Format {
    /// Picks the format an HTTP `Accept` header asks for: OpenMetrics when it lists
    /// `application/openmetrics-text` with a quality at least that of `text/plain`,
    /// otherwise the Prometheus text format.
    ///
    /// ```
    /// use telering_prometheus::Format;
    /// assert_eq!(Format::from_accept(None), Format::PrometheusText);
    /// let prom = "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
    /// assert_eq!(Format::from_accept(Some(prom)), Format::OpenMetrics);
    /// assert_eq!(Format::from_accept(Some("text/plain")), Format::PrometheusText);
    /// ```
    pub fn from_accept(accept: Option<&str>) -> Format {
        let Some(accept) = accept else {
            return Format::PrometheusText;
        };
        let mut openmetrics_q: Option<f32> = None;
        let mut text_q: Option<f32> = None;
        for range in accept.split(',') {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            let slot = match media.as_str() {
                "application/openmetrics-text" => &mut openmetrics_q,
                "text/plain" => &mut text_q,
                _ => continue,
            };
            *slot = Some(slot.map_or(q, |old: f32| old.max(q)));
        }
        match openmetrics_q {
            Some(om) if om > 0.0 && om >= text_q.unwrap_or(0.0) => Format::OpenMetrics,
            _ => Format::PrometheusText,
        }
    }

    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::PrometheusText => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_negotiation_honours_quality_values() {
        let om = "application/openmetrics-text";
        assert_eq!(Format::from_accept(Some(om)), Format::OpenMetrics);
        assert_eq!(
            Format::from_accept(Some("application/openmetrics-text;q=0")),
            Format::PrometheusText
        );
        assert_eq!(
            Format::from_accept(Some("text/plain;q=0.9, application/openmetrics-text;q=0.5")),
            Format::PrometheusText
        );
        assert_eq!(
            Format::from_accept(Some("*/*, Application/OpenMetrics-Text; version=1.0.0")),
            Format::OpenMetrics
        );
        assert_eq!(
            Format::from_accept(Some("garbage;;;q=x")),
            Format::PrometheusText
        );
    }
}
