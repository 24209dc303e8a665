//! A NIXL host that reports absurd loss counts (`u64::MAX` in each of several
//! reports): the counts saturate at `u64::MAX`, never wrap to a small number, and the
//! host runs to its end.

mod common;

use common::{Setup, run_expecting};

const MAX: &str = "18446744073709551615";

#[test]
fn nixl_loss_reports_of_u64_max_saturate_in_the_trailer_and_the_log() {
    let setup = Setup::new();
    let rings = setup.path("rings");
    let (_, err) = run_expecting(
        setup
            .host(&["--batches", "3", "--events", "10", "--dropped", MAX])
            .env("NIXL_TELEMETRY_DIR", &rings)
            .env("TELERING_EXPORTERS", "buffer"),
        0,
    );
    let trailer = telering_shm::stat(&rings.join("nixl-agent"))
        .unwrap()
        .trailer
        .expect("a trailer");
    assert_eq!(trailer.dropped_staging, u64::MAX, "{trailer:?}");
    assert!(
        trailer.published >= 30,
        "every event NIXL handed over: {trailer:?}"
    );
    assert!(
        err.contains(&format!("{MAX} events dropped upstream by NIXL")),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_degraded_exporter_saturates_nixl_loss_reports_of_u64_max() {
    let setup = Setup::new();
    let (_, err) = run_expecting(
        setup
            .host(&["--batches", "3", "--events", "10", "--dropped", MAX])
            .env("TELERING_EXPORTERS", "kafka"),
        0,
    );
    assert!(
        err.contains(&format!(
            ": 30 events not delivered, {MAX} dropped upstream by NIXL"
        )),
        "{err}"
    );
}

#[test]
fn nixl_loss_reports_of_u64_max_beside_unknown_types_end_with_a_summary_not_a_panic() {
    let setup = Setup::new();
    let rings = setup.path("rings");
    let (out, err) = run_expecting(
        setup
            .host(&[
                "--batches",
                "2",
                "--events",
                "10",
                "--dropped",
                MAX,
                "--unknown",
                "3",
            ])
            .env("NIXL_TELEMETRY_DIR", &rings)
            .env("TELERING_EXPORTERS", "buffer"),
        0,
    );
    assert!(
        out.contains("exported 20 events in 2 batches, 6 not successful"),
        "{out}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("6 events of an unknown NIXL type counted as dropped"),
        "{err}"
    );
    assert!(
        err.contains(&format!("{MAX} events dropped upstream by NIXL")),
        "{err}"
    );
}
