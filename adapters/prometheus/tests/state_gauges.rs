//! The clock mapping `telering bridge` writes into a device's ring (offset, drift and
//! bound) is a state, not an amount: on the page each is a gauge holding its last
//! value, negative values read from their two's complement, never a counter that sums
//! reports. Other `SYSTEM` events stay counters.

use telering_core::{Category, Event, EventName};
use telering_prometheus::model::{FamilyKind, SeriesValue};
use telering_prometheus::{Buckets, Format, MetricModel};

fn system(name: &str, value: u64) -> Event {
    Event::new(1, Category::System, EventName::new(name).unwrap(), value)
}

#[test]
fn the_bridges_clock_reports_are_gauges_of_their_last_value() {
    let mut model = MetricModel::new("node1", Buckets::default());
    model.add_agent("dev");
    model.ingest(
        "dev",
        &[
            system("telering_link_clock_offset_us", 1_700_000_000_000_000),
            system("telering_link_clock_drift_ppb", (-99_990i64) as u64),
            system("telering_link_clock_bound_us", 194),
            system("telering_link_lost_missing", 3),
        ],
    );
    model.ingest(
        "dev",
        &[
            system("telering_link_clock_offset_us", (-12i64) as u64),
            system("telering_link_clock_drift_ppb", (-100_010i64) as u64),
            system("telering_link_clock_bound_us", u64::MAX),
            system("telering_link_lost_missing", 4),
        ],
    );
    let families = model.families();
    let value = |name: &str| {
        let family = families
            .iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name} missing"));
        (family.kind, family.series[0].value.clone())
    };
    assert_eq!(
        value("agent_system_event_telering_link_clock_offset_us"),
        (FamilyKind::Gauge, SeriesValue::Signed(-12))
    );
    assert_eq!(
        value("agent_system_event_telering_link_clock_drift_ppb"),
        (FamilyKind::Gauge, SeriesValue::Signed(-100_010))
    );
    assert_eq!(
        value("agent_system_event_telering_link_clock_bound_us"),
        (FamilyKind::Gauge, SeriesValue::Signed(i64::MAX))
    );
    assert_eq!(
        value("agent_system_event_telering_link_lost_missing_total"),
        (FamilyKind::Counter, SeriesValue::Number(7))
    );

    let text = model.into_shared().render(Format::PrometheusText);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name) && l.contains("agent_name=\"dev\""))
            .unwrap_or_else(|| panic!("{name} not on the page:\n{text}"))
            .to_owned()
    };
    assert!(text.contains("# TYPE agent_system_event_telering_link_clock_offset_us gauge"));
    assert!(line("agent_system_event_telering_link_clock_offset_us{").ends_with(" -12"));
    assert!(line("agent_system_event_telering_link_clock_drift_ppb{").ends_with(" -100010"));
    assert!(
        line("agent_system_event_telering_link_clock_bound_us{")
            .ends_with(&format!(" {}", i64::MAX))
    );
    assert!(
        !text.contains("telering_link_clock_offset_us_total"),
        "{text}"
    );
    assert!(line("agent_system_event_telering_link_lost_missing_total{").ends_with(" 7"));
}

#[test]
fn a_clock_name_in_another_category_stays_a_counter() {
    let mut model = MetricModel::new("node1", Buckets::default());
    let custom = Event::new(
        1,
        Category::Custom,
        EventName::new("telering_link_clock_offset_us").unwrap(),
        5,
    );
    model.ingest("a", &[custom, custom]);
    let text = model.into_shared().render(Format::PrometheusText);
    assert!(
        text.contains("agent_custom_event_telering_link_clock_offset_us_total{"),
        "{text}"
    );
}

#[test]
fn a_ranks_snapshot_carries_the_state_gauges_to_the_serving_rank() {
    let mut rank = MetricModel::new("node1", Buckets::default());
    rank.add_agent("dev");
    rank.ingest(
        "dev",
        &[
            system("telering_link_clock_drift_ppb", (-7i64) as u64),
            system("telering_link_lost_damaged", 2),
        ],
    );
    let bytes = rank.snapshot("dev").unwrap();
    let mut serving = MetricModel::new("node1", Buckets::default());
    serving
        .insert_snapshot("dev-1", "dev", Vec::new(), &bytes)
        .unwrap();
    let text = serving.into_shared().render(Format::PrometheusText);
    assert!(
        text.lines().any(
            |l| l.starts_with("agent_system_event_telering_link_clock_drift_ppb{")
                && l.ends_with(" -7")
        ),
        "{text}"
    );
    assert!(
        !text.contains("telering_link_clock_offset_us"),
        "a gauge never set is no series: {text}"
    );

    // Without a state gauge the snapshot ends after the custom families, as before.
    let mut plain = MetricModel::new("node1", Buckets::default());
    plain.add_agent("dev");
    plain.ingest("dev", &[system("telering_link_lost_damaged", 2)]);
    let short = plain.snapshot("dev").unwrap();
    assert_eq!(short.len() + 1 + 9, bytes.len());
}
