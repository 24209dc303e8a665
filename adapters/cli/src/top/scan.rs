//! Finding and following the rings `telering top` shows.
//!
//! Every ring is followed by an [`ObserverReader`] (a read-only mapping: the view never
//! changes a byte of any file). [`Rings::rescan`] picks up files that appeared in the
//! directory and marks vanished ones gone; [`Rings::poll`] drains every observer into
//! its agent's [`AgentStats`]. A file that cannot be followed becomes a row with the
//! reason instead of stopping the view: a corrupt file, a file that is not a ring, or a
//! ring whose writer does not stamp its slots (those can only be drained, and a view
//! must not drain someone else's ring).

use super::stats::AgentStats;
use std::path::{Path, PathBuf};
use telering_core::ObserverStart;
use telering_shm::{ObserverReader, RingFileInfo, ShmError};

/// Events taken from one ring per [`Rings::poll`] call at most, so one busy ring cannot
/// starve the others or the screen; a full 4096-slot ring fits in one call.
const MAX_PER_POLL: usize = 8192;

/// Where the view's rings come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// Every candidate file of a directory, rescanned each tick.
    Dir(PathBuf),
    /// These files only.
    Files(Vec<PathBuf>),
}

/// The state of one row.
#[derive(Debug)]
pub enum RingState {
    /// Followed by an observer.
    Observed(Box<ObserverReader>),
    /// Cannot be followed: why.
    Unreadable(String),
    /// An entry of the directory that is not a ring file (a symbolic link, a
    /// directory…), listed so that it is not skipped without a word: why.
    Skipped(String),
    /// The file is no longer there.
    Vanished,
}

/// One ring (one row of the view).
#[derive(Debug)]
pub struct Ring {
    /// The file.
    pub path: PathBuf,
    /// The agent name (the file name).
    pub agent: String,
    /// How it is followed.
    pub state: RingState,
    /// Its statistics.
    pub stats: AgentStats,
    /// Capacity, trailer and writer liveness at the last tick.
    pub info: Option<RingFileInfo>,
    /// Events the writer overwrote before the view read them.
    pub missed: u64,
    /// Slots whose record was invalid.
    pub corrupt: u64,
    /// Its routes (from its route file).
    pub routes: super::routes::RouteView,
}

impl Ring {
    /// A row for a directory entry that is not followed, saying why.
    fn skipped(path: &Path, why: String) -> Ring {
        Ring {
            path: path.to_path_buf(),
            agent: agent_of(path),
            state: RingState::Skipped(why),
            stats: AgentStats::new(),
            info: None,
            missed: 0,
            corrupt: 0,
            routes: Default::default(),
        }
    }

    fn open(path: &Path) -> Ring {
        let agent = agent_of(path);
        let (state, info) = match ObserverReader::open(path, ObserverStart::Newest) {
            Ok(r) => {
                let info = r.info();
                (RingState::Observed(Box::new(r)), Some(info))
            }
            Err(e) => (
                RingState::Unreadable(reason(&e)),
                telering_shm::stat(path).ok(),
            ),
        };
        Ring {
            path: path.to_path_buf(),
            agent,
            state,
            stats: AgentStats::new(),
            info,
            missed: 0,
            corrupt: 0,
            routes: Default::default(),
        }
    }

    /// The agent name as a person reads it: the file name escaped
    /// ([`Escaped`](telering_core::text::Escaped)), so one holding a newline or an
    /// `ESC` cannot forge a row or drive the terminal.
    pub fn shown_agent(&self) -> String {
        match self.path.file_name() {
            Some(name) => telering_core::text::Escaped::bytes(name.as_encoded_bytes()).to_string(),
            None => crate::output::shown_path(&self.path).to_string(),
        }
    }

    /// Whether a writer holds the file's lock.
    pub fn writer_alive(&self) -> bool {
        !matches!(self.state, RingState::Vanished)
            && self.info.as_ref().is_some_and(|i| i.writer_alive)
    }

    /// The writer's pid from the trailer.
    pub fn writer_pid(&self) -> Option<u32> {
        self.info.as_ref()?.trailer.map(|t| t.writer_pid)
    }

    /// Events the writer dropped, from the trailer (`None` without a trailer).
    pub fn writer_dropped(&self) -> Option<u64> {
        self.info.as_ref()?.trailer.map(|t| t.events_dropped())
    }

    /// Why the ring shows no figures, if it does not.
    pub fn problem(&self) -> Option<&str> {
        match &self.state {
            RingState::Observed(_) => None,
            RingState::Unreadable(why) | RingState::Skipped(why) => Some(why),
            RingState::Vanished => Some("file removed"),
        }
    }

    fn poll(&mut self) {
        self.routes.poll(&self.path, self.writer_pid());
        let RingState::Observed(reader) = &mut self.state else {
            return;
        };
        let stats = &mut self.stats;
        let corrupt = &mut self.corrupt;
        let read = reader.read_batch(MAX_PER_POLL, |e| match e {
            Ok(event) => {
                let (Ok(category), Ok(name)) = (event.category(), event.name()) else {
                    *corrupt += 1;
                    return;
                };
                stats.record(event.timestamp_us(), category, name, event.value());
            }
            Err(_) => *corrupt += 1,
        });
        if let Err(e) = read {
            self.state = RingState::Unreadable(reason(&e));
            return;
        }
        self.missed = reader.events_missed();
    }

    fn refresh_info(&mut self) {
        if let RingState::Observed(reader) = &self.state {
            self.info = Some(reader.info());
        }
    }
}

/// The agent name a row shows: the file name.
fn agent_of(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// The text a row shows for a ring that cannot be followed.
fn reason(e: &ShmError) -> String {
    match e {
        ShmError::NoSlotStamps { generation, .. } => {
            format!("stampless {generation} ring: observe not possible, use `telering read`")
        }
        e => e.to_string(),
    }
}

/// Every ring of the view.
#[derive(Debug)]
pub struct Rings {
    source: Source,
    /// The rows, in discovery order.
    pub rings: Vec<Ring>,
    /// Why the directory itself could not be listed at the last rescan.
    pub scan_error: Option<String>,
}

impl Rings {
    /// Opens every ring of `source`.
    pub fn new(source: Source) -> Rings {
        let mut rings = Rings {
            source,
            rings: Vec::new(),
            scan_error: None,
        };
        rings.rescan();
        rings
    }

    /// Adds rings that appeared, marks vanished ones, reopens replaced or once
    /// unreadable ones that may have become readable, and refreshes trailers.
    pub fn rescan(&mut self) {
        let listing = match &self.source {
            Source::Files(files) => Ok(crate::stat::Listing {
                rings: files.clone(),
                skipped: Vec::new(),
            }),
            Source::Dir(dir) => crate::stat::list_rings(dir).map_err(|e| e.to_string()),
        };
        let crate::stat::Listing {
            rings: paths,
            skipped,
        } = match listing {
            Ok(l) => {
                self.scan_error = None;
                l
            }
            Err(e) => {
                self.scan_error = Some(e);
                crate::stat::Listing::default()
            }
        };
        // Skipped entries are listed as they are now: never opened, never followed.
        self.rings.retain(|r| {
            !matches!(r.state, RingState::Skipped(_)) || skipped.iter().any(|(p, _)| *p == r.path)
        });
        for (path, why) in skipped {
            if !self.rings.iter().any(|r| r.path == path) {
                self.rings
                    .push(Ring::skipped(&path, format!("skipped: {why}")));
            }
        }
        for ring in &mut self.rings {
            let present = ring.path.exists();
            match (&ring.state, present) {
                (RingState::Observed(_), false) => {
                    ring.state = RingState::Vanished;
                    if let Some(i) = &mut ring.info {
                        i.writer_alive = false;
                    }
                }
                (RingState::Vanished, true) | (RingState::Unreadable(_), true) => {
                    let fresh = Ring::open(&ring.path);
                    ring.state = fresh.state;
                    ring.info = fresh.info;
                }
                _ => ring.refresh_info(),
            }
        }
        for path in paths {
            if !self.rings.iter().any(|r| r.path == path) {
                self.rings.push(Ring::open(&path));
            }
        }
    }

    /// Drains every observer into its statistics.
    pub fn poll(&mut self) {
        for ring in &mut self.rings {
            ring.poll();
        }
    }

    /// Closes the statistics interval of every ring (it lasted `seconds`).
    pub fn close_interval(&mut self, seconds: f64) {
        for ring in &mut self.rings {
            ring.stats.close_interval(seconds);
            ring.routes.close_interval(seconds);
        }
    }
}
