//! A C agent whose configuration is wrong in its last exporter (`buffer,otlp` with a
//! malformed `OTEL_*` variable) is refused before anything is created or replaced:
//! the ring file an earlier run left, with events nobody read, keeps every byte, and
//! the error names the variable. Through `telering_create` (`options.exporter`) and
//! `telering_create_from_env` (`NIXL_TELEMETRY_EXPORTER`), in `exporter_list.c`.

mod common;

use common::{compile, program, run_ok};
use telering_std::Telemetry;

#[test]
fn a_c_agent_misconfigured_in_its_last_exporter_leaves_the_ring_file_untouched() {
    let scratch = tempfile::tempdir().unwrap();
    let rings = scratch.path().join("rings");
    // The ring of the program's agent, `c-list`: 8192 slots, 50 unread events.
    let telemetry = Telemetry::builder("c-list")
        .enabled(true)
        .exporter("buffer")
        .dir(&rings)
        .buffer_size(8192)
        .build()
        .unwrap();
    for i in 0..50 {
        telemetry.update_tx_bytes(i);
    }
    drop(telemetry);
    let ring = rings.join("c-list");
    let before = std::fs::read(&ring).unwrap();

    let exe = compile("exporter_list.c", scratch.path());
    let out = run_ok(
        program(&exe)
            .env_remove("NIXL_CONFIG_FILE")
            .env_remove("NIXL_TELEMETRY_BUFFER_SIZE")
            .env("OTEL_EXPORTER_OTLP_TIMEOUT", "abc")
            .arg(&rings)
            .args(["buffer,otlp", "otlp,buffer"]),
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    for line in lines {
        assert!(line.contains(" TELERING_ERR_CONFIG "), "{line}");
        assert!(line.contains("OTEL_EXPORTER_OTLP_TIMEOUT"), "{line}");
    }
    assert!(
        std::fs::read(&ring).unwrap() == before,
        "the ring file changed"
    );
    let names: Vec<_> = std::fs::read_dir(&rings)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["c-list"], "nothing else was created");
}
