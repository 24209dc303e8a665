//! Models of NIXL's host telemetry, the anchors of telering-std's recording
//! benchmarks. Each models one design from its published facts; neither is NIXL's code.
//!
//! - [`NixlToday`], NIXL's current design: 16-byte events `{u32 type, u64 value}` with
//!   **no timestamp** (recording reads no clock), staged in a bounded double vector
//!   under one `std::sync::Mutex` — two vectors reserved up front, the flush thread
//!   swaps them every 100 ms — dropping the newest event when the active vector is
//!   full and counting it; `add_xfer_stats` pushes its four events under one lock;
//!   and per transfer the agent reads `steady_clock` once and the CPU cycle counter
//!   three times (its stopwatch: start, posted, completed).
//! - [`NixlEarlier`], NIXL's earlier design: one `Mutex<Vec<Event>>` of 56-byte events,
//!   each stamped with `SystemTime::now()` (taken before the lock, which only shortens
//!   the critical section), capped at the buffer size, swapped out at each flush; its
//!   transfers read the monotonic clock at start, post and completion.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use telering_core::Event;
use telering_core::builtin::{self, BuiltinEvent};

/// How often both models' flush threads swap their buffers.
pub const RUN_INTERVAL: Duration = Duration::from_millis(100);

/// NIXL's current event: a type and a value, 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Event16 {
    /// The event type (NIXL's enum of built-in events).
    pub kind: u32,
    /// The value.
    pub value: u64,
}

const _: () = assert!(std::mem::size_of::<Event16>() == 16);

/// The event types the benchmarks record.
pub mod kind {
    /// `agent_tx_bytes`.
    pub const TX_BYTES: u32 = 2;
    /// `agent_rx_bytes`.
    pub const RX_BYTES: u32 = 3;
    /// `agent_tx_requests_num`.
    pub const TX_REQUESTS: u32 = 4;
    /// `agent_rx_requests_num`.
    pub const RX_REQUESTS: u32 = 5;
    /// `agent_xfer_time`.
    pub const XFER_TIME: u32 = 6;
    /// `agent_xfer_post_time`.
    pub const XFER_POST_TIME: u32 = 7;
}

/// A buffer one of the models keeps under its lock, and what its flush does with it.
trait Staged: Send + 'static {
    fn with_capacity(n: usize) -> Self;
    fn consume(&mut self) -> u64;
}

/// The flush thread both models share: every [`RUN_INTERVAL`], swap the active buffer
/// for the spare under the lock, then consume the spare outside it.
fn start_flusher<B: Staged>(
    staging: Arc<Mutex<B>>,
    capacity: usize,
    stop: Arc<AtomicBool>,
    flushed: Arc<AtomicU64>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut spare = B::with_capacity(capacity);
        let mut next = Instant::now() + RUN_INTERVAL;
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
            if Instant::now() >= next {
                std::mem::swap(&mut *staging.lock().unwrap(), &mut spare);
                flushed.fetch_add(spare.consume(), Ordering::Relaxed);
                next += RUN_INTERVAL;
            }
        }
    })
}

struct Vec16(Vec<Event16>);

impl Staged for Vec16 {
    fn with_capacity(n: usize) -> Self {
        Vec16(Vec::with_capacity(n))
    }
    fn consume(&mut self) -> u64 {
        let sum: u64 = self.0.iter().map(|e| e.value ^ e.kind as u64).sum();
        black_box(sum);
        let n = self.0.len() as u64;
        self.0.clear();
        n
    }
}

struct Vec56(Vec<Event>);

impl Staged for Vec56 {
    fn with_capacity(n: usize) -> Self {
        Vec56(Vec::with_capacity(n))
    }
    fn consume(&mut self) -> u64 {
        let sum: u64 = self.0.iter().map(|e| e.value() ^ e.timestamp_us()).sum();
        black_box(sum);
        let n = self.0.len() as u64;
        self.0.clear();
        n
    }
}

/// The shared part of both models: the staging buffer, counters and the flusher.
struct Common<B: Staged> {
    staging: Arc<Mutex<B>>,
    capacity: usize,
    dropped: AtomicU64,
    flushed: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    /// The spare for flushes between rounds, kept so that the buffer swapped in has
    /// its pages touched already (as the flush thread's spare has).
    between_rounds: Mutex<B>,
}

impl<B: Staged> Common<B> {
    fn start(capacity: usize) -> Common<B> {
        let staging = Arc::new(Mutex::new(B::with_capacity(capacity)));
        let stop = Arc::new(AtomicBool::new(false));
        let flushed = Arc::new(AtomicU64::new(0));
        let flusher = start_flusher(
            Arc::clone(&staging),
            capacity,
            Arc::clone(&stop),
            Arc::clone(&flushed),
        );
        Common {
            staging,
            capacity,
            dropped: AtomicU64::new(0),
            flushed,
            stop,
            flusher: Mutex::new(Some(flusher)),
            between_rounds: Mutex::new(B::with_capacity(capacity)),
        }
    }

    fn flush_now(&self) {
        let mut spare = self.between_rounds.lock().unwrap();
        std::mem::swap(&mut *self.staging.lock().unwrap(), &mut *spare);
        self.flushed.fetch_add(spare.consume(), Ordering::Relaxed);
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.flusher.lock().unwrap().take() {
            h.join().unwrap();
        }
    }
}

/// NIXL's current design; see the module docs.
pub struct NixlToday {
    common: Common<Vec16>,
    cycles: quanta::Clock,
}

impl std::fmt::Debug for NixlToday {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NixlToday").finish_non_exhaustive()
    }
}

/// A transfer's stopwatch in [`NixlToday`]: cycle-counter reads.
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch {
    started: Instant,
    start_cycles: u64,
    posted_cycles: u64,
}

impl NixlToday {
    /// The double vector of `capacity` events each, and its flush thread.
    pub fn start(capacity: usize) -> NixlToday {
        NixlToday {
            common: Common::start(capacity),
            cycles: quanta::Clock::new(),
        }
    }

    /// `updateData`: one event under the lock, or one more drop.
    #[inline]
    pub fn update_data(&self, kind: u32, value: u64) {
        let mut staging = self.common.staging.lock().unwrap();
        if staging.0.len() < self.common.capacity {
            staging.0.push(Event16 { kind, value });
        } else {
            drop(staging);
            self.common.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// `addXferStats`: the four events under one lock, all or none.
    #[inline]
    pub fn add_xfer_stats(&self, xfer_us: u64, is_write: bool, bytes: u64, post_us: u64) {
        let (b, r) = if is_write {
            (kind::TX_BYTES, kind::TX_REQUESTS)
        } else {
            (kind::RX_BYTES, kind::RX_REQUESTS)
        };
        let mut staging = self.common.staging.lock().unwrap();
        if staging.0.len() + 4 <= self.common.capacity {
            staging.0.extend_from_slice(&[
                Event16 {
                    kind: b,
                    value: bytes,
                },
                Event16 { kind: r, value: 1 },
                Event16 {
                    kind: kind::XFER_TIME,
                    value: xfer_us,
                },
                Event16 {
                    kind: kind::XFER_POST_TIME,
                    value: post_us,
                },
            ]);
        } else {
            drop(staging);
            self.common.dropped.fetch_add(4, Ordering::Relaxed);
        }
    }

    /// A transfer's start: `steady_clock` once and the cycle counter once.
    #[inline]
    pub fn start_xfer(&self) -> Stopwatch {
        Stopwatch {
            started: Instant::now(),
            start_cycles: self.cycles.raw(),
            posted_cycles: 0,
        }
    }

    /// Posted: the cycle counter.
    #[inline]
    pub fn xfer_posted(&self, w: &mut Stopwatch) {
        w.posted_cycles = self.cycles.raw();
    }

    /// Completed: the cycle counter, then the transfer's stats.
    #[inline]
    pub fn xfer_completed(&self, w: &Stopwatch, is_write: bool, bytes: u64) {
        let end = self.cycles.raw();
        let us = |a: u64, b: u64| self.cycles.delta_as_nanos(a, b) / 1_000;
        black_box(w.started);
        self.add_xfer_stats(
            us(w.start_cycles, end),
            is_write,
            bytes,
            us(w.start_cycles, w.posted_cycles),
        );
    }

    /// One read of the cycle counter it times transfers with: what a timestamp costs
    /// a recording call on the exact clock, for the anchor "`nixl-today` plus one
    /// counter read".
    #[inline]
    pub fn read_counter(&self) -> u64 {
        self.cycles.raw()
    }

    /// Swaps the buffers now (between benchmark rounds).
    pub fn flush_now(&self) {
        self.common.flush_now()
    }

    /// Events dropped so far.
    pub fn dropped(&self) -> u64 {
        self.common.dropped.load(Ordering::Relaxed)
    }

    /// Stops the flush thread.
    pub fn stop(&self) {
        self.common.stop()
    }
}

/// NIXL's earlier design; see the module docs.
pub struct NixlEarlier {
    common: Common<Vec56>,
}

impl std::fmt::Debug for NixlEarlier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NixlEarlier").finish_non_exhaustive()
    }
}

impl NixlEarlier {
    /// One staging vector of `capacity` events and its flush thread.
    pub fn start(capacity: usize) -> NixlEarlier {
        NixlEarlier {
            common: Common::start(capacity),
        }
    }

    #[inline]
    fn now_us() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64)
    }

    /// One stamped event under the lock.
    #[inline]
    pub fn update_data(&self, event: BuiltinEvent, value: u64) {
        let ts = NixlEarlier::now_us();
        let mut staging = self.common.staging.lock().unwrap();
        if staging.0.len() < self.common.capacity {
            staging
                .0
                .push(Event::new(ts, event.category, event.name, value));
        } else {
            drop(staging);
            self.common.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The four events under one lock and one clock read.
    #[inline]
    pub fn add_xfer_stats(&self, xfer_us: u64, is_write: bool, bytes: u64, post_us: u64) {
        let ts = NixlEarlier::now_us();
        let (b, r) = if is_write {
            (builtin::AGENT_TX_BYTES, builtin::AGENT_TX_REQUESTS_NUM)
        } else {
            (builtin::AGENT_RX_BYTES, builtin::AGENT_RX_REQUESTS_NUM)
        };
        let mut staging = self.common.staging.lock().unwrap();
        if staging.0.len() + 4 <= self.common.capacity {
            for (e, v) in [
                (b, bytes),
                (r, 1),
                (builtin::AGENT_XFER_TIME, xfer_us),
                (builtin::AGENT_XFER_POST_TIME, post_us),
            ] {
                staging.0.push(Event::new(ts, e.category, e.name, v));
            }
        } else {
            drop(staging);
            self.common.dropped.fetch_add(4, Ordering::Relaxed);
        }
    }

    /// A whole transfer: the monotonic clock at start, post and completion, then the
    /// stats.
    #[inline]
    pub fn transfer(&self, is_write: bool, bytes: u64) {
        let start = Instant::now();
        let posted = Instant::now();
        let end = Instant::now();
        let us = |d: Duration| d.as_micros() as u64;
        self.add_xfer_stats(us(end - start), is_write, bytes, us(posted - start));
    }

    /// Swaps the buffer now (between benchmark rounds).
    pub fn flush_now(&self) {
        self.common.flush_now()
    }

    /// Events dropped so far.
    pub fn dropped(&self) -> u64 {
        self.common.dropped.load(Ordering::Relaxed)
    }

    /// Stops the flush thread.
    pub fn stop(&self) {
        self.common.stop()
    }
}
