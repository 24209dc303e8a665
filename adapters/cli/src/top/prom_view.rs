//! Showing `top --prometheus`'s rows: the plain-text and JSON tables of `--once`, and
//! the live screen, which keeps the last rows and says on screen when a refresh failed.

use super::prometheus::{PromError, PromRow, PromSource};
use super::render::rate;
use crate::error::CliError;
use crate::output::write_json_string;
use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The table's column headers.
pub const HEADERS: [&str; 12] = [
    "NODE",
    "AGENT",
    "TX B/S",
    "RX B/S",
    "REQ/S",
    "XFER P50",
    "XFER P99",
    "POST P50",
    "ERR/S",
    "TOP ERROR",
    "DROPPED",
    "MISSED",
];

fn micros(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(us) if us >= 1e6 => format!("{:.1}s", us / 1e6),
        Some(us) if us >= 1e4 => format!("{:.1}ms", us / 1e3),
        Some(us) => format!("{us:.0}us"),
    }
}

/// The cells of one row, in [`HEADERS`] order.
pub fn row_cells(r: &PromRow) -> Vec<String> {
    vec![
        r.node.clone(),
        r.agent.clone(),
        rate(r.tx_bytes_per_s),
        rate(r.rx_bytes_per_s),
        rate(r.requests_per_s),
        micros(r.xfer_p50_us),
        micros(r.xfer_p99_us),
        micros(r.post_p50_us),
        rate(r.errors_per_s),
        r.top_error.clone().unwrap_or_else(|| "-".into()),
        format!("{:.0}", r.events_dropped),
        format!("{:.0}", r.events_missed),
    ]
}

/// Writes the rows as aligned plain text.
pub fn write_text(out: &mut dyn Write, rows: &[PromRow]) -> std::io::Result<()> {
    let cells: Vec<Vec<String>> = rows.iter().map(row_cells).collect();
    let mut widths: Vec<usize> = HEADERS.iter().map(|h| h.len()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let line = |row: &[String]| {
        let mut l = String::new();
        for (i, c) in row.iter().enumerate() {
            l.push_str(&format!("{c:<w$}  ", w = widths[i]));
        }
        l.trim_end().to_owned()
    };
    let headers: Vec<String> = HEADERS.iter().map(|h| h.to_string()).collect();
    writeln!(out, "{}", line(&headers))?;
    for row in &cells {
        writeln!(out, "{}", line(row))?;
    }
    Ok(())
}

fn json_number(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

/// Writes one JSON object per row, one per line.
pub fn write_json(out: &mut dyn Write, rows: &[PromRow]) -> std::io::Result<()> {
    for r in rows {
        let mut line = Vec::new();
        for (i, (name, text)) in [("node", &r.node), ("job", &r.job), ("agent", &r.agent)]
            .into_iter()
            .enumerate()
        {
            line.extend_from_slice(if i == 0 { b"{\"" } else { b",\"" });
            line.extend_from_slice(name.as_bytes());
            line.extend_from_slice(b"\":");
            write_json_string(&mut line, text)?;
        }
        let opt = |v: Option<f64>| v.map_or_else(|| "null".into(), json_number);
        write!(
            line,
            ",\"tx_bytes_per_s\":{},\"rx_bytes_per_s\":{},\"requests_per_s\":{},\"xfer_p50_us\":{},\"xfer_p99_us\":{},\"post_p50_us\":{},\"errors_per_s\":{},\"tx_bytes_total\":{},\"rx_bytes_total\":{},\"events_dropped\":{},\"events_missed\":{},\"top_error\":",
            json_number(r.tx_bytes_per_s),
            json_number(r.rx_bytes_per_s),
            json_number(r.requests_per_s),
            opt(r.xfer_p50_us),
            opt(r.xfer_p99_us),
            opt(r.post_p50_us),
            json_number(r.errors_per_s),
            json_number(r.tx_bytes_total),
            json_number(r.rx_bytes_total),
            json_number(r.events_dropped),
            json_number(r.events_missed),
        )?;
        match &r.top_error {
            Some(e) => write_json_string(&mut line, e)?,
            None => line.extend_from_slice(b"null"),
        }
        line.extend_from_slice(b"}\n");
        out.write_all(&line)?;
    }
    Ok(())
}

/// One refresh printed as text or JSON; a failed refresh is the error.
pub fn once(source: &PromSource, json: bool, out: &mut dyn Write) -> Result<(), CliError> {
    let rows = source.rows().map_err(CliError::Prometheus)?;
    if json {
        write_json(out, &rows)
    } else {
        write_text(out, &rows)
    }
    .and_then(|()| out.flush())
    .map_err(CliError::Output)
}

/// What the live screen shows: the last rows and the last refresh's outcome.
#[derive(Debug, Default)]
struct Shown {
    rows: Vec<PromRow>,
    error: Option<PromError>,
    refreshed: Option<Instant>,
    took: Duration,
}

/// The live screen, refreshed every `interval` until `q` or `stop`. A failed refresh
/// keeps the last rows and says why at the bottom; the next refresh retries.
pub fn live(source: &PromSource, interval: Duration, stop: &AtomicBool) -> Result<(), CliError> {
    let mut terminal = ratatui::try_init().map_err(CliError::Output)?;
    let result = live_loop(&mut terminal, source, interval, stop);
    ratatui::try_restore().map_err(CliError::Output)?;
    result
}

fn live_loop(
    terminal: &mut ratatui::DefaultTerminal,
    source: &PromSource,
    interval: Duration,
    stop: &AtomicBool,
) -> Result<(), CliError> {
    let mut shown = Shown::default();
    let mut selected = 0usize;
    let mut next = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        if Instant::now() >= next {
            let start = Instant::now();
            match source.rows() {
                Ok(rows) => {
                    shown.rows = rows;
                    shown.error = None;
                    shown.refreshed = Some(Instant::now());
                }
                Err(e) => shown.error = Some(e),
            }
            shown.took = start.elapsed();
            next = Instant::now() + interval;
        }
        terminal
            .draw(|f| draw(f, source, &shown, selected, interval))
            .map_err(CliError::Output)?;
        let wait = next.saturating_duration_since(Instant::now());
        if event::poll(wait).map_err(CliError::Output)? {
            if let TermEvent::Key(key) = event::read().map_err(CliError::Output)? {
                if key.kind == KeyEventKind::Release {
                    continue;
                }
                match key.code {
                    KeyCode::Char('q') | KeyCode::Esc => return Ok(()),
                    KeyCode::Down | KeyCode::Char('j') => {
                        selected = (selected + 1).min(shown.rows.len().saturating_sub(1));
                    }
                    KeyCode::Up | KeyCode::Char('k') => selected = selected.saturating_sub(1),
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

fn draw(
    frame: &mut ratatui::Frame,
    source: &PromSource,
    shown: &Shown,
    selected: usize,
    interval: Duration,
) {
    let [table_area, help] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
    let header = Row::new(HEADERS.to_vec()).style(Style::new().add_modifier(Modifier::BOLD));
    let rows = shown.rows.iter().map(|r| Row::new(row_cells(r)));
    let widths = [
        Constraint::Length(22),
        Constraint::Length(16),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(20),
        Constraint::Length(8),
        Constraint::Length(8),
    ];
    let nodes: std::collections::BTreeSet<&str> =
        shown.rows.iter().map(|r| r.node.as_str()).collect();
    let title = format!(
        " telering top: {} agents on {} nodes via {}, every {:.1} s (query {} ms) ",
        shown.rows.len(),
        nodes.len(),
        source.url(),
        interval.as_secs_f64(),
        shown.took.as_millis()
    );
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::new().borders(Borders::ALL).title(title))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(Some(selected));
    frame.render_stateful_widget(table, table_area, &mut state);
    let text = match (&shown.error, shown.refreshed) {
        (Some(e), Some(at)) => format!(
            "telering: {e}; retrying every {:.1} s; rows are {:.0} s old",
            interval.as_secs_f64(),
            at.elapsed().as_secs_f64()
        ),
        (Some(e), None) => format!(
            "telering: {e}; retrying every {:.1} s",
            interval.as_secs_f64()
        ),
        (None, _) => "↑/↓ j/k select   q quit".into(),
    };
    frame.render_widget(Paragraph::new(text), help);
}
