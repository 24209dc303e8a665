//! The plug-in in the NIXL-shaped host, exporting to telering's ring file: every
//! event NIXL hands over is in the ring, counted and summed per type, in both
//! layouts (v1, telering's and NIXL's first readers; v4, NIXL's current readers),
//! with and without NIXL's batch hooks, and NIXL's own loss reports carried through.

mod common;

use common::{Setup, expected, read_ring, run_expecting};

fn ring_run(layout: &str, args: &[&str]) -> common::Expected {
    let setup = Setup::new();
    let rings = setup.path("rings");
    let (out, err) = run_expecting(
        setup
            .host(args)
            .env("NIXL_TELEMETRY_DIR", &rings)
            .env("TELERING_RING_LAYOUT", layout)
            .env("NIXL_LOG_LEVEL", "info")
            .env("TELERING_EXPORTERS", "buffer"),
        0,
    );
    assert!(out.contains("loaded telering "), "{out}");
    assert!(err.contains("exporter `buffer` delivered"), "{err}");
    assert!(!err.contains("warning"), "nothing lost: {err}");
    read_ring(&rings.join("nixl-agent"))
}

#[test]
fn every_event_reaches_a_v4_ring_file_with_nixls_loss_reports() {
    let got = ring_run("v4", &["--batches", "5", "--events", "300", "--dropped", "7"]);
    assert_eq!(got, expected(5, 300, 7));
}

#[test]
fn every_event_reaches_a_v1_ring_file() {
    let got = ring_run("v1", &["--batches", "4", "--events", "250"]);
    assert_eq!(got, expected(4, 250, 0));
}

#[test]
fn hosts_without_batch_hooks_get_every_event_delivered() {
    let got = ring_run(
        "v4",
        &["--batches", "3", "--events", "200", "--dropped", "2", "--no-batch-hooks"],
    );
    assert_eq!(got, expected(3, 200, 2));
}

#[test]
fn a_full_buffer_of_nixl_events_is_not_dropped() {
    // NIXL's flush hands over up to maxEventsBuffered events at once.
    let got = ring_run("v4", &["--batches", "3", "--events", "4096", "--max-buffered", "4096"]);
    assert_eq!(got, expected(3, 4096, 0));
}
