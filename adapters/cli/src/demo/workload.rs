//! The simulated workload: worker threads that transfer, register memory, report a
//! queue depth, hit errors and let a fake backend report, each tallying what it
//! recorded; and the loop that waits for them while it shows progress.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use telering_core::builtin::{self, BuiltinEvent, ErrorStatus};
use telering_core::{Allowlist, Category};
use telering_std::{Recorded, Telemetry};

use super::routes::{DemoRoutes, Path};
use super::{BACKEND_RETRIES, BACKEND_RNDV_BYTES, QUEUE_DEPTH};
use crate::read::sleep_unless_stopped;

/// Events of one name recorded by the demo.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NameTally {
    /// The category the events were recorded in.
    pub category: Option<Category>,
    /// Events recorded.
    pub count: u64,
    /// Sum of their values.
    pub sum: u64,
    /// Events of this name lost: at record time (a full lane or backend buffer), in
    /// a failed export or by the exporter itself (a full ring).
    pub dropped: u64,
    /// Events of this name the exporter's output cannot hold and left out, neither
    /// delivered nor lost (custom and backend events in a version-4 ring file).
    pub not_in_layout: u64,
}

impl NameTally {
    pub(super) fn add(&mut self, category: Category, value: u64, recorded: Recorded) {
        self.category = Some(category);
        match recorded {
            Recorded::Written => {
                self.count += 1;
                self.sum = self.sum.saturating_add(value);
            }
            Recorded::Dropped => self.dropped += 1,
            Recorded::Filtered
            | Recorded::Disabled
            | Recorded::CaptureOnly
            | Recorded::AlreadyCompleted => {}
        }
    }
}

/// What the workload did: per event name the tallies of every worker, and how long it
/// ran.
pub(super) struct Workload {
    /// Per event name: what the workers recorded.
    pub names: BTreeMap<String, NameTally>,
    /// How long the workload ran.
    pub elapsed: Duration,
}

/// How the workload runs.
pub(super) struct Plan {
    /// Worker threads (at least 1).
    pub threads: usize,
    /// Events per second across all threads; 0 runs flat out.
    pub rate: f64,
    /// Stop after this long.
    pub duration: Option<Duration>,
    /// Stop after exactly this many events.
    pub events: Option<u64>,
    /// Seed of the random workload.
    pub seed: u64,
}

/// Runs the workers against `telemetry` until the plan's end or `stop`, calling
/// `tick` every 50 ms (the demo polls its collector there) and writing a progress line
/// to `progress` meanwhile.
pub(super) fn run(
    plan: &Plan,
    telemetry: &Telemetry,
    allowlist_text: &str,
    tick: &mut dyn FnMut(),
    stop: &AtomicBool,
    mut progress: Option<&mut dyn Write>,
) -> Workload {
    let budget = plan.events.map(AtomicU64::new);
    let running = AtomicUsize::new(plan.threads);
    let started = Instant::now();
    // A duration past what `Instant` can hold is no deadline at all.
    let deadline = plan.duration.and_then(|d| started.checked_add(d));
    let per_thread_rate = plan.rate / plan.threads as f64;
    let mut names: BTreeMap<String, NameTally> = BTreeMap::new();
    let routes = DemoRoutes::intern(telemetry);

    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..plan.threads)
            .map(|i| {
                let worker = Worker {
                    rng: Rng::new(plan.seed ^ (i as u64).wrapping_mul(0xA076_1D64_78BD_642F)),
                    telemetry,
                    routes: &routes,
                    backend: telemetry.backend("UCX"),
                    allowlist: Allowlist::new(allowlist_text),
                    budget: budget.as_ref(),
                    stop,
                    deadline,
                    rate: per_thread_rate,
                    regions: Vec::new(),
                    queue_depth: 0,
                    tallies: BTreeMap::new(),
                };
                let running = &running;
                scope.spawn(move || {
                    let tallies = worker.run();
                    running.fetch_sub(1, Ordering::SeqCst);
                    tallies
                })
            })
            .collect();

        let mut last_line = Instant::now();
        while running.load(Ordering::SeqCst) > 0 {
            std::thread::sleep(Duration::from_millis(50));
            tick();
            if let Some(p) = progress.as_deref_mut() {
                if last_line.elapsed() >= Duration::from_millis(250) {
                    last_line = Instant::now();
                    write_progress(p, telemetry, started);
                }
            }
        }
        for handle in handles {
            // A worker only returns tallies; it has no code path that panics.
            if let Ok(tallies) = handle.join() {
                for (name, t) in tallies {
                    let total = names.entry(name.to_string()).or_default();
                    total.category = t.category;
                    total.count += t.count;
                    total.sum = total.sum.saturating_add(t.sum);
                    total.dropped += t.dropped;
                }
            }
        }
    });
    let elapsed = started.elapsed();
    if let Some(p) = progress {
        let _ = writeln!(p);
    }
    Workload { names, elapsed }
}

/// One progress line, overwriting the previous one.
fn write_progress(p: &mut dyn Write, telemetry: &Telemetry, started: Instant) {
    let s = telemetry.stats();
    let secs = started.elapsed().as_secs_f64().max(1e-3);
    let _ = write!(
        p,
        "\r{:6.1} s  {:>10} events  {:>8.0} events/s  {:>6} dropped ",
        secs,
        s.events_recorded,
        s.events_recorded as f64 / secs,
        s.events_dropped + s.exporter_dropped
    );
    let _ = p.flush();
}

/// SplitMix64: a small, fast, well-distributed generator; plenty for a workload.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so its logarithm is finite.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// A standard normal deviate (Box–Muller).
    pub fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// Log-normal with the given median and shape `sigma`.
    ///
    /// ```
    /// let mut rng = telering_cli::demo::Rng::new(1);
    /// let mut xs: Vec<f64> = (0..10_001).map(|_| rng.log_normal(1000.0, 1.0)).collect();
    /// xs.sort_by(f64::total_cmp);
    /// let median = xs[5000];
    /// assert!((900.0..1100.0).contains(&median), "{median}");
    /// ```
    pub fn log_normal(&mut self, median: f64, sigma: f64) -> f64 {
        median * (sigma * self.normal()).exp()
    }
}

/// Every event name the demo records.
pub fn demo_event_names() -> impl Iterator<Item = &'static str> {
    [
        &builtin::AGENT_TX_BYTES,
        &builtin::AGENT_RX_BYTES,
        &builtin::AGENT_TX_REQUESTS_NUM,
        &builtin::AGENT_RX_REQUESTS_NUM,
        &builtin::AGENT_XFER_TIME,
        &builtin::AGENT_XFER_POST_TIME,
        &builtin::AGENT_MEMORY_REGISTERED,
        &builtin::AGENT_MEMORY_DEREGISTERED,
    ]
    .into_iter()
    .map(|b: &'static BuiltinEvent| b.name.as_str())
    .chain(DEMO_ERRORS.iter().map(|s| s.as_str()))
    .chain([QUEUE_DEPTH, BACKEND_RNDV_BYTES, BACKEND_RETRIES])
}

/// The errors the demo hits, most frequent first.
const DEMO_ERRORS: [ErrorStatus; 4] = [
    ErrorStatus::RemoteDisconnect,
    ErrorStatus::Backend,
    ErrorStatus::Canceled,
    ErrorStatus::NotFound,
];

/// One worker thread of the simulated agent.
pub(super) struct Worker<'a> {
    rng: Rng,
    telemetry: &'a Telemetry,
    routes: &'a DemoRoutes,
    backend: telering_std::BackendTelemetry,
    allowlist: Allowlist<'a>,
    budget: Option<&'a AtomicU64>,
    stop: &'a AtomicBool,
    deadline: Option<Instant>,
    /// Events per second for this thread; 0 is unlimited.
    rate: f64,
    /// Sizes of the memory regions this thread has registered.
    regions: Vec<u64>,
    queue_depth: u64,
    tallies: BTreeMap<&'static str, NameTally>,
}

impl Worker<'_> {
    fn run(mut self) -> BTreeMap<&'static str, NameTally> {
        let started = Instant::now();
        let mut done: u64 = 0;
        // Steps that recorded nothing in a row: with `--events`, an allowlist that
        // admits only multi-event actions can leave a remainder no action fits.
        let mut idle_steps = 0u32;
        loop {
            if self.stop.load(Ordering::Relaxed)
                || self.deadline.is_some_and(|d| Instant::now() >= d)
            {
                break;
            }
            let n = match self.step() {
                Some(n) => n,
                None => break, // the event budget is spent
            };
            done += n;
            idle_steps = if n == 0 { idle_steps + 1 } else { 0 };
            if idle_steps > 100_000 {
                break;
            }
            if self.rate > 0.0 {
                // Pace to the rate: event `done` is due `done / rate` seconds in. A due
                // time past what `Instant` can hold (a tiny rate) means "not in this run".
                let now = Instant::now();
                let wait = Duration::try_from_secs_f64(done as f64 / self.rate)
                    .ok()
                    .and_then(|d| started.checked_add(d))
                    .map_or(Duration::MAX, |due| due.saturating_duration_since(now));
                let wait = match self.deadline {
                    Some(d) => wait.min(d.saturating_duration_since(now)),
                    None => wait,
                };
                if !wait.is_zero() {
                    sleep_unless_stopped(wait, self.stop);
                }
            }
        }
        self.tallies
    }

    /// Takes `n` events from the budget; false when fewer are left.
    fn take(&self, n: u64) -> bool {
        match self.budget {
            None => true,
            Some(b) => b
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                    left.checked_sub(n)
                })
                .is_ok(),
        }
    }

    fn budget_left(&self) -> bool {
        self.budget.is_none_or(|b| b.load(Ordering::Relaxed) > 0)
    }

    fn allowed(&self, name: &str) -> u64 {
        u64::from(self.allowlist.allows(name))
    }

    fn tally(&mut self, name: &'static str, category: Category, value: u64, r: Recorded) {
        if self.allowlist.allows(name) {
            self.tallies
                .entry(name)
                .or_default()
                .add(category, value, r);
        }
    }

    /// Does one thing; returns how many events it took from the budget, or `None`
    /// when the budget is spent.
    fn step(&mut self) -> Option<u64> {
        let roll = self.rng.below(100);
        let taken = match roll {
            0..80 => self.transfer(),
            80..86 => self.register(),
            86..92 => self.deregister(),
            92..96 => self.queue_depth(),
            96..98 => self.backend_event(),
            _ => self.error(),
        };
        match taken {
            0 if !self.budget_left() => None,
            n => Some(n),
        }
    }

    fn transfer(&mut self) -> u64 {
        let is_write = self.rng.below(100) < 60;
        let (bytes_event, requests_event) = if is_write {
            (&builtin::AGENT_TX_BYTES, &builtin::AGENT_TX_REQUESTS_NUM)
        } else {
            (&builtin::AGENT_RX_BYTES, &builtin::AGENT_RX_REQUESTS_NUM)
        };
        let parts: [&'static BuiltinEvent; 4] = [
            bytes_event,
            requests_event,
            &builtin::AGENT_XFER_TIME,
            &builtin::AGENT_XFER_POST_TIME,
        ];
        let n: u64 = parts.iter().map(|b| self.allowed(b.name.as_str())).sum();
        if n == 0 || !self.take(n) {
            return 0;
        }
        let bytes = self.rng.log_normal(256.0 * 1024.0, 1.2).clamp(512.0, 256e6) as u64;
        let path = Path::pick(&mut self.rng, is_write);
        let xfer_us = path.xfer_us(bytes, &mut self.rng);
        let post_us = (self.rng.log_normal(3.0, 0.5) as u64).max(1);
        // One descriptor per 64 KiB block, as a KV-cache transfer lists its blocks.
        let descriptors = bytes.div_ceil(64 * 1024).clamp(1, 64);
        let r = match self.routes.id(path) {
            Some(route) => {
                self.telemetry
                    .add_route_xfer_stats_us(route, xfer_us, bytes, post_us, descriptors)
            }
            None => self.telemetry.add_xfer_stats(
                Duration::from_micros(xfer_us),
                is_write,
                bytes,
                Duration::from_micros(post_us),
            ),
        };
        for (event, value) in parts.iter().zip([bytes, 1, xfer_us, post_us]) {
            self.tally(event.name.as_str(), event.category, value, r);
        }
        n
    }

    fn register(&mut self) -> u64 {
        let b: &'static BuiltinEvent = &builtin::AGENT_MEMORY_REGISTERED;
        if self.allowed(b.name.as_str()) == 0 || !self.take(1) {
            return 0;
        }
        let size = (self.rng.log_normal(64.0 * 1048576.0, 1.0) as u64 / 4096).max(1) * 4096;
        self.regions.push(size);
        let r = self.telemetry.update_memory_registered(size);
        self.tally(b.name.as_str(), b.category, size, r);
        1
    }

    fn deregister(&mut self) -> u64 {
        let b: &'static BuiltinEvent = &builtin::AGENT_MEMORY_DEREGISTERED;
        if self.regions.is_empty() || self.allowed(b.name.as_str()) == 0 || !self.take(1) {
            return 0;
        }
        let i = self.rng.below(self.regions.len() as u64) as usize;
        let size = self.regions.swap_remove(i);
        let r = self.telemetry.update_memory_deregistered(size);
        self.tally(b.name.as_str(), b.category, size, r);
        1
    }

    fn queue_depth(&mut self) -> u64 {
        if self.allowed(QUEUE_DEPTH) == 0 || !self.take(1) {
            return 0;
        }
        // A random walk between 0 and 64 outstanding requests.
        self.queue_depth = match self.rng.below(2) {
            0 => self.queue_depth.saturating_sub(1 + self.rng.below(4)),
            _ => (self.queue_depth + 1 + self.rng.below(4)).min(64),
        };
        let depth = self.queue_depth;
        // The name is a valid constant, so `record` cannot refuse it.
        if let Ok(r) = self.telemetry.record(Category::Custom, QUEUE_DEPTH, depth) {
            self.tally(QUEUE_DEPTH, Category::Custom, depth, r);
        }
        1
    }

    fn backend_event(&mut self) -> u64 {
        let (name, value) = if self.rng.below(4) == 0 {
            (BACKEND_RETRIES, 1 + self.rng.below(3))
        } else {
            (
                BACKEND_RNDV_BYTES,
                self.rng.log_normal(1048576.0, 1.0) as u64,
            )
        };
        if self.allowed(name) == 0 || !self.take(1) {
            return 0;
        }
        if let Ok(r) = self.backend.add_telemetry_event(name, value) {
            self.tally(name, Category::Backend, value, r);
        }
        1
    }

    fn error(&mut self) -> u64 {
        // Disconnects are the most common failure; weights 8:4:2:1.
        let status = match self.rng.below(15) {
            0..8 => DEMO_ERRORS[0],
            8..12 => DEMO_ERRORS[1],
            12..14 => DEMO_ERRORS[2],
            _ => DEMO_ERRORS[3],
        };
        let event = status.event();
        if self.allowed(event.name.as_str()) == 0 || !self.take(1) {
            return 0;
        }
        let r = self.telemetry.update_error_count(status);
        self.tally(status.as_str(), event.category, 1, r);
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_draws_are_never_zero_so_box_muller_stays_finite() {
        let mut rng = Rng::new(0);
        for _ in 0..100_000 {
            let u = rng.unit();
            assert!(u > 0.0 && u <= 1.0);
            assert!(rng.normal().is_finite());
        }
    }

    #[test]
    fn every_demo_event_name_fits_the_wire() {
        for name in demo_event_names() {
            telering_core::EventName::new(name).unwrap();
        }
    }
}
