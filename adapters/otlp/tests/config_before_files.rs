//! A configuration mistake destroys nothing: with `NIXL_TELEMETRY_EXPORTER=buffer,otlp`
//! (or any order) and a malformed `OTEL_*` variable, every exporter's settings are
//! checked before the `buffer` exporter creates or replaces its ring file, so a ring
//! holding unread events keeps every byte, and the error names the variable.

use std::path::Path;
use telering_std::{ConfigError, EnvSource, Telemetry, TelemetryBuilder};

/// A ring file `dir/agent` of 8192 slots holding 50 events no reader took.
fn ring_with_unread_events(dir: &Path) -> Vec<u8> {
    let telemetry = Telemetry::builder("agent")
        .enabled(true)
        .exporter("buffer")
        .dir(dir)
        .buffer_size(8192)
        .build()
        .unwrap();
    for i in 0..50 {
        telemetry.update_tx_bytes(i);
    }
    drop(telemetry);
    let info = telering_shm::stat(&dir.join("agent")).unwrap();
    assert_eq!((info.capacity, info.fill), (8192, 50), "{info:?}");
    std::fs::read(dir.join("agent")).unwrap()
}

/// A builder for `agent` from `pairs`, with the `otlp` exporter registered.
fn builder(pairs: &[(&str, &str)]) -> TelemetryBuilder {
    let env = EnvSource::from_pairs(pairs.iter().copied());
    let mut builder = TelemetryBuilder::from_env("agent", &env).unwrap();
    telering_otlp::register(builder.registry_mut());
    builder
}

#[test]
fn a_malformed_otlp_variable_leaves_the_ring_file_of_a_list_untouched() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let before = ring_with_unread_events(dir);
    let dir_text = dir.to_str().unwrap();
    for (list, variable, value) in [
        ("buffer,otlp", "OTEL_EXPORTER_OTLP_TIMEOUT", "abc"),
        ("otlp,buffer", "OTEL_EXPORTER_OTLP_TIMEOUT", "abc"),
        ("buffer,otlp", "OTEL_EXPORTER_OTLP_COMPRESSION", "zstd"),
        ("buffer,otlp", "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", "5,1"),
        ("csv,buffer,otlp", "OTEL_METRIC_EXPORT_INTERVAL", "-1"),
    ] {
        let error = builder(&[
            ("NIXL_TELEMETRY_ENABLE", "y"),
            ("NIXL_TELEMETRY_DIR", dir_text),
            ("NIXL_TELEMETRY_EXPORTER", list),
            (variable, value),
        ])
        .build()
        .map(drop)
        .unwrap_err();
        assert!(
            matches!(error, ConfigError::ExporterStart { .. }),
            "{error:?}"
        );
        let text = error.to_string();
        assert!(text.contains(variable), "{list}: {text}");
        assert!(text.contains("`otlp`"), "{list}: {text}");
        assert!(text.contains("nothing was started"), "{list}: {text}");
        assert!(
            std::fs::read(dir.join("agent")).unwrap() == before,
            "{list} with {variable}={value}: the ring file changed"
        );
        assert!(
            !dir.join("agent.csv").exists(),
            "{list}: a CSV file was created"
        );
    }
    // The same agent, configured right, takes the ring over.
    let telemetry = builder(&[
        ("NIXL_TELEMETRY_ENABLE", "y"),
        ("NIXL_TELEMETRY_DIR", dir_text),
        ("NIXL_TELEMETRY_EXPORTER", "buffer,otlp"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
    ])
    .build()
    .unwrap();
    drop(telemetry);
}

#[test]
fn a_malformed_otlp_variable_creates_no_directory() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path().join("not-yet");
    let error = builder(&[
        ("NIXL_TELEMETRY_ENABLE", "y"),
        ("NIXL_TELEMETRY_DIR", dir.to_str().unwrap()),
        ("NIXL_TELEMETRY_EXPORTER", "buffer,otlp"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "abc"),
    ])
    .build()
    .map(drop)
    .unwrap_err();
    assert!(
        error.to_string().contains("OTEL_EXPORTER_OTLP_TIMEOUT"),
        "{error}"
    );
    assert!(!dir.exists(), "{} was created", dir.display());
}
