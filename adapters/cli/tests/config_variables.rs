//! `telering config` lists every variable telering reads and checks each with the
//! agents' own parsers: a value an agent would refuse is exit code 2, whether or not
//! exporting is enabled; a blank variable is unset and shows its default.

mod common;

use common::*;
use std::path::{Path, PathBuf};

/// The workspace's directory.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.map(Result::unwrap) {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `text` spells a variable of telering's families (not a prefix).
fn is_variable_name(text: &str) -> bool {
    ["NIXL_", "TELERING_", "OTEL_"]
        .iter()
        .any(|p| text.starts_with(p))
        && text
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && !text.ends_with('_')
}

/// Every variable name the libraries' and programs' sources read: the string
/// constants naming a variable (`const ENV_PORT: &str = "NIXL_TELEMETRY_…"`, how
/// every crate names the variables it reads) and literal `var("…")` calls.
fn variables_read_in_sources() -> Vec<(String, PathBuf)> {
    let root = workspace();
    let mut files = Vec::new();
    rust_files(&root.join("core/src"), &mut files);
    rust_files(&root.join("python/src"), &mut files);
    for adapter in std::fs::read_dir(root.join("adapters")).unwrap() {
        rust_files(&adapter.unwrap().path().join("src"), &mut files);
    }
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines() {
            let line = line.trim();
            let literal = if line.contains("const ") && line.contains(": &str = \"") {
                line.split('"').nth(1)
            } else if let Some(at) = line.find("var(\"").or_else(|| line.find("var_os(\"")) {
                line[at..].split('"').nth(1)
            } else {
                None
            };
            if let Some(name) = literal.filter(|n| is_variable_name(n)) {
                found.push((name.to_string(), file.clone()));
            }
        }
    }
    found
}

#[test]
fn config_lists_every_variable_read_anywhere_in_the_workspace() {
    let read = variables_read_in_sources();
    // The scan finds the variables of each crate that reads some.
    for sample in [
        "NIXL_TELEMETRY_BUFFER_SIZE",
        "NIXL_TELEMETRY_MP_STALE_TTL",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "TELERING_OTLP_SHUTDOWN_TIMEOUT",
        "TELERING_EXPORTERS",
        "NIXL_LOG_LEVEL",
        "TELERING_LOG",
    ] {
        assert!(read.iter().any(|(n, _)| n == sample), "{sample} not found");
    }
    let listed: Vec<&str> = telering_cli::config::VARIABLES
        .iter()
        .map(|(n, _)| *n)
        .collect();
    for (name, file) in &read {
        assert!(
            listed.contains(&name.as_str()),
            "{name} is read in {} but `telering config` does not list it",
            file.display()
        );
    }
    let out = run_in(
        workspace().as_path(),
        telering().arg("config").env("HOME", "/nonexistent"),
    );
    let text = stdout(&out);
    for name in listed {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} missing in:\n{text}"
        );
    }
}

#[test]
fn config_refuses_what_an_agent_refuses_even_with_exporting_off() {
    let dir = scratch();
    for (name, value, needle) in [
        (
            "NIXL_TELEMETRY_EXPORTER",
            "buffer,,csv",
            "empty entry at position 2",
        ),
        (
            "NIXL_TELEMETRY_MP_STALE_TTL",
            "-1",
            "is not a number of seconds",
        ),
        (
            "NIXL_TELEMETRY_RANK_ENV",
            "1abc",
            "is not an environment variable name",
        ),
        (
            "NIXL_TELEMETRY_DIR",
            "/etc/passwd",
            "is a regular file, not a directory",
        ),
        (
            "TELERING_EXPORTERS",
            "nop,kafka",
            "TELERING_EXPORTERS=kafka is not a known exporter",
        ),
        (
            "OTEL_EXPORTER_OTLP_COMPRESSION",
            "zstd",
            "OTEL_EXPORTER_OTLP_COMPRESSION",
        ),
        (
            "TELERING_OTLP_SHUTDOWN_TIMEOUT",
            "never",
            "TELERING_OTLP_SHUTDOWN_TIMEOUT",
        ),
    ] {
        let out = run_in(
            dir.path(),
            telering()
                .arg("config")
                .env("HOME", dir.path())
                .env(name, value),
        );
        assert_fails(&out, 2, &[needle]);
        assert!(
            stdout(&out).contains(value),
            "{name}: the table is still printed"
        );
    }
    // Checking creates nothing.
    let missing = dir.path().join("not/yet");
    let out = run_in(
        dir.path(),
        telering()
            .arg("config")
            .env("HOME", dir.path())
            .env("NIXL_TELEMETRY_DIR", &missing),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!missing.exists() && !dir.path().join("not").exists());
}

#[test]
fn a_blank_variable_shows_its_default_and_why() {
    let dir = scratch();
    let out = run_in(
        dir.path(),
        telering()
            .arg("config")
            .env("HOME", dir.path())
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "  ")
            .env("TELERING_EXPORTERS", "nop"),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing in:\n{text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        line("NIXL_TELEMETRY_BUFFER_SIZE"),
        "NIXL_TELEMETRY_BUFFER_SIZE 4096 (default) blank in the environment, which counts as unset"
    );
    assert_eq!(
        line("TELERING_EXPORTERS"),
        "TELERING_EXPORTERS nop environment"
    );
}

#[test]
fn a_telering_key_inside_a_toml_table_is_refused_naming_it() {
    let dir = scratch();
    let cfg = dir.path().join("nixl.cfg");
    std::fs::write(
        &cfg,
        "UCX_TLS = 'rc'\n[NIXL]\nNIXL_TELEMETRY_DIR = '/tmp/t'\n",
    )
    .unwrap();
    for args in [&["config"][..], &["top", "--once"][..]] {
        let out = run_in(
            dir.path(),
            telering().args(args).env("NIXL_CONFIG_FILE", &cfg),
        );
        assert_fails(
            &out,
            2,
            &[
                "key NIXL.NIXL_TELEMETRY_DIR",
                "only as top-level keys",
                "above the first [table] header",
            ],
        );
    }
}
