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
    let page = model.into_shared().render(Format::PrometheusText);
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

/// NIXL's histogram names, kept for compatibility although promlint prefers base units.
const NIXL_NAMES_PROMLINT_DISLIKES: [&str; 2] = ["agent_xfer_post_time_us", "agent_xfer_time_us"];
