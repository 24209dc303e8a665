//! The standard-library Python reader in `examples/python/nixl_telemetry_reader.py`
//! reads files this crate writes, through the API NIXL's telemetry guide documents.

mod common;

use common::TempDir;
use std::path::{Path, PathBuf};
use std::process::Command;
use telering_core::{Category, Event, EventName};
use telering_shm::{DrainingReader, ShmWriter, WriterOptions, stat};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/python/nixl_telemetry_reader.py")
}

fn python(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new("python3")
        .args(args)
        .env("TZ", "UTC")
        .env("PYTHONPATH", script().parent().unwrap())
        .current_dir(dir)
        .output()
        .expect("python3 runs")
}

fn event(ts: u64, category: Category, name: &str, value: u64) -> Event {
    Event::new(ts, category, EventName::new(name).unwrap(), value)
}

#[test]
fn the_script_prints_every_event_in_the_cli_block_format_and_drains_the_ring() {
    let dir = TempDir::new("py-script");
    let mut w = ShmWriter::create(WriterOptions::new(dir.path(), "agent")).unwrap();
    w.write_batch(&[
        event(
            1_736_951_425_123_456,
            Category::Transfer,
            "agent_tx_bytes",
            1_048_576,
        ),
        event(
            1_709_251_199_999_999,
            Category::Error,
            "NIXL_ERR_BACKEND",
            3,
        ),
    ]);
    let path = w.path().to_str().unwrap().to_string();
    let out = python(
        &[script().to_str().unwrap(), "--telemetry_path", &path],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "=== Telemetry Event ===\n\
         Timestamp: 2025-01-15 14:30:25.123456\n\
         Category: TRANSFER\n\
         Event: agent_tx_bytes\n\
         Value: 1048576\n\
         =======================\n\
         === Telemetry Event ===\n\
         Timestamp: 2024-02-29 23:59:59.999999\n\
         Category: ERROR\n\
         Event: NIXL_ERR_BACKEND\n\
         Value: 3\n\
         =======================\n"
    );
    // The script is a draining reader: it advanced read_pos.
    assert_eq!(stat(w.path()).unwrap().fill, 0);
    assert_eq!(DrainingReader::open(w.path()).unwrap().pop().unwrap(), None);
}

#[test]
fn the_guide_api_reads_events_in_order_and_returns_none_when_empty() {
    let dir = TempDir::new("py-api");
    let mut o = WriterOptions::new(dir.path(), "agent");
    o.capacity = 8;
    let mut w = ShmWriter::create(o).unwrap();
    // Wrap around the ring a few times while Python drains it.
    let program = r#"
import sys
from nixl_telemetry_reader import SharedRingBuffer
buf = SharedRingBuffer(sys.argv[1], version=1)
assert buf.get_capacity() == 8
out = []
while True:
    event = buf.pop()
    if event is None:
        break
    assert len(event.event_name) == 32 and event.event_name.endswith(b"\0")
    out.append("%d %d %s %d" % (event.timestamp_us, event.category,
                                event.event_name.rstrip(b"\0").decode(), event.value))
print("\n".join(out))
"#;
    let path = w.path().to_str().unwrap().to_string();
    let mut expected = Vec::new();
    for round in 0..4u64 {
        let events: Vec<Event> = (0..5)
            .map(|i| {
                let v = round * 5 + i;
                event(
                    1000 + v,
                    Category::ALL[(v % 8) as usize],
                    "agent_rx_bytes",
                    v * 7,
                )
            })
            .collect();
        assert_eq!(w.write_batch(&events), 5);
        let out = python(&["-c", program, &path], dir.path());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = String::from_utf8(out.stdout).unwrap();
        let want: Vec<String> = events
            .iter()
            .map(|e| {
                format!(
                    "{} {} agent_rx_bytes {}",
                    e.timestamp_us(),
                    e.raw_category(),
                    e.value()
                )
            })
            .collect();
        assert_eq!(got.trim_end(), want.join("\n"), "round {round}");
        expected.extend(want);
    }
    assert_eq!(expected.len(), 20);
    assert_eq!(stat(w.path()).unwrap().fill, 0);
    assert_eq!(w.events_dropped(), 0, "Python released every slot");
}

#[test]
fn a_version_mismatch_raises_and_the_file_is_kept() {
    let dir = TempDir::new("py-version");
    let w = ShmWriter::create(WriterOptions::new(dir.path(), "agent")).unwrap();
    let path = w.path().to_path_buf();
    w.close().unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[16..20].copy_from_slice(&2i32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let out = python(
        &[
            script().to_str().unwrap(),
            "--telemetry_path",
            path.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    // 40 + 4096 × 56 + 64 bytes fit neither version-2 form.
    assert!(
        err.contains("the file is 229480 bytes, but a version-2 ring of 4096 slots is exactly"),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "file kept unchanged");
    bytes[16..20].copy_from_slice(&7i32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let out = python(
        &[
            script().to_str().unwrap(),
            "--telemetry_path",
            path.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("field `version` is 7"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "file kept unchanged");
}

/// A ring of 4 slots of `slot` bytes as NIXL lays out `version`, holding `slots`
/// from slot 0; unused bytes 0xC7.
fn golden(version: i32, slot: usize, slots: &[Vec<u8>]) -> Vec<u8> {
    let capacity = 4u64;
    let mut b = vec![0xC7u8; 40 + capacity as usize * slot];
    b[0..8].copy_from_slice(&(slots.len() as u64).to_le_bytes());
    b[8..16].copy_from_slice(&0u64.to_le_bytes());
    b[16..20].copy_from_slice(&version.to_le_bytes());
    b[20..24].copy_from_slice(&version.to_le_bytes());
    b[24..32].copy_from_slice(&capacity.to_le_bytes());
    b[32..40].copy_from_slice(&(capacity - 1).to_le_bytes());
    for (i, s) in slots.iter().enumerate() {
        b[40 + i * slot..40 + (i + 1) * slot].copy_from_slice(s);
    }
    b
}

fn bytes_of(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn the_guide_api_reads_every_generation_the_file_has() {
    let dir = TempDir::new("py-generations");
    let mut name = [0u8; 32];
    name[..14].copy_from_slice(b"agent_tx_bytes");
    let files: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "v1",
            golden(
                1,
                56,
                &[bytes_of(&[
                    &7u64.to_le_bytes(),
                    &1i32.to_le_bytes(),
                    &name,
                    &[0xAA; 4],
                    &64u64.to_le_bytes(),
                ])],
            ),
            "v1 1 7 1 agent_tx_bytes 64",
        ),
        (
            "v2-48",
            golden(
                2,
                48,
                &[bytes_of(&[
                    &1i32.to_le_bytes(),
                    &name,
                    &[0xAA; 4],
                    &64u64.to_le_bytes(),
                ])],
            ),
            "v2-48 2 None 1 agent_tx_bytes 64",
        ),
        (
            "v2",
            golden(
                2,
                16,
                &[bytes_of(&[
                    &4i32.to_le_bytes(),
                    &17u32.to_le_bytes(),
                    &64u64.to_le_bytes(),
                ])],
            ),
            "v2 2 None 4 agent_err_remote_disconnect 64",
        ),
        (
            "v3",
            golden(
                3,
                16,
                &[bytes_of(&[
                    &20u32.to_le_bytes(),
                    &[0xAA; 4],
                    &64u64.to_le_bytes(),
                ])],
            ),
            "v3 3 None 7 unknown_type_20 64",
        ),
        (
            "v4",
            golden(
                4,
                16,
                &[bytes_of(&[
                    &20u32.to_le_bytes(),
                    &[0xAA; 4],
                    &64u64.to_le_bytes(),
                ])],
            ),
            "v4 4 None 4 agent_telemetry_events_dropped 64",
        ),
    ];
    let program = r#"
import sys
from nixl_telemetry_reader import SharedRingBuffer
buf = SharedRingBuffer(sys.argv[1], version=4)
assert buf.get_capacity() == 4
event = buf.pop()
assert buf.pop() is None
print(buf.generation, buf.version, event.timestamp_us, event.category, event.name, event.value)
"#;
    for (name, bytes, expected) in files {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let out = python(&["-c", program, path.to_str().unwrap()], dir.path());
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8(out.stdout).unwrap().trim_end(), expected);
        // Only read_pos changed, as with every draining reader.
        let after = std::fs::read(&path).unwrap();
        assert_eq!(after[8..16], 1u64.to_le_bytes());
        assert_eq!(after[16..], bytes[16..]);
        // The script prints the block without a timestamp line where there is none.
        std::fs::write(&path, &bytes).unwrap();
        let out = python(
            &[
                script().to_str().unwrap(),
                "--telemetry_path",
                path.to_str().unwrap(),
            ],
            dir.path(),
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert_eq!(text.contains("Timestamp:"), name == "v1", "{name}: {text}");
    }
}
