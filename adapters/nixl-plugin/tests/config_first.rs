//! The reported case, in process: a ring file with 50 unread events in 8192 slots,
//! then an agent whose plug-in is configured with `TELERING_EXPORTERS=buffer,otlp`
//! and `OTEL_EXPORTER_OTLP_TIMEOUT=abc`. The exporter is refused naming the
//! variable, and the ring file keeps every byte (it is not replaced by one of 4096
//! slots before the OTLP setting is read). A list error names `TELERING_EXPORTERS`.

use telemetry_exporter_telering::PluginExporter;
use telering_std::{EnvSource, Telemetry};

#[test]
fn a_malformed_otlp_variable_in_the_plugins_list_leaves_the_ring_file_untouched() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let telemetry = Telemetry::builder("nixl-agent")
        .enabled(true)
        .dir(dir)
        .buffer_size(8192)
        .build()
        .unwrap();
    for i in 0..50 {
        telemetry.update_tx_bytes(i);
    }
    drop(telemetry);
    let ring = dir.join("nixl-agent");
    let before = std::fs::read(&ring).unwrap();

    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_EXPORTER", "telering"),
        ("NIXL_TELEMETRY_DIR", dir.to_str().unwrap()),
        ("TELERING_EXPORTERS", "buffer,otlp"),
        ("OTEL_EXPORTER_OTLP_TIMEOUT", "abc"),
    ]);
    let error = PluginExporter::create("nixl-agent", 4096, &env).unwrap_err();
    assert!(
        error.to_string().contains("OTEL_EXPORTER_OTLP_TIMEOUT"),
        "{error}"
    );
    assert!(
        std::fs::read(&ring).unwrap() == before,
        "the ring file changed"
    );

    let env = env.with("TELERING_EXPORTERS", "buffer,,otlp");
    let error = PluginExporter::create("nixl-agent", 4096, &env).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("TELERING_EXPORTERS=buffer,,otlp has an empty entry at position 2"),
        "{error}"
    );
    assert!(
        std::fs::read(&ring).unwrap() == before,
        "the ring file changed"
    );
}
