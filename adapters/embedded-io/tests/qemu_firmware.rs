//! End to end on an emulated Cortex-M3: builds `firmware/` for thumbv7m-none-eabi,
//! runs it under `qemu-system-arm` (machine lm3s6965evb) through
//! `firmware/run-qemu.sh`, then decodes both of its outputs on the host — the UART
//! frames with [`FrameDecoder`], the defmt log with the `defmt-decoder` crate and the
//! firmware's ELF — and checks that both carry exactly the events the firmware
//! records (see `firmware/src/main.rs`), with the same values and timestamps.
//!
//! Needs `rustup target add thumbv7m-none-eabi` and the Debian package
//! `qemu-system-arm`; run with `cargo test -p telering-embedded-io --features qemu-test
//! --test qemu_firmware -- --ignored` (the feature brings `defmt-decoder`; without it
//! the test is not built).

use std::path::{Path, PathBuf};
use std::process::Command;
use telering_core::{Category, Event};
use telering_embedded_io::FrameDecoder;

/// What one event should be: name, category, value.
type Expected = (&'static str, Category, u64);

fn expected_events() -> Vec<Expected> {
    let mut expected = vec![
        ("agent_memory_registered", Category::Memory, 65_536),
        ("agent_tx_bytes", Category::Transfer, 4_096),
        ("agent_tx_requests_num", Category::Transfer, 1),
        ("agent_xfer_time", Category::Performance, 250),
        ("agent_rx_bytes", Category::Transfer, 8_192),
        ("NIXL_ERR_REMOTE_DISCONNECT", Category::Error, 1),
        ("dpu_queue_depth", Category::Custom, 17),
        ("dpu_temp_millicelsius", Category::System, 41_250),
    ];
    // 70 doorbells into a ring that holds 63: values 0..=62 arrive, 7 are dropped.
    expected.extend((0..63).map(|v| ("dpu_doorbell", Category::Custom, v)));
    // The next record reports the 7 drops in-band, then goes in itself.
    expected.push(("agent_telemetry_events_dropped", Category::Error, 7));
    expected.push(("dpu_doorbell", Category::Custom, 70));
    expected
}

/// The firmware's last event: its stack high-water mark in bytes, which varies with
/// the compiler; checked for plausibility.
const STACK_EVENT: &str = "fw_stack_high_water";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("repository root")
}

/// Runs the firmware; returns (UART bytes, defmt bytes, ELF path).
fn run_firmware() -> (Vec<u8>, Vec<u8>, PathBuf) {
    let root = repo_root();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("qemu_firmware");
    std::fs::create_dir_all(&out).unwrap();
    let uart = out.join("uart.bin");
    let defmt = out.join("defmt.bin");
    let status = Command::new("bash")
        .arg(root.join("firmware/run-qemu.sh"))
        .arg(&uart)
        .arg(&defmt)
        .env("QEMU_TIMEOUT", "60")
        .status()
        .expect("run firmware/run-qemu.sh");
    assert!(status.success(), "firmware run failed: {status}");
    let elf = root.join("firmware/target/thumbv7m-none-eabi/release/telering-firmware");
    (
        std::fs::read(&uart).unwrap(),
        std::fs::read(&defmt).unwrap(),
        elf,
    )
}

/// The defmt log as text lines, decoded with the firmware's format-string table.
fn decode_defmt(bytes: &[u8], elf: &Path) -> Vec<String> {
    let elf = std::fs::read(elf).expect("firmware ELF");
    let table = defmt_decoder::Table::parse(&elf)
        .expect("parse the ELF's defmt table")
        .expect("the firmware has a defmt table");
    let mut decoder = table.new_stream_decoder();
    decoder.received(bytes);
    let mut lines = Vec::new();
    loop {
        match decoder.decode() {
            Ok(frame) => lines.push(frame.display_message().to_string()),
            Err(defmt_decoder::DecodeError::UnexpectedEof) => break,
            Err(e) => panic!("malformed defmt frame after {} lines: {e}", lines.len()),
        }
    }
    lines
}

/// Parses the exporter's `telering <ts>us <CATEGORY> <name>=<value>` line.
fn parse_line(line: &str) -> Option<(u64, Category, String, u64)> {
    let rest = line.strip_prefix("telering ")?;
    let (ts, rest) = rest.split_once("us ")?;
    let (category, rest) = rest.split_once(' ')?;
    let (name, value) = rest.rsplit_once('=')?;
    Some((
        ts.parse().ok()?,
        Category::from_name(category)?,
        name.to_owned(),
        value.parse().ok()?,
    ))
}

fn summary_field(line: &str, field: &str) -> u64 {
    let start = line.find(&format!("{field}=")).expect(field) + field.len() + 1;
    line[start..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
#[ignore = "needs qemu-system-arm and the thumbv7m-none-eabi Rust target"]
fn firmware_under_qemu_exports_every_event_on_uart_and_defmt() {
    let (uart, defmt, elf) = run_firmware();
    let expected = expected_events();

    // UART: every frame intact, in order, nothing missing.
    let mut decoder = FrameDecoder::new();
    let items: Vec<_> = decoder.feed(&uart).collect();
    assert_eq!(decoder.finish(), None);
    let events: Vec<Event> = items
        .into_iter()
        .map(|item| item.unwrap_or_else(|e| panic!("UART stream: {e}")))
        .collect();
    assert_eq!(decoder.frames_missing(), 0);
    let (stack_event, events_before) = events.split_last().expect("events");
    assert_eq!(stack_event.name(), Ok(STACK_EVENT));
    assert_eq!(stack_event.category(), Ok(Category::System));
    let stack = stack_event.value();
    assert!(stack > 0 && stack <= 4096, "stack use {stack} bytes");
    eprintln!("firmware used {stack} bytes of stack");
    let got: Vec<Expected> = events_before
        .iter()
        .map(|e| {
            let name = expected
                .iter()
                .find(|x| Ok(x.0) == e.name())
                .map_or("<unexpected>", |x| x.0);
            (name, e.category().unwrap(), e.value())
        })
        .collect();
    assert_eq!(got, expected);
    assert_eq!(
        uart.len(),
        1 + events.len() * telering_embedded_io::FRAME_WIRE_LEN
    );
    // The SysTick clock runs: timestamps never go back and stay plausible.
    assert!(
        events
            .windows(2)
            .all(|w| w[0].timestamp_us() <= w[1].timestamp_us())
    );
    assert!(events.last().unwrap().timestamp_us() < 60_000_000);
    // It moves: the exports between the run's phases take emulated milliseconds, so
    // the phases' timestamps differ. Events recorded back to back may share a
    // microsecond, and QEMU's SysTick model at times holds its counter at 0 until its
    // timer is serviced (readings of `ms * 1000 + 999`), so how many of them differ
    // depends on the host's speed and load: no share of distinct values is asserted.
    let mut distinct: Vec<u64> = events.iter().map(Event::timestamp_us).collect();
    distinct.dedup();
    assert!(distinct.len() >= 3, "the clock barely moved: {distinct:?}");
    // Microsecond resolution: events recorded back to back are less than a
    // millisecond apart, which a millisecond clock could not show.
    assert!(
        distinct.windows(2).any(|w| w[1] - w[0] < 1_000),
        "no two timestamps less than 1 ms apart: {distinct:?}"
    );

    // defmt: one line per event with the same timestamp, category, name and value.
    let lines = decode_defmt(&defmt, &elf);
    assert_eq!(
        lines.first().map(String::as_str),
        Some("telering firmware: ring of 64 slots")
    );
    let logged: Vec<_> = lines.iter().filter_map(|l| parse_line(l)).collect();
    assert_eq!(logged.len(), events.len(), "{lines:#?}");
    for (line, event) in logged.iter().zip(&events) {
        assert_eq!(line.0, event.timestamp_us());
        assert_eq!(line.1, event.category().unwrap());
        assert_eq!(Ok(line.2.as_str()), event.name());
        assert_eq!(line.3, event.value());
    }

    // The memory window (read by adapters/shm/tests/memory_window.rs) took all 10.
    assert!(
        lines.contains(&"telering window: published=10 dropped=0".to_owned()),
        "{lines:#?}"
    );

    // The firmware's own counters agree: 74 published, 7 dropped, all reported.
    let summary = lines.last().unwrap();
    assert!(summary.starts_with("telering summary:"), "{summary}");
    assert_eq!(summary_field(summary, "published"), 74);
    assert_eq!(summary_field(summary, "dropped"), 7);
    assert_eq!(summary_field(summary, "unreported"), 0);
}
