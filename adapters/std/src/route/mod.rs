//! Routes: where a transfer's bytes go — the operation, the backend, the local and
//! remote memory types and the peer agent — interned once per [`Telemetry`] and
//! recorded as a 16-bit id.
//!
//! # What a route costs on the recording thread
//!
//! A route takes a block of 16 lane-record ids above the custom names' (from
//! `0xE000`); a [`RouteId`] is the first id of its
//! block, with the operation in one bit. A transfer recorded on a route pushes the
//! same four records as a transfer without one, in the same batch, but with the
//! route's ids (`id + 0` bytes, `+ 1` the request, `+ 2` transfer time, `+ 3` post
//! time) instead of the built-ins' constants, and the descriptor count in the
//! request record instead of the constant 1. An error on a route is one record
//! (`id + 4`) carrying the status number. The flush expands each of them back into
//! exactly the built-in event NIXL's format carries (`agent_tx_bytes`,
//! `agent_tx_requests_num` = 1, `agent_xfer_time`, `agent_xfer_post_time`,
//! `NIXL_ERR_*` = 1), so ring files, CSV rows and every route-less reader see the
//! events they see without routes; and it adds each record to its route's totals
//! and keeps each route's slowest transfers of the interval whole.
//! The measured cost is in BENCHMARKS.md ("Routes").
//!
//! # The bound
//!
//! An agent has at most [`RouteLimits::max`] routes of its own (64 unless
//! configured, at most [`MAX_ROUTES`]): [`TelemetryBuilder::routes_max`] or
//! `TELERING_ROUTES_MAX`. A route met after that is *folded*: it is answered with
//! the `other` route of its operation, and the route table counts the routes so
//! answered (each distinct route once).
//!
//! [`Telemetry`]: crate::Telemetry
//! [`TelemetryBuilder::routes_max`]: crate::TelemetryBuilder::routes_max

mod config;
pub mod file;
mod record;
mod report;
pub(crate) mod tally;
mod trace;

pub use record::RouteXfer;
pub use tally::{Histogram, RouteReport, RouteStats, SlowXfer, TIME_BOUNDS_US};
pub use trace::TraceIds;

use crate::flush::lock;
use std::collections::HashMap;
use std::collections::HashSet;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Lane-record ids per route: four transfer parts and one error, in a block of 16
/// (one bit of the block offset is the operation).
pub(crate) const SLOTS: u16 = 16;

/// The route index of the `other` route (both operations).
pub(crate) const OTHER_INDEX: u16 = 511;

/// The most routes of its own an agent may be configured to have.
pub const MAX_ROUTES: u16 = OTHER_INDEX;

/// The first lane-record id a route takes: 512 blocks of 16 fill the ids from
/// `0xE000` up; the last id of the last block, never used by a route, is the epoch
/// marker (`u16::MAX`). Aligned, so a record id's operation is one bit of it.
pub(crate) const ROUTE_BASE: u16 = 0xE000;

/// Route record parts: `id + part`.
pub(crate) mod part {
    pub const BYTES: u16 = 0;
    pub const REQUEST: u16 = 1;
    pub const XFER_TIME: u16 = 2;
    pub const POST_TIME: u16 = 3;
    pub const ERROR: u16 = 4;
    /// The operation bit of a block offset (set: write).
    pub const WRITE: u16 = 8;
}

const _: () = {
    assert!(ROUTE_BASE as u32 + (OTHER_INDEX as u32 + 1) * SLOTS as u32 == 1 << 16);
    assert!(ROUTE_BASE % SLOTS == 0);
    // The last block's highest id in use stays below the epoch marker.
    assert!(ROUTE_BASE + OTHER_INDEX * SLOTS + part::WRITE + part::ERROR < u16::MAX);
};

/// Whether a transfer reads from the peer (bytes received) or writes to it (bytes
/// sent) — NIXL's `NIXL_READ` and `NIXL_WRITE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// Bytes received: `agent_rx_*`.
    Read,
    /// Bytes sent: `agent_tx_*`.
    Write,
}

impl Operation {
    /// `READ` or `WRITE`, as labels show it.
    ///
    /// ```
    /// assert_eq!(telering_std::route::Operation::Write.as_str(), "WRITE");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Operation::Read => "READ",
            Operation::Write => "WRITE",
        }
    }
}

/// NIXL's memory segment types (`DRAM_SEG`, `VRAM_SEG`, `BLK_SEG`, `OBJ_SEG`,
/// `FILE_SEG`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryType {
    /// Host memory.
    Dram,
    /// GPU memory.
    Vram,
    /// A block device.
    Blk,
    /// An object store.
    Obj,
    /// A file.
    File,
}

impl MemoryType {
    /// Every memory type, in NIXL's order.
    pub const ALL: [MemoryType; 5] = [
        MemoryType::Dram,
        MemoryType::Vram,
        MemoryType::Blk,
        MemoryType::Obj,
        MemoryType::File,
    ];

    /// `DRAM`, `VRAM`, `BLK`, `OBJ` or `FILE`, as labels show it.
    ///
    /// ```
    /// assert_eq!(telering_std::route::MemoryType::Vram.as_str(), "VRAM");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            MemoryType::Dram => "DRAM",
            MemoryType::Vram => "VRAM",
            MemoryType::Blk => "BLK",
            MemoryType::Obj => "OBJ",
            MemoryType::File => "FILE",
        }
    }

    /// The type named `name` (`VRAM` or NIXL's `VRAM_SEG`, any case).
    ///
    /// ```
    /// use telering_std::route::MemoryType;
    /// assert_eq!(MemoryType::from_name("vram_seg"), Some(MemoryType::Vram));
    /// assert_eq!(MemoryType::from_name("GPU"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<MemoryType> {
        let bare = name
            .get(..name.len().saturating_sub(4))
            .filter(|_| name.to_ascii_uppercase().ends_with("_SEG"))
            .unwrap_or(name);
        MemoryType::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(bare))
    }
}

/// The longest backend or peer name a route keeps, in bytes.
pub const MAX_ROUTE_NAME: usize = 64;

/// Where a transfer's bytes go.
///
/// ```
/// use telering_std::route::{MemoryType, Operation, Route};
/// let r = Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "decode-0");
/// assert_eq!(r.to_string(), "WRITE UCX VRAM->VRAM decode-0");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Route {
    /// Read or write.
    pub operation: Operation,
    /// The backend moving the bytes (`UCX`, `GDS`, `POSIX`, …).
    pub backend: String,
    /// The memory type on this agent's side.
    pub local: MemoryType,
    /// The memory type on the peer's side.
    pub remote: MemoryType,
    /// The peer agent's name (empty for local storage).
    pub peer: String,
}

impl Route {
    /// A route.
    pub fn new(
        operation: Operation,
        backend: impl Into<String>,
        local: MemoryType,
        remote: MemoryType,
        peer: impl Into<String>,
    ) -> Route {
        Route {
            operation,
            backend: backend.into(),
            local,
            remote,
            peer: peer.into(),
        }
    }

    /// The route every folded route of `operation` counts on: backend and peer
    /// `other`, memory types DRAM.
    ///
    /// ```
    /// use telering_std::route::{Operation, Route};
    /// assert_eq!(Route::other(Operation::Read).peer, "other");
    /// ```
    pub fn other(operation: Operation) -> Route {
        Route::new(
            operation,
            "other",
            MemoryType::Dram,
            MemoryType::Dram,
            "other",
        )
    }

    fn check(&self) -> Result<(), RouteError> {
        for (field, value) in [("backend", &self.backend), ("peer", &self.peer)] {
            if value.len() > MAX_ROUTE_NAME {
                return Err(RouteError::NameTooLong {
                    field,
                    len: value.len(),
                });
            }
        }
        if self.backend.is_empty() {
            return Err(RouteError::EmptyBackend);
        }
        Ok(())
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let escaped = telering_core::text::Escaped::new;
        write!(
            f,
            "{} {} {}->{} {}",
            self.operation.as_str(),
            escaped(&self.backend),
            self.local.as_str(),
            self.remote.as_str(),
            escaped(&self.peer)
        )
    }
}

/// Why a route cannot be interned.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RouteError {
    /// The backend or peer name is longer than [`MAX_ROUTE_NAME`] bytes.
    NameTooLong {
        /// `backend` or `peer`.
        field: &'static str,
        /// Its length in bytes.
        len: usize,
    },
    /// The backend name is empty.
    EmptyBackend,
}

impl fmt::Display for RouteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteError::NameTooLong { field, len } => write!(
                f,
                "route {field} name is {len} bytes; at most {MAX_ROUTE_NAME} are kept"
            ),
            RouteError::EmptyBackend => {
                f.write_str("route backend name is empty; name the backend (UCX, GDS, POSIX, …)")
            }
        }
    }
}

impl std::error::Error for RouteError {}

/// An interned route of one [`Telemetry`](crate::Telemetry): 16 bits, `Copy`.
/// Used with another telemetry, its transfers count on the route of that index there
/// (or on `other` when it has none). Recording takes it as it is, unchecked (it
/// costs nothing); the C and Python APIs, which receive it as a number, check it
/// against the routes the telemetry handed out ([`Telemetry::route_id`](crate::Telemetry::route_id)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RouteId(pub(crate) u16);

impl RouteId {
    pub(crate) const fn new(index: u16, operation: Operation) -> RouteId {
        let op = match operation {
            Operation::Read => 0,
            Operation::Write => part::WRITE,
        };
        RouteId(ROUTE_BASE + index * SLOTS + op)
    }

    /// The route's index: 0 for the first route interned, …; [`MAX_ROUTES`] for
    /// `other`.
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route};
    /// let t = telering_std::Telemetry::builder("a").enabled(true).exporter("nop").build().unwrap();
    /// let r = t.route(&Route::new(Operation::Read, "GDS", MemoryType::Vram, MemoryType::File, "")).unwrap();
    /// assert_eq!(r.index(), 0);
    /// ```
    pub const fn index(self) -> u16 {
        (self.0 - ROUTE_BASE) / SLOTS
    }

    /// Whether this is an `other` route (routes beyond the bound).
    pub const fn is_other(self) -> bool {
        self.index() == OTHER_INDEX
    }

    /// The id as a number, for an API that passes it as one (C: `uint16_t`).
    ///
    /// ```
    /// use telering_std::route::{MemoryType, Operation, Route, RouteId};
    /// let t = telering_std::Telemetry::disabled("a");
    /// let r = t.route(&Route::new(Operation::Write, "UCX", MemoryType::Vram, MemoryType::Vram, "p")).unwrap();
    /// assert_eq!(RouteId::from_raw(r.raw()), Some(r));
    /// assert_eq!(RouteId::from_raw(7), None);
    /// ```
    pub const fn raw(self) -> u16 {
        self.0
    }

    /// The id `raw` stands for, `None` if no route id has that shape (see
    /// [`raw`](Self::raw)). It does not know which telemetry handed the id out, nor
    /// whether one did: a number from outside the program (C, Python) is checked with
    /// [`Telemetry::route_id`](crate::Telemetry::route_id).
    pub const fn from_raw(raw: u16) -> Option<RouteId> {
        if raw >= ROUTE_BASE && (raw - ROUTE_BASE) % part::WRITE == 0 {
            Some(RouteId(raw))
        } else {
            None
        }
    }

    /// The route's operation.
    pub const fn operation(self) -> Operation {
        if (self.0 - ROUTE_BASE) & part::WRITE != 0 {
            Operation::Write
        } else {
            Operation::Read
        }
    }
}

/// How many routes an agent keeps and how many slow transfers per route and interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteLimits {
    /// Routes of its own (`TELERING_ROUTES_MAX`, default 64, 1 to [`MAX_ROUTES`]);
    /// later routes fold into `other`.
    pub max: u16,
    /// The slowest transfers kept per route and flush interval
    /// (`TELERING_SLOW_XFERS`, default 8, 0 to [`MAX_SLOW_XFERS`]).
    pub slow_kept: u16,
}

/// The most slow transfers kept per route and interval.
pub const MAX_SLOW_XFERS: u16 = 1024;

impl Default for RouteLimits {
    fn default() -> Self {
        RouteLimits {
            max: 64,
            slow_kept: 8,
        }
    }
}

/// A telemetry's routes: the interned routes, in index order, and how many were
/// folded into `other`.
#[derive(Debug)]
pub(crate) struct RouteTable {
    inner: Mutex<Interned>,
    max: u16,
    /// Per route slot (the id's offset from [`ROUTE_BASE`] over 8: index × 2 +
    /// operation), whether `intern` answered its id: what [`RouteTable::issued`]
    /// checks a raw number from C or Python against, without the lock (one byte
    /// load).
    issued: [AtomicBool; SLOT_COUNT],
}

#[derive(Debug, Default)]
struct Interned {
    routes: Vec<Route>,
    ids: HashMap<Route, u16>,
    folded: HashSet<Route>,
    /// Folded routes not kept in `folded` (it is bounded too).
    folded_uncounted_distinct: u64,
}

/// Route slots: an index and an operation each.
const SLOT_COUNT: usize = (OTHER_INDEX as usize + 1) * 2;

/// The slot of route id `id` in [`RouteTable::issued`].
#[inline(always)]
const fn slot_of(id: RouteId) -> usize {
    ((id.0 - ROUTE_BASE) / part::WRITE) as usize
}

/// The most folded routes remembered to count each once; beyond it every
/// interning of a new folded route counts.
const FOLDED_REMEMBERED: usize = 4096;

impl RouteTable {
    pub(crate) fn new(limits: RouteLimits) -> RouteTable {
        RouteTable {
            inner: Mutex::new(Interned::default()),
            max: limits.max.min(MAX_ROUTES),
            issued: [const { AtomicBool::new(false) }; SLOT_COUNT],
        }
    }

    /// The id of `route`, given one now if there is room; `other` otherwise.
    pub(crate) fn intern(&self, route: &Route) -> Result<RouteId, RouteError> {
        let id = self.intern_unrecorded(route)?;
        self.issued[slot_of(id)].store(true, Ordering::Release);
        Ok(id)
    }

    /// Whether `intern` ever answered `id`.
    #[inline]
    pub(crate) fn issued(&self, id: RouteId) -> bool {
        self.issued
            .get(slot_of(id))
            .is_some_and(|issued| issued.load(Ordering::Acquire))
    }

    fn intern_unrecorded(&self, route: &Route) -> Result<RouteId, RouteError> {
        route.check()?;
        // The fold route's own labels are the fold route: one series, not two alike.
        if *route == Route::other(route.operation) {
            return Ok(RouteId::new(OTHER_INDEX, route.operation));
        }
        let mut inner = lock(&self.inner);
        if let Some(&index) = inner.ids.get(route) {
            return Ok(RouteId::new(index, route.operation));
        }
        if inner.routes.len() < usize::from(self.max) {
            let index = inner.routes.len() as u16;
            inner.routes.push(route.clone());
            inner.ids.insert(route.clone(), index);
            return Ok(RouteId::new(index, route.operation));
        }
        if !inner.folded.contains(route) {
            if inner.folded.len() < FOLDED_REMEMBERED {
                inner.folded.insert(route.clone());
            } else {
                inner.folded_uncounted_distinct += 1;
            }
            if inner.folded.len() == 1 && inner.folded_uncounted_distinct == 0 {
                log::warn!(
                    "telemetry has {} routes, its bound: later routes (first `{route}`) count on route `other`",
                    self.max
                );
            }
        }
        Ok(RouteId::new(OTHER_INDEX, route.operation))
    }

    /// Routes folded into `other` (each distinct route once, up to 4096 remembered).
    pub(crate) fn folded(&self) -> u64 {
        let inner = lock(&self.inner);
        inner.folded.len() as u64 + inner.folded_uncounted_distinct
    }

    /// Routes interned, in index order.
    pub(crate) fn routes(&self) -> Vec<Route> {
        lock(&self.inner).routes.clone()
    }
}
