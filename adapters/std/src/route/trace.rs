//! Trace and span ids of a kept slow transfer, the same in every sink.
//!
//! A kept transfer is pushed as an OTLP span and is the exemplar of its
//! transfer-time bucket on the Prometheus page (and named in the CSV route rows), so
//! that a person can go from the latency spike to the span. The sinks run in
//! different exporters that never talk to each other, so the ids are not drawn at
//! random: they are a hash of what every exporter is handed — the process id, the
//! agent's name, the route, the transfer's numbers and its position in the flush's
//! [`RouteReport::slow`](super::RouteReport::slow) — mixed to 128 and 64 bits, never
//! all zero (W3C Trace Context).

use super::{Route, SlowXfer};

/// A span's W3C ids: 16 bytes of trace id, 8 of span id, neither all zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceIds {
    /// The trace id.
    pub trace_id: [u8; 16],
    /// The span id.
    pub span_id: [u8; 8],
}

impl TraceIds {
    /// The trace id in lower-case hex, 32 digits (as `traceparent` and Grafana
    /// write it).
    ///
    /// ```
    /// use telering_std::route::TraceIds;
    /// let ids = TraceIds { trace_id: [0xab; 16], span_id: [1; 8] };
    /// assert_eq!(ids.trace_hex(), "ab".repeat(16));
    /// ```
    pub fn trace_hex(&self) -> String {
        hex(&self.trace_id)
    }

    /// The span id in lower-case hex, 16 digits.
    ///
    /// ```
    /// use telering_std::route::TraceIds;
    /// let ids = TraceIds { trace_id: [1; 16], span_id: [0x0f; 8] };
    /// assert_eq!(ids.span_hex(), "0f".repeat(8));
    /// ```
    pub fn span_hex(&self) -> String {
        hex(&self.span_id)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A 64-bit finalizer (splitmix64's); `| 1` keeps every id non-zero.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) | 1
}

/// FNV-1a over `bytes`, continuing from `h`.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl SlowXfer {
    /// The ids of this transfer's span when it is at `position` in the
    /// [`RouteReport::slow`](super::RouteReport::slow) of `agent`'s flush: every
    /// exporter of the process computes the same: the process id, the agent's name,
    /// the route, the transfer's numbers and its position are hashed (so no exporter
    /// needs to talk to another), mixed to 128 and 64 bits, never all zero.
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route, SlowXfer};
    /// let route = Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "d");
    /// let x = SlowXfer { xfer_us: 900, start_us: 1, post_us: 2, bytes: 3, descriptors: 1,
    ///                    route_index: 0, operation: Operation::Write };
    /// assert_eq!(x.trace_ids("a", &route, 0), x.trace_ids("a", &route, 0));
    /// assert_ne!(x.trace_ids("a", &route, 0), x.trace_ids("a", &route, 1));
    /// assert_ne!(x.trace_ids("a", &route, 0).span_id, [0; 8]);
    /// ```
    pub fn trace_ids(&self, agent: &str, route: &Route, position: usize) -> TraceIds {
        let mut h = fnv(0xcbf2_9ce4_8422_2325, &std::process::id().to_le_bytes());
        // Each text ends with a byte no UTF-8 text has, so ("ab", "c") and ("a", "bc")
        // differ.
        for text in [agent, route.backend.as_str(), route.peer.as_str()] {
            h = fnv(h, text.as_bytes());
            h = fnv(h, &[0xff]);
        }
        h = fnv(
            h,
            &[route.operation as u8, route.local as u8, route.remote as u8],
        );
        for n in [
            self.start_us,
            self.xfer_us,
            self.post_us,
            self.bytes,
            self.descriptors,
            position as u64,
        ] {
            h = fnv(h, &n.to_le_bytes());
        }
        let high = mix(h);
        let low = mix(h ^ 0x9e37_79b9_7f4a_7c15);
        let mut trace_id = [0; 16];
        trace_id[..8].copy_from_slice(&high.to_be_bytes());
        trace_id[8..].copy_from_slice(&low.to_be_bytes());
        TraceIds {
            trace_id,
            span_id: mix(high ^ low.rotate_left(17)).to_be_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::route::{MemoryType, Operation};

    #[test]
    fn ids_differ_for_each_part_of_a_transfer() {
        let route = Route::new(
            Operation::Read,
            "GDS",
            MemoryType::Vram,
            MemoryType::File,
            "",
        );
        let x = SlowXfer {
            xfer_us: 10,
            start_us: 20,
            post_us: 1,
            bytes: 4096,
            descriptors: 2,
            route_index: 3,
            operation: Operation::Read,
        };
        let base = x.trace_ids("agent", &route, 0);
        let mut other_peer = route.clone();
        other_peer.peer = "p".into();
        let mut moved = route.clone();
        moved.backend = "GD".into();
        moved.peer = "S".into();
        let others = [
            x.trace_ids("agent2", &route, 0),
            x.trace_ids("agent", &other_peer, 0),
            x.trace_ids("agent", &moved, 0),
            SlowXfer { xfer_us: 11, ..x }.trace_ids("agent", &route, 0),
            SlowXfer { start_us: 21, ..x }.trace_ids("agent", &route, 0),
            SlowXfer { bytes: 1, ..x }.trace_ids("agent", &route, 0),
        ];
        for o in others {
            assert_ne!(o.trace_id, base.trace_id);
            assert_ne!(o.span_id, base.span_id);
        }
        assert_eq!(base.trace_hex().len(), 32);
        assert_eq!(base.span_hex().len(), 16);
    }
}
