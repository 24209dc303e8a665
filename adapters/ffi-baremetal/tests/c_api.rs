//! The bare-metal C API from a real C program, built with gcc on the host against
//! this crate's static library; its frames decoded with telering-embedded-io.

use std::path::{Path, PathBuf};
use std::process::Command;
use telering_embedded_io::FrameDecoder;

/// The static library cargo built for this test run, next to the test executable:
/// `libtelering_firmware-<hash>.a`. Builds with other feature sets leave other
/// hashes; the newest is the one cargo just brought up to date.
fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap();
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("libtelering_firmware") && name.ends_with(".a")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
        .unwrap_or_else(|| panic!("no libtelering_firmware*.a in {}", dir.display()))
}

#[test]
fn c_program_records_drops_drains_and_frames_through_the_firmware_api() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir().unwrap();
    let exe = scratch.path().join("firmware_api");
    let output = Command::new("gcc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"])
        .arg("-I")
        .arg(crate_dir.join("include"))
        .arg(crate_dir.join("tests/c/firmware_api.c"))
        .arg("-o")
        .arg(&exe)
        .arg(static_lib())
        .args(["-lpthread", "-ldl", "-lm"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );

    let mut decoder = FrameDecoder::new();
    let events: Vec<_> = decoder
        .feed(&run.stdout)
        .map(|r| r.expect("every frame decodes"))
        .collect();
    assert_eq!(decoder.finish(), None);
    let got: Vec<(String, i32, u64, u64)> = events
        .iter()
        .map(|e| {
            (
                e.name().unwrap().to_string(),
                e.raw_category(),
                e.value(),
                e.timestamp_us(),
            )
        })
        .collect();
    let expected = vec![
        ("dpu_doorbell".to_string(), 7, 60, 160),
        ("dpu_doorbell".to_string(), 7, 61, 161),
        ("dpu_doorbell".to_string(), 7, 62, 162),
        ("agent_telemetry_events_dropped".to_string(), 4, 7, 200),
        ("dpu_doorbell".to_string(), 7, 70, 200),
        ("dpu_temp_millicelsius".to_string(), 6, 41250, 300),
    ];
    assert_eq!(got, expected);
    assert_eq!(decoder.frames_missing(), 0);
}
