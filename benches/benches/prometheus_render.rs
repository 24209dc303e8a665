//! telering-prometheus: `/metrics` render time for 1, 64 and 1024 agents, events per
//! second ingested into the metric model, and memory per agent — each against the same
//! series held in `prometheus-client`'s own `Family` metrics (atomic counters, gauges and
//! histograms, handles cached per agent: the fastest way to use that library), rendered
//! by the same encoder. Also the `/metrics` bytes on the wire with and without gzip
//! (scraped from the real endpoint) and the render + compress time per page. See
//! `BENCHMARKS.md`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicIsize, AtomicU64, Ordering};
use std::time::Instant;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use telering_benches::workload::flush_batch;
use telering_benches::{Contender, compare, rounds};
use telering_core::Event;
use telering_core::builtin::ErrorStatus;
use telering_prometheus::http::gzip_bytes;
use telering_prometheus::{
    Buckets, DEFAULT_BUCKETS_US, Format, HttpLimits, MetricModel, MetricsServer, SharedModel,
};

/// Counts live heap bytes, to measure memory per agent.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the wrapper only
// adds to and subtracts from a counter.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const HOST: &str = "bench-host-01";

fn agent_name(i: usize) -> String {
    format!("agent-{i:04}")
}

fn telering_model(agents: usize) -> SharedModel {
    let mut model = MetricModel::new(HOST, Buckets::default());
    let events = flush_batch(64);
    for i in 0..agents {
        model.ingest(&agent_name(i), &events);
    }
    model.into_shared()
}

type Labels = Vec<(&'static str, String)>;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

fn histogram() -> Histogram {
    Histogram::new(DEFAULT_BUCKETS_US)
}

/// The same families as prometheus-client metrics.
struct Anchor {
    registry: Registry,
    counters: Vec<Family<Labels, Counter>>,
    errors: Family<Labels, Counter>,
    gauges: Vec<Family<Labels, Gauge>>,
    histograms: Vec<HistogramFamily>,
    custom: Family<Labels, Counter>,
}

/// Handles of one agent's series, cached so that ingesting is an atomic add.
struct AnchorAgent {
    counters: Vec<Counter>,
    errors: Vec<Counter>,
    gauges: Vec<Gauge>,
    histograms: Vec<Histogram>,
    custom: Counter,
}

const COUNTERS: [&str; 11] = [
    "agent_tx_bytes",
    "agent_rx_bytes",
    "agent_tx_requests_num",
    "agent_rx_requests_num",
    "agent_memory_registered",
    "agent_memory_deregistered",
    "agent_xfer_time",
    "agent_xfer_post_time",
    "agent_telemetry_events_dropped",
    "agent_telemetry_events_missed",
    "agent_telemetry_events_unexported",
];
const GAUGES: [&str; 6] = [
    "agent_tx_last_bytes",
    "agent_rx_last_bytes",
    "agent_memory_registered_last_bytes",
    "agent_memory_deregistered_last_bytes",
    "agent_xfer_time",
    "agent_xfer_post_time",
];

impl Anchor {
    fn new() -> Anchor {
        let mut registry = Registry::default();
        let counters: Vec<_> = COUNTERS.iter().map(|_| Family::default()).collect();
        for (name, f) in COUNTERS.iter().zip(&counters) {
            registry.register(*name, "help", f.clone());
        }
        let errors = Family::default();
        registry.register("agent_errors", "help", errors.clone());
        let gauges: Vec<_> = GAUGES.iter().map(|_| Family::default()).collect();
        for (name, f) in GAUGES.iter().zip(&gauges) {
            registry.register(*name, "help", f.clone());
        }
        let histograms: Vec<HistogramFamily> = (0..2)
            .map(|_| Family::new_with_constructor(histogram as fn() -> Histogram))
            .collect();
        registry.register("agent_xfer_time_us", "help", histograms[0].clone());
        registry.register("agent_xfer_post_time_us", "help", histograms[1].clone());
        let custom = Family::default();
        registry.register("agent_custom_event_cache_hits", "help", custom.clone());
        Anchor {
            registry,
            counters,
            errors,
            gauges,
            histograms,
            custom,
        }
    }

    fn agent(&self, name: &str) -> AnchorAgent {
        let labels: Labels = vec![
            ("agent_name", name.to_owned()),
            ("hostname", HOST.to_owned()),
        ];
        AnchorAgent {
            counters: self
                .counters
                .iter()
                .map(|f| f.get_or_create_owned(&labels))
                .collect(),
            errors: ErrorStatus::ALL
                .iter()
                .map(|s| {
                    let mut l = labels.clone();
                    l.push(("status", s.label().to_owned()));
                    self.errors.get_or_create_owned(&l)
                })
                .collect(),
            gauges: self
                .gauges
                .iter()
                .map(|f| f.get_or_create_owned(&labels))
                .collect(),
            histograms: self
                .histograms
                .iter()
                .map(|f| f.get_or_create_owned(&labels))
                .collect(),
            custom: self.custom.get_or_create_owned(&labels),
        }
    }

    fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry).unwrap();
        out
    }
}

impl AnchorAgent {
    fn ingest(&self, events: &[Event]) {
        for e in events {
            let v = e.value();
            match e.name().unwrap_or("") {
                "agent_tx_bytes" => {
                    self.counters[0].inc_by(v);
                    self.gauges[0].set(v as i64);
                }
                "agent_rx_bytes" => {
                    self.counters[1].inc_by(v);
                    self.gauges[1].set(v as i64);
                }
                "agent_tx_requests_num" => {
                    self.counters[2].inc_by(v);
                }
                "agent_xfer_time" => {
                    self.counters[6].inc_by(v);
                    self.gauges[4].set(v as i64);
                    self.histograms[0].observe(v as f64);
                }
                "agent_xfer_post_time" => {
                    self.counters[7].inc_by(v);
                    self.gauges[5].set(v as i64);
                    self.histograms[1].observe(v as f64);
                }
                "NIXL_ERR_BACKEND" => {
                    self.errors[2].inc_by(v);
                }
                _ => {
                    self.custom.inc_by(v);
                }
            }
        }
    }
}

fn anchor(agents: usize) -> Anchor {
    let a = Anchor::new();
    let events = flush_batch(64);
    for i in 0..agents {
        a.agent(&agent_name(i)).ingest(&events);
    }
    a
}

fn samples_in(page: &str) -> u64 {
    page.lines().filter(|l| !l.starts_with('#')).count() as u64
}

fn render(agents: usize, out: &mut String) {
    let model = telering_model(agents);
    let anchor = anchor(agents);
    let samples = samples_in(&model.render(Format::PrometheusText));
    assert_eq!(samples, samples_in(&anchor.render()), "same series in both");
    let pages = (2048 / agents).max(4);
    let ms_per_page = AtomicU64::new(0);
    let c = compare(
        &format!(
            "Render /metrics (Prometheus text), {agents} agent(s), {samples} samples per page"
        ),
        samples * pages as u64,
        rounds(7),
        "prometheus-client Family",
        vec![
            Contender::timed("telering MetricModel", || {
                let start = Instant::now();
                for _ in 0..pages {
                    black_box(model.render(Format::PrometheusText));
                }
                let ns = start.elapsed().as_nanos() as u64 / pages as u64;
                ms_per_page.store(ns, Ordering::Relaxed);
            }),
            Contender::timed("prometheus-client Family", || {
                for _ in 0..pages {
                    black_box(anchor.render());
                }
            }),
        ],
    );
    out.push_str(&c.to_markdown());
    out.push_str(&format!(
        "\ntelering page: {} bytes, last round {:.3} ms per page.\n\n",
        model.render(Format::PrometheusText).len(),
        ms_per_page.load(Ordering::Relaxed) as f64 / 1e6
    ));
}

fn ingest(out: &mut String) {
    const AGENTS: usize = 64;
    const BATCH: usize = 256;
    const ROUNDS_OF_BATCHES: usize = 64;
    let events = flush_batch(BATCH);
    let names: Vec<String> = (0..AGENTS).map(agent_name).collect();
    let model = telering_model(AGENTS);
    let anchor = anchor(AGENTS);
    let handles: Vec<AnchorAgent> = names.iter().map(|n| anchor.agent(n)).collect();
    let work = (AGENTS * BATCH * ROUNDS_OF_BATCHES) as u64;
    let c = compare(
        &format!("Ingest events into the metric model, {AGENTS} agents, batches of {BATCH}"),
        work,
        rounds(7),
        "prometheus-client Family",
        vec![
            Contender::timed("telering MetricModel", || {
                for _ in 0..ROUNDS_OF_BATCHES {
                    for name in &names {
                        model.lock().ingest(name, black_box(&events));
                    }
                }
            }),
            Contender::timed("prometheus-client Family", || {
                for _ in 0..ROUNDS_OF_BATCHES {
                    for h in &handles {
                        h.ingest(black_box(&events));
                    }
                }
            }),
        ],
    );
    out.push_str(&c.to_markdown());
    out.push('\n');
}

fn memory(out: &mut String) {
    const AGENTS: usize = 1024;
    let before = LIVE.load(Ordering::Relaxed);
    let model = telering_model(AGENTS);
    let telering = (LIVE.load(Ordering::Relaxed) - before) as f64 / AGENTS as f64;
    let before = LIVE.load(Ordering::Relaxed);
    let a = anchor(AGENTS);
    let client = (LIVE.load(Ordering::Relaxed) - before) as f64 / AGENTS as f64;
    black_box((&model, &a));
    out.push_str(&format!(
        "### Memory per agent ({AGENTS} agents, every built-in series plus one custom counter, default 18 buckets)\n\n\
         | model | heap bytes per agent |\n|---|---|\n\
         | telering MetricModel | {telering:.0} |\n| prometheus-client Family | {client:.0} |\n\n"
    ));
}

/// All bytes the endpoint sends for one scrape with `extra_headers`.
fn scrape_bytes(server: &MetricsServer, extra_headers: &str) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(server.local_addr()).unwrap();
    let request = format!("GET /metrics HTTP/1.1\r\nHost: bench\r\n{extra_headers}\r\n");
    conn.write_all(request.as_bytes()).unwrap();
    let mut response = Vec::new();
    conn.read_to_end(&mut response).unwrap();
    assert!(response.starts_with(b"HTTP/1.1 200"));
    response
}

fn gzip(out: &mut String) {
    const AGENTS: usize = 1024;
    let model = telering_model(AGENTS);
    let server = MetricsServer::start(
        "127.0.0.1:0".parse().unwrap(),
        model.clone(),
        HttpLimits::default(),
    )
    .unwrap();
    let plain = scrape_bytes(&server, "");
    let gzipped = scrape_bytes(&server, "Accept-Encoding: gzip\r\n");
    server.shutdown();
    let text = model.render(Format::PrometheusText);
    let body = |r: &[u8]| r.len() - (r.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4);
    assert_eq!(
        body(&plain),
        text.len(),
        "the plain page is the rendered text"
    );
    let level6 = {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes()).unwrap();
        e.finish().unwrap().len()
    };
    out.push_str(&format!(
        "### /metrics on the wire, {AGENTS} agents (scraped from the endpoint, head included)\n\n\
         | response | bytes | ratio |\n|---|---|---|\n\
         | identity | {} | 1.00× |\n\
         | `Content-Encoding: gzip` (level 1, served) | {} | {:.1}× smaller |\n\
         | gzip level 6 (flate2's default; not served) | {level6} (body) | {:.1}× smaller |\n\n",
        plain.len(),
        gzipped.len(),
        plain.len() as f64 / gzipped.len() as f64,
        text.len() as f64 / level6 as f64,
    ));
    let page_bytes = text.len() as u64;
    let c = compare(
        &format!("Render + compress one {AGENTS}-agent page (units: bytes of page text)"),
        page_bytes,
        rounds(7),
        "render only",
        vec![
            Contender::timed("render only", || {
                black_box(model.render(Format::PrometheusText));
            }),
            Contender::timed("render + gzip level 1 (served)", || {
                let text = model.render(Format::PrometheusText);
                black_box(gzip_bytes(text.as_bytes()));
            }),
            Contender::timed("render + gzip level 6", || {
                use std::io::Write;
                let text = model.render(Format::PrometheusText);
                let mut e =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                e.write_all(text.as_bytes()).unwrap();
                black_box(e.finish().unwrap());
            }),
        ],
    );
    out.push_str(&c.to_markdown());
    out.push_str("\nms per page (median, min–max):\n\n");
    for (name, thr, _) in &c.rows {
        let ms = |t: f64| page_bytes as f64 / t * 1e3;
        out.push_str(&format!(
            "- {name}: {:.1} ms ({:.1}–{:.1})\n",
            ms(thr.median),
            ms(thr.max),
            ms(thr.min)
        ));
    }
    out.push('\n');
}

fn main() {
    let mut out = String::new();
    // `TELERING_BENCH_ONLY=gzip` runs only the endpoint part; `TELERING_BENCH_PART=ingest`
    // only the ingest comparison (both contenders).
    if std::env::var("TELERING_BENCH_PART").as_deref() == Ok("ingest") {
        ingest(&mut out);
        println!("{out}");
        return;
    }
    if std::env::var("TELERING_BENCH_ONLY").as_deref() == Ok("gzip") {
        gzip(&mut out);
        println!("{out}");
        return;
    }
    gzip(&mut out);
    memory(&mut out);
    for agents in [1, 64, 1024] {
        render(agents, &mut out);
    }
    ingest(&mut out);
    println!("{out}");
}
