//! A series' label set, encoded once per scrape.
//!
//! Every family repeats each agent's labels on every sample line (a histogram on
//! each of its bucket lines too), and `prometheus-client` encodes a label set anew for
//! each line: every key and value goes through its own encoder calls and escape
//! check. On a `prometheus_mp` node page, with five labels per series, that was 64 %
//! of the scrape. [`EncodedLabels`] escapes and joins an agent's labels once per
//! scrape; each line then copies the finished text.
//!
//! The text is handed to `prometheus-client` as one label key: its text encoders
//! (Prometheus 0.0.4 and OpenMetrics, the only ones [`SharedModel::render`] uses)
//! write a key verbatim, after the `{` or `,` that opens it, and a key without a value
//! adds nothing else. The result is byte for byte what encoding the pairs gives (the
//! unit test below compares both).
//!
//! [`SharedModel::render`]: super::SharedModel::render

use prometheus_client::encoding::{EncodeLabelSet, LabelSetEncoder};
use std::fmt::Write;

/// Label pairs, escaped and joined: `agent_name="a",hostname="h"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EncodedLabels(String);

impl EncodedLabels {
    /// Encodes `pairs` (valid label names, any values) as the text encoders would.
    pub(crate) fn new<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> EncodedLabels {
        let mut text = String::with_capacity(128);
        for (i, (key, value)) in pairs.into_iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(key);
            text.push_str("=\"");
            // The escapes of the exposition formats, as prometheus-client applies them.
            for c in value.chars() {
                match c {
                    '\\' => text.push_str("\\\\"),
                    '"' => text.push_str("\\\""),
                    '\n' => text.push_str("\\n"),
                    c => text.push(c),
                }
            }
            text.push('"');
        }
        EncodedLabels(text)
    }
}

impl EncodeLabelSet for EncodedLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        if self.0.is_empty() {
            return Ok(());
        }
        let mut label = encoder.encode_label();
        let mut key = label.encode_label_key()?;
        key.write_str(&self.0)
    }
}

impl EncodeLabelSet for &EncodedLabels {
    fn encode(&self, encoder: &mut LabelSetEncoder) -> Result<(), std::fmt::Error> {
        (*self).encode(encoder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::collector::Collector;
    use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
    use prometheus_client::metrics::MetricType;
    use prometheus_client::registry::Registry;

    /// Encodes one counter and one histogram family with labels `L`, in both formats.
    #[derive(Debug)]
    struct Page<L>(L);

    impl<L: EncodeLabelSet + Clone + std::fmt::Debug + Send + Sync + 'static> Collector for Page<L> {
        fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
            let mut c = encoder.encode_descriptor("c", "a counter", None, MetricType::Counter)?;
            c.encode_family(&self.0)?
                .encode_counter::<NoLabelSet, _, u64>(&7u64, None)?;
            c.encode_family(&(self.0.clone(), [("status", "x")]))?
                .encode_counter::<NoLabelSet, _, u64>(&8u64, None)?;
            let mut h =
                encoder.encode_descriptor("h", "a histogram", None, MetricType::Histogram)?;
            h.encode_family(&self.0)?.encode_histogram::<NoLabelSet>(
                3.0,
                2,
                &[(10.0, 1), (f64::INFINITY, 1)],
                None,
            )?;
            Ok(())
        }
    }

    fn render<L: EncodeLabelSet + Clone + std::fmt::Debug + Send + Sync + 'static>(
        labels: L,
    ) -> [String; 2] {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Page(labels)));
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &registry).unwrap();
        let mut open = String::new();
        prometheus_client::encoding::text::encode(&mut open, &registry).unwrap();
        [text, open]
    }

    #[test]
    fn encoded_labels_render_byte_for_byte_as_the_pairs_do() {
        let cases: [&[(&str, &str)]; 3] = [
            &[("agent_name", "rank-0"), ("hostname", "node1")],
            &[
                ("agent_name", "a\"b\\c\nd"),
                ("hostname", "hôte"),
                ("pid", "42"),
                ("agent_instance", "42-1700000000000-0"),
                ("local_rank", "x\"\n"),
            ],
            &[],
        ];
        for pairs in cases {
            let expected = render(pairs.to_vec());
            let got = render(EncodedLabels::new(pairs.iter().copied()));
            assert_eq!(got, expected, "{pairs:?}");
        }
    }
}
