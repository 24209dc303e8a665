//! One function per surface, each turning what a person or a program reads into a
//! [`Ledger`] with the causes of `docs/LOSS.md`.
//!
//! The functions read the surfaces' own words (JSON fields, metric names); a field a
//! surface lacks is a test failure, not a zero, so a surface that stops reporting a
//! cause is caught.

use crate::{Cause, Ledger};
use serde_json::Value;
use telering_std::{ExporterStats, TelemetryStats};

/// The name of telering's in-band loss report.
pub const DROP_REPORT: &str = "agent_telemetry_events_dropped";

fn field(v: &Value, surface: &str, path: &[&str]) -> u64 {
    let mut at = v;
    for key in path {
        at = at
            .get(key)
            .unwrap_or_else(|| panic!("{surface}: no field {} in {v}", path.join(".")));
    }
    at.as_u64()
        .unwrap_or_else(|| panic!("{surface}: {} is not a count: {at}", path.join(".")))
}

/// A [`TelemetryStats`] (Rust `Telemetry::stats`, and through them C's
/// `telering_stats_t` and Python's `stats()`).
///
/// `events_dropped` are losses at record time ([`Cause::AtRecord`]: full lanes,
/// closed recorders, NIXL's reported losses), `exporter_dropped` those of the
/// exporter ([`Cause::ByExporter`]: a full ring, a failed export, an unlinked file;
/// the exporter's own statistics tell which, [`from_exporter_stats`]).
///
/// ```
/// let s = telering_std::TelemetryStats { events_recorded: 3, events_exported: 2, events_dropped: 1, ..Default::default() };
/// let l = telering_conservation::surfaces::from_stats(&s);
/// l.assert_conserves(3);
/// ```
pub fn from_stats(s: &TelemetryStats) -> Ledger {
    let mut l = Ledger::new("TelemetryStats");
    l.recorded = Some(s.events_recorded);
    l.delivered = s.events_exported;
    l.charge(Cause::AtRecord, s.events_dropped);
    l.charge(Cause::ByExporter, s.exporter_dropped);
    l.charge(Cause::NotInLayout, s.events_not_in_layout);
    l.charge(Cause::Undelivered, s.events_undelivered);
    l.state = Some(if s.exporter_failing { "failing" } else { "ok" }.into());
    if !s.exporter_failing && l.lost_total() > l.lost_to(Cause::NotInLayout) {
        l.state = Some("dropping".into());
    }
    l
}

/// One exporter's [`ExporterStats`]: losses before it (its queue, failed exports)
/// are [`Cause::ExporterFailed`] when it has export errors, else
/// [`Cause::AtRecord`]; inside it, events lost after delivery are
/// [`Cause::Unlinked`] and the rest [`Cause::RingFull`].
///
/// ```
/// let mut s = telering_std::fanout::ExporterStats::named("csv");
/// s.events_delivered = 5;
/// telering_conservation::surfaces::from_exporter_stats(&s).assert_conserves(5);
/// ```
pub fn from_exporter_stats(s: &ExporterStats) -> Ledger {
    let mut l = Ledger::new(format!("ExporterStats[{}]", s.name));
    l.delivered = s.events_delivered;
    let before = if s.export_errors > 0 {
        Cause::ExporterFailed
    } else {
        Cause::AtRecord
    };
    l.charge(before, s.events_dropped);
    l.charge(Cause::Unlinked, s.events_lost_after_delivery);
    l.charge(
        Cause::RingFull,
        s.exporter_dropped - s.events_lost_after_delivery,
    );
    l.charge(Cause::NotInLayout, s.events_not_in_layout);
    l.charge(Cause::Undelivered, s.events_undelivered);
    l.state = Some(if s.exporter_failing { "failing" } else { "ok" }.into());
    l
}

/// `telering stat --json FILE`: the ring file's trailer. Delivered are the events
/// published into the ring, less the in-band loss reports among them
/// (`drop_reports`, which the caller counts from the ring's events).
///
/// ```
/// let v: serde_json::Value = serde_json::json!({"trailer": {"published": 63,
///     "dropped_ring_full": 1442, "dropped_staging": 0, "dropped_unrepresentable": 0}});
/// let l = telering_conservation::surfaces::from_stat_json(&v, 0);
/// l.assert_conserves(1505);
/// ```
pub fn from_stat_json(v: &Value, drop_reports: u64) -> Ledger {
    let s = "stat --json";
    let mut l = Ledger::new(s);
    l.delivered = field(v, s, &["trailer", "published"]) - drop_reports;
    l.charge(
        Cause::RingFull,
        field(v, s, &["trailer", "dropped_ring_full"]),
    );
    l.charge(
        Cause::AtRecord,
        field(v, s, &["trailer", "dropped_staging"]),
    );
    l.charge(
        Cause::NotInLayout,
        field(v, s, &["trailer", "dropped_unrepresentable"]),
    );
    l
}

/// `telering demo --json`'s summary.
///
/// ```
/// let v = serde_json::json!({"events_recorded": 4, "events_exported": 3,
///     "dropped_at_record": 0, "dropped_by_exporter": 1, "events_not_in_layout": 0,
///     "events_undelivered": 0});
/// telering_conservation::surfaces::from_demo_json(&v).assert_conserves(4);
/// ```
pub fn from_demo_json(v: &Value) -> Ledger {
    let s = "demo --json";
    let mut l = Ledger::new(s);
    l.recorded = Some(field(v, s, &["events_recorded"]));
    l.delivered = field(v, s, &["events_exported"]);
    l.charge(Cause::AtRecord, field(v, s, &["dropped_at_record"]));
    l.charge(Cause::ByExporter, field(v, s, &["dropped_by_exporter"]));
    l.charge(Cause::NotInLayout, field(v, s, &["events_not_in_layout"]));
    l.charge(Cause::Undelivered, field(v, s, &["events_undelivered"]));
    l
}

/// The value of the sample `name{…agent_name="agent"…}` on a Prometheus text page,
/// if the page has it.
///
/// ```
/// let page = "x_total{agent_name=\"a\",hostname=\"h\"} 7\n";
/// assert_eq!(telering_conservation::surfaces::sample(page, "x_total", "a"), Some(7.0));
/// ```
pub fn sample(page: &str, name: &str, agent: &str) -> Option<f64> {
    let label = format!("agent_name=\"{agent}\"");
    page.lines()
        .filter(|line| !line.starts_with('#'))
        .find(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with('{') && rest.contains(&label))
        })
        .and_then(|line| line.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

/// An agent's loss counters on a `/metrics` page of the node collector
/// (`telering serve`, the demo's endpoint): delivered are the events the collector
/// read, the writer's own losses are `agent_telemetry_events_dropped_total`,
/// overwritten slots `…_missed_total`, undecodable ones `…_unexported_total`.
///
/// The writer's losses are one figure on this page; the cause of each is on
/// `stat` and `/api/agents`.
pub fn from_metrics(page: &str, agent: &str) -> Ledger {
    let s = format!("/metrics[{agent}]");
    let get = |name: &str| {
        sample(page, name, agent)
            .unwrap_or_else(|| panic!("{s}: no {name} for agent {agent}:\n{page}")) as u64
    };
    let mut l = Ledger::new(s.clone());
    l.delivered = get("agent_telemetry_events_delivered_total");
    l.charge(
        Cause::WriterDropped,
        get("agent_telemetry_events_dropped_total"),
    );
    l.charge(Cause::Missed, get("agent_telemetry_events_missed_total"));
    l.charge(
        Cause::Unexported,
        get("agent_telemetry_events_unexported_total"),
    );
    l
}

/// One agent of `/api/agents` (the dashboard's data): its losses by cause
/// (`losses`) and the state its tiles show (`state`: `ok`, `dropping`, `failing`).
pub fn from_api_agent(v: &Value, agent: &str) -> Ledger {
    let s = format!("/api/agents[{agent}]");
    let a = v["agents"]
        .as_array()
        .and_then(|agents| agents.iter().find(|a| a["agent"] == agent))
        .unwrap_or_else(|| panic!("{s}: agent {agent} not listed: {v}"));
    let mut l = Ledger::new(s.clone());
    l.delivered = field(a, &s, &["values", "agent_telemetry_events_delivered_total"]);
    l.charge(Cause::RingFull, field(a, &s, &["losses", "ring_full"]));
    l.charge(Cause::Staging, field(a, &s, &["losses", "staging"]));
    l.charge(Cause::Missed, field(a, &s, &["losses", "missed"]));
    l.charge(Cause::Unexported, field(a, &s, &["losses", "unexported"]));
    l.charge(
        Cause::NotInLayout,
        field(a, &s, &["losses", "not_in_layout"]),
    );
    // The page's figure of the writer's losses is the sum of the first two.
    assert_eq!(
        field(a, &s, &["values", "agent_telemetry_events_dropped_total"]),
        l.lost_to(Cause::RingFull) + l.lost_to(Cause::Staging),
        "{s}: dropped_total against losses by cause"
    );
    l.state = a.get("state").and_then(|v| v.as_str()).map(str::to_owned);
    l
}

/// The events of `telering read --json` (one object per line): how many are
/// recorded events and the sum of the in-band loss reports among them.
///
/// ```
/// let lines = "{\"event\":\"a\",\"value\":1}\n{\"event\":\"agent_telemetry_events_dropped\",\"value\":5}\n";
/// assert_eq!(telering_conservation::surfaces::read_json(lines), (1, 1, 5));
/// ```
pub fn read_json(lines: &str) -> (u64, u64, u64) {
    let (mut events, mut reports, mut reported) = (0, 0, 0);
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("read --json: not JSON ({e}): {line}"));
        if v["event"] == DROP_REPORT {
            reports += 1;
            reported += v["value"].as_u64().expect("a report's value");
        } else {
            events += 1;
        }
    }
    (events, reports, reported)
}
