//! Drawing `telering top`: the live screen (ratatui), and the plain-text and JSON
//! tables of `--once` / `--json`. All three show the same [`row_cells`].
//!
//! Text the rings hold or name (file names, event names, error texts) is escaped
//! with [`Escaped`] on the screen and in the plain table, so a hostile name cannot
//! forge a row or drive the terminal; JSON escapes it with JSON's rules.

use super::input::{SortColumn, ViewState};
use super::scan::{Ring, RingState, Rings};
use crate::output::{message_line, shown_path, write_json_string};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph, Row, Sparkline, Table, TableState};
use std::io::Write;
use telering_core::text::Escaped;

/// The table's column headers.
pub const HEADERS: [&str; 13] = [
    "AGENT",
    "WRITER",
    "EVENTS/S",
    "TX B/S",
    "RX B/S",
    "REQ/S",
    "XFER P50",
    "XFER P99",
    "POST P50",
    "ERR/S",
    "TOP ERROR",
    "MISSED",
    "DROPPED",
];

/// A rate with a K/M/G suffix.
pub fn rate(v: f64) -> String {
    let (div, unit) = match v {
        v if v >= 1e9 => (1e9, "G"),
        v if v >= 1e6 => (1e6, "M"),
        v if v >= 1e4 => (1e3, "K"),
        _ => (1.0, ""),
    };
    if unit.is_empty() {
        format!("{v:.0}")
    } else {
        format!("{:.1}{unit}", v / div)
    }
}

fn micros(v: Option<u64>) -> String {
    match v {
        None => "-".into(),
        Some(us) if us >= 1_000_000 => format!("{:.1}s", us as f64 / 1e6),
        Some(us) if us >= 10_000 => format!("{:.1}ms", us as f64 / 1e3),
        Some(us) => format!("{us}us"),
    }
}

/// Writer column text: `alive 1234`, `gone 1234`, or without a trailer `lock held`
/// / `unknown`.
pub fn writer_text(ring: &Ring) -> String {
    match (ring.writer_pid(), ring.writer_alive()) {
        (Some(pid), true) => format!("alive {pid}"),
        (Some(pid), false) => format!("gone {pid}"),
        (None, true) => "lock held".into(),
        (None, false) if matches!(ring.state, RingState::Vanished) => "gone".into(),
        (None, false) => "unknown".into(),
    }
}

/// The cells of one row, in [`HEADERS`] order.
pub fn row_cells(ring: &Ring) -> Vec<String> {
    let s = ring.stats.last();
    let mut cells = vec![ring.shown_agent(), writer_text(ring)];
    if let Some(problem) = ring.problem().filter(|_| ring.stats.events_total == 0) {
        cells.push(format!("error: {}", message_line(problem)));
        return cells;
    }
    cells.extend([
        rate(s.events_per_s),
        rate(s.tx_bytes_per_s),
        rate(s.rx_bytes_per_s),
        rate(s.requests_per_s),
        micros(s.xfer_p50_us),
        micros(s.xfer_p99_us),
        micros(s.post_p50_us),
        rate(s.errors_per_s),
        s.top_error
            .as_deref()
            .map_or_else(|| "-".into(), |e| Escaped::new(e).to_string()),
        ring.missed.to_string(),
        ring.writer_dropped()
            .map_or_else(|| "-".into(), |d| d.to_string()),
    ]);
    cells
}

/// The rings in display order.
pub fn sorted(rings: &Rings, sort: SortColumn) -> Vec<&Ring> {
    let mut v: Vec<&Ring> = rings.rings.iter().collect();
    v.sort_by(|a, b| sort.compare(a, b));
    v
}

/// Writes the table as aligned plain text, one line per ring.
pub fn write_text(out: &mut dyn Write, rings: &Rings, sort: SortColumn) -> std::io::Result<()> {
    let order = sorted(rings, sort);
    let rows: Vec<Vec<String>> = order.iter().copied().map(row_cells).collect();
    let mut widths: Vec<usize> = HEADERS.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            if c.len() < 40 {
                *w = (*w).max(c.len());
            }
        }
    }
    let line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            if i + 1 == cells.len() {
                l.push_str(c);
            } else {
                l.push_str(&format!("{c:<w$}", w = widths[i]));
            }
        }
        l.trim_end().to_string()
    };
    writeln!(out, "{}", line(&HEADERS))?;
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        writeln!(out, "{}", line(&cells))?;
    }
    if let Some(e) = &rings.scan_error {
        writeln!(out, "telering: {}", message_line(e))?;
    }
    if rings
        .rings
        .iter()
        .any(|r| !r.stats.last().timestamped && r.stats.events_total > 0)
    {
        writeln!(out, "note: rates are per second of arrival at this view")?;
    }
    super::route_table::write_text(out, &order)
}

fn json_opt(v: Option<u64>) -> String {
    v.map_or_else(|| "null".into(), |v| v.to_string())
}

/// Writes one JSON object per ring, one per line.
pub fn write_json(out: &mut dyn Write, rings: &Rings, sort: SortColumn) -> std::io::Result<()> {
    for ring in sorted(rings, sort) {
        let s = ring.stats.last();
        let mut line = Vec::new();
        line.extend_from_slice(b"{\"agent\":");
        write_json_string(&mut line, &ring.agent)?;
        line.extend_from_slice(b",\"path\":");
        write_json_string(&mut line, &ring.path.to_string_lossy())?;
        write!(
            line,
            ",\"writer_alive\":{},\"writer_pid\":{}",
            ring.writer_alive(),
            json_opt(ring.writer_pid().map(u64::from))
        )?;
        line.extend_from_slice(b",\"error\":");
        match ring.problem() {
            Some(p) => write_json_string(&mut line, p)?,
            None => line.extend_from_slice(b"null"),
        }
        write!(
            line,
            ",\"interval_s\":{:.3},\"events_per_s\":{},\"tx_bytes_per_s\":{},\"rx_bytes_per_s\":{},\"requests_per_s\":{},\"xfer_p50_us\":{},\"xfer_p99_us\":{},\"post_p50_us\":{},\"errors_per_s\":{}",
            s.seconds,
            s.events_per_s,
            s.tx_bytes_per_s,
            s.rx_bytes_per_s,
            s.requests_per_s,
            json_opt(s.xfer_p50_us),
            json_opt(s.xfer_p99_us),
            json_opt(s.post_p50_us),
            s.errors_per_s
        )?;
        line.extend_from_slice(b",\"top_error\":");
        match &s.top_error {
            Some(e) => write_json_string(&mut line, e)?,
            None => line.extend_from_slice(b"null"),
        }
        super::route_table::write_json(&mut line, ring)?;
        writeln!(
            line,
            ",\"events_missed\":{},\"writer_dropped\":{},\"rates_from_arrival\":{}}}",
            ring.missed,
            json_opt(ring.writer_dropped()),
            !s.timestamped
        )?;
        out.write_all(&line)?;
    }
    Ok(())
}

/// Draws the live screen: the table, then the selected ring's detail pane.
pub fn draw(frame: &mut Frame, rings: &Rings, view: &ViewState, interval_s: f64) {
    let order = sorted(rings, view.sort);
    let [top, detail, help] = Layout::vertical([
        Constraint::Min(5),
        Constraint::Length(14),
        Constraint::Length(1),
    ])
    .areas(frame.area());

    let header = Row::new(HEADERS.to_vec()).style(Style::new().add_modifier(Modifier::BOLD));
    let rows = order.iter().map(|r| Row::new(row_cells(r)));
    let widths = [
        Constraint::Length(16),
        Constraint::Length(12),
        Constraint::Length(9),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(7),
        Constraint::Length(26),
        Constraint::Length(7),
        Constraint::Length(8),
    ];
    let title = format!(
        " telering top: {} rings, interval {interval_s:.1} s, sort: {}{} ",
        order.len(),
        view.sort.label(),
        if view.paused { ", PAUSED" } else { "" }
    );
    let table = Table::new(rows, widths)
        .header(header)
        .block(Block::new().borders(Borders::ALL).title(title))
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(Some(view.selected));
    frame.render_stateful_widget(table, top, &mut state);

    if let Some(ring) = order.get(view.selected.min(order.len().saturating_sub(1))) {
        if view.routes {
            let block = Block::new()
                .borders(Borders::ALL)
                .title(format!(" {} — routes ", ring.shown_agent()));
            let inner = block.inner(detail);
            frame.render_widget(block, detail);
            super::route_table::draw(frame, ring, inner);
        } else {
            draw_detail(frame, ring, detail);
        }
    }
    let help_text = match &rings.scan_error {
        Some(e) => format!("telering: {}", message_line(e)),
        None => "↑/↓ j/k select   s sort   r routes   p pause   q quit".into(),
    };
    frame.render_widget(Paragraph::new(help_text), help);
}

fn draw_detail(frame: &mut Frame, ring: &Ring, area: ratatui::layout::Rect) {
    let block = Block::new().borders(Borders::ALL).title(format!(
        " {} — {} ",
        ring.shown_agent(),
        shown_path(&ring.path)
    ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [sparks, lists] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(inner);
    let [tx, rx, p99] = Layout::vertical([Constraint::Ratio(1, 3); 3]).areas(sparks);
    let width = usize::from(sparks.width.saturating_sub(14)).max(1);
    let series = |pick: fn(&(u64, u64, u64)) -> u64| -> Vec<u64> {
        let h = &ring.stats.history;
        h.iter()
            .skip(h.len().saturating_sub(width))
            .map(pick)
            .collect()
    };
    for (area, label, data) in [
        (tx, "tx B/s", series(|p| p.0)),
        (rx, "rx B/s", series(|p| p.1)),
        (p99, "xfer p99", series(|p| p.2)),
    ] {
        let [name, spark] =
            Layout::horizontal([Constraint::Length(14), Constraint::Min(1)]).areas(area);
        let last = data.last().copied().unwrap_or(0);
        let value = if label == "xfer p99" {
            micros(Some(last))
        } else {
            rate(last as f64)
        };
        frame.render_widget(Paragraph::new(format!("{label}\n{value}")), name);
        frame.render_widget(Sparkline::default().data(&data), spark);
    }

    let mut lines = Vec::new();
    if let Some(p) = ring.problem() {
        lines.push(Line::from(format!("error: {}", message_line(p))));
    }
    if !ring.stats.last().timestamped && ring.stats.events_total > 0 {
        lines.push(Line::from("no timestamps: rates by arrival at this view"));
    }
    lines.push(Line::from("error statuses (last interval / total):").bold());
    let errors = ring.stats.error_counts();
    if errors.is_empty() {
        lines.push(Line::from("  none"));
    }
    for (status, now, total) in errors.iter().take(5) {
        let status = Escaped::new(status).to_string();
        lines.push(Line::from(format!("  {status:<28} {now:>6} {total:>9}")));
    }
    lines.push(Line::from("custom and backend events (per s):").bold());
    let names = &ring.stats.last().names_per_s;
    if names.is_empty() {
        lines.push(Line::from("  none"));
    }
    for (name, per_s) in names.iter().take(5) {
        let name = Escaped::new(name).to_string();
        lines.push(Line::from(format!("  {name:<31} {:>8}", rate(*per_s))));
    }
    frame.render_widget(Paragraph::new(lines), lists);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::top::scan::Source;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use telering_shm::{ShmWriter, WriterOptions};

    #[test]
    fn the_live_screen_shows_a_hostile_file_name_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let mut options = WriterOptions::new(dir.path(), "placeholder");
        options.capacity = 8;
        let writer = ShmWriter::create(options).unwrap();
        let hostile = dir.path().join("a\u{1b}]0;pwned\u{7}\nb");
        std::fs::rename(writer.path(), &hostile).unwrap();
        let rings = Rings::new(Source::Dir(dir.path().to_path_buf()));
        let mut terminal = Terminal::new(TestBackend::new(160, 30)).unwrap();
        terminal
            .draw(|frame| draw(frame, &rings, &ViewState::default(), 1.0))
            .unwrap();
        let screen: String = terminal
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|cell| cell.symbol())
            .collect();
        assert!(
            !screen.chars().any(telering_core::text::is_unsafe_char),
            "{screen:?}"
        );
        assert!(screen.contains("a\\u{1b}]0;pwned\\u{7}\\nb"), "{screen}");
        writer.close().unwrap();
    }
}
