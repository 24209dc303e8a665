//! The demo's summary counts as recorded every event its workload recorded, those its
//! buffers refused at record time included, so that its own identity holds: recorded
//! = exported + dropped + not in layout + undelivered, in the text and the JSON alike.

mod common;
use common::*;

fn demo(dir: &std::path::Path, json: bool) -> std::process::Output {
    let mut cmd = telering();
    cmd.args(["demo", "--events", "5000", "--rate", "0", "--no-serve"])
        // Lanes and ring of two slots, flat out: most events are refused at record
        // time, most of the rest by the full ring.
        .env("NIXL_TELEMETRY_BUFFER_SIZE", "2");
    if json {
        cmd.arg("--json");
    }
    let o = run_in(dir, &mut cmd);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    o
}

#[test]
fn demo_json_summary_recorded_is_every_event_the_workload_recorded() {
    let dir = scratch();
    let o = demo(dir.path(), true);
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let n = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} in {s}"));
    assert_eq!(n("events_recorded"), 5000, "{s}");
    assert_eq!(
        n("events_recorded"),
        n("events_exported")
            + n("events_dropped")
            + n("events_not_in_layout")
            + n("events_undelivered"),
        "{s}"
    );
    assert_eq!(
        n("events_dropped"),
        n("dropped_at_record") + n("dropped_by_exporter"),
        "{s}"
    );
}

#[test]
fn demo_text_summary_recorded_is_every_event_the_workload_recorded() {
    let dir = scratch();
    let o = demo(dir.path(), false);
    let text = stdout(&o);
    let head = text
        .lines()
        .find(|l| l.contains(" events recorded in "))
        .unwrap_or_else(|| panic!("no head line: {text}"));
    assert!(head.contains(": 5000 events recorded in "), "{head}");
    let exported = text
        .lines()
        .find(|l| l.starts_with("exported: "))
        .unwrap_or_else(|| panic!("no exported line: {text}"));
    assert!(exported.contains(" of the 5000 recorded "), "{exported}");
}
