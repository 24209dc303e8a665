//! The plug-in under valgrind's memcheck in the NIXL-shaped host: loading, creating,
//! batches of events (NIXL's loss reports too), destruction, fini and dlclose, with
//! no invalid access, no uninitialised value used and no leak. `.ci/run` installs
//! valgrind and runs these with `--ignored`.

mod common;

use common::{Setup, run_expecting};

const MEMCHECK: &[&str] = &[
    "valgrind",
    "--error-exitcode=1",
    "--leak-check=full",
    "--errors-for-leak-kinds=definite,indirect",
    "--quiet",
];

#[test]
#[ignore = "needs valgrind"]
fn the_plugin_is_clean_under_memcheck_with_a_ring_file_and_prometheus() {
    let setup = Setup::new();
    let rings = setup.path("rings");
    let (out, err) = run_expecting(
        setup
            .host_under(
                Some(MEMCHECK),
                &["--batches", "3", "--events", "200", "--dropped", "4"],
            )
            .env("TELERING_EXPORTERS", "buffer,prometheus")
            .env("NIXL_TELEMETRY_PROMETHEUS_PORT", "0")
            .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "y")
            .env("TELERING_RING_LAYOUT", "v4")
            .env("NIXL_TELEMETRY_DIR", &rings),
        0,
    );
    assert!(out.contains("exported 600 events in 3 batches"), "{out}");
    assert!(!err.contains("=="), "valgrind reported:\n{err}");
    common::assert_same_events(
        &common::read_ring(&rings.join("nixl-agent")),
        &common::expected(3, 200, 4),
    );
}

#[test]
#[ignore = "needs valgrind"]
fn a_degraded_and_a_refused_exporter_are_clean_under_memcheck() {
    let setup = Setup::new();
    for (strict, code) in [("0", 0), ("1", 6)] {
        let (_, err) = run_expecting(
            setup
                .host_under(Some(MEMCHECK), &["--dropped", "3"])
                .env("TELERING_EXPORTERS", "kafka")
                .env("TELERING_PLUGIN_STRICT", strict),
            code,
        );
        assert!(
            err.contains("TELERING_EXPORTERS=kafka is not a known exporter"),
            "{err}"
        );
        assert!(!err.contains("=="), "valgrind reported:\n{err}");
    }
}

#[test]
#[ignore = "needs valgrind"]
fn the_plugin_is_clean_under_memcheck_pushing_to_a_collector_that_is_down() {
    #[path = "../../otlp/tests/common/failing.rs"]
    mod failing;
    let setup = Setup::new();
    let down = failing::down();
    let (_, err) = run_expecting(
        setup
            .host_under(Some(MEMCHECK), &["--batches", "2", "--events", "100"])
            .env("TELERING_EXPORTERS", "otlp")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &down.endpoint)
            .env("OTEL_EXPORTER_OTLP_TIMEOUT", "500"),
        0,
    );
    assert!(
        err.contains("exporter `otlp` delivered 0 events, lost 200"),
        "{err}"
    );
    assert!(!err.contains("=="), "valgrind reported:\n{err}");
}
