//! telering-prometheus `prometheus_mp`: the serving rank's scrape (read every rank's
//! store file, check each rank's lock, merge, render) for 8 and 64 ranks, against
//! the `prometheus` exporter rendering its one-rank page once per rank (what a
//! Prometheus scraping one port per rank makes the node do). Beside them, the node
//! page's rendering alone, from the merged model in memory: the floor of its cost
//! without reading any store. See `BENCHMARKS.md`.

use std::hint::black_box;
use std::sync::Mutex;
use std::time::Instant;

use telering_benches::{Contender, compare, rounds};
use telering_core::{Event, builtin};
use telering_prometheus::multiproc::{MultiprocConfig, MultiprocExporter, NodeSource};
use telering_prometheus::{Format, MetricModel, MetricsSource, PrometheusConfig};
use telering_std::export::Exporter;

fn workload() -> Vec<Event> {
    let mut events = Vec::new();
    for i in 0..64u64 {
        let tx = builtin::AGENT_TX_BYTES;
        events.push(Event::new(i, tx.category, tx.name, 4096 + i));
        let t = builtin::AGENT_XFER_TIME;
        events.push(Event::new(i, t.category, t.name, 10 * i));
    }
    events
}

fn scrape(ranks: usize, out: &mut String) {
    let dir =
        std::env::temp_dir().join(format!("telering-bench-mp-{ranks}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let config = MultiprocConfig {
        dir: dir.clone(),
        prometheus: PrometheusConfig {
            port: 0,
            local: true,
            ..PrometheusConfig::default()
        },
        stale_ttl: std::time::Duration::from_secs(30),
        local_rank: "0".into(),
    };
    let events = workload();
    let mut exporters: Vec<MultiprocExporter> = (0..ranks)
        .map(|i| {
            let mut e = MultiprocExporter::start(&format!("rank-{i}"), &config).unwrap();
            e.export(&events).unwrap();
            e
        })
        .collect();
    let source = NodeSource {
        dir: dir.clone(),
        hostname: "bench-host-01".into(),
        buckets: config.prometheus.buckets.clone(),
        stale_ttl: config.stale_ttl,
        route_files: Default::default(),
    };
    assert_eq!(source.model().agent_count(), ranks);
    let mut one = MetricModel::new("bench-host-01", config.prometheus.buckets.clone());
    one.ingest("rank-0", &events);
    let one = one.into_shared();
    // The node page's floor: the merged model already in memory, only rendered.
    let merged = source.model().into_shared();
    const PAGES: usize = 20;
    let mp_ns = Mutex::new(Vec::new());
    let one_ns = Mutex::new(Vec::new());
    let c = compare(
        &format!("prometheus_mp scrape, {ranks} ranks (work: pages)"),
        PAGES as u64,
        rounds(7),
        "prometheus one-rank page × ranks",
        vec![
            Contender::timed("prometheus_mp node page", || {
                let start = Instant::now();
                for _ in 0..PAGES {
                    black_box(source.render(Format::PrometheusText));
                }
                mp_ns
                    .lock()
                    .unwrap()
                    .push(start.elapsed().as_nanos() as u64 / PAGES as u64);
            }),
            Contender::timed("node page, render only (stores already merged)", || {
                for _ in 0..PAGES {
                    black_box(merged.render(Format::PrometheusText));
                }
            }),
            Contender::timed("prometheus one-rank page × ranks", || {
                let start = Instant::now();
                for _ in 0..PAGES {
                    for _ in 0..ranks {
                        black_box(one.render(Format::PrometheusText));
                    }
                }
                one_ns
                    .lock()
                    .unwrap()
                    .push(start.elapsed().as_nanos() as u64 / PAGES as u64);
            }),
        ],
    );
    out.push_str(&c.to_markdown());
    for (name, times) in [("node page", &mp_ns), ("one-rank pages × ranks", &one_ns)] {
        let mut t = times.lock().unwrap().clone();
        t.sort_unstable();
        out.push_str(&format!(
            "\n{name}: median {:.3} ms per scrape, min–max {:.3}–{:.3} ms ({} rounds)",
            t[t.len() / 2] as f64 / 1e6,
            t[0] as f64 / 1e6,
            t[t.len() - 1] as f64 / 1e6,
            t.len()
        ));
    }
    out.push('\n');
    out.push_str(&format!(
        "\nnode page: {} bytes; one-rank page: {} bytes.\n\n",
        source.render(Format::PrometheusText).len(),
        one.render(Format::PrometheusText).len()
    ));
    for e in &mut exporters {
        e.shutdown().unwrap();
    }
    drop(exporters);
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let mut out = String::new();
    for ranks in [8, 64] {
        scrape(ranks, &mut out);
    }
    println!("{out}");
}
