//! One agent's series as bytes, so that another process can serve them.
//!
//! The multi-process exporter writes each rank's snapshot into the rank's store file
//! and the serving rank reads every store back into one [`MetricModel`]. A snapshot
//! holds the cumulative values themselves, never deltas, so reading it any number of
//! times, by any number of successive servers, counts nothing twice.
//!
//! A snapshot carries no exporter-health series (`agent_telemetry_events_delivered_total`,
//! `agent_telemetry_exporter_failing`): those are a node collector's view of another
//! process's export, and a rank is its own exporter, so the serving rank's page leaves
//! them out rather than showing values nobody measured.
//!
//! Layout (all integers little-endian):
//!
//! ```text
//! "TLRMSNP1"                       8-byte magic and version
//! u32 n, then n × f64              histogram bounds in µs
//! u64 × counters, errors, gauges   in the model's family order (counts are in the header)
//! 2 × ((n + 1) × u64, sum, count)  the two latency histograms, per-bucket counts
//! u32 m, then m × (u16 len, name, u64 value)   custom counter families
//! [u8 k, then k × (u8 index, u64 value)]       state gauges set (optional)
//! ```
//!
//! The state gauges (the bridge's clock reports, `tables::STATE_GAUGES`) come last
//! and only when one is set, so a reader that stops after the custom families (an
//! earlier version of this code) reads the rest unchanged; an index it does not know is
//! skipped.

use std::fmt;

use super::{AgentMetrics, COUNTERS, GAUGES, Histogram, MetricModel, SeriesLabels};
use telering_core::builtin::ErrorStatus;

const MAGIC: &[u8; 8] = b"TLRMSNP1";

/// A snapshot that cannot be read back.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The bytes do not start with the snapshot magic of this version.
    BadMagic,
    /// The bytes end before the field named.
    Truncated {
        /// The field being read.
        field: &'static str,
    },
    /// A custom family name is not UTF-8.
    BadName,
    /// The snapshot's histogram bounds differ from the serving model's.
    BucketsDiffer,
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::BadMagic => f.write_str("not a telering metrics snapshot (bad magic)"),
            SnapshotError::Truncated { field } => {
                write!(f, "the snapshot ends inside its {field}")
            }
            SnapshotError::BadName => f.write_str("a custom family name is not UTF-8"),
            SnapshotError::BucketsDiffer => f.write_str(
                "its histogram bounds differ from the serving rank's; every rank of a node must use the same NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US",
            ),
        }
    }
}

impl std::error::Error for SnapshotError {}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], SnapshotError> {
        if self.0.len() < n {
            return Err(SnapshotError::Truncated { field });
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, SnapshotError> {
        let b = self.take(8, field)?;
        Ok(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, SnapshotError> {
        let b = self.take(4, field)?;
        Ok(u32::from_le_bytes(b.try_into().unwrap_or([0; 4])))
    }

    fn u16(&mut self, field: &'static str) -> Result<u16, SnapshotError> {
        let b = self.take(2, field)?;
        Ok(u16::from_le_bytes(b.try_into().unwrap_or([0; 2])))
    }
}

impl MetricModel {
    /// The series of `agent` as a snapshot, or `None` for an unknown agent.
    ///
    /// ```
    /// use telering_core::{builtin, Event};
    /// use telering_prometheus::{Buckets, Format, MetricModel};
    /// let mut rank = MetricModel::new("node1", Buckets::default());
    /// let tx = Event::new(1, builtin::AGENT_TX_BYTES.category, builtin::AGENT_TX_BYTES.name, 64);
    /// rank.ingest("agent-a", &[tx]);
    /// let bytes = rank.snapshot("agent-a").unwrap();
    ///
    /// let mut server = MetricModel::new("node1", Buckets::default());
    /// server.insert_snapshot("a#1", "agent-a", vec![("local_rank", "0".into())], &bytes).unwrap();
    /// let page = server.into_shared().render(Format::PrometheusText);
    /// assert!(page.contains(r#"agent_tx_bytes_total{agent_name="agent-a",hostname="node1",local_rank="0"} 64"#));
    /// ```
    pub fn snapshot(&self, agent: &str) -> Option<Vec<u8>> {
        let m = self.agents.get(agent)?;
        let bounds = self.buckets.bounds();
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(bounds.len() as u32).to_le_bytes());
        for b in bounds {
            out.extend_from_slice(&b.to_le_bytes());
        }
        let plain = m.counters.iter().chain(&m.errors).chain(&m.gauges);
        for v in plain {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for h in &m.histograms {
            for v in h.counts.iter().chain([&h.sum, &h.count]) {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        out.extend_from_slice(&(m.custom.len() as u32).to_le_bytes());
        for (idx, value) in &m.custom {
            let name = self.names.custom_families[*idx as usize].as_bytes();
            out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            out.extend_from_slice(name);
            out.extend_from_slice(&value.to_le_bytes());
        }
        let states: Vec<(u8, u64)> = (m.states.iter().enumerate())
            .filter_map(|(i, v)| Some((i as u8, (*v)?)))
            .collect();
        if !states.is_empty() {
            out.push(states.len() as u8);
            for (i, v) in states {
                out.push(i);
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
        Some(out)
    }

    /// Adds the series of a snapshot under `key`, labelled `agent_name` and then
    /// `extra` (after `hostname`). Custom families past the model's cap are counted in
    /// `agent_telemetry_events_unexported_total` of the series.
    pub fn insert_snapshot(
        &mut self,
        key: &str,
        agent_name: &str,
        extra: Vec<(&'static str, String)>,
        bytes: &[u8],
    ) -> Result<(), SnapshotError> {
        let mut r = Reader(bytes);
        if r.take(8, "magic").map_err(|_| SnapshotError::BadMagic)? != MAGIC {
            return Err(SnapshotError::BadMagic);
        }
        let n = r.u32("bucket count")? as usize;
        let bounds = self.buckets.bounds();
        if n != bounds.len() {
            return Err(SnapshotError::BucketsDiffer);
        }
        for b in bounds {
            if f64::from_bits(r.u64("bucket bounds")?) != *b {
                return Err(SnapshotError::BucketsDiffer);
            }
        }
        let mut m = AgentMetrics::new(n);
        for v in &mut m.counters {
            *v = r.u64("counters")?;
        }
        for v in &mut m.errors {
            *v = r.u64("error counters")?;
        }
        for v in &mut m.gauges {
            *v = r.u64("gauges")?;
        }
        for h in &mut m.histograms {
            *h = Histogram::new(n);
            for v in h.counts.iter_mut() {
                *v = r.u64("histogram buckets")?;
            }
            h.sum = r.u64("histogram sum")?;
            h.count = r.u64("histogram count")?;
        }
        let customs = r.u32("custom family count")?;
        for _ in 0..customs {
            let len = r.u16("custom family name")? as usize;
            let name = r.take(len, "custom family name")?;
            let name = std::str::from_utf8(name).map_err(|_| SnapshotError::BadName)?;
            let value = r.u64("custom family value")?;
            match self.intern_custom(name) {
                Some(idx) => {
                    m.custom.insert(idx, value);
                }
                None => {
                    let unexported = &mut m.counters[super::EVENTS_UNEXPORTED];
                    *unexported = unexported.saturating_add(1);
                }
            }
        }
        if !r.0.is_empty() {
            let k = r.take(1, "state gauge count")?[0];
            for _ in 0..k {
                let i = usize::from(r.take(1, "state gauge index")?[0]);
                let value = r.u64("state gauge value")?;
                if let Some(slot) = m.states.get_mut(i) {
                    *slot = Some(value);
                }
            }
        }
        m.labels = SeriesLabels {
            agent_name: Some(agent_name.to_owned()),
            extra,
        };
        self.agents.insert(key.to_owned(), m);
        Ok(())
    }

    fn intern_custom(&mut self, family: &str) -> Option<u32> {
        let names = &mut self.names;
        if let Some(&idx) = names.custom_index.get(family) {
            return Some(idx);
        }
        if names.custom_families.len() >= names.max_custom_families {
            return None;
        }
        let idx = names.custom_families.len() as u32;
        names.custom_families.push(family.to_owned());
        names.custom_index.insert(family.to_owned(), idx);
        Some(idx)
    }
}

const _: () = assert!(COUNTERS + ErrorStatus::ALL.len() + GAUGES > 0);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Buckets;
    use telering_core::{Category, Event, EventName};

    fn ev(category: Category, name: &str, value: u64) -> Event {
        Event::new(0, category, EventName::new(name).unwrap(), value)
    }

    #[test]
    fn a_snapshot_round_trips_every_family() {
        let buckets = Buckets::parse("10,100").unwrap();
        let mut rank = MetricModel::new("h", buckets.clone());
        rank.ingest(
            "a",
            &[
                ev(Category::Transfer, "agent_tx_bytes", 7),
                ev(Category::Performance, "agent_xfer_time", 50),
                ev(Category::Error, "NIXL_ERR_BACKEND", 2),
                ev(Category::Custom, "cache.hits", 3),
            ],
        );
        let mut server = MetricModel::new("h", buckets);
        server
            .insert_snapshot("k", "a", Vec::new(), &rank.snapshot("a").unwrap())
            .unwrap();
        let original = rank.into_shared().render(crate::Format::PrometheusText);
        let served = server.into_shared().render(crate::Format::PrometheusText);
        assert_eq!(original, served);
    }

    #[test]
    fn damaged_snapshots_are_typed_errors() {
        let mut rank = MetricModel::new("h", Buckets::default());
        rank.add_agent("a");
        let bytes = rank.snapshot("a").unwrap();
        let mut server = MetricModel::new("h", Buckets::default());
        for cut in [0, 5, 12, bytes.len() - 1] {
            assert!(
                server
                    .insert_snapshot("k", "a", Vec::new(), &bytes[..cut])
                    .is_err()
            );
        }
        let mut other = MetricModel::new("h", Buckets::parse("1,2").unwrap());
        assert_eq!(
            other.insert_snapshot("k", "a", Vec::new(), &bytes),
            Err(SnapshotError::BucketsDiffer)
        );
        assert_eq!(server.agent_count(), 0);
    }
}
