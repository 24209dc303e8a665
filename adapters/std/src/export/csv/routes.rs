//! The `csv` exporter's route rows, in a file of their own: `DIR/<agent>.routes.csv`,
//! so that readers of `<agent>.csv` see exactly the rows they saw before routes.
//!
//! Each flush that carries a [`RouteReport`] appends one row per route that moved in
//! the interval: the interval's **increase** of its totals (bytes, transfers,
//! descriptors, errors, the sums of transfer and post times), so that a column
//! summed per route over the file is the route's total, across restarts of the agent
//! too; and the interval's slowest transfer (time, start, trace and span ids, the
//! same ids as its OTLP span and Prometheus exemplar), empty when none was kept.
//! A failed append writes nothing ([`append`]) and the rows' totals are not taken:
//! the next flush's rows cover both intervals, so the sums stay exact.
//!
//! Backend and peer names are any text. They are written through
//! [`Escaped`](telering_core::text::Escaped), so a row is always one line (a newline
//! is `\n`, a control character `\u{..}`, a backslash `\\`); a name that then starts
//! with `=`, `+`, `-` or `@` gets a leading `'` so that a spreadsheet shows it as
//! text rather than running it as a formula; and the field is quoted per RFC 4180
//! when it holds a comma or a double quote.
//!
//! The file is created at the first route rows (an agent that records no route has
//! none); the exporter's check refuses a symbolic link or a foreign file there
//! before anything is created, as for `<agent>.csv`.

use super::NAME;
use super::file::{append, open_path, write_field};
use crate::export::ExportError;
use crate::route::{Route, RouteReport, RouteStats};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use telering_core::text::Escaped;

/// The route file's header row (without its line end).
pub const ROUTES_HEADER: &str = "timestamp_us,operation,backend,local_mem,remote_mem,peer,\
bytes,transfers,descriptors,errors,xfer_time_sum_us,post_time_sum_us,\
slowest_xfer_us,slowest_start_us,slowest_trace_id,slowest_span_id";

/// Writes the route rows (see the module docs).
#[derive(Debug)]
pub(super) struct RouteRows {
    path: PathBuf,
    /// Opened at the first rows.
    file: Option<File>,
    /// The header (a new file) or a line end (a row cut short), until written.
    start: Vec<u8>,
    buf: Vec<u8>,
    /// Each route's totals as of its last row written.
    written: HashMap<Route, RouteStats>,
    failing: bool,
}

impl RouteRows {
    pub(super) fn new(path: PathBuf) -> RouteRows {
        RouteRows {
            path,
            file: None,
            start: Vec::new(),
            buf: Vec::new(),
            written: HashMap::new(),
            failing: false,
        }
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a row per route that moved since its last row, stamped `now_us`.
    pub(super) fn export(
        &mut self,
        agent: &str,
        report: &RouteReport,
        now_us: u64,
    ) -> Result<(), ExportError> {
        if self.file.is_none() {
            let (file, start) = open_path(&self.path, ROUTES_HEADER).inspect_err(|e| {
                if !self.failing {
                    log::warn!("route rows are not written: {e}");
                }
                self.failing = true;
            })?;
            self.file = Some(file);
            self.start = start;
        }
        self.buf.clear();
        self.buf.extend_from_slice(&self.start);
        let mut taken = Vec::new();
        for (route, stats) in &report.routes {
            let before = self.written.get(route);
            let moved = Moved::between(before, stats);
            if moved.is_none() {
                continue;
            }
            let slowest = report
                .slow
                .iter()
                .enumerate()
                .filter(|(_, (r, _))| r == route)
                .max_by_key(|(_, (_, x))| x.xfer_us);
            write_row(&mut self.buf, now_us, route, &moved);
            match slowest {
                Some((position, (_, x))) => {
                    let ids = x.trace_ids(agent, route, position);
                    let _ = write!(
                        self.buf,
                        ",{},{},{},{}\r\n",
                        x.xfer_us,
                        x.start_us,
                        ids.trace_hex(),
                        ids.span_hex()
                    );
                }
                None => self.buf.extend_from_slice(b",,,,\r\n"),
            }
            taken.push((route.clone(), stats.clone()));
        }
        if taken.is_empty() {
            return Ok(());
        }
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        if let Err(e) = append(file, &mut self.buf, &self.path) {
            if !self.failing {
                log::warn!(
                    "{}: writing route rows failed ({e}); the next flush writes the routes' increase since the last rows written",
                    self.path.display()
                );
            }
            self.failing = true;
            return Err(ExportError::io(NAME, &self.path, e));
        }
        self.failing = false;
        self.start.clear();
        self.written.extend(taken);
        Ok(())
    }

    pub(super) fn sync(&self) -> std::io::Result<()> {
        self.file.as_ref().map_or(Ok(()), File::sync_data)
    }
}

/// A route's increase since its last row.
#[derive(Debug, PartialEq, Eq)]
struct Moved {
    bytes: u64,
    transfers: u64,
    descriptors: u64,
    errors: u64,
    xfer_sum_us: u64,
    post_sum_us: u64,
}

impl Moved {
    fn between(before: Option<&RouteStats>, now: &RouteStats) -> Moved {
        let zero = RouteStats::default();
        let b = before.unwrap_or(&zero);
        let errors = |s: &RouteStats| s.errors.iter().fold(0u64, |a, &e| a.saturating_add(e));
        Moved {
            bytes: now.bytes.saturating_sub(b.bytes),
            transfers: now.transfers.saturating_sub(b.transfers),
            descriptors: now.descriptors.saturating_sub(b.descriptors),
            errors: errors(now).saturating_sub(errors(b)),
            xfer_sum_us: now.xfer_time.sum_us.saturating_sub(b.xfer_time.sum_us),
            post_sum_us: now.post_time.sum_us.saturating_sub(b.post_time.sum_us),
        }
    }

    fn is_none(&self) -> bool {
        *self
            == Moved {
                bytes: 0,
                transfers: 0,
                descriptors: 0,
                errors: 0,
                xfer_sum_us: 0,
                post_sum_us: 0,
            }
    }
}

/// Writes a row up to its slowest-transfer fields (writing into a `Vec` cannot fail).
fn write_row(out: &mut Vec<u8>, now_us: u64, route: &Route, m: &Moved) {
    let _ = write!(out, "{now_us},{},", route.operation.as_str());
    write_name(out, &route.backend);
    let _ = write!(out, ",{},{},", route.local.as_str(), route.remote.as_str());
    write_name(out, &route.peer);
    let _ = write!(
        out,
        ",{},{},{},{},{},{}",
        m.bytes, m.transfers, m.descriptors, m.errors, m.xfer_sum_us, m.post_sum_us
    );
}

/// A backend or peer name as one safe field (see the module docs).
fn write_name(out: &mut Vec<u8>, name: &str) {
    let mut text = Escaped::new(name).to_string();
    if text.starts_with(['=', '+', '-', '@']) {
        text.insert(0, '\'');
    }
    let _ = write_field(out, &text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &str) -> String {
        let mut out = Vec::new();
        write_name(&mut out, name);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_name_never_breaks_a_row_nor_runs_as_a_formula() {
        assert_eq!(field("decode-0"), "decode-0");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines\r"), "two\\nlines\\r");
        assert_eq!(field("\u{1b}]0;x\u{7}"), "\\u{1b}]0;x\\u{7}");
        assert_eq!(field("=HYPERLINK(\"x\")"), "\"'=HYPERLINK(\"\"x\"\")\"");
        for lead in ["+1", "-1", "@SUM(A1)"] {
            assert_eq!(field(lead), format!("'{lead}"));
        }
        assert_eq!(field("a\\b"), "a\\\\b");
    }

    fn report(bytes: u64) -> RouteReport {
        let route = Route::new(
            crate::route::Operation::Write,
            "UCX",
            crate::route::MemoryType::Vram,
            crate::route::MemoryType::Vram,
            "d",
        );
        let stats = RouteStats {
            bytes,
            transfers: bytes / 10,
            ..Default::default()
        };
        RouteReport {
            routes: vec![(route, stats)],
            ..Default::default()
        }
    }

    #[test]
    fn a_refused_append_is_covered_by_the_next_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.routes.csv");
        let mut rows = RouteRows::new(path.clone());
        rows.export("a", &report(10), 1).unwrap();
        // A handle that cannot write: the append fails, nothing is written.
        rows.file = Some(File::open(&path).unwrap());
        assert!(rows.export("a", &report(30), 2).is_err());
        rows.file = Some(
            std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .unwrap(),
        );
        rows.export("a", &report(60), 3).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(
            lines[1].starts_with("1,WRITE,UCX,VRAM,VRAM,d,10,1,"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("3,WRITE,UCX,VRAM,VRAM,d,50,5,"),
            "{text}"
        );
    }
}
