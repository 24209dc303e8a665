//! Exporter plug-ins through the C ABI, built from `examples/exporter-plugin/jsonl.c`
//! with the system's C compiler and loaded from `NIXL_PLUGIN_DIR`: every event
//! reaches it, in a list too; each way of failing is an error naming the file; a
//! failing export loses only its own batch, counted and reported to it.

use std::path::{Path, PathBuf};
use std::process::Command;
use telering_std::plugin::PluginError;
use telering_std::{ConfigError, EnvSource, Telemetry};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Compiles `source` (with `defines`) into `dir/libtelemetry_exporter_<name>.so`.
fn build(dir: &Path, name: &str, source: &str, defines: &[&str]) -> PathBuf {
    let out = dir.join(format!("libtelemetry_exporter_{name}.so"));
    let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-I"])
        .arg(format!("{ROOT}/adapters/std/include"))
        .args(defines)
        .arg("-o")
        .arg(&out)
        .arg(source)
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "cc failed for {source}");
    out
}

fn jsonl(dir: &Path) -> PathBuf {
    build(
        dir,
        "jsonl",
        &format!("{ROOT}/examples/exporter-plugin/jsonl.c"),
        &[],
    )
}

fn env(plugins: &Path, out: &Path, exporter: &str) -> EnvSource {
    EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", exporter.to_string()),
        ("NIXL_TELEMETRY_DIR", out.display().to_string()),
        ("NIXL_TELEMETRY_RUN_INTERVAL", "1000".to_string()),
        ("NIXL_PLUGIN_DIR", plugins.display().to_string()),
    ])
}

/// (name, value) of every event line, and every `dropped` count, of a JSON-lines file.
fn read_jsonl(path: &Path) -> (Vec<(String, u64)>, Vec<u64>) {
    let text = std::fs::read_to_string(path).unwrap();
    let (mut events, mut dropped) = (Vec::new(), Vec::new());
    let field = |line: &str, key: &str| -> String {
        let start = line.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
        let rest = &line[start..];
        let end = rest.find([',', '}']).unwrap();
        rest[..end].trim_matches('"').to_string()
    };
    for line in text.lines() {
        if line.starts_with("{\"dropped\":") {
            dropped.push(field(line, "dropped").parse().unwrap());
        } else {
            events.push((field(line, "name"), field(line, "value").parse().unwrap()));
        }
    }
    (events, dropped)
}

fn tx(events: &[(String, u64)]) -> Vec<u64> {
    events
        .iter()
        .filter(|(n, _)| n == "agent_tx_bytes")
        .map(|(_, v)| *v)
        .collect()
}

#[test]
fn a_c_plugin_gets_every_event_alone_and_in_a_list() {
    let plugins = tempfile::tempdir().unwrap();
    jsonl(plugins.path());
    for exporter in ["jsonl", "csv,jsonl"] {
        let out = tempfile::tempdir().unwrap();
        let t = Telemetry::builder("agent-p")
            .apply_env(&env(plugins.path(), out.path(), exporter))
            .unwrap()
            .build()
            .unwrap();
        for v in 1..=500u64 {
            t.update_tx_bytes(v);
            if v % 100 == 0 {
                t.flush().unwrap();
            }
        }
        drop(t);
        let (events, dropped) = read_jsonl(&out.path().join("agent-p.jsonl"));
        assert_eq!(tx(&events), (1..=500).collect::<Vec<_>>(), "{exporter}");
        assert_eq!(dropped, Vec::<u64>::new(), "{exporter}");
        if exporter.starts_with("csv") {
            let csv = std::fs::read_to_string(out.path().join("agent-p.csv")).unwrap();
            assert_eq!(csv.matches(",agent_tx_bytes,").count(), 500);
        }
    }
}

#[test]
fn a_failing_plugin_export_loses_its_batch_only_counted_and_reported_to_it() {
    let plugins = tempfile::tempdir().unwrap();
    jsonl(plugins.path());
    let out = tempfile::tempdir().unwrap();
    let env =
        env(plugins.path(), out.path(), "csv,jsonl").with("NIXL_TELEMETRY_JSONL_FAIL_FIRST", "1");
    let t = Telemetry::builder("agent-f")
        .apply_env(&env)
        .unwrap()
        .build()
        .unwrap();
    for v in 1..=7u64 {
        t.update_tx_bytes(v);
    }
    t.flush().unwrap(); // the plug-in fails this batch of 7
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while t
        .exporter_stats()
        .iter()
        .any(|s| s.events_delivered + s.events_dropped < 7)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            t.exporter_stats()
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    for v in 8..=10u64 {
        t.update_tx_bytes(v);
    }
    t.flush().unwrap();
    while t
        .exporter_stats()
        .iter()
        .any(|s| s.events_delivered + s.events_dropped < 10)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            t.exporter_stats()
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let stats = t.exporter_stats();
    drop(t);
    let plugin = stats.iter().find(|s| s.name == "jsonl").unwrap();
    assert_eq!(
        (
            plugin.events_delivered,
            plugin.events_dropped,
            plugin.export_errors
        ),
        (3, 7, 1)
    );
    let csv = stats.iter().find(|s| s.name == "csv").unwrap();
    assert_eq!((csv.events_delivered, csv.events_dropped), (10, 0));
    let (events, dropped) = read_jsonl(&out.path().join("agent-f.jsonl"));
    assert_eq!(tx(&events), [8, 9, 10]);
    assert_eq!(dropped, [7], "add_dropped got its 7 losses");
    let reports: Vec<u64> = events
        .iter()
        .filter(|(n, _)| n == "agent_telemetry_events_dropped")
        .map(|(_, v)| *v)
        .collect();
    assert_eq!(reports, [7], "one in-band report of its own");
}

/// The build error of `exporter`, and the plug-in error inside it.
fn build_error(plugins: &Path, exporter: &str) -> (String, bool) {
    let out = tempfile::tempdir().unwrap();
    let e = Telemetry::builder("agent-e")
        .apply_env(&env(plugins, out.path(), exporter))
        .unwrap()
        .build()
        .unwrap_err();
    let typed = match &e {
        ConfigError::ExporterStart { source, .. } => std::error::Error::source(source)
            .is_some_and(|s| s.downcast_ref::<PluginError>().is_some()),
        _ => false,
    };
    (e.to_string(), typed)
}

#[test]
fn each_way_a_plugin_cannot_load_is_a_typed_error_naming_the_file() {
    let plugins = tempfile::tempdir().unwrap();
    let dir = plugins.path().display().to_string();
    let lib = |name: &str| format!("{dir}/libtelemetry_exporter_{name}.so");

    // No such library: refused before anything starts, naming the built-in exporters
    // and the folder searched.
    let e = Telemetry::builder("agent-e")
        .apply_env(&env(plugins.path(), plugins.path(), "csv,kafka"))
        .unwrap()
        .resolve()
        .unwrap_err();
    assert!(matches!(e, ConfigError::NoSuchPlugin { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "NIXL_TELEMETRY_EXPORTER=kafka is neither a built-in exporter (buffer, csv, nop) nor a plug-in: \
             NIXL_PLUGIN_DIR={dir} was searched for libtelemetry_exporter_kafka.so: No such file or directory (os error 2); \
             use a built-in name or install the plug-in there"
        )
    );

    // A file that is no library: the loader's own words.
    std::fs::write(lib("junk"), "").unwrap();
    let (text, typed) = build_error(plugins.path(), "junk");
    assert!(typed, "{text}");
    assert!(
        text.contains(&format!(
            "exporter plug-in {} cannot be loaded: file too short",
            lib("junk")
        )),
        "{text}"
    );

    let no_entry = plugins.path().join("no_entry.c");
    std::fs::write(&no_entry, "int something_else(void) { return 1; }\n").unwrap();
    build(plugins.path(), "noentry", no_entry.to_str().unwrap(), &[]);
    let (text, typed) = build_error(plugins.path(), "noentry");
    assert!(typed, "{text}");
    assert!(
        text.contains(&format!(
            "exporter plug-in {} has no `telering_exporter_entry` (undefined symbol: telering_exporter_entry)",
            lib("noentry")
        )),
        "{text}"
    );

    // A table of a future ABI version.
    let future = plugins.path().join("future.c");
    std::fs::write(
        &future,
        "#include \"telering_exporter.h\"\n\
         static const telering_exporter T = { .abi_version = 2u };\n\
         const telering_exporter *telering_exporter_entry(void) { return &T; }\n",
    )
    .unwrap();
    build(plugins.path(), "future", future.to_str().unwrap(), &[]);
    let (text, typed) = build_error(plugins.path(), "future");
    assert!(typed, "{text}");
    assert!(
        text.contains(&format!(
            "exporter plug-in {} has ABI version 2; this telering loads version 1",
            lib("future")
        )),
        "{text}"
    );

    // `init` fails: the sample needs NIXL_TELEMETRY_DIR.
    jsonl(plugins.path());
    let e = Telemetry::builder("agent-e")
        .apply_env(&EnvSource::from_pairs([
            ("NIXL_TELEMETRY_ENABLE", "y"),
            ("NIXL_TELEMETRY_EXPORTER", "jsonl"),
            ("NIXL_PLUGIN_DIR", dir.as_str()),
        ]))
        .unwrap()
        .build()
        .unwrap_err();
    assert!(
        e.to_string().contains(&format!(
            "exporter plug-in {}: init failed with 2",
            lib("jsonl")
        )),
        "{e}"
    );

    // Without NIXL_PLUGIN_DIR an unknown name is the usual configuration error.
    let e = Telemetry::builder("agent-e")
        .apply_env(&EnvSource::from_pairs([
            ("NIXL_TELEMETRY_ENABLE", "y"),
            ("NIXL_TELEMETRY_EXPORTER", "jsonl"),
        ]))
        .unwrap()
        .resolve()
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("NIXL_TELEMETRY_EXPORTER=jsonl is not a known exporter"),
        "{e}"
    );
}

#[test]
fn a_name_that_cannot_name_a_library_is_refused_before_anything_is_loaded() {
    // A `/` would make the library path leave NIXL_PLUGIN_DIR.
    let plugins = tempfile::tempdir().unwrap();
    let (text, typed) = build_error(plugins.path(), "../jsonl");
    assert!(typed, "{text}");
    assert!(
        text.contains("\"../jsonl\", which is no exporter and cannot name a plug-in"),
        "{text}"
    );
}
