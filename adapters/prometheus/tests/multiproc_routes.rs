//! `prometheus_mp`: each rank's routes reach the node page through the route file
//! beside its store, with exact sums, the rank's labels, the folded count and hostile
//! names labelled safely; a damaged route file is counted and leaves the rank's other
//! series served.

use std::path::Path;
use std::time::Duration;

use telering_prometheus::Format;
use telering_prometheus::multiproc::NodeSource;
use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{EnvSource, ExporterRegistry, Telemetry};

fn rank(dir: &Path, agent: &str, routes_max: u16) -> Telemetry {
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
        .routes_max(routes_max)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap()
}

fn node_page(dir: &Path) -> String {
    let source = NodeSource {
        dir: dir.to_path_buf(),
        hostname: "node1".into(),
        buckets: telering_prometheus::Buckets::default(),
        stale_ttl: Duration::from_secs(60),
        route_files: Default::default(),
    };
    source.model().into_shared().render(Format::PrometheusText)
}

/// The values of every sample line of `family` whose labels contain all of `labels`.
fn samples(page: &str, family: &str, labels: &[&str]) -> Vec<u64> {
    page.lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .filter(|l| labels.iter().all(|x| l.contains(x)))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
        .collect()
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
fn every_ranks_routes_are_on_the_node_page_with_exact_sums() {
    let dir = tempfile::tempdir().unwrap();
    let a = rank(dir.path(), "rank-a", 64);
    let b = rank(dir.path(), "rank-b", 2);
    let hostile = "<b>\u{1b}[2J\n\"x\"";
    let wa = a.route(&ucx("decode-0")).unwrap();
    let ha = a.route(&ucx(hostile)).unwrap();
    for i in 0..500u64 {
        a.add_route_xfer_stats_us(wa, 30, 1000 + i, 2, 4);
    }
    a.add_route_xfer_stats_us(ha, 30, 5, 2, 1);
    for i in 0..5 {
        let id = b.route(&ucx(&format!("p{i}"))).unwrap();
        b.add_route_xfer_stats_us(id, 30, 10, 2, 1);
    }
    a.flush().unwrap();
    b.flush().unwrap();
    let page = node_page(dir.path());
    let sum: u64 = (0..500).map(|i| 1000 + i).sum();
    assert_eq!(
        samples(
            &page,
            "telering_route_bytes_total",
            &[
                r#"agent_name="rank-a""#,
                r#"peer="decode-0""#,
                "agent_instance=",
                "local_rank="
            ]
        ),
        [sum],
        "{page}"
    );
    assert_eq!(
        samples(
            &page,
            "telering_route_descriptors_total",
            &[r#"peer="decode-0""#]
        ),
        [2000]
    );
    assert_eq!(
        samples(
            &page,
            "telering_route_bytes_total",
            &["peer=\"<b>\u{1b}[2J\\n\\\"x\\\"\""]
        ),
        [5],
        "{page}"
    );
    // Rank b: two routes of its own, three folded into `other`.
    assert_eq!(
        samples(
            &page,
            "telering_routes_folded_total",
            &[r#"agent_name="rank-b""#]
        ),
        [3]
    );
    assert_eq!(
        samples(
            &page,
            "telering_route_transfers_total",
            &[r#"agent_name="rank-b""#, r#"peer="other""#]
        ),
        [3]
    );
    // The ranks' own families are as before.
    assert_eq!(
        samples(&page, "agent_tx_bytes_total", &[r#"agent_name="rank-a""#]),
        [sum + 5]
    );
    // A damaged route file: counted, the rank's other series still served.
    let routes: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "routes"))
        .collect();
    assert_eq!(routes.len(), 2, "{routes:?}");
    for path in &routes {
        std::fs::write(path, b"TLRROUTE\x01\x00\x00\x00 truncated").unwrap();
    }
    let page = node_page(dir.path());
    assert_eq!(
        samples(&page, "telering_route_files_rejected_total", &[]),
        [1, 1],
        "{page}"
    );
    assert!(samples(&page, "telering_route_bytes_total", &[]).is_empty());
    assert_eq!(
        samples(&page, "agent_tx_bytes_total", &[r#"agent_name="rank-a""#]),
        [sum + 5]
    );
    drop((a, b));
}

#[test]
fn a_rank_route_file_of_u64_max_counts_is_served_saturated() {
    use telering_std::route::file::RouteFile;
    let dir = tempfile::tempdir().unwrap();
    let a = rank(dir.path(), "rank-a", 64);
    let w = a.route(&ucx("decode-0")).unwrap();
    a.add_route_xfer_stats_us(w, 30, 1000, 2, 4);
    a.flush().unwrap();
    let path = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "routes"))
        .expect("the rank's route file");
    let mut f = RouteFile::read(&path).unwrap().unwrap();
    for e in &mut f.routes {
        let s = &mut e.stats;
        (s.bytes, s.transfers, s.descriptors) = (u64::MAX, u64::MAX, u64::MAX);
        for h in [&mut s.xfer_time, &mut s.post_time] {
            h.counts = [u64::MAX; 13];
            h.sum_us = u64::MAX;
        }
        s.errors = [u64::MAX; 12];
    }
    std::fs::write(&path, f.encode()).unwrap();
    let page = node_page(dir.path());
    let max = u64::MAX as f64 as u64;
    for family in [
        "telering_route_bytes_total",
        "telering_route_xfer_time_us_count",
    ] {
        assert_eq!(
            samples(&page, family, &[r#"agent_name="rank-a""#]),
            [max],
            "{family}: {page}"
        );
    }
    drop(a);
}
