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

/// Set in the child process that runs under the file size limit.
const CHILD: &str = "TELERING_TEST_CSV_SIZE_LIMIT_CHILD";

/// The CSV exporter on a file system that refuses its writes (a file size limit,
/// `RLIMIT_FSIZE`, with `SIGXFSZ` ignored, so that writes fail with `EFBIG` as on a
/// full disk; no root needed): the losses are the exporter's, never the recording's,
/// it says it is failing while writes fail and recovers when one succeeds, and every
/// recorded event is delivered or counted.
#[test]
fn csv_write_failures_are_the_exporters_losses_and_it_says_it_is_failing() {
    let exe = std::env::current_exe().unwrap();
    let test = "csv_under_a_file_size_limit";
    let script = format!(
        "trap '' XFSZ; ulimit -f 1; exec '{}' --exact {test} --ignored --nocapture",
        exe.display()
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "the child ran: {stdout}\n{stderr}"
    );
    assert!(stderr.contains("csv limit child done"), "{stderr}");
}

/// The child of the test above: runs only under its limit.
#[test]
#[ignore = "run by csv_write_failures_are_the_exporters_losses_and_it_says_it_is_failing under a file size limit"]
fn csv_under_a_file_size_limit() {
    use std::time::Duration;
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let telemetry = TelemetryBuilder::new("full")
        .enabled(true)
        .exporter("csv")
        .dir(dir.path())
        .lane_capacity(4096)
        .early_flush(false)
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    // Within the limit: written.
    for v in 0..3 {
        telemetry.update_tx_bytes(v);
    }
    telemetry.flush().unwrap();
    let s = telemetry.stats();
    assert_eq!((s.events_exported, s.exporter_failing), (3, false), "{s:?}");
    // Ten batches the limit refuses.
    for round in 1..=10u64 {
        for v in 0..1000 {
            telemetry.update_tx_bytes(v);
        }
        let _ = telemetry.flush();
        let s = telemetry.stats();
        assert!(s.exporter_failing, "round {round}: {s:?}");
        assert_eq!(
            s.events_dropped, 0,
            "nothing was lost at record time: {s:?}"
        );
        assert_eq!(s.exporter_dropped, 1000 * round, "{s:?}");
        assert_eq!(s.export_errors, round, "{s:?}");
        let csv = &telemetry.exporter_stats()[0];
        assert!(
            csv.exporter_failing && csv.events_dropped == 1000 * round,
            "{csv:?}"
        );
    }
    // One event fits again (with the in-band report of the 10 000): recovered.
    telemetry.update_tx_bytes(7);
    telemetry.flush().unwrap();
    let s = telemetry.stats();
    assert!(!s.exporter_failing, "{s:?}");
    assert_eq!(s.events_recorded, 10_004, "{s:?}");
    assert_eq!(
        s.events_recorded,
        s.events_exported + s.events_dropped + s.exporter_dropped + s.events_undelivered,
        "{s:?}"
    );
    assert_eq!(
        (s.events_exported, s.exporter_dropped),
        (4, 10_000),
        "{s:?}"
    );
    // The file holds exactly the events counted as exported, and the report.
    let text = std::fs::read_to_string(dir.path().join("full.csv")).unwrap();
    let rows: Vec<&str> = text.split_terminator("\r\n").skip(1).collect();
    assert_eq!(rows.len(), 5, "{text}");
    assert!(
        rows[4].ends_with(",agent_telemetry_events_dropped,10000"),
        "{text}"
    );
    drop(telemetry);
    eprintln!("csv limit child done");
}
