//! Loading as NIXL loads: the plug-in reports API version 2 and its name; a plug-in of
//! API version 1 is refused, with NIXL's message, before it is asked for an exporter;
//! a missing file is reported; bad settings make `create_exporter` answer null with a
//! message naming what is wrong, and the host (the agent) goes on.

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

/// Runs the host with `env`; `create_exporter` must answer null and log `message`.
fn refused(env: &[(&str, &str)], args: &[&str], message: &str) {
    let setup = Setup::new();
    let mut cmd = setup.host(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let (_, err) = run_expecting(&mut cmd, 5);
    assert!(
        err.contains("Failed to create telemetry exporter: telering"),
        "{err}"
    );
    assert!(
        err.contains("telering: error: cannot create the exporter of NIXL agent `"),
        "{err}"
    );
    assert!(err.contains(message), "{err}");
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
