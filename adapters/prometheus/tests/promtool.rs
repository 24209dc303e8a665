//! `promtool check metrics` on the rendered page (needs Prometheus' `promtool`).

use std::io::Write;
use std::process::{Command, Stdio};

use telering_core::builtin::{self, ErrorStatus};
use telering_core::{Category, Event, EventName};
use telering_prometheus::{Buckets, Format, MetricModel};

fn page() -> String {
    let mut model = MetricModel::new("node-1", Buckets::default());
    for agent in ["agent-a", "agent b \"quoted\""] {
        let mut events: Vec<Event> = builtin::BUILTIN_EVENTS
            .iter()
            .map(|b| Event::new(1, b.category, b.name, 1234))
            .collect();
        events.extend(
            ErrorStatus::ALL
                .iter()
                .map(|s| Event::new(2, Category::Error, s.event().name, 1)),
        );
        for (category, name) in [
            (Category::Custom, "cache.hits"),
            (Category::Backend, "ucx-retries"),
            (Category::Connection, "peer_connects"),
        ] {
            events.push(Event::new(3, category, EventName::new(name).unwrap(), 7));
        }
        if agent == "agent-a" {
            model.ingest(agent, &events);
        } else {
            // As the node collector does: with the exporter-health families.
            model.ingest_delivered(agent, &events);
            model.set_exporter_failing(agent, true);
        }
    }
    // Routes, as a node collector has them from route files, and a refused file.
    use telering_std::route::{MemoryType, Operation, Route, RouteReport, RouteStats};
    let route = Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Dram,
        "d\"0",
    );
    let mut stats = RouteStats {
        bytes: 4096,
        transfers: 2,
        descriptors: 3,
        ..Default::default()
    };
    stats.xfer_time.counts[3] = 2;
    stats.errors[1] = 1;
    model.set_routes(
        "agent-a",
        RouteReport {
            // A kept slow transfer, so that the slowest-transfer gauge is on the page.
            slow: vec![(
                route.clone(),
                telering_std::route::SlowXfer {
                    xfer_us: 70,
                    start_us: 1,
                    post_us: 2,
                    bytes: 4096,
                    descriptors: 1,
                    route_index: 0,
                    operation: Operation::Write,
                },
            )],
            routes: vec![(route, stats)],
            folded: 2,
        },
    );
    model.count_route_file_rejected("agent b \"quoted\"");
    let page = model.into_shared().render(Format::PrometheusText);
    assert!(page.contains("# TYPE telering_route_xfer_time_us histogram"));
    assert!(page.contains("# TYPE telering_route_files_rejected_total counter"));
    assert!(page.contains("# TYPE agent_telemetry_exporter_failing gauge"));
    assert!(page.contains("# TYPE agent_telemetry_events_delivered_total counter"));
    page
}

#[test]
#[ignore = "needs prometheus (promtool)"]
fn promtool_check_metrics_accepts_the_page() {
    let page = page();
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool is installed (Debian package `prometheus`)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Exit code 3 is promtool's "parsed, but lint problems"; the only ones allowed are
    // about the names NIXL's dashboards depend on (the `_us` unit suffix of the two
    // histograms), which cannot change without breaking them.
    let lint_only = out.status.code() == Some(3);
    let problems: Vec<&str> = report.lines().filter(|l| !l.trim().is_empty()).collect();
    let allowed = |line: &str| {
        NIXL_NAMES_PROMLINT_DISLIKES
            .iter()
            .any(|name| line == format!("{name} metric names should not contain abbreviated units"))
    };
    assert!(
        out.status.success() || (lint_only && problems.iter().all(|l| allowed(l))),
        "promtool rejected the page (exit {:?}):\n{report}\n{page}",
        out.status.code()
    );
    if lint_only {
        assert_eq!(
            problems.len(),
            NIXL_NAMES_PROMLINT_DISLIKES.len(),
            "{report}"
        );
    }
}

/// NIXL's histogram names, kept for compatibility although promlint prefers base units,
/// and the route families, which keep the same `_us` unit as the histograms beside them
/// (their names are documented in docs/ROUTES.md and used by the Grafana dashboard).
const NIXL_NAMES_PROMLINT_DISLIKES: [&str; 5] = [
    "agent_xfer_post_time_us",
    "agent_xfer_time_us",
    "telering_route_post_time_us",
    "telering_route_slowest_xfer_time_us",
    "telering_route_xfer_time_us",
];
