//! The demo's summary: what was recorded, delivered and lost per event name, and its
//! text and JSON forms.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::setup::Setup;
use super::workload::{NameTally, Workload};

/// What a finished demo did.
#[derive(Clone, Debug, Default)]
pub struct DemoSummary {
    /// The agent name.
    pub agent: String,
    /// The exporter used (`None`: telemetry disabled or capture only).
    pub exporter: Option<String>,
    /// The ring file (with the `buffer` exporter).
    pub ring_file: Option<PathBuf>,
    /// The CSV file (with the `csv` exporter).
    pub csv_file: Option<PathBuf>,
    /// The metrics URL, only when this run served it: the node collector's bound
    /// address, or the one the `prometheus` exporter reports it bound.
    pub metrics_url: Option<String>,
    /// Where the exporter sent the events (an OTLP collector's URL), when it is not a
    /// file or metrics URL above.
    pub endpoint: Option<String>,
    /// How long the workload ran.
    pub elapsed: Duration,
    /// Per event name: what the demo recorded.
    pub names: BTreeMap<String, NameTally>,
    /// Each route's totals after the final flush (what the flushes drained), in the
    /// order the telemetry reports them.
    pub routes: Vec<(telering_std::route::Route, telering_std::route::RouteStats)>,
    /// The telemetry's own counters after the final flush.
    pub stats: telering_std::TelemetryStats,
    /// Each exporter's counters after the shutdown (one entry per name of a list).
    pub exporters: Vec<telering_std::ExporterStats>,
    /// Whether the run was cut short by Ctrl-C.
    pub interrupted: bool,
    /// How the user runs `telering` from here, for the next steps printed
    /// ([`telering_command`]; empty means `telering`).
    pub command: String,
    /// Whether NIXL's Python reader example is reachable from the current directory
    /// (`examples/python/nixl_telemetry_reader.py`, in a clone of the repository).
    pub python_reader: bool,
}

/// Where NIXL's Python reader example sits in a clone of the repository.
const PYTHON_READER: &str = "examples/python/nixl_telemetry_reader.py";

/// The command that runs this `telering` binary from the current directory, for
/// next steps a user can paste: `telering` when that name on `PATH` is this very
/// binary, else the binary's path (relative when it lies below the current
/// directory, such as `target/release/telering`), else, when the binary's path is
/// unknown, `cargo run --release -p telering-cli --`.
///
/// ```
/// let command = telering_cli::demo::telering_command();
/// assert!(!command.is_empty());
/// ```
pub fn telering_command() -> String {
    let Some(exe) = std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
    else {
        return "cargo run --release -p telering-cli --".into();
    };
    let on_path = std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths)
            .any(|dir| dir.join("telering").canonicalize().is_ok_and(|c| c == exe))
    });
    if on_path {
        return "telering".into();
    }
    let below_cwd = std::env::current_dir()
        .ok()
        .and_then(|cwd| cwd.canonicalize().ok())
        .and_then(|cwd| exe.strip_prefix(cwd).ok().map(Path::to_path_buf));
    shell_word(&below_cwd.unwrap_or(exe).to_string_lossy())
}

/// `word` quoted for a POSIX shell when it holds anything but plain path characters.
fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+:,@%".contains(c);
    if word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

impl DemoSummary {
    /// Events the workload recorded (they passed the allowlist), as the telemetry
    /// counts them: written into a lane or backend buffer, or refused at record time
    /// (those are among [`DemoSummary::events_dropped`]). The per-name `count`s add up
    /// to the written ones only.
    pub fn events_recorded(&self) -> u64 {
        self.stats.events_recorded
    }

    /// Every event lost on the way: dropped at record time, by the flush, or by the
    /// exporter (a full ring).
    pub fn events_dropped(&self) -> u64 {
        self.stats.events_dropped + self.stats.exporter_dropped
    }

    /// Events the exporter delivered to its sink (into the ring file, the CSV file,
    /// the metrics, a collector that answered 2xx). Every event the workload recorded
    /// is delivered or counted: `events_recorded = events_exported + events_dropped +
    /// events_not_in_layout + events_undelivered`.
    pub fn events_exported(&self) -> u64 {
        self.stats.events_exported
    }
}

/// Flushes everything recorded, closes the telemetry (and with it the ring file) and
/// the metrics endpoint, and adds the exporter's per-name losses to the tallies.
pub(super) fn finish(setup: Setup, workload: Workload, interrupted: bool) -> DemoSummary {
    let Setup {
        agent,
        telemetry,
        exporter,
        ring_file,
        csv_file,
        metrics_url,
        endpoint,
        collector,
        ..
    } = setup;
    let Workload { mut names, elapsed } = workload;
    if let Err(e) = telemetry.flush() {
        log::warn!("final telemetry flush: {e}");
    }
    let routes = telemetry.route_report().routes;
    for (name, lost) in telemetry.dropped_by_name() {
        if let Some(tally) = names.get_mut(&name) {
            tally.dropped += lost;
        }
    }
    for (name, left_out) in telemetry.not_in_layout_by_name() {
        if let Some(tally) = names.get_mut(&name) {
            tally.not_in_layout += left_out;
        }
    }
    // After the exporter's shutdown: an OTLP exporter delivers at its last push.
    let (stats, exporters) = telemetry.close_with_exporter_stats();
    if let Some(mut c) = collector {
        c.collector.poll();
        c.server.shutdown();
    }
    DemoSummary {
        agent,
        exporter,
        ring_file,
        csv_file,
        metrics_url,
        endpoint,
        elapsed,
        names,
        routes,
        stats,
        exporters,
        interrupted,
        command: telering_command(),
        python_reader: Path::new(PYTHON_READER).is_file(),
    }
}

/// Writes the summary as a table: per event name the category, count and sum, then
/// losses and how to read the ring file.
pub fn write_summary_text(out: &mut dyn Write, s: &DemoSummary) -> std::io::Result<()> {
    let secs = s.elapsed.as_secs_f64().max(1e-3);
    let refused_at_record = s.stats.events_dropped;
    writeln!(out)?;
    writeln!(
        out,
        "{}: {} events recorded in {:.1} s ({:.0}/s){}{}",
        s.agent,
        s.events_recorded(),
        secs,
        s.events_recorded() as f64 / secs,
        if refused_at_record > 0 {
            format!(
                ", {refused_at_record} of them refused at record time (the agent's buffers were full)"
            )
        } else {
            String::new()
        },
        if s.interrupted {
            ", stopped by Ctrl-C"
        } else {
            ""
        }
    )?;
    let left_out = s.stats.events_not_in_layout > 0;
    write!(
        out,
        "  {:<31} {:<12} {:>10} {:>20} {:>10}",
        "event", "category", "count", "sum", "dropped"
    )?;
    writeln!(out, "{}", if left_out { "  not in layout" } else { "" })?;
    for (name, t) in &s.names {
        let category = t.category.map(|c| c.short_name()).unwrap_or("-");
        write!(
            out,
            "  {name:<31} {category:<12} {:>10} {:>20} {:>10}",
            t.count, t.sum, t.dropped
        )?;
        if left_out {
            writeln!(out, "  {:>13}", t.not_in_layout)?;
        } else {
            writeln!(out)?;
        }
    }
    super::routes::write_routes_text(out, &s.routes)?;
    if let Some(exporter) = &s.exporter {
        if s.exporters.len() > 1 {
            write!(
                out,
                "exported:  {} of the {} recorded delivered by every exporter of {exporter}",
                s.events_exported(),
                s.events_recorded(),
            )?;
        } else {
            write!(
                out,
                "exported:  {} of the {} recorded delivered by the {exporter} exporter",
                s.events_exported(),
                s.events_recorded(),
            )?;
        }
        // Lost with a ring file another program unlinked (counted delivered until
        // the writer noticed, then taken back out of the exported count).
        // (With a list, of the exporter whose counts are the totals.)
        let unlinked = telering_std::fanout::aggregate(&s.exporters)
            .map_or(0, |a| a.weakest.events_lost_after_delivery);
        match s.stats.exporter_dropped.saturating_sub(unlinked) {
            0 => {}
            n if s.ring_file.is_some() => write!(out, ", {n} refused by the full ring")?,
            n => write!(out, ", {n} refused by the exporter")?,
        }
        if unlinked > 0 {
            write!(
                out,
                ", {unlinked} lost in a ring file another program unlinked (made again)"
            )?;
        }
        if s.stats.events_undelivered > 0 || s.stats.export_errors > 0 {
            write!(
                out,
                "; {} not delivered, {} failed attempts",
                s.stats.events_undelivered, s.stats.export_errors
            )?;
        }
        writeln!(out)?;
        if s.exporters.len() > 1 {
            write_each_exporter(out, &s.exporters)?;
        }
    }
    if left_out {
        writeln!(
            out,
            "not in layout: {} (events the ring's version-4 layout cannot hold, such as custom events; not written, not lost)",
            s.stats.events_not_in_layout
        )?;
    }
    writeln!(
        out,
        "dropped:   {} (at record time {refused_at_record}, by the exporter {}){}",
        s.events_dropped(),
        s.stats.exporter_dropped,
        match (s.events_dropped() > 0, s.ring_file.is_some()) {
            // The writer counts every loss in the trailer at once; its in-band report
            // needs a free slot, which a full ring nobody drains never has.
            (true, true) => {
                "; counted in the ring file's trailer (telering stat shows them by cause, serve as agent_telemetry_events_dropped_total and ring_full/staging on its dashboard); an in-band agent_telemetry_events_dropped report follows only once the ring has a free slot"
            }
            _ => "",
        }
    )?;
    let telering = if s.command.is_empty() {
        "telering"
    } else {
        &s.command
    };
    if let Some(path) = &s.ring_file {
        let path = shell_word(&path.to_string_lossy());
        writeln!(out, "ring file: {path}")?;
        writeln!(out, "read it:   {telering} read {path}")?;
        if s.python_reader {
            writeln!(
                out,
                "       or: python3 {PYTHON_READER} --telemetry_path {path}"
            )?;
        }
        writeln!(out, "inspect:   {telering} stat {path}")?;
    } else if let Some(path) = &s.csv_file {
        writeln!(out, "csv file:  {}", path.display())?;
    } else if let Some(e) = &s.exporter {
        match &s.endpoint {
            Some(url) => writeln!(out, "exporter:  {e}, to {url}")?,
            None => writeln!(out, "exporter:  {e}")?,
        }
    }
    out.flush()
}

/// Writes what each exporter of a list did, one line each.
fn write_each_exporter(
    out: &mut dyn Write,
    exporters: &[telering_std::ExporterStats],
) -> std::io::Result<()> {
    for e in exporters {
        write!(
            out,
            "  {:<13} {} delivered, {} lost",
            e.name,
            e.events_delivered,
            e.events_dropped + e.exporter_dropped
        )?;
        if e.events_not_in_layout > 0 {
            write!(out, ", {} not in layout", e.events_not_in_layout)?;
        }
        if e.events_undelivered > 0 {
            write!(out, ", {} not delivered", e.events_undelivered)?;
        }
        if e.export_errors > 0 {
            write!(out, ", {} failed attempts", e.export_errors)?;
        }
        if e.exporter_failing {
            write!(out, ", failing")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Writes the summary as one JSON object on one line.
pub fn write_summary_json(out: &mut dyn Write, s: &DemoSummary) -> std::io::Result<()> {
    use crate::output::write_json_string;
    let mut line = Vec::new();
    line.extend_from_slice(b"{\"agent\":");
    write_json_string(&mut line, &s.agent)?;
    line.extend_from_slice(b",\"exporter\":");
    match &s.exporter {
        Some(e) => write_json_string(&mut line, e)?,
        None => line.extend_from_slice(b"null"),
    }
    line.extend_from_slice(b",\"ring_file\":");
    match &s.ring_file {
        Some(p) => write_json_string(&mut line, &p.to_string_lossy())?,
        None => line.extend_from_slice(b"null"),
    }
    line.extend_from_slice(b",\"csv_file\":");
    match &s.csv_file {
        Some(p) => write_json_string(&mut line, &p.to_string_lossy())?,
        None => line.extend_from_slice(b"null"),
    }
    line.extend_from_slice(b",\"metrics_url\":");
    match &s.metrics_url {
        Some(url) => write_json_string(&mut line, url)?,
        None => line.extend_from_slice(b"null"),
    }
    write!(
        line,
        ",\"elapsed_s\":{:.3},\"interrupted\":{},\"events_recorded\":{},\"events_dropped\":{},\"dropped_at_record\":{},\"dropped_by_exporter\":{},\"events_exported\":{},\"events_not_in_layout\":{},\"events_undelivered\":{},\"export_errors\":{}",
        s.elapsed.as_secs_f64(),
        s.interrupted,
        s.events_recorded(),
        s.events_dropped(),
        s.stats.events_dropped,
        s.stats.exporter_dropped,
        s.events_exported(),
        s.stats.events_not_in_layout,
        s.stats.events_undelivered,
        s.stats.export_errors
    )?;
    line.extend_from_slice(b",\"exporters\":[");
    for (i, e) in s.exporters.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        line.extend_from_slice(b"{\"name\":");
        write_json_string(&mut line, &e.name)?;
        write!(
            line,
            ",\"delivered\":{},\"dropped\":{},\"exporter_dropped\":{},\"not_in_layout\":{},\"undelivered\":{},\"export_errors\":{},\"failing\":{}}}",
            e.events_delivered,
            e.events_dropped,
            e.exporter_dropped,
            e.events_not_in_layout,
            e.events_undelivered,
            e.export_errors,
            e.exporter_failing
        )?;
    }
    line.extend_from_slice(b"],\"names\":{");
    for (i, (name, t)) in s.names.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        write_json_string(&mut line, name)?;
        write!(
            line,
            ":{{\"category\":\"{}\",\"count\":{},\"sum\":{},\"dropped\":{},\"not_in_layout\":{}}}",
            t.category.map(|c| c.short_name()).unwrap_or("-"),
            t.count,
            t.sum,
            t.dropped,
            t.not_in_layout
        )?;
    }
    line.push(b'}');
    super::routes::write_routes_json(&mut line, &s.routes)?;
    line.extend_from_slice(b"}\n");
    out.write_all(&line)?;
    out.flush()
}
