//! Loading as NIXL loads: the plug-in reports API version 2 and its name; a plug-in of
//! API version 1 is refused, with NIXL's message, before it is asked for an exporter;
//! a missing file is reported. A bad telering setting never stops the agent: it is
//! logged at NIXL's error level, naming what is wrong, and `create_exporter` answers a
//! degraded exporter that counts every event as undelivered; with
//! `TELERING_PLUGIN_STRICT=1` it answers null, and a host that throws then (NIXL's
//! main branch, 1.3.0, 1.3.1, 1.4.0) does not start.

mod common;

use common::{Setup, compile_cpp, run_expecting};

#[test]
fn the_plugin_reports_api_version_2_and_its_name() {
    let setup = Setup::new();
    let (out, _) = run_expecting(
        setup
            .host(&["--events", "0"])
            .env("TELERING_EXPORTERS", "nop"),
        0,
    );
    assert!(
        out.contains(&format!("loaded telering {}", env!("CARGO_PKG_VERSION"))),
        "{out}"
    );
}

#[test]
fn a_plugin_of_api_version_1_is_refused_with_a_message() {
    let setup = Setup::new();
    compile_cpp(
        "tests/cpp/v1_plugin.cpp",
        &setup.path("plugins/libtelemetry_exporter_v1.so"),
        true,
    );
    let (_, err) = run_expecting(&mut setup.host(&["--name", "v1"]), 4);
    let path = setup.path("plugins/libtelemetry_exporter_v1.so");
    assert!(
        err.contains(&format!(
            "Plugin API version mismatch for {}: expected 2, got 1",
            path.display()
        )),
        "{err}"
    );
    assert!(!err.contains("create_exporter called"), "{err}");
}

#[test]
fn a_missing_plugin_file_is_reported() {
    let setup = Setup::new();
    let (_, err) = run_expecting(&mut setup.host(&["--name", "absent"]), 3);
    assert!(err.contains("Plugin file does not exist"), "{err}");
}

/// Runs the host with `env`, as NIXL's main branch (a null exporter throws): the
/// agent must start with a degraded exporter and the error logged with `message`;
/// with `TELERING_PLUGIN_STRICT=1`, the agent must not start.
fn refused(env: &[(&str, &str)], args: &[&str], message: &str) {
    let setup = Setup::new();
    let host = |strict: Option<&str>| {
        let mut cmd = setup.host(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        if let Some(strict) = strict {
            cmd.env("TELERING_PLUGIN_STRICT", strict);
        }
        cmd
    };
    let (out, err) = run_expecting(&mut host(None), 0);
    assert!(
        out.contains("exported 100 events in 1 batches, 100 not successful"),
        "{out}"
    );
    assert!(
        err.contains("telering: error: cannot create the exporter of NIXL agent `"),
        "{err}"
    );
    assert!(err.contains(message), "{err}");
    assert!(
        err.contains("; the agent runs with telering not exporting, its events counted as undelivered (TELERING_PLUGIN_STRICT=1 refuses the exporter instead)"),
        "{err}"
    );
    assert!(
        err.contains(": 100 events not delivered, 0 dropped upstream by NIXL"),
        "{err}"
    );

    let (_, err) = run_expecting(&mut host(Some("1")), 6);
    assert!(
        err.contains(
            "nixl_host: the agent did not start: Failed to create telemetry exporter: telering"
        ),
        "{err}"
    );
    assert!(err.contains(message), "{err}");
    assert!(
        err.contains("TELERING_PLUGIN_STRICT=1, so create_exporter answers null"),
        "{err}"
    );
}

#[test]
fn an_unknown_exporter_name_is_refused_naming_the_variable() {
    refused(
        &[("TELERING_EXPORTERS", "otlp,kafka")],
        &[],
        "cannot create the exporter of NIXL agent `nixl-agent`: TELERING_EXPORTERS=kafka is not a known exporter; use one of: buffer, csv, nop, otlp, prometheus, prometheus_mp",
    );
}

#[test]
fn naming_the_plugin_itself_is_refused() {
    refused(
        &[("TELERING_EXPORTERS", "telering")],
        &[],
        "TELERING_EXPORTERS names `telering`, this plug-in",
    );
}

#[test]
fn no_exporters_and_no_directory_is_refused() {
    refused(
        &[],
        &[],
        "TELERING_EXPORTERS is not set and neither is NIXL_TELEMETRY_DIR",
    );
}

#[test]
fn a_missing_configuration_file_is_refused() {
    refused(
        &[
            ("TELERING_EXPORTERS", "nop"),
            ("NIXL_CONFIG_FILE", "/nonexistent/nixl.toml"),
        ],
        &[],
        "NIXL_CONFIG_FILE=/nonexistent/nixl.toml: no such file",
    );
}

#[test]
fn an_agent_name_telering_cannot_use_is_refused() {
    refused(
        &[
            ("TELERING_EXPORTERS", "csv"),
            ("NIXL_TELEMETRY_DIR", "/tmp"),
        ],
        &["--agent", "rank/0"],
        "cannot create the exporter of NIXL agent `rank/0`: agent name \"rank/0\" cannot name the telemetry file",
    );
}

#[test]
fn a_bad_telemetry_variable_is_refused_naming_it() {
    refused(
        &[
            ("TELERING_EXPORTERS", "nop"),
            ("NIXL_TELEMETRY_BUFFER_SIZE", "1000"),
        ],
        &[],
        "NIXL_TELEMETRY_BUFFER_SIZE=1000 is not a power of two",
    );
}

#[test]
fn the_exporters_come_from_nixls_configuration_file() {
    let setup = Setup::new();
    let file = setup.path("nixl.toml");
    std::fs::write(&file, "TELERING_EXPORTERS = \"csv\"\n").unwrap();
    let dir = setup.path("out");
    run_expecting(
        setup
            .host(&["--events", "40"])
            .env("NIXL_CONFIG_FILE", &file)
            .env("NIXL_TELEMETRY_DIR", &dir),
        0,
    );
    let csv = std::fs::read_to_string(dir.join("nixl-agent.csv")).unwrap();
    assert_eq!(
        csv.lines()
            .filter(|l| l.contains(",agent_tx_bytes,"))
            .count(),
        2
    );
}

#[test]
fn a_degraded_exporter_counts_every_event_and_nixls_losses() {
    let setup = Setup::new();
    let (out, err) = run_expecting(
        setup
            .host(&[
                "--batches",
                "3",
                "--events",
                "50",
                "--dropped",
                "5",
                "--no-batch-hooks",
            ])
            .env("TELERING_EXPORTERS", "kafka"),
        0,
    );
    // Every event answered NIXL_ERR_BACKEND; NIXL's loss reports were taken.
    assert!(
        out.contains("exported 150 events in 3 batches, 150 not successful"),
        "{out}"
    );
    let closing = err
        .lines()
        .find(|l| l.contains("telering exported nothing"))
        .unwrap_or_else(|| panic!("a closing summary: {err}"));
    assert_eq!(
        closing,
        "telering: error: NIXL agent `nixl-agent`: telering exported nothing (TELERING_EXPORTERS=kafka is not a known exporter; use one of: buffer, csv, nop, otlp, prometheus, prometheus_mp (or put a telering exporter plug-in libtelemetry_exporter_kafka.so in NIXL_PLUGIN_DIR)): 150 events not delivered, 15 dropped upstream by NIXL"
    );
    // Logged once at creation; the repeat is at most once a minute (`degraded::Repeat`).
    assert_eq!(err.matches("telering is not exporting").count(), 0, "{err}");
    assert_eq!(
        err.matches("cannot create the exporter").count(),
        1,
        "{err}"
    );
}

#[test]
fn strict_mode_with_a_host_that_goes_on_without_telemetry() {
    let setup = Setup::new();
    let (out, err) = run_expecting(
        setup
            .host(&["--null-exporter", "continue"])
            .env("TELERING_EXPORTERS", "kafka")
            .env("TELERING_PLUGIN_STRICT", "yes"),
        5,
    );
    assert!(
        err.contains("nixl_host: Failed to create telemetry exporter: telering"),
        "{err}"
    );
    assert!(!out.contains("exported"), "{out}");
}

#[test]
fn strict_mode_off_or_unset_gives_a_degraded_exporter() {
    let setup = Setup::new();
    for strict in ["0", "", "off"] {
        let (out, _) = run_expecting(
            setup
                .host(&[])
                .env("TELERING_EXPORTERS", "kafka")
                .env("TELERING_PLUGIN_STRICT", strict),
            0,
        );
        assert!(out.contains("100 not successful"), "{strict}: {out}");
    }
}

#[test]
fn a_bad_strict_value_is_a_bad_setting_and_does_not_stop_the_agent() {
    refused_without_strict(
        &[
            ("TELERING_EXPORTERS", "nop"),
            ("TELERING_PLUGIN_STRICT", "sure\u{1b}[2J"),
        ],
        "TELERING_PLUGIN_STRICT=sure\\u{1b}[2J is not a boolean; use 1 to refuse the exporter on a bad setting, or 0",
    );
}

/// As [`refused`], without the strict run (the strict variable is the bad setting).
fn refused_without_strict(env: &[(&str, &str)], message: &str) {
    let setup = Setup::new();
    let mut cmd = setup.host(&[]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (out, err) = run_expecting(&mut cmd, 0);
    assert!(out.contains("100 not successful"), "{out}");
    assert!(err.contains(message), "{err}");
    assert!(!err.contains('\u{1b}'), "{err:?}");
}

#[test]
fn strict_mode_may_be_set_in_nixls_configuration_file() {
    let setup = Setup::new();
    let file = setup.path("nixl.toml");
    std::fs::write(
        &file,
        "TELERING_EXPORTERS = \"kafka\"\nTELERING_PLUGIN_STRICT = true\n",
    )
    .unwrap();
    let (_, err) = run_expecting(setup.host(&[]).env("NIXL_CONFIG_FILE", &file), 6);
    assert!(
        err.contains("TELERING_PLUGIN_STRICT=1, so create_exporter answers null"),
        "{err}"
    );
}
