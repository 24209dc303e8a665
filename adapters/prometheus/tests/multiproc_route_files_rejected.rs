//! `prometheus_mp`: `telering_route_files_rejected_total` on the node page is a true
//! counter across scrapes, although the page is built afresh for each: one refused
//! version of a rank's route file counts once however many scrapes see it, a new
//! refused version counts again, and the count never drops (a file accepted again
//! leaves it as it was), as `telering serve` counts the same family.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use telering_prometheus::multiproc::NodeSource;
use telering_prometheus::{HttpLimits, MetricsServer};
use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{EnvSource, ExporterRegistry, Telemetry};

fn rank(dir: &Path, agent: &str) -> Telemetry {
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "prometheus_mp".to_string()),
        ("NIXL_TELEMETRY_MULTIPROC_DIR", dir.display().to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_PORT", "0".to_string()),
        ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "true".to_string()),
    ]);
    Telemetry::builder(agent)
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap()
}

/// The node page over HTTP, from the server the serving rank runs.
fn scrape(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut page = String::new();
    s.read_to_string(&mut page).unwrap();
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    page
}

/// The values of every sample line of `family` whose labels contain `label`.
fn samples(page: &str, family: &str, label: &str) -> Vec<u64> {
    page.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")) && l.contains(label))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
        .collect()
}

/// The route file of the one rank whose store names `agent`.
fn route_file(dir: &Path, agent: &str) -> PathBuf {
    let stores: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "store"))
        .filter(|p| {
            let bytes = std::fs::read(p).unwrap();
            bytes.windows(agent.len()).any(|w| w == agent.as_bytes())
        })
        .collect();
    assert_eq!(stores.len(), 1, "{stores:?}");
    stores[0].with_extension("routes")
}

/// Replaces `path` whole, as a writer does (written aside, renamed into place).
fn replace(path: &Path, bytes: &[u8]) {
    let tmp = path.with_extension("tmp-test");
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn ucx(peer: &str) -> Route {
    Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        peer,
    )
}

#[test]
fn a_refused_route_file_counts_once_per_version_across_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    let a = rank(dir.path(), "rank-a");
    let b = rank(dir.path(), "rank-b");
    for t in [&a, &b] {
        let id = t.route(&ucx("decode-0")).unwrap();
        t.add_route_xfer_stats_us(id, 30, 4096, 1, 1);
        t.flush().unwrap();
    }
    let source = NodeSource {
        dir: dir.path().to_path_buf(),
        hostname: "node1".into(),
        buckets: telering_prometheus::Buckets::default(),
        stale_ttl: Duration::from_secs(60),
        route_files: Default::default(),
    };
    let server = MetricsServer::start(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        source,
        HttpLimits::default(),
    )
    .unwrap();
    let addr = server.local_addr();
    let rejected = |page: &str, agent: &str| {
        samples(
            page,
            "telering_route_files_rejected_total",
            &format!("agent_name=\"{agent}\""),
        )
    };
    let page = scrape(addr);
    assert!(rejected(&page, "rank-a").is_empty(), "{page}");
    assert_eq!(
        samples(&page, "telering_route_bytes_total", "rank-a"),
        [4096]
    );

    let a_routes = route_file(dir.path(), "rank-a");
    replace(&a_routes, b"TLRROUTE\x01\x00\x00\x00 truncated");
    for _ in 0..5 {
        let page = scrape(addr);
        assert_eq!(rejected(&page, "rank-a"), [1], "{page}");
        assert!(rejected(&page, "rank-b").is_empty(), "{page}");
        // The rank keeps the routes of its last file accepted.
        assert_eq!(
            samples(&page, "telering_route_bytes_total", "rank-a"),
            [4096],
            "{page}"
        );
    }

    // Another refused version (other bytes, another file) counts again, once.
    replace(&a_routes, b"not a route file at all");
    for _ in 0..3 {
        assert_eq!(rejected(&scrape(addr), "rank-a"), [2]);
    }

    // A file accepted again leaves the count where it was.
    let id = a.route(&ucx("decode-1")).unwrap();
    a.add_route_xfer_stats_us(id, 30, 10, 1, 1);
    a.flush().unwrap();
    let page = scrape(addr);
    assert_eq!(rejected(&page, "rank-a"), [2], "{page}");
    assert_eq!(
        samples(&page, "telering_route_bytes_total", "peer=\"decode-1\""),
        [10],
        "{page}"
    );

    // Another rank's refused file is its own series.
    replace(&route_file(dir.path(), "rank-b"), b"");
    for _ in 0..3 {
        let page = scrape(addr);
        assert_eq!(rejected(&page, "rank-b"), [1], "{page}");
        assert_eq!(rejected(&page, "rank-a"), [2], "{page}");
    }
    server.shutdown();
    drop((a, b));
}
