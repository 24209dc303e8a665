//! The `csv` exporter: one row per event in `DIR/<agent>.csv`.
//!
//! The file follows RFC 4180: a header row `timestamp_us,category,event,value`,
//! CRLF line ends, and a field that contains a comma, a double quote, CR or LF is
//! enclosed in double quotes with its quotes doubled. `category` is the short
//! category name (`TRANSFER`, `ERROR`, …). Every batch is written to the file with one
//! append before `export` returns, so a crash loses at most the batch in flight.
//!
//! A batch the file system refuses (a full disk, a quota, a file size limit) may have
//! been written in part, up to the middle of a row. The exporter then cuts the file
//! back to its length before the batch, so it holds whole rows only, and returns the
//! error: every event of the batch is counted as dropped, and every row in the file
//! is an event counted as exported.
//!
//! An existing file is appended to only if it starts with that header (a previous
//! run of the same agent); anything else is left untouched and reported as
//! [`ExportError::ForeignFile`]. A file whose last row was cut short (the process
//! died mid-write) gets a line end first, so the next row starts on its own line.
//!
//! Routes ([`crate::route`]) go to a file of their own, `DIR/<agent>.routes.csv`
//! (header [`CsvExporter::ROUTES_HEADER`]): one row per route that moved in a flush
//! interval, with the interval's increase of its totals and its slowest transfer.
//! The same rules hold for it (no symbolic link, a foreign file refused before
//! anything is created); its columns and the escaping of route names are described
//! in the `routes` module and docs/ROUTES.md.

mod file;
mod routes;

use super::{ExportError, Exporter, ExporterContext};
use file::{append, check_path, open_path, write_field};
use routes::RouteRows;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use telering_core::Event;

const NAME: &str = "csv";

/// The header row (without its line end).
pub const CSV_HEADER: &str = "timestamp_us,category,event,value";

/// Writes every batch as CSV rows to `DIR/<agent>.csv`.
///
/// ```
/// use telering_std::export::{CsvExporter, Exporter, ExporterContext};
/// use telering_core::{event_name, Category, Event};
/// let dir = tempfile::tempdir().unwrap();
/// let mut ctx = ExporterContext::new("agent-1");
/// ctx.dir = Some(dir.path().to_path_buf());
/// let mut csv = CsvExporter::open(&ctx).unwrap();
/// csv.export(&[Event::new(5, Category::Custom, event_name!("a,\"b\""), 9)]).unwrap();
/// let text = std::fs::read_to_string(dir.path().join("agent-1.csv")).unwrap();
/// assert_eq!(text, "timestamp_us,category,event,value\r\n5,CUSTOM,\"a,\"\"b\"\"\",9\r\n");
/// ```
#[derive(Debug)]
pub struct CsvExporter {
    path: PathBuf,
    /// Opened for appending.
    file: File,
    /// The batch being formatted, written with one append.
    buf: Vec<u8>,
    agent_name: String,
    routes: RouteRows,
}

impl CsvExporter {
    /// The header row of `DIR/<agent>.routes.csv` (without its line end).
    pub const ROUTES_HEADER: &'static str = routes::ROUTES_HEADER;

    /// Opens `DIR/<agent>.csv`, creating it with the header or appending to a file
    /// that already has it, after checking `DIR/<agent>.routes.csv` as
    /// [`check`](Self::check) does (that file is created at the first route rows).
    /// An agent name that leaves no room for `.routes.csv` in a file name (more than
    /// 244 bytes) is [`ExportError::TargetName`].
    ///
    /// ```
    /// use telering_std::export::{CsvExporter, ExportError, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("n".repeat(252)); // no room for `.csv`
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// assert!(matches!(CsvExporter::open(&ctx), Err(ExportError::TargetName { .. })));
    /// ```
    pub fn open(context: &ExporterContext) -> Result<CsvExporter, ExportError> {
        let path = context.target_file(NAME, ".csv")?;
        let routes_path = context.target_file(NAME, ".routes.csv")?;
        check_path(&routes_path, routes::ROUTES_HEADER)?;
        let (file, start) = open_path(&path, CSV_HEADER)?;
        let mut csv = CsvExporter {
            path,
            file,
            buf: start,
            agent_name: context.agent_name.clone(),
            routes: RouteRows::new(routes_path),
        };
        csv.append()
            .map_err(|e| ExportError::io(NAME, &csv.path, e))?;
        Ok(csv)
    }

    /// Appends `buf` to the file and empties it, leaving no part of a row behind
    /// when that fails.
    fn append(&mut self) -> std::io::Result<()> {
        append(&mut self.file, &mut self.buf, &self.path)
    }

    /// Registers this exporter's factory as `csv` in `registry`, as every exporter
    /// crate registers its own (`telering_prometheus::register`, …).
    ///
    /// ```
    /// use telering_std::export::{ExporterRegistry, CsvExporter};
    /// let mut registry = ExporterRegistry::empty();
    /// CsvExporter::register(&mut registry);
    /// assert_eq!(registry.names(), ["csv"]);
    /// ```
    pub fn register(registry: &mut super::ExporterRegistry) {
        registry.register_file_writer(NAME, CsvExporter::check, CsvExporter::factory);
    }

    /// The [`ExporterCheck`](super::ExporterCheck) of `csv`: a directory is set, the
    /// agent's name leaves room for `.routes.csv`, neither `<agent>.csv` nor
    /// `<agent>.routes.csv` is a symbolic link, and each that exists starts with its
    /// header (read only; a foreign file is [`ExportError::ForeignFile`]). Creates
    /// nothing.
    ///
    /// ```
    /// use telering_std::export::{CsvExporter, ExportError, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// assert!(CsvExporter::check(&ctx).is_ok());
    /// assert!(!dir.path().join("a.csv").exists());
    /// std::fs::write(dir.path().join("a.csv"), "not, a telering file\n").unwrap();
    /// assert!(matches!(CsvExporter::check(&ctx), Err(ExportError::ForeignFile { .. })));
    /// ```
    pub fn check(context: &ExporterContext) -> Result<(), ExportError> {
        let path = context.target_file(NAME, ".csv")?;
        let routes_path = context.target_file(NAME, ".routes.csv")?;
        check_path(&path, CSV_HEADER)?;
        check_path(&routes_path, routes::ROUTES_HEADER)
    }

    /// The [`ExporterFactory`](super::ExporterFactory) registered as `csv`.
    ///
    /// ```
    /// use telering_std::export::{CsvExporter, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// assert_eq!(CsvExporter::factory(&ctx).unwrap().name(), "csv");
    /// ```
    pub fn factory(context: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
        Ok(Box::new(CsvExporter::open(context)?))
    }

    /// The file written.
    ///
    /// ```
    /// use telering_std::export::{CsvExporter, ExporterContext};
    /// let dir = tempfile::tempdir().unwrap();
    /// let mut ctx = ExporterContext::new("a");
    /// ctx.dir = Some(dir.path().to_path_buf());
    /// assert_eq!(CsvExporter::open(&ctx).unwrap().path(), dir.path().join("a.csv"));
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Formats one row into `buf` (writing into a `Vec` cannot fail).
    fn write_row(&mut self, e: &Event) {
        let category = match e.category() {
            Ok(c) => c.short_name(),
            Err(_) => "UNKNOWN",
        };
        let out = &mut self.buf;
        let _ = write!(out, "{},{category},", e.timestamp_us());
        let _ = match e.name() {
            Ok(name) => write_field(out, name),
            Err(_) => {
                let raw = e.name_field();
                let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                write_field(out, &String::from_utf8_lossy(&raw[..end]))
            }
        };
        let _ = write!(out, ",{}\r\n", e.value());
    }
}

impl Exporter for CsvExporter {
    fn name(&self) -> &str {
        NAME
    }

    /// Appends the batch's rows. On failure the file holds none of them (see the
    /// module docs) and the whole batch is the error's.
    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        self.buf.clear();
        for e in batch {
            self.write_row(e);
        }
        self.append()
            .map_err(|e| ExportError::io(NAME, &self.path, e))
    }

    /// Appends a row per route that moved since the last route rows to
    /// `DIR/<agent>.routes.csv` (see the module docs).
    fn export_routes(&mut self, report: &crate::route::RouteReport) -> Result<(), ExportError> {
        let now_us = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        self.routes.export(&self.agent_name, report, now_us)
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        self.file
            .sync_data()
            .map_err(|e| ExportError::io(NAME, &self.path, e))?;
        self.routes
            .sync()
            .map_err(|e| ExportError::io(NAME, self.routes.path(), e))
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        self.flush()
    }

    /// The CSV file's path.
    fn endpoint(&self) -> Option<String> {
        Some(self.path.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use telering_core::{Category, EventName};

    fn ctx(dir: &Path) -> ExporterContext {
        let mut c = ExporterContext::new("agent");
        c.dir = Some(dir.to_path_buf());
        c
    }

    fn ev(name: &str, value: u64) -> Event {
        Event::new(7, Category::Backend, EventName::new(name).unwrap(), value)
    }

    #[test]
    fn fields_with_separators_quotes_and_line_ends_are_quoted() {
        let mut out = Vec::new();
        for f in ["plain", "a,b", "say \"hi\"", "two\nlines", "cr\r"] {
            write_field(&mut out, f).unwrap();
            out.push(b'|');
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "plain|\"a,b\"|\"say \"\"hi\"\"\"|\"two\nlines\"|\"cr\r\"|"
        );
    }

    #[test]
    fn a_second_run_appends_below_the_existing_header() {
        let dir = tempfile::tempdir().unwrap();
        for v in [1, 2] {
            let mut csv = CsvExporter::open(&ctx(dir.path())).unwrap();
            csv.export(&[ev("x", v)]).unwrap();
            csv.shutdown().unwrap();
        }
        let text = std::fs::read_to_string(dir.path().join("agent.csv")).unwrap();
        assert_eq!(
            text,
            "timestamp_us,category,event,value\r\n7,BACKEND,x,1\r\n7,BACKEND,x,2\r\n"
        );
    }

    #[test]
    fn the_endpoint_is_the_file_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut csv = CsvExporter::open(&ctx(dir.path())).unwrap();
        let path = dir.path().join("agent.csv");
        assert_eq!(csv.endpoint(), Some(path.display().to_string()));
        csv.export(&[ev("x", 1)]).unwrap();
        csv.shutdown().unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().contains(",x,1"));
    }

    #[test]
    fn a_foreign_file_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.csv");
        std::fs::write(&path, "my,own,data\n1,2,3\n").unwrap();
        let err = CsvExporter::open(&ctx(dir.path())).unwrap_err();
        assert!(matches!(err, ExportError::ForeignFile { .. }), "{err}");
        assert!(err.to_string().contains("agent.csv"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "my,own,data\n1,2,3\n"
        );
    }

    #[test]
    fn a_row_cut_short_by_a_crash_is_ended_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.csv");
        std::fs::write(&path, format!("{CSV_HEADER}\r\n7,BACKEND,x")).unwrap();
        let mut csv = CsvExporter::open(&ctx(dir.path())).unwrap();
        csv.export(&[ev("y", 3)]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.ends_with("7,BACKEND,x\r\n7,BACKEND,y,3\r\n"),
            "{text:?}"
        );
    }

    #[test]
    fn a_symlink_in_place_of_the_routes_file_is_refused_as_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("agent.routes.csv")).unwrap();
        let err = CsvExporter::open(&ctx(dir.path())).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("agent.routes.csv is a symbolic link (to ")
                && !text.contains("Too many levels"),
            "{text}"
        );
        assert!(!dir.path().join("agent.csv").exists());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }

    #[test]
    fn a_symlink_in_place_of_the_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("agent.csv")).unwrap();
        let err = CsvExporter::open(&ctx(dir.path())).unwrap_err();
        assert!(matches!(err, ExportError::ForeignFile { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("agent.csv is a symbolic link (to ")
                && text.contains("elsewhere); the CSV file is never opened through a link"),
            "{text}"
        );
        assert!(!text.contains("Too many levels"), "{text}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }

    #[test]
    fn without_a_directory_the_error_names_the_variable() {
        let err = CsvExporter::open(&ExporterContext::new("agent")).unwrap_err();
        assert!(err.to_string().contains("NIXL_TELEMETRY_DIR"), "{err}");
    }
}
