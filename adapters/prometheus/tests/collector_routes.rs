//! Routes on a node collector (`telering serve`): each agent's route file
//! (`DIR/.routes/<agent>`, written by its `buffer` exporter) becomes the same
//! `telering_route_*` families the in-process exporter has, with exact sums, the
//! folded count and hostile names labelled safely; a malformed, truncated or
//! oversized route file is counted, and the agent keeps its last accepted routes.

use std::path::Path;
use std::time::Duration;

use telering_core::builtin::ErrorStatus;
use telering_prometheus::Format;
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_std::route::file;
use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{Telemetry, TelemetryBuilder};

fn agent(dir: &Path, name: &str, routes_max: u16) -> Telemetry {
    TelemetryBuilder::new(name)
        .enabled(true)
        .exporter("buffer")
        .dir(dir)
        .routes_max(routes_max)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap()
}

fn collector(dir: &Path) -> NodeCollector {
    let mut o = CollectorOptions::new(dir);
    o.rescan_interval = Duration::ZERO;
    o.hostname = "node1".into();
    NodeCollector::new(o).unwrap()
}

fn page(c: &NodeCollector) -> String {
    c.model().render(Format::PrometheusText)
}

/// The value of the one sample line `series` (then a space).
fn sample(page: &str, series: &str) -> Option<u64> {
    let found: Vec<u64> = page
        .lines()
        .filter(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
        .collect();
    assert!(found.len() <= 1, "{series} twice in\n{page}");
    found.first().copied()
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

const HOSTILE: &str = "<img src=x onerror=alert(1)>\u{1b}[2J\n\"q\"\\";
const HOSTILE_LABEL: &str = "<img src=x onerror=alert(1)>\u{1b}[2J\\n\\\"q\\\"\\\\";

#[test]
fn serve_shows_each_routes_exact_sums_from_its_route_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = agent(dir.path(), "prefill-0", 64);
    let w = t.route(&ucx("decode-0")).unwrap();
    let h = t.route(&ucx(HOSTILE)).unwrap();
    let mut sum = 0;
    for i in 0..1000u64 {
        t.add_route_xfer_stats_us(w, 20 + i % 50, 4096 + i, 3, 2);
        sum += 4096 + i;
    }
    t.add_route_xfer_stats_us(h, 7000, 77, 1, 1);
    t.update_route_error_count(w, ErrorStatus::RemoteDisconnect);
    t.update_route_error_count(w, ErrorStatus::RemoteDisconnect);
    t.flush().unwrap();
    let mut c = collector(dir.path());
    c.poll();
    let p = page(&c);
    // The route folder is no agent.
    assert_eq!(c.agents().len(), 1, "{p}");
    let base = r#"{agent_name="prefill-0",hostname="node1",operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="decode-0"}"#;
    let s = |family: &str| sample(&p, &format!("{family}{base}"));
    assert_eq!(s("telering_route_bytes_total"), Some(sum), "{p}");
    assert_eq!(s("telering_route_transfers_total"), Some(1000));
    assert_eq!(s("telering_route_descriptors_total"), Some(2000));
    assert_eq!(s("telering_route_xfer_time_us_count"), Some(1000));
    assert_eq!(s("telering_route_post_time_us_sum"), Some(3000));
    assert_eq!(s("telering_route_slowest_xfer_time_us"), Some(69));
    let errors = base.replace('}', r#",status="remote_disconnect"}"#);
    assert_eq!(
        sample(&p, &format!("telering_route_errors_total{errors}")),
        Some(2)
    );
    let hostile = format!(
        r#"telering_route_bytes_total{{agent_name="prefill-0",hostname="node1",operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="{HOSTILE_LABEL}"}}"#
    );
    assert_eq!(sample(&p, &hostile), Some(77), "{p}");
    assert_eq!(
        sample(
            &p,
            r#"telering_routes_folded_total{agent_name="prefill-0",hostname="node1"}"#
        ),
        Some(0)
    );
    // The ring's own families are as they are without routes.
    assert_eq!(
        sample(
            &p,
            r#"agent_tx_bytes_total{agent_name="prefill-0",hostname="node1"}"#
        ),
        Some(sum + 77)
    );
    // Later totals replace the earlier (they are cumulative).
    t.add_route_xfer_stats_us(w, 20, 1, 3, 2);
    t.flush().unwrap();
    c.poll();
    assert_eq!(
        sample(&page(&c), &format!("telering_route_bytes_total{base}")),
        Some(sum + 1)
    );
}

#[test]
fn routes_folded_at_the_bound_show_on_the_node_page() {
    let dir = tempfile::tempdir().unwrap();
    let t = agent(dir.path(), "a", 3);
    for i in 0..10 {
        let id = t.route(&ucx(&format!("p{i}"))).unwrap();
        t.add_route_xfer_stats_us(id, 10, 100, 1, 1);
    }
    t.flush().unwrap();
    let mut c = collector(dir.path());
    c.poll();
    let p = page(&c);
    assert_eq!(
        sample(
            &p,
            r#"telering_routes_folded_total{agent_name="a",hostname="node1"}"#
        ),
        Some(7),
        "{p}"
    );
    let other = r#"telering_route_transfers_total{agent_name="a",hostname="node1",operation="WRITE",backend="other",local_mem="DRAM",remote_mem="DRAM",peer="other"}"#;
    assert_eq!(sample(&p, other), Some(7), "{p}");
    let series = p
        .lines()
        .filter(|l| l.starts_with("telering_route_bytes_total{"))
        .count();
    assert_eq!(series, 4);
}

#[test]
fn a_malformed_truncated_or_oversized_route_file_is_counted_and_the_last_good_routes_stay() {
    let dir = tempfile::tempdir().unwrap();
    let t = agent(dir.path(), "a", 64);
    let id = t.route(&ucx("p")).unwrap();
    t.add_route_xfer_stats_us(id, 10, 100, 1, 1);
    t.flush().unwrap();
    let mut c = collector(dir.path());
    c.poll();
    let path = file::path_of(dir.path(), "a");
    let good = std::fs::read(&path).unwrap();
    let bytes = r#"telering_route_bytes_total{agent_name="a",hostname="node1",operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="p"}"#;
    let rejected = r#"telering_route_files_rejected_total{agent_name="a",hostname="node1"}"#;
    assert_eq!(sample(&page(&c), bytes), Some(100));
    assert_eq!(sample(&page(&c), rejected), None);
    let oversized = {
        let mut v = good.clone();
        v.resize(file::MAX_FILE_BYTES + 1, 0);
        v
    };
    let bad: [(&str, Vec<u8>); 4] = [
        ("garbage", b"<html>\x1b[31m not a route file".to_vec()),
        ("truncated", good[..good.len() - 3].to_vec()),
        ("oversized", oversized),
        ("empty", Vec::new()),
    ];
    for (n, (what, content)) in bad.into_iter().enumerate() {
        // A new file (as a writer renames one into place), so the reader looks again.
        let temp = dir.path().join(file::FOLDER).join(".t");
        std::fs::write(&temp, content).unwrap();
        std::fs::rename(&temp, &path).unwrap();
        c.poll();
        let p = page(&c);
        assert_eq!(sample(&p, rejected), Some(n as u64 + 1), "{what}: {p}");
        assert_eq!(
            sample(&p, bytes),
            Some(100),
            "{what}: the last good routes stay"
        );
        assert_eq!(c.agents().len(), 1);
    }
    // A directory in its place is refused too, without a panic.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    c.poll();
    assert_eq!(sample(&page(&c), rejected), Some(5));
}

#[test]
fn a_route_file_of_another_process_than_the_rings_writer_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let t = agent(dir.path(), "a", 64);
    let id = t.route(&ucx("p")).unwrap();
    t.add_route_xfer_stats_us(id, 10, 100, 1, 1);
    t.flush().unwrap();
    let mut c = collector(dir.path());
    c.poll();
    let bytes = r#"telering_route_bytes_total{agent_name="a",hostname="node1",operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="p"}"#;
    assert_eq!(sample(&page(&c), bytes), Some(100));
    // A file left by another run (another writer pid) in its place.
    let path = file::path_of(dir.path(), "a");
    let mut left = file::read(&path).unwrap().unwrap();
    left.writer_pid = std::process::id() + 1;
    left.routes[0].stats.bytes = 999;
    let temp = dir.path().join(file::FOLDER).join(".t");
    std::fs::write(&temp, left.encode()).unwrap();
    std::fs::rename(&temp, &path).unwrap();
    c.poll();
    let p = page(&c);
    assert_eq!(sample(&p, bytes), None, "{p}");
    assert!(!p.contains("telering_route_files_rejected_total"), "{p}");
    // The writer's own next file is taken again.
    t.add_route_xfer_stats_us(id, 10, 100, 1, 1);
    t.flush().unwrap();
    c.poll();
    assert_eq!(sample(&page(&c), bytes), Some(200));
}
