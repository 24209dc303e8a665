//! Route totals on a node collector across runs of the same process id (an agent that
//! opens its telemetry again, a container's pid 1 restarted): a new run's route file
//! starts from zero under the same `writer_pid`, and its totals add to the earlier
//! run's, as the plain counters carry on, instead of replacing them.

use std::path::Path;
use std::time::Duration;

use telering_prometheus::Format;
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{Telemetry, TelemetryBuilder};

fn agent(dir: &Path) -> Telemetry {
    TelemetryBuilder::new("a")
        .enabled(true)
        .exporter("buffer")
        .dir(dir)
        .buffer_size(256)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap()
}

fn sample(page: &str, series: &str) -> Option<u64> {
    page.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
}

fn run(dir: &Path, transfers: u64) {
    let t = agent(dir);
    let route = Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        "p",
    );
    let id = t.route(&route).unwrap();
    for _ in 0..transfers {
        t.add_route_xfer_stats_us(id, 10, 100, 1, 1);
    }
    t.flush().unwrap();
}

#[test]
fn a_new_run_of_the_same_process_id_adds_its_route_totals_to_the_last_runs() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = CollectorOptions::new(dir.path());
    o.rescan_interval = Duration::ZERO;
    o.hostname = "node1".into();
    let mut c = NodeCollector::new(o).unwrap();
    let transfers = r#"telering_route_transfers_total{agent_name="a",hostname="node1",operation="WRITE",backend="UCX",local_mem="VRAM",remote_mem="VRAM",peer="p"}"#;
    let plain = r#"agent_tx_requests_num_total{agent_name="a",hostname="node1"}"#;
    run(dir.path(), 5);
    c.poll();
    let p = c.model().render(Format::PrometheusText);
    assert_eq!(
        (sample(&p, transfers), sample(&p, plain)),
        (Some(5), Some(5)),
        "{p}"
    );
    // The same process opens its telemetry again: the ring is reused in place and
    // the route file starts again from zero under the same writer pid.
    run(dir.path(), 2);
    c.poll();
    let p = c.model().render(Format::PrometheusText);
    assert_eq!(
        (sample(&p, transfers), sample(&p, plain)),
        (Some(7), Some(7)),
        "{p}"
    );
}
