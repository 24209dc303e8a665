//! Showing `top --prometheus`'s rows: the plain-text and JSON tables of `--once`, and
//! the live screen, which keeps the last rows and says on screen when a refresh failed.
//!
//! The values come from another program, so any `f64` may arrive: a figure that is not
//! a number shows `-`, an infinity `+Inf` or `-Inf`, and one of 10^15 or more (either
//! sign) in scientific notation, so a column never fills with hundreds of digits.
//! Label values (node, agent, status) are shown [`Escaped`].

use super::prometheus::{PromError, PromRow, PromSource};
use crate::error::CliError;
use crate::output::write_json_string;
use ratatui::crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Table, TableState};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use telering_core::text::Escaped;

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

/// Past this magnitude a figure is written in scientific notation.
const HUGE: f64 = 1e15;

/// A figure that is not finite or is [`HUGE`], written as such; `None` for the others.
fn unusual(v: f64) -> Option<String> {
    if v.is_nan() {
        Some("-".into())
    } else if v.is_infinite() {
        Some(if v > 0.0 { "+Inf" } else { "-Inf" }.into())
    } else if v.abs() >= HUGE {
        Some(format!("{v:.1e}"))
    } else {
        None
    }
}

/// A rate with a K, M, G or T unit (`12.3M`), or [`unusual`].
fn rate(v: f64) -> String {
    if let Some(text) = unusual(v) {
        return text;
    }
    let (div, unit) = match v.abs() {
        a if a >= 1e12 => (1e12, "T"),
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e4 => (1e3, "K"),
        _ => (1.0, ""),
    };
    if unit.is_empty() {
        format!("{v:.0}")
    } else {
        format!("{:.1}{unit}", v / div)
    }
}

/// A count, whole, or [`unusual`].
fn count(v: f64) -> String {
    unusual(v).unwrap_or_else(|| format!("{v:.0}"))
}

fn micros(v: Option<f64>) -> String {
    let Some(us) = v else {
        return "-".into();
    };
    if !us.is_finite() {
        return unusual(us).unwrap_or_default();
    }
    match us.abs() {
        a if a >= HUGE => format!("{:.1e}s", us / 1e6),
        a if a >= 1e6 => format!("{:.1}s", us / 1e6),
        a if a >= 1e4 => format!("{:.1}ms", us / 1e3),
        _ => format!("{us:.0}us"),
    }
}

/// The cells of one row, in [`HEADERS`] order.
pub fn row_cells(r: &PromRow) -> Vec<String> {
    vec![
        Escaped::new(&r.node).to_string(),
        Escaped::new(&r.agent).to_string(),
        rate(r.tx_bytes_per_s),
        rate(r.rx_bytes_per_s),
        rate(r.requests_per_s),
        micros(r.xfer_p50_us),
        micros(r.xfer_p99_us),
        micros(r.post_p50_us),
        rate(r.errors_per_s),
        r.top_error
            .as_deref()
            .map_or_else(|| "-".into(), |e| Escaped::new(e).to_string()),
        count(r.events_dropped),
        count(r.events_missed),
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

/// A JSON number in a short form (`-1e308`, not 309 digits); `null` when not finite.
fn json_number(v: f64) -> String {
    serde_json::Number::from_f64(v).map_or_else(|| "null".into(), |n| n.to_string())
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
        Escaped::new(source.url()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_that_are_not_numbers_or_huge_stay_short() {
        assert_eq!(rate(f64::NAN), "-");
        assert_eq!(rate(f64::INFINITY), "+Inf");
        assert_eq!(rate(f64::NEG_INFINITY), "-Inf");
        assert_eq!(rate(-1e308), "-1.0e308");
        assert_eq!(rate(1e308), "1.0e308");
        assert_eq!(rate(2.5e12), "2.5T");
        assert_eq!(rate(-2.5e6), "-2.5M");
        assert_eq!(rate(1234.0), "1234");
        assert_eq!(count(f64::NAN), "-");
        assert_eq!(count(-1e308), "-1.0e308");
        assert_eq!(count(12.0), "12");
        assert_eq!(micros(Some(1e308)), "1.0e302s");
        assert_eq!(micros(Some(f64::NAN)), "-");
        assert_eq!(micros(Some(2e6)), "2.0s");
        assert_eq!(micros(None), "-");
        // `-1e308` or `-1e+308` (serde_json's form depends on its features).
        let huge = json_number(-1e308);
        assert!(
            huge.len() <= 7 && huge.parse::<f64>() == Ok(-1e308),
            "{huge}"
        );
        assert_eq!(json_number(f64::NAN), "null");
        assert_eq!(json_number(0.5), "0.5");
    }

    #[test]
    fn label_values_from_the_server_are_escaped_in_every_cell() {
        let row = PromRow {
            node: "n\u{1b}]0;pwned\u{7}".into(),
            agent: "a\r\nforged  row".into(),
            top_error: Some("\u{202e}ERR".into()),
            ..PromRow::default()
        };
        for cell in row_cells(&row) {
            assert!(
                telering_core::text::first_unsafe_char(&cell).is_none(),
                "{cell:?}"
            );
        }
        let mut text = Vec::new();
        write_text(&mut text, &[row]).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(
            !text.contains(['\u{1b}', '\r', '\u{7}', '\u{202e}']),
            "{text}"
        );
    }
}
