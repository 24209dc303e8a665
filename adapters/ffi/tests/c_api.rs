//! The C and C++ API from real C and C++ programs: compiled with gcc and g++ against
//! the library this test run built, run, and their rings read back with
//! `telering read`'s code, counting every event.

mod common;

use common::{Tally, compile, program, run_ok, telering_read, xfer_line};
use std::collections::BTreeMap;
use std::path::Path;
use telering_core::{Category, Event, EventName};
use telering_shm::{ShmWriter, WriterOptions};

/// What `record.c` and `record.cpp` record, given the transfer they measured.
fn expected_record_tally(xfer: [u64; 5]) -> Tally {
    let [_, post_us, xfer_us, bytes, _] = xfer;
    let rows: [(&str, &str, u64, u64); 13] = [
        ("worker_events", "CUSTOM", 2000, 500 * (1 + 2 + 3 + 4)),
        ("hot_counter", "CUSTOM", 2000, 2000 * 2),
        // 2000 updates of 100, 400 add_xfer_stats of 4096, one measured transfer.
        (
            "agent_tx_bytes",
            "TRANSFER",
            2401,
            2000 * 100 + 400 * 4096 + bytes,
        ),
        ("agent_tx_requests_num", "TRANSFER", 401, 401),
        ("agent_xfer_time", "PERFORMANCE", 401, 400 * 10 + xfer_us),
        (
            "agent_xfer_post_time",
            "PERFORMANCE",
            401,
            400 * 2 + post_us,
        ),
        ("agent_rx_bytes", "TRANSFER", 1, 8192),
        ("agent_rx_requests_num", "TRANSFER", 1, 1),
        ("agent_memory_registered", "MEMORY", 1, 65536),
        ("agent_memory_deregistered", "MEMORY", 1, 65536),
        ("NIXL_ERR_BACKEND", "ERROR", 3, 3),
        ("ucx_rndv_count", "BACKEND", 2, 6),
        ("", "", 0, 0),
    ];
    rows.iter()
        .filter(|r| !r.0.is_empty())
        .map(|&(n, c, count, sum)| (n.to_string(), (c.to_string(), count, sum)))
        .collect()
}

fn check_record_output(stdout: &str, ring: &Path) {
    let xfer = xfer_line(stdout);
    assert_eq!((xfer[3], xfer[4]), (65536, 4), "totalBytes and descCount");
    assert!(
        xfer[0] > 1_600_000_000_000_000,
        "startTime is µs since the epoch"
    );
    assert!(xfer[1] <= xfer[2], "postDuration ≤ xferDuration");
    let no_telemetry = stdout
        .lines()
        .find_map(|l| l.strip_prefix("no_telemetry "))
        .expect("a no_telemetry line");
    assert!(
        no_telemetry.contains("capture is not enabled"),
        "{no_telemetry}"
    );
    let tally = telering_read(ring);
    assert_eq!(tally, expected_record_tally(xfer));
}

#[test]
fn c_program_records_from_four_threads_and_telering_read_counts_every_event() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("record.c", scratch.path());
    let dir = scratch.path().join("rings");
    let output = run_ok(
        program(&exe)
            .env("NIXL_TELEMETRY_ENABLE", "y")
            .env("NIXL_TELEMETRY_DIR", &dir)
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "16384")
            .env("NIXL_TELEMETRY_RUN_INTERVAL", "60000"),
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    check_record_output(&stdout, &dir.join("c-agent"));
    // Nothing was dropped, and the disabled telemetry wrote no file.
    assert!(stdout.contains("stats 7613 0"), "{stdout}");
    assert!(!dir.join("c-agent-off").exists());
}

#[test]
fn cpp_program_records_through_the_wrapper_and_telering_read_counts_every_event() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("record.cpp", scratch.path());
    let dir = scratch.path().join("rings");
    let output = run_ok(program(&exe).arg(&dir));
    let stdout = String::from_utf8(output.stdout).unwrap();
    check_record_output(&stdout, &dir.join("cpp-agent"));
}

/// Starts `reader.c` in `mode` on `path`, and waits (deadline poll) until it has
/// opened the ring.
fn start_reader(
    exe: &Path,
    path: &Path,
    events: u64,
    mode: &str,
    scratch: &Path,
) -> std::thread::JoinHandle<std::process::Output> {
    let ready = scratch.join(format!("{mode}.ready"));
    let mut cmd = program(exe);
    cmd.arg(path).arg(events.to_string()).arg(mode).arg(&ready);
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ready.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{mode} reader did not open the ring"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    std::thread::spawn(move || child.wait_with_output().unwrap())
}

fn reader_lines(output: &std::process::Output, mode: &str) -> BTreeMap<String, String> {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{mode} reader failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn c_readers_drain_and_observe_a_ring_a_rust_writer_fills_counting_every_event() {
    const EVENTS: u64 = 20_000;
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("reader.c", scratch.path());
    let dir = scratch.path().join("rings");
    let mut options = WriterOptions::new(&dir, "rust-writer");
    options.capacity = 256; // far fewer slots than events: the drainer must keep up
    let mut writer = ShmWriter::create(options).unwrap();
    let path = writer.path().to_path_buf();
    // Both readers open the ring before the first event is written.
    let observer = start_reader(&exe, &path, EVENTS, "observe", scratch.path());
    let drainer = start_reader(&exe, &path, EVENTS, "drain", scratch.path());
    let names = [
        EventName::new("alpha").unwrap(),
        EventName::new("beta").unwrap(),
    ];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut next = 0u64;
    while next < EVENTS {
        // Back-pressure: write only what fits now, wait for the drainer otherwise.
        let room = u64::from(writer.free_slots()).min(50).min(EVENTS - next);
        if room == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the C reader stopped draining"
            );
            std::thread::yield_now();
            continue;
        }
        let batch: Vec<Event> = (next..next + room)
            .map(|i| Event::new(i + 1, Category::Custom, names[(i % 2) as usize], i))
            .collect();
        assert_eq!(writer.write_batch(&batch), batch.len());
        next += room;
    }
    assert_eq!(writer.events_dropped(), 0);

    let drained = reader_lines(&drainer.join().unwrap(), "drain");
    let evens: u64 = (0..EVENTS).step_by(2).sum();
    let odds: u64 = (1..EVENTS).step_by(2).sum();
    assert_eq!(drained["alpha"], format!("{} {evens}", EVENTS / 2));
    assert_eq!(drained["beta"], format!("{} {odds}", EVENTS / 2));
    assert_eq!(drained["total"], format!("{EVENTS} lost 0"));
    assert_eq!(
        drained["stat"],
        "capacity 256 fill 0 generation 1 trailer 1"
    );

    // The observer may be lapped (it never holds the writer back), but every event is
    // either delivered to it or counted as missed.
    let observed = reader_lines(&observer.join().unwrap(), "observe");
    let count = |name: &str| -> u64 {
        observed
            .get(name)
            .map_or(0, |v| v.split(' ').next().unwrap().parse().unwrap())
    };
    let (total, lost) = observed["total"].split_once(" lost ").unwrap();
    let (total, lost): (u64, u64) = (total.parse().unwrap(), lost.parse().unwrap());
    assert_eq!(count("alpha") + count("beta"), total);
    assert_eq!(total + lost, EVENTS, "delivered + missed = written");
    writer.close().unwrap();
}

/// `case → (status, message)` from `errors.c`.
fn error_cases(stdout: &str) -> BTreeMap<String, (String, String)> {
    stdout
        .lines()
        .map(|l| {
            let mut parts = l.splitn(3, ' ');
            let case = parts.next().unwrap().to_string();
            let status = parts.next().unwrap_or_default().to_string();
            let message = parts.next().unwrap_or_default().to_string();
            (case, (status, message))
        })
        .collect()
}

/// A file at a ring's path whose header is invalid (capacity 1000, not a power of two).
fn corrupt_ring(path: &Path) -> Vec<u8> {
    let mut bytes = vec![0u8; 40 + 1000 * 56];
    bytes[16..20].copy_from_slice(&1i32.to_le_bytes()); // version
    bytes[20..24].copy_from_slice(&1i32.to_le_bytes()); // expected_version
    bytes[24..32].copy_from_slice(&1000u64.to_le_bytes()); // capacity
    bytes[32..40].copy_from_slice(&999u64.to_le_bytes()); // mask
    std::fs::write(path, &bytes).unwrap();
    bytes
}

fn errors_program_output() -> (BTreeMap<String, (String, String)>, tempfile::TempDir) {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("errors.c", scratch.path());
    let corrupt = scratch.path().join("corrupt-agent");
    let before = corrupt_ring(&corrupt);
    let output = run_ok(program(&exe).arg(scratch.path()).arg(&corrupt));
    assert_eq!(
        std::fs::read(&corrupt).unwrap(),
        before,
        "a corrupt file is left byte-identical"
    );
    let cases = error_cases(&String::from_utf8(output.stdout).unwrap());
    (cases, scratch)
}

#[test]
fn error_paths_from_c_return_the_documented_status_and_name_the_culprit() {
    let (cases, scratch) = errors_program_output();
    let dir = scratch.path().display().to_string();
    let expect = |case: &str, status: &str, needles: &[&str]| {
        let (got, message) = cases
            .get(case)
            .unwrap_or_else(|| panic!("case {case} missing: {cases:?}"));
        assert_eq!(got, status, "{case}: {message}");
        for needle in needles {
            assert!(
                message.contains(needle),
                "{case}: {message:?} lacks {needle:?}"
            );
        }
    };
    expect(
        "null_agent",
        "TELERING_ERR_NULL_POINTER",
        &["telering_create_from_env", "`agent_name`"],
    );
    expect("null_out", "TELERING_ERR_NULL_POINTER", &["`out`"]);
    expect(
        "null_telemetry",
        "TELERING_ERR_NULL_POINTER",
        &["telering_record", "`telemetry`"],
    );
    expect("null_options", "TELERING_ERR_NULL_POINTER", &["`options`"]);
    expect(
        "bad_buffer_size",
        "TELERING_ERR_CONFIG",
        &["NIXL_TELEMETRY_BUFFER_SIZE=1000", "512", "1024"],
    );
    expect("bad_buffer_size_handle_is_null", "TELERING_OK", &[]);
    expect(
        "buffer_size_not_a_number",
        "TELERING_ERR_CONFIG",
        &["NIXL_TELEMETRY_BUFFER_SIZE", "abc"],
    );
    expect(
        "bad_buffer_size_option",
        "TELERING_ERR_CONFIG",
        &["1000", "power of two"],
    );
    expect(
        "bad_struct_size",
        "TELERING_ERR_INVALID_ARGUMENT",
        &["struct_size", "telering_options_init"],
    );
    expect("create", "TELERING_OK", &[]);
    expect("null_name", "TELERING_ERR_NULL_POINTER", &["`name`"]);
    expect(
        "long_name",
        "TELERING_ERR_INVALID_NAME",
        &["a_forty_byte_event_name_is_too_long_xxxx", "40 bytes", "31"],
    );
    expect("empty_name", "TELERING_ERR_INVALID_NAME", &["empty"]);
    expect(
        "bad_utf8_name",
        "TELERING_ERR_INVALID_NAME",
        &["UTF-8", "byte 3"],
    );
    // Refused like agent names, and the message shows the name escaped (the report
    // line would split if it held the raw newline).
    expect(
        "control_name",
        "TELERING_ERR_INVALID_NAME",
        &["\"x\\nValue: 9\"", "control character \\n at offset 1"],
    );
    expect(
        "control_name_len",
        "TELERING_ERR_INVALID_NAME",
        &[
            "telering_record_len",
            "control character \\u{1b} at offset 1",
        ],
    );
    expect(
        "bidi_name_len",
        "TELERING_ERR_INVALID_NAME",
        &["control character \\u{202e} at offset 1"],
    );
    expect(
        "bad_category",
        "TELERING_ERR_INVALID_ARGUMENT",
        &["`category` is 9"],
    );
    expect(
        "bad_nixl_status",
        "TELERING_ERR_INVALID_ARGUMENT",
        &["`nixl_status` is 3"],
    );
    expect(
        "long_name_handle",
        "TELERING_ERR_INVALID_NAME",
        &["telering_event_handle_create", "40 bytes"],
    );
    expect("null_stats", "TELERING_ERR_NULL_POINTER", &["`stats`"]);
    expect(
        "missing_file",
        "TELERING_ERR_NOT_FOUND",
        &[&format!("{dir}/no-such-agent")],
    );
    expect(
        "missing_file_stat",
        "TELERING_ERR_NOT_FOUND",
        &["no-such-agent"],
    );
    expect(
        "corrupt_file",
        "TELERING_ERR_CORRUPT_FILE",
        &["corrupt-agent", "capacity", "1000"],
    );
    expect(
        "corrupt_file_observer",
        "TELERING_ERR_CORRUPT_FILE",
        &["corrupt-agent", "capacity"],
    );
    expect(
        "corrupt_file_stat",
        "TELERING_ERR_CORRUPT_FILE",
        &["corrupt-agent", "capacity"],
    );
    expect(
        "bad_mode",
        "TELERING_ERR_INVALID_ARGUMENT",
        &["`mode` is 7"],
    );
    expect("backend", "TELERING_OK", &[]);
    expect(
        "wrong_handle",
        "TELERING_ERR_INVALID_HANDLE",
        &["is a telering_backend_t, not a telering_t"],
    );
    expect(
        "wrong_handle_destroy",
        "TELERING_ERR_INVALID_HANDLE",
        &["telering_backend_t"],
    );
    expect("backend_destroy", "TELERING_OK", &[]);
    expect(
        "backend_destroy_again",
        "TELERING_ERR_INVALID_HANDLE",
        &["already destroyed"],
    );
    expect("destroy_null", "TELERING_OK", &[]);
    expect("destroy", "TELERING_OK", &[]);
    expect(
        "destroy_again",
        "TELERING_ERR_INVALID_HANDLE",
        &["telering_destroy", "already destroyed"],
    );
}

/// The C examples in the two READMEs, compiled and run as written.
#[test]
fn readme_c_examples_compile_run_and_write_their_ring() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = tempfile::tempdir().unwrap();
    // The crate README's example also measures one 1 MiB transfer.
    let tx = [(3, 4096 + (2 << 20)), (2, 4096 + (1 << 20))];
    for (readme, (tx_count, tx_sum)) in [
        crate_dir.join("README.md"),
        crate_dir.join("../../README.md"),
    ]
    .into_iter()
    .zip(tx)
    {
        let text = std::fs::read_to_string(&readme).unwrap();
        let block = text
            .split("```c\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .unwrap_or_else(|| panic!("a C example in {}", readme.display()));
        let source = scratch.path().join("example.c");
        std::fs::write(&source, block).unwrap();
        let exe = common::compile_path(&source, scratch.path());
        let dir = scratch.path().join("rings");
        run_ok(
            program(&exe)
                .env("NIXL_TELEMETRY_ENABLE", "y")
                .env("NIXL_TELEMETRY_DIR", &dir),
        );
        let tally = telering_read(&dir.join("agent-0"));
        assert_eq!(
            tally["agent_tx_bytes"],
            ("TRANSFER".into(), tx_count, tx_sum)
        );
        assert_eq!(tally["queue_depth"], ("CUSTOM".into(), 1, 17));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
