//! `telering config` and NIXL's configuration file, run as a user runs them: the
//! file found through `HOME`, the environment winning over it, the demo honouring
//! it, and a broken file stopping every command with one line naming it.

mod common;

use common::*;
use std::path::Path;

/// `telering` with `home` as `HOME` and no `NIXL_CONFIG_FILE`.
fn telering_at_home(home: &Path) -> std::process::Command {
    let mut cmd = telering();
    cmd.env("HOME", home);
    cmd
}

#[test]
fn config_prints_each_value_with_its_source() {
    let home = scratch();
    let cfg = home.path().join(".nixl.cfg");
    std::fs::write(
        &cfg,
        "NIXL_TELEMETRY_BUFFER_SIZE = 8192\nNIXL_TELEMETRY_RUN_INTERVAL = 25\nNIXL_TELEMETRY_PROMETHEUS_LOCAL = true\nNIXL_TELEMETRY_BUFER_SIZE = 64\n",
    )
    .unwrap();
    let o = run_in(
        home.path(),
        telering_at_home(home.path())
            .arg("config")
            .env("NIXL_TELEMETRY_RUN_INTERVAL", "50"),
    );
    let text = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{text}{}", stderr(&o));
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let file = cfg.display().to_string();
    assert_eq!(
        text.lines().next(),
        Some(format!("configuration file: {file}").as_str())
    );
    assert_eq!(
        line("NIXL_TELEMETRY_BUFFER_SIZE"),
        format!("NIXL_TELEMETRY_BUFFER_SIZE 8192 file {file}")
    );
    assert_eq!(
        line("NIXL_TELEMETRY_RUN_INTERVAL"),
        "NIXL_TELEMETRY_RUN_INTERVAL 50 environment"
    );
    assert_eq!(
        line("NIXL_TELEMETRY_PROMETHEUS_LOCAL"),
        format!("NIXL_TELEMETRY_PROMETHEUS_LOCAL true file {file}")
    );
    assert_eq!(
        line("NIXL_TELEMETRY_ENABLE"),
        "NIXL_TELEMETRY_ENABLE off (default)"
    );
    assert_eq!(
        line("NIXL_TELEMETRY_BUFER_SIZE"),
        format!("NIXL_TELEMETRY_BUFER_SIZE 64 file {file}; telering does not read this variable")
    );
}

#[test]
fn config_fails_naming_the_file_and_key_of_a_value_an_agent_would_refuse() {
    let home = scratch();
    let cfg = home.path().join(".nixl.cfg");
    std::fs::write(&cfg, "NIXL_TELEMETRY_BUFFER_SIZE = 1000\n").unwrap();
    let o = run_in(home.path(), telering_at_home(home.path()).arg("config"));
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "configuration file {}, key NIXL_TELEMETRY_BUFFER_SIZE: NIXL_TELEMETRY_BUFFER_SIZE=1000 is not a power of two",
            cfg.display()
        )),
        "{err}"
    );
}

#[test]
fn a_missing_named_file_or_a_broken_one_stops_the_command() {
    let home = scratch();
    let missing = home.path().join("missing.cfg");
    let o = run_in(
        home.path(),
        telering_at_home(home.path())
            .args(["demo", "--events", "10", "--no-serve"])
            .env("NIXL_CONFIG_FILE", &missing),
    );
    assert_fails(&o, 2, &["NIXL_CONFIG_FILE=", "missing.cfg: no such file"]);

    std::fs::write(
        home.path().join(".nixl.cfg"),
        "NIXL_TELEMETRY_ENABLE = = true\n",
    )
    .unwrap();
    for args in [
        &["config"][..],
        &["demo", "--events", "10", "--no-serve"][..],
    ] {
        let o = run_in(home.path(), telering_at_home(home.path()).args(args));
        assert_fails(&o, 2, &[".nixl.cfg is not valid TOML"]);
    }
}

#[test]
fn the_demo_writes_where_the_file_says() {
    let home = scratch();
    let rings = home.path().join("rings-from-file");
    std::fs::write(
        home.path().join(".nixl.cfg"),
        format!("NIXL_TELEMETRY_DIR = '{}'\n", rings.display()),
    )
    .unwrap();
    let o = run_in(
        home.path(),
        telering_at_home(home.path()).args(["demo", "--events", "100", "--no-serve", "--json"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(rings.join("demo-agent").is_file(), "{}", stdout(&o));
}
