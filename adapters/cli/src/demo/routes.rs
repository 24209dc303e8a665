//! The demo's routes: where the simulated agent's bytes go, so that the per-route
//! metrics have something to show.
//!
//! The agent plays a decode-side worker of a disaggregated inference service: it
//! reads KV blocks from a prefill peer (`READ UCX VRAM->VRAM prefill-0`), writes them
//! on to two decode peers (`WRITE UCX VRAM->VRAM decode-0` and `decode-1`) and
//! offloads some to local storage (`WRITE POSIX DRAM->FILE`). The peer `decode-1`
//! sits behind a slow link: its transfers take [`SLOW_PEER_FACTOR`] times as long
//! as the same transfer to `decode-0`, so its route is the slowest one a person
//! finds on the route families (`telering_route_xfer_time_us`, the slowest transfer
//! gauge, the spans).

use std::io::Write;

use telering_std::Telemetry;
use telering_std::route::{MemoryType, Operation, Route, RouteId, RouteStats, TIME_BOUNDS_US};

use super::workload::Rng;

/// The prefill peer the agent reads from.
pub const PREFILL_PEER: &str = "prefill-0";
/// The decode peer with a healthy link.
pub const DECODE_PEER: &str = "decode-0";
/// The decode peer behind a slow link.
pub const SLOW_PEER: &str = "decode-1";
/// How many times longer a transfer to [`SLOW_PEER`] takes than one to
/// [`DECODE_PEER`].
pub const SLOW_PEER_FACTOR: f64 = 12.0;

/// One of the demo's routes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    FromPrefill,
    ToDecode,
    ToSlowDecode,
    ToFile,
}

impl Path {
    const ALL: [Path; 4] = [
        Path::FromPrefill,
        Path::ToDecode,
        Path::ToSlowDecode,
        Path::ToFile,
    ];

    /// A read comes from the prefill peer; a write goes to `decode-0` (45 %),
    /// `decode-1` (30 %) or the file (25 %).
    pub(super) fn pick(rng: &mut Rng, is_write: bool) -> Path {
        if !is_write {
            return Path::FromPrefill;
        }
        match rng.below(100) {
            0..45 => Path::ToDecode,
            45..75 => Path::ToSlowDecode,
            _ => Path::ToFile,
        }
    }

    fn route(self) -> Route {
        let ucx = |op, peer: &str| Route::new(op, "UCX", MemoryType::Vram, MemoryType::Vram, peer);
        match self {
            Path::FromPrefill => ucx(Operation::Read, PREFILL_PEER),
            Path::ToDecode => ucx(Operation::Write, DECODE_PEER),
            Path::ToSlowDecode => ucx(Operation::Write, SLOW_PEER),
            Path::ToFile => Route::new(
                Operation::Write,
                "POSIX",
                MemoryType::Dram,
                MemoryType::File,
                "",
            ),
        }
    }

    /// The transfer time of `bytes`, µs: a 20 GB/s GPU link (a 4 GB/s file system)
    /// plus log-normal per-request overhead; one transfer in 50 meets congestion; the
    /// slow peer's link takes [`SLOW_PEER_FACTOR`] times as long.
    pub(super) fn xfer_us(self, bytes: u64, rng: &mut Rng) -> u64 {
        let mut micros = match self {
            Path::ToFile => bytes as f64 / 4_000.0 + rng.log_normal(20.0, 0.6),
            _ => bytes as f64 / 20_000.0 + rng.log_normal(8.0, 0.6),
        };
        if rng.below(50) == 0 {
            micros *= 5.0 + rng.unit() * 20.0;
        }
        if self == Path::ToSlowDecode {
            micros *= SLOW_PEER_FACTOR;
        }
        (micros as u64).max(1)
    }
}

/// The demo's routes, interned in its telemetry.
#[derive(Debug)]
pub(super) struct DemoRoutes {
    ids: [Option<RouteId>; 4],
}

impl DemoRoutes {
    /// Interns every route; a route the telemetry refuses (it cannot: the names are
    /// short and the bound is above 4) is recorded without one.
    pub(super) fn intern(telemetry: &Telemetry) -> DemoRoutes {
        DemoRoutes {
            ids: Path::ALL.map(|p| telemetry.route(&p.route()).ok()),
        }
    }

    pub(super) fn id(&self, path: Path) -> Option<RouteId> {
        let i = Path::ALL.iter().position(|&p| p == path)?;
        self.ids[i]
    }
}

/// The mean transfer time of a route, µs (0 without transfers).
pub fn mean_xfer_us(stats: &RouteStats) -> f64 {
    stats.xfer_time.sum_us as f64 / stats.xfer_time.count().max(1) as f64
}

/// The upper bound (µs) of the bucket holding the 99th percentile transfer time,
/// `None` when it is above the last bound (or there are no transfers).
pub fn p99_le_us(stats: &RouteStats) -> Option<u64> {
    let count = stats.xfer_time.count();
    if count == 0 {
        return None;
    }
    let want = count - count / 100;
    let mut seen = 0;
    for (i, c) in stats.xfer_time.counts.iter().enumerate() {
        seen += c;
        if seen >= want {
            return TIME_BOUNDS_US.get(i).copied();
        }
    }
    None
}

/// The index of the route with the highest mean transfer time.
fn slowest(routes: &[(Route, RouteStats)]) -> Option<usize> {
    (0..routes.len())
        .filter(|&i| routes[i].1.transfers > 0)
        .max_by(|&a, &b| mean_xfer_us(&routes[a].1).total_cmp(&mean_xfer_us(&routes[b].1)))
}

/// The route table of the text summary: per route its transfers, bytes, mean and
/// 99th-percentile transfer time, the slowest route marked. Nothing without routes.
pub(super) fn write_routes_text(
    out: &mut dyn Write,
    routes: &[(Route, RouteStats)],
) -> std::io::Result<()> {
    if routes.is_empty() {
        return Ok(());
    }
    let slowest = slowest(routes);
    writeln!(
        out,
        "  {:<31} {:>10} {:>14} {:>10} {:>12}",
        "route", "transfers", "bytes", "mean µs", "p99 µs ≤"
    )?;
    for (i, (route, stats)) in routes.iter().enumerate() {
        // `Route`'s `Display` escapes its names.
        let p99 = p99_le_us(stats).map_or_else(|| "> 1 s".to_string(), |b| b.to_string());
        write!(
            out,
            "  {:<31} {:>10} {:>14} {:>10.1} {:>12}",
            route.to_string(),
            stats.transfers,
            stats.bytes,
            mean_xfer_us(stats),
            p99
        )?;
        if slowest == Some(i) {
            write!(out, "  <- slowest route")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// `,"routes":[…]` of the JSON summary: per route its labels and totals.
pub(super) fn write_routes_json(
    line: &mut Vec<u8>,
    routes: &[(Route, RouteStats)],
) -> std::io::Result<()> {
    use crate::output::write_json_string;
    line.extend_from_slice(b",\"routes\":[");
    let slowest = slowest(routes);
    for (i, (route, stats)) in routes.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        line.extend_from_slice(b"{\"operation\":");
        write_json_string(line, route.operation.as_str())?;
        line.extend_from_slice(b",\"backend\":");
        write_json_string(line, &route.backend)?;
        line.extend_from_slice(b",\"local_mem\":");
        write_json_string(line, route.local.as_str())?;
        line.extend_from_slice(b",\"remote_mem\":");
        write_json_string(line, route.remote.as_str())?;
        line.extend_from_slice(b",\"peer\":");
        write_json_string(line, &route.peer)?;
        let errors: u64 = stats.errors.iter().sum();
        write!(
            line,
            ",\"transfers\":{},\"bytes\":{},\"descriptors\":{},\"errors\":{},\"xfer_time_sum_us\":{},\"xfer_time_mean_us\":{:.3},\"xfer_time_p99_le_us\":{},\"slowest\":{}}}",
            stats.transfers,
            stats.bytes,
            stats.descriptors,
            errors,
            stats.xfer_time.sum_us,
            mean_xfer_us(stats),
            p99_le_us(stats).map_or_else(|| "null".to_string(), |b| b.to_string()),
            slowest == Some(i)
        )?;
    }
    line.push(b']');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slow_peer_takes_longer_for_the_same_bytes() {
        let time = |p: Path| {
            let mut rng = Rng::new(7);
            (0..1000).map(|_| p.xfer_us(1 << 20, &mut rng)).sum::<u64>()
        };
        assert!(time(Path::ToSlowDecode) > time(Path::ToFile));
        assert!(time(Path::ToFile) > time(Path::ToDecode));
        // The same draws, scaled (each time rounded down to whole µs).
        let ratio = time(Path::ToSlowDecode) as f64 / time(Path::ToDecode) as f64;
        assert!(
            (SLOW_PEER_FACTOR - 1.0..=SLOW_PEER_FACTOR + 1.0).contains(&ratio),
            "{ratio}"
        );
    }
}
