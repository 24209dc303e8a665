//! The plug-in in the NIXL-shaped host, exporting to telering's ring file: every
//! event NIXL hands over is in the ring, counted and summed per type, in both
//! layouts (v1, telering's and NIXL's first readers; v4, NIXL's current readers),
//! with and without NIXL's batch hooks, and NIXL's own loss reports carried through
//! as telering's losses: in the trailer and the log even when the ring is full.

mod common;

use common::{Holding, Setup, assert_same_events, expected, read_ring, run_expecting};

/// Runs the host into a ring of `layout`; returns the ring's tally and the host's
/// stderr.
fn ring_run_with(layout: &str, buffer_size: &str, args: &[&str]) -> (common::Expected, String) {
    let setup = Setup::new();
    let rings = setup.path("rings");
    let (out, err) = run_expecting(
        setup
            .host(args)
            .env("NIXL_TELEMETRY_DIR", &rings)
            .env("NIXL_TELEMETRY_BUFFER_SIZE", buffer_size)
            .env("TELERING_RING_LAYOUT", layout)
            .env("NIXL_LOG_LEVEL", "info")
            .env("TELERING_EXPORTERS", "buffer"),
        0,
    );
    assert!(out.contains("loaded telering "), "{out}");
    assert!(err.contains("exporter `buffer` delivered"), "{err}");
    (read_ring(&rings.join("nixl-agent")), err)
}

/// A run that loses nothing of its own: the only warning is NIXL's reported losses.
fn ring_run(layout: &str, args: &[&str]) -> common::Expected {
    let (tally, err) = ring_run_with(layout, "4096", args);
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("warning") && !l.contains("dropped upstream by NIXL"))
        .collect();
    assert!(warnings.is_empty(), "nothing lost: {err}");
    tally
}

#[test]
fn every_event_reaches_a_v4_ring_file_with_nixls_loss_reports() {
    let got = ring_run(
        "v4",
        &["--batches", "5", "--events", "300", "--dropped", "7"],
    );
    assert_same_events(&got, &expected(5, 300, 7));
}

#[test]
fn every_event_reaches_a_v1_ring_file_with_nixls_loss_reports() {
    let got = ring_run(
        "v1",
        &["--batches", "4", "--events", "250", "--dropped", "3"],
    );
    assert_same_events(&got, &expected(4, 250, 3));
}

#[test]
fn hosts_without_batch_hooks_get_every_event_delivered() {
    let got = ring_run(
        "v4",
        &[
            "--batches",
            "3",
            "--events",
            "200",
            "--dropped",
            "2",
            "--no-batch-hooks",
        ],
    );
    assert_same_events(&got, &expected(3, 200, 2));
}

#[test]
fn three_full_buffers_of_nixl_events_at_once_are_not_dropped() {
    // NIXL's flush hands over up to maxEventsBuffered events at once; the lane holds
    // four such batches, the ring (nobody drains it here) all three.
    let args = [
        "--batches",
        "3",
        "--events",
        "4096",
        "--max-buffered",
        "4096",
    ];
    let (got, err) = ring_run_with("v4", "16384", &args);
    assert!(!err.contains("warning"), "nothing lost: {err}");
    assert_eq!(got, expected(3, 4096, 0));
}

#[test]
fn a_full_ring_file_counts_and_logs_every_event_it_refused() {
    let args = ["--batches", "3", "--events", "4096"];
    let (got, err) = ring_run_with("v4", "4096", &args);
    let line = err
        .lines()
        .find(|l| {
            l.starts_with(
                "telering: warning: NIXL agent `nixl-agent`: exporter `buffer` delivered ",
            )
        })
        .unwrap_or_else(|| panic!("a warning with the losses: {err}"));
    let numbers: Vec<u64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    // delivered D events, lost L (dropped 0, lost inside L, undelivered 0)
    let [delivered, lost, dropped, inside, undelivered] = numbers[..] else {
        panic!("five counts in {line}");
    };
    assert_eq!((dropped, inside, undelivered), (0, lost, 0), "{line}");
    // The ring's last slot holds the in-band report of what the first batch lost
    // (type 20); the later batches found it full and are counted in the trailer.
    let dropped_type =
        telering_core::builtin::nixl_type_of("agent_telemetry_events_dropped").expect("type 20");
    let (reports, reported) = got.get(&dropped_type).copied().unwrap_or_default();
    assert_eq!(reports, 1, "{line}");
    assert!(reported > 0 && reported <= lost, "{reported} of {lost}");
    let in_ring: u64 = got
        .iter()
        .filter(|(t, _)| **t != dropped_type)
        .map(|(_, (count, _))| count)
        .sum();
    assert_eq!(delivered + lost, 3 * 4096, "{line}");
    assert_eq!(in_ring, delivered, "{line}");
}

#[test]
fn nixls_loss_report_is_counted_whole_when_the_ring_has_no_room_for_it() {
    // Four slots for ten events and NIXL's report of 1000 losses: the report cannot
    // have a slot of its own, yet its 1000 are in the trailer, the log and the stats.
    let args = ["--events", "10", "--batches", "1", "--dropped", "1000"];
    let setup = Setup::new();
    let rings = setup.path("rings");
    let (_, err) = run_expecting(
        setup
            .host(&args)
            .env("NIXL_TELEMETRY_DIR", &rings)
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "4")
            .env("TELERING_EXPORTERS", "buffer"),
        0,
    );
    let info = telering_shm::stat(&rings.join("nixl-agent")).unwrap();
    let trailer = info.trailer.expect("a trailer");
    assert_eq!(
        trailer.dropped_staging, 1000,
        "before the ring: {trailer:?}"
    );
    assert_eq!(
        trailer.published + trailer.dropped_ring_full,
        10 + in_band_reports(&rings.join("nixl-agent")),
        "every event the ring was handed is published or counted: {trailer:?}"
    );
    assert!(
        err.contains(
            "telering: warning: NIXL agent `nixl-agent`: 1000 events dropped upstream by NIXL before export"
        ),
        "{err}"
    );
}

/// The in-band loss reports a drained ring held (they went in before it filled).
fn in_band_reports(ring: &std::path::Path) -> u64 {
    read_ring(ring).get(&20).map_or(0, |(count, _)| *count)
}

#[test]
fn each_batch_is_delivered_at_its_end_not_at_the_next_interval() {
    use std::time::{Duration, Instant};
    // telering's flush interval is an hour: only `onBatchEnd` can have delivered the
    // batches while the host holds its exporter.
    let setup = Setup::new();
    let rings = setup.path("rings");
    let host = Holding::start(
        setup
            .host(&[
                "--batches",
                "2",
                "--events",
                "100",
                "--dropped",
                "3",
                "--hold",
            ])
            .env("NIXL_TELEMETRY_DIR", &rings)
            .env("NIXL_TELEMETRY_RUN_INTERVAL", "3600000")
            .env("TELERING_EXPORTERS", "buffer"),
    );
    let want = expected(2, 100, 3);
    let mut got = common::Expected::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while common::split_reports(&got) != common::split_reports(&want) {
        let ring = rings.join("nixl-agent");
        if ring.exists() {
            // Drained: each read takes what is new.
            for (t, (n, sum)) in read_ring(&ring) {
                let entry = got.entry(t).or_default();
                entry.0 += n;
                entry.1 += sum;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the batches were not delivered while the host held its exporter: {got:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    host.release();
}
