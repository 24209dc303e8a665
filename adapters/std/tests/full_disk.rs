//! An agent whose ring file cannot be created on a full file system keeps running:
//! `build_or_capture` reports the typed error and captures in process.

use std::process::{Command, Stdio};
use telering_std::{ConfigError, EnvSource, TelemetryBuilder};

#[test]
fn an_agent_on_a_full_file_system_reports_and_keeps_capturing() {
    let top = tempfile::tempdir().unwrap();
    let dir = top.path().join("small");
    std::fs::create_dir(&dir).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        // telering-shm's tests cover the reservation failure where nothing can be
        // mounted; this one needs the real file system.
        eprintln!("cannot mount a tmpfs here; the full-disk agent test did not run");
        return;
    }
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "yes"),
        ("NIXL_TELEMETRY_DIR", dir.to_str().unwrap()),
        ("NIXL_TELEMETRY_BUFFER_SIZE", "65536"),
    ]);
    let (telemetry, error) = TelemetryBuilder::from_env("f1", &env)
        .unwrap()
        .build_or_capture();
    let listing: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    let _ = Command::new("umount").arg(&dir).status();
    let error = error.expect("the ring cannot be created");
    assert!(
        matches!(error, ConfigError::ExporterStart { .. }),
        "{error}"
    );
    let text = error.to_string();
    assert!(text.contains("no room for the ring file"), "{text}");
    assert!(text.contains("3670120 bytes"), "{text}");
    assert!(listing.is_empty(), "nothing left behind: {listing:?}");
    // The agent runs on, capturing per-transfer telemetry in process.
    assert_eq!(telemetry.mode(), &telering_std::Mode::Capture);
    let mut xfer = telemetry.start_xfer(true, 4096, 1);
    telemetry.xfer_completed(&mut xfer).unwrap();
    assert!(telemetry.get_xfer_telemetry(&xfer).is_ok());
}
