//! `TELERING_PLUGIN_STRICT=1` with a NIXL configuration file that cannot be used: the
//! broken file is itself a bad setting, so the strict agent does not start, and the
//! error names the file; without strict mode the agent runs degraded, counting every
//! event as undelivered. A degraded exporter under many events logs its error once,
//! not once per event.

mod common;

use common::{Setup, run_expecting};

fn broken_file(setup: &Setup) -> std::path::PathBuf {
    let file = setup.path("nixl.toml");
    std::fs::write(&file, "TELERING_EXPORTERS = \"buffer\n[[[ not toml\n").unwrap();
    file
}

#[test]
fn strict_mode_refuses_when_nixls_configuration_file_is_broken() {
    let setup = Setup::new();
    let file = broken_file(&setup);
    let (_, err) = run_expecting(
        setup
            .host(&[])
            .env("NIXL_CONFIG_FILE", &file)
            .env("TELERING_PLUGIN_STRICT", "1"),
        6,
    );
    assert!(err.contains("nixl.toml"), "{err}");
    assert!(
        err.contains("TELERING_PLUGIN_STRICT=1, so create_exporter answers null"),
        "{err}"
    );
}

#[test]
fn a_broken_configuration_file_without_strict_mode_gives_a_degraded_exporter() {
    let setup = Setup::new();
    let file = broken_file(&setup);
    let (out, err) = run_expecting(setup.host(&[]).env("NIXL_CONFIG_FILE", &file), 0);
    assert!(out.contains("100 not successful"), "{out}");
    assert!(
        err.contains(": 100 events not delivered, 0 dropped upstream by NIXL"),
        "{err}"
    );
}

#[test]
fn a_degraded_exporter_under_many_events_logs_a_bounded_number_of_lines() {
    let setup = Setup::new();
    let (out, err) = run_expecting(
        setup
            .host(&["--batches", "200", "--events", "5000", "--dropped", "1"])
            .env("TELERING_EXPORTERS", "kafka")
            .env("NIXL_LOG_LEVEL", "trace"),
        0,
    );
    assert!(
        out.contains("exported 1000000 events in 200 batches, 1000000 not successful"),
        "{out}"
    );
    assert!(err.lines().count() <= 4, "{err}");
    assert!(
        err.contains(": 1000000 events not delivered, 200 dropped upstream by NIXL"),
        "{err}"
    );
}
