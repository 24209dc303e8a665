//! Successive route files of one agent from its flushes' route reports.

use super::{RouteEntry, RouteFile};
use crate::route::{Route, RouteReport, RouteStats};

/// Builds an agent's successive route files from its flushes' route reports: keeps
/// each route's slowest transfer of the latest interval that had transfers on it, and
/// says when nothing changed since the last file written (no need to write again).
///
/// ```
/// use telering_std::route::file::RouteFileBuilder;
/// use telering_std::route::RouteReport;
/// let mut b = RouteFileBuilder::default();
/// assert!(b.next(&RouteReport::default()).is_some());
/// b.written();
/// assert!(b.next(&RouteReport::default()).is_none(), "unchanged");
/// ```
#[derive(Debug, Default)]
pub struct RouteFileBuilder {
    slowest: std::collections::HashMap<Route, u64>,
    /// The last file made (less its write time), and whether it was written.
    last: Option<(u64, Vec<(Route, RouteStats)>)>,
    last_written: bool,
}

impl RouteFileBuilder {
    /// The file for `report`, `None` when it would hold what the last file written
    /// holds.
    pub fn next(&mut self, report: &RouteReport) -> Option<RouteFile> {
        let mut interval: std::collections::HashMap<&Route, u64> = std::collections::HashMap::new();
        for (route, x) in &report.slow {
            let slot = interval.entry(route).or_insert(0);
            *slot = (*slot).max(x.xfer_us);
        }
        for (route, us) in interval {
            self.slowest.insert(route.clone(), us);
        }
        let same = self
            .last
            .as_ref()
            .is_some_and(|(folded, routes)| *folded == report.folded && *routes == report.routes);
        if same && self.last_written {
            return None;
        }
        self.last = Some((report.folded, report.routes.clone()));
        self.last_written = false;
        Some(RouteFile {
            writer_pid: std::process::id(),
            written_us: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as u64),
            folded: report.folded,
            routes: report
                .routes
                .iter()
                .map(|(route, stats)| RouteEntry {
                    route: route.clone(),
                    stats: stats.clone(),
                    slowest_xfer_us: self.slowest.get(route).copied().unwrap_or(0),
                })
                .collect(),
        })
    }

    /// The file [`next`](Self::next) gave was written.
    pub fn written(&mut self) {
        self.last_written = true;
    }
}
