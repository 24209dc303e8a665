//! Keys and selection of the live view: what each key does to the [`ViewState`].

use super::scan::Ring;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::cmp::Ordering;

/// The column the table is sorted by; `s` moves to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SortColumn {
    /// Agent name, ascending.
    #[default]
    Agent,
    /// Events per second, descending.
    Events,
    /// Sent bytes per second, descending.
    Tx,
    /// Received bytes per second, descending.
    Rx,
    /// Transfer time p99, descending.
    XferP99,
    /// Errors per second, descending.
    Errors,
}

impl SortColumn {
    /// The next column in the cycle.
    pub fn next(self) -> SortColumn {
        match self {
            SortColumn::Agent => SortColumn::Events,
            SortColumn::Events => SortColumn::Tx,
            SortColumn::Tx => SortColumn::Rx,
            SortColumn::Rx => SortColumn::XferP99,
            SortColumn::XferP99 => SortColumn::Errors,
            SortColumn::Errors => SortColumn::Agent,
        }
    }

    /// The column's header text.
    pub fn label(self) -> &'static str {
        match self {
            SortColumn::Agent => "agent",
            SortColumn::Events => "events/s",
            SortColumn::Tx => "tx B/s",
            SortColumn::Rx => "rx B/s",
            SortColumn::XferP99 => "xfer p99",
            SortColumn::Errors => "err/s",
        }
    }

    /// Orders two rings by this column (ties by agent name).
    pub fn compare(self, a: &Ring, b: &Ring) -> Ordering {
        let (x, y) = (a.stats.last(), b.stats.last());
        let desc = |p: f64, q: f64| q.total_cmp(&p);
        let by = match self {
            SortColumn::Agent => Ordering::Equal,
            SortColumn::Events => desc(x.events_per_s, y.events_per_s),
            SortColumn::Tx => desc(x.tx_bytes_per_s, y.tx_bytes_per_s),
            SortColumn::Rx => desc(x.rx_bytes_per_s, y.rx_bytes_per_s),
            SortColumn::XferP99 => y.xfer_p99_us.cmp(&x.xfer_p99_us),
            SortColumn::Errors => desc(x.errors_per_s, y.errors_per_s),
        };
        by.then_with(|| a.agent.cmp(&b.agent))
    }
}

/// What the keys change.
#[derive(Clone, Debug, Default)]
pub struct ViewState {
    /// The selected row (index into the sorted order).
    pub selected: usize,
    /// The sort column.
    pub sort: SortColumn,
    /// Whether the figures are frozen.
    pub paused: bool,
    /// Whether the detail pane shows the selected agent's routes (`r`).
    pub routes: bool,
    /// Whether the user asked to quit.
    pub quit: bool,
}

impl ViewState {
    /// Applies one key press to a table of `rows` rows.
    pub fn key(&mut self, key: KeyEvent, rows: usize) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        match key.code {
            KeyCode::Char('q') | KeyCode::Esc => self.quit = true,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => self.quit = true,
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(rows.saturating_sub(1))
            }
            KeyCode::Char('s') => self.sort = self.sort.next(),
            KeyCode::Char('p') => self.paused = !self.paused,
            KeyCode::Char('r') => self.routes = !self.routes,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(state: &mut ViewState, code: KeyCode, rows: usize) {
        state.key(KeyEvent::new(code, KeyModifiers::NONE), rows);
    }

    #[test]
    fn keys_select_sort_pause_and_quit() {
        let mut s = ViewState::default();
        press(&mut s, KeyCode::Char('j'), 3);
        press(&mut s, KeyCode::Down, 3);
        press(&mut s, KeyCode::Down, 3);
        assert_eq!(s.selected, 2, "selection stops at the last row");
        press(&mut s, KeyCode::Char('k'), 3);
        press(&mut s, KeyCode::Up, 3);
        press(&mut s, KeyCode::Up, 3);
        assert_eq!(s.selected, 0);
        press(&mut s, KeyCode::Char('s'), 3);
        assert_eq!(s.sort, SortColumn::Events);
        press(&mut s, KeyCode::Char('p'), 3);
        assert!(s.paused);
        press(&mut s, KeyCode::Char('r'), 3);
        assert!(s.routes);
        press(&mut s, KeyCode::Char('r'), 3);
        assert!(!s.routes);
        press(&mut s, KeyCode::Char('q'), 3);
        assert!(s.quit);
    }

    #[test]
    fn sort_cycle_returns_to_agent() {
        let mut c = SortColumn::Agent;
        for _ in 0..6 {
            c = c.next();
        }
        assert_eq!(c, SortColumn::Agent);
    }
}
