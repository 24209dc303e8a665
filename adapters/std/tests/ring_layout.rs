//! `TELERING_RING_LAYOUT` and `TelemetryBuilder::ring_layout`: the `buffer`
//! exporter writes NIXL's version-4 ring when asked, counts what version 4 cannot
//! hold, and refuses an unknown layout with a typed error naming the variable.

use std::time::Duration;
use telering_core::Category;
use telering_core::builtin::ErrorStatus;
use telering_shm::{DrainingReader, Generation, RingLayout};
use telering_std::{ConfigError, EnvSource, TelemetryBuilder};

fn env_in(dir: &std::path::Path, layout: &str) -> EnvSource {
    EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "yes"),
        ("NIXL_TELEMETRY_DIR", dir.to_str().unwrap()),
        ("TELERING_RING_LAYOUT", layout),
    ])
}

#[test]
fn the_buffer_exporter_writes_version_4_when_the_variable_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let telemetry = TelemetryBuilder::from_env("agent-v4", &env_in(dir.path(), "v4"))
        .unwrap()
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    telemetry.update_tx_bytes(4096);
    telemetry.update_error_count(ErrorStatus::Backend);
    telemetry
        .record(Category::Custom, "queue_depth", 3)
        .unwrap();
    telemetry.update_rx_bytes(512);
    telemetry.flush().unwrap();

    assert!(
        !telemetry.stamps_events(),
        "version 4 has no timestamp field, so recording must read no clock"
    );
    let path = dir.path().join("agent-v4");
    let info = telering_shm::stat(&path).unwrap();
    assert_eq!(info.generation, Generation::V4);
    assert_eq!(info.trailer.unwrap().dropped_unrepresentable, 1);
    let mut reader = DrainingReader::open(&path).unwrap();
    let mut got = Vec::new();
    reader
        .read_records(usize::MAX, |r| {
            got.push((r.name_lossy().into_owned(), r.timestamp_us, r.value))
        })
        .unwrap();
    assert_eq!(
        got,
        [
            ("agent_tx_bytes".to_string(), None, 4096),
            ("agent_err_backend".to_string(), None, 1),
            ("agent_rx_bytes".to_string(), None, 512),
        ]
    );
}

#[test]
fn the_builder_option_chooses_the_layout_and_v1_stays_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "yes"),
        ("NIXL_TELEMETRY_DIR", dir.path().to_str().unwrap()),
    ]);
    for (name, layout, generation) in [
        ("default", None, Generation::V1),
        ("v4", Some(RingLayout::V4), Generation::V4),
    ] {
        let mut builder = TelemetryBuilder::from_env(name, &env).unwrap();
        if let Some(layout) = layout {
            builder = builder.ring_layout(layout);
        }
        let telemetry = builder.build().unwrap();
        // Only version 4 lacks a timestamp field, and only then is no clock read.
        assert_eq!(
            telemetry.stamps_events(),
            generation != Generation::V4,
            "{name}"
        );
        telemetry.update_tx_bytes(1);
        telemetry.flush().unwrap();
        let info = telering_shm::stat(&dir.path().join(name)).unwrap();
        assert_eq!(info.generation, generation, "{name}");
    }
}

#[test]
fn an_unknown_layout_is_a_typed_error_naming_the_variable_and_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    let err = TelemetryBuilder::from_env("agent", &env_in(dir.path(), "nixl4")).unwrap_err();
    assert!(matches!(err, ConfigError::RingLayout(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("TELERING_RING_LAYOUT=nixl4"), "{text}");
    assert!(text.contains("v1") && text.contains("v4"), "{text}");
    assert!(!dir.path().join("agent").exists());
}
