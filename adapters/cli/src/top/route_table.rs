//! The route table of `telering top`: the `ROUTES` section of `--once`, each ring's
//! `routes` in `--json`, and the detail pane's route view (`r`). Routes are shown
//! through [`Route`](telering_std::route::Route)'s `Display`, which escapes their names
//! ([`telering_core::text::Escaped`]); JSON escapes them with JSON's rules.

use super::render::rate;
use super::routes::RouteRow;
use super::scan::Ring;
use crate::output::{message_line, write_json_string};
use ratatui::Frame;
use ratatui::layout::Constraint;
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Paragraph, Row, Table};
use std::io::Write;

/// The route table's column headers.
pub const ROUTE_HEADERS: [&str; 8] = [
    "AGENT", "ROUTE", "BYTES/S", "XFERS/S", "XFER P99", "BYTES", "XFERS", "ERRORS",
];

fn opt_rate(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), rate)
}

fn micros(v: Option<u64>) -> String {
    match v {
        None => "-".into(),
        Some(us) if us >= 1_000_000 => format!("{:.1}s", us as f64 / 1e6),
        Some(us) if us >= 10_000 => format!("{:.1}ms", us as f64 / 1e3),
        Some(us) => format!("{us}us"),
    }
}

/// The cells of one route's row after the agent, in [`ROUTE_HEADERS`] order.
pub fn route_cells(row: &RouteRow) -> Vec<String> {
    vec![
        row.route.to_string(),
        opt_rate(row.bytes_per_s),
        opt_rate(row.transfers_per_s),
        micros(row.xfer_p99_us),
        row.bytes.to_string(),
        row.transfers.to_string(),
        row.errors.to_string(),
    ]
}

/// Routes by bytes/s, highest first (then by total bytes, then the route).
pub fn by_traffic(rows: &[RouteRow]) -> Vec<&RouteRow> {
    let mut v: Vec<&RouteRow> = rows.iter().collect();
    v.sort_by(|a, b| {
        let r = |x: &RouteRow| x.bytes_per_s.unwrap_or(-1.0);
        r(b).total_cmp(&r(a))
            .then(b.bytes.cmp(&a.bytes))
            .then_with(|| a.route.cmp(&b.route))
    });
    v
}

/// Writes the `ROUTES` section (nothing when no ring has routes or a route problem).
pub fn write_text(out: &mut dyn Write, rings: &[&Ring]) -> std::io::Result<()> {
    let with_routes: Vec<&&Ring> = rings
        .iter()
        .filter(|r| !r.routes.rows.is_empty() || r.routes.problem.is_some())
        .collect();
    if with_routes.is_empty() {
        return Ok(());
    }
    let mut rows: Vec<Vec<String>> = Vec::new();
    for ring in &with_routes {
        for row in by_traffic(&ring.routes.rows) {
            let mut cells = vec![ring.shown_agent()];
            cells.extend(route_cells(row));
            rows.push(cells);
        }
    }
    let mut widths: Vec<usize> = ROUTE_HEADERS.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count().min(60));
        }
    }
    writeln!(out)?;
    let line = |cells: &[&str]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            let pad = widths[i].saturating_sub(c.chars().count());
            l.push_str(c);
            l.extend(std::iter::repeat_n(' ', pad));
        }
        l.trim_end().to_string()
    };
    writeln!(out, "{}", line(&ROUTE_HEADERS))?;
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        writeln!(out, "{}", line(&cells))?;
    }
    for ring in &with_routes {
        if ring.routes.folded > 0 {
            writeln!(
                out,
                "{}: {} routes folded into route `other` (the agent's bound)",
                ring.shown_agent(),
                ring.routes.folded
            )?;
        }
        if let Some(p) = &ring.routes.problem {
            writeln!(out, "{}: {}", ring.shown_agent(), message_line(p))?;
        }
    }
    Ok(())
}

fn json_opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "null".into(), |v| v.to_string())
}

/// `,"routes_folded":N,"routes":[…]` of one ring (nothing without routes).
pub fn write_json(line: &mut Vec<u8>, ring: &Ring) -> std::io::Result<()> {
    let v = &ring.routes;
    if v.rows.is_empty() && v.problem.is_none() {
        return Ok(());
    }
    write!(line, ",\"routes_folded\":{},\"routes_error\":", v.folded)?;
    match &v.problem {
        Some(p) => write_json_string(line, p)?,
        None => line.extend_from_slice(b"null"),
    }
    line.extend_from_slice(b",\"routes\":[");
    for (i, row) in v.rows.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        let r = &row.route;
        write!(
            line,
            "{{\"operation\":\"{}\",\"backend\":",
            r.operation.as_str()
        )?;
        write_json_string(line, &r.backend)?;
        write!(
            line,
            ",\"local_mem\":\"{}\",\"remote_mem\":\"{}\",\"peer\":",
            r.local.as_str(),
            r.remote.as_str()
        )?;
        write_json_string(line, &r.peer)?;
        write!(
            line,
            ",\"bytes_per_s\":{},\"transfers_per_s\":{},\"xfer_p99_us\":{},\"bytes\":{},\"transfers\":{},\"errors\":{}}}",
            json_opt(row.bytes_per_s),
            json_opt(row.transfers_per_s),
            json_opt(row.xfer_p99_us),
            row.bytes,
            row.transfers,
            row.errors
        )?;
    }
    line.push(b']');
    Ok(())
}

/// The detail pane's route view of `ring`.
pub fn draw(frame: &mut Frame, ring: &Ring, area: ratatui::layout::Rect) {
    let v = &ring.routes;
    if v.rows.is_empty() {
        let text = match &v.problem {
            Some(p) => message_line(p),
            None => "no routes: the agent recorded none, or writes no route file".into(),
        };
        frame.render_widget(Paragraph::new(text.into_owned()), area);
        return;
    }
    let header =
        Row::new(ROUTE_HEADERS[1..].to_vec()).style(Style::new().add_modifier(Modifier::BOLD));
    let rows = by_traffic(&v.rows)
        .into_iter()
        .map(|r| Row::new(route_cells(r)));
    let widths = [
        Constraint::Min(30),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(9),
        Constraint::Length(14),
        Constraint::Length(10),
        Constraint::Length(7),
    ];
    let mut title = format!("routes: {}", v.rows.len());
    if v.folded > 0 {
        title.push_str(&format!(", {} folded into other", v.folded));
    }
    if let Some(p) = &v.problem {
        title.push_str(&format!(" ({})", message_line(p)));
    }
    frame.render_widget(
        Table::new(rows, widths)
            .header(header)
            .block(ratatui::widgets::Block::new().title(title)),
        area,
    );
}

#[cfg(test)]
mod tests {
    use crate::top::input::ViewState;
    use crate::top::render::draw;
    use crate::top::scan::{Rings, Source};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use telering_shm::{ShmWriter, WriterOptions};
    use telering_std::route::file::{RouteEntry, RouteFile, write};
    use telering_std::route::{MemoryType, Operation, Route, RouteStats};

    #[test]
    fn the_route_view_shows_a_hostile_route_name_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let mut options = WriterOptions::new(dir.path(), "agent");
        options.capacity = 8;
        let writer = ShmWriter::create(options).unwrap();
        let peer = "p\u{1b}]0;pwned\u{7}\nq";
        let route = Route::new(
            Operation::Read,
            "GDS",
            MemoryType::Vram,
            MemoryType::File,
            peer,
        );
        let stats = RouteStats {
            bytes: 4096,
            transfers: 2,
            ..Default::default()
        };
        let file = RouteFile {
            writer_pid: std::process::id(),
            folded: 5,
            routes: vec![RouteEntry {
                route,
                stats,
                slowest_xfer_us: 0,
            }],
            ..Default::default()
        };
        write(dir.path(), "agent", &file.encode()).unwrap();
        let mut rings = Rings::new(Source::Dir(dir.path().to_path_buf()));
        rings.poll();
        rings.close_interval(1.0);
        let view = ViewState {
            routes: true,
            ..ViewState::default()
        };
        let mut terminal = Terminal::new(TestBackend::new(160, 30)).unwrap();
        terminal
            .draw(|frame| draw(frame, &rings, &view, 1.0))
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
        assert!(
            screen.contains("READ GDS VRAM->FILE p\\u{1b}]0;pwned\\u{7}\\nq"),
            "{screen}"
        );
        assert!(
            screen.contains("routes: 1, 5 folded into other"),
            "{screen}"
        );
        assert!(screen.contains("r routes"), "{screen}");
        writer.close().unwrap();
    }
}
