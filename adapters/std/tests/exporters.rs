//! The built-in exporters driven end to end through `Telemetry`, configured from an
//! environment, read back from disk.

use std::time::Duration;
use telering_core::Category;
use telering_shm::{ClockId, DrainingReader};
use telering_std::export::CSV_HEADER;
use telering_std::{ClockSource, ConfigError, EnvSource, Telemetry, TelemetryBuilder};

const HOUR: Duration = Duration::from_secs(3600);

fn env_in(dir: &std::path::Path, extra: &[(&str, &str)]) -> EnvSource {
    let mut env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "yes"),
        ("NIXL_TELEMETRY_DIR", dir.to_str().unwrap()),
    ]);
    for (k, v) in extra {
        env = env.with(*k, *v);
    }
    env
}

fn drain(path: &std::path::Path) -> Vec<telering_core::Event> {
    let mut reader = DrainingReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(e) = reader.pop().unwrap() {
        out.push(e);
    }
    out
}

#[test]
fn buffer_exporter_writes_a_nixl_ring_file_named_after_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_in(dir.path(), &[("NIXL_TELEMETRY_BUFFER_SIZE", "64")]);
    let telemetry = TelemetryBuilder::from_env("agent-buf", &env)
        .unwrap()
        .run_interval(HOUR)
        .clock(ClockSource::RealtimeCoarse)
        .build()
        .unwrap();
    for v in 0..10 {
        telemetry.update_tx_bytes(v);
    }
    telemetry.flush().unwrap();
    let path = dir.path().join("agent-buf");
    let events = drain(&path);
    assert_eq!(
        events.iter().map(|e| e.value()).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    let info = telering_shm::stat(&path).unwrap();
    assert_eq!(info.capacity, 64);
    let trailer = info.trailer.unwrap();
    assert_eq!(trailer.clock, ClockId::RealtimeCoarse);
    assert!(info.writer_alive);
    drop(telemetry);
    let trailer = telering_shm::stat(&path).unwrap().trailer.unwrap();
    assert!(trailer.clean_close);
}

#[test]
fn buffer_exporter_reports_lane_and_ring_losses_once_in_band_and_in_the_trailer() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_in(dir.path(), &[("NIXL_TELEMETRY_BUFFER_SIZE", "8")]);
    let telemetry = TelemetryBuilder::from_env("agent-drops", &env)
        .unwrap()
        .run_interval(HOUR)
        .lane_capacity(16)
        // Exact counts: no flush but the one below.
        .early_flush(false)
        .build()
        .unwrap();
    // 20 events into a lane of 16 (holds 15): 5 dropped at the lane.
    for v in 0..20 {
        telemetry.update_rx_bytes(v);
    }
    // 15 events into a ring of 8 (holds 7): 6 events fit, 9 are refused, and the last
    // slot takes the report of all 14 losses.
    telemetry.flush().unwrap();
    let path = dir.path().join("agent-drops");
    let first = drain(&path);
    assert_eq!(first.len(), 7);
    assert!(first[..6].iter().all(|e| e.name() == Ok("agent_rx_bytes")));
    assert_eq!(first[6].name(), Ok("agent_telemetry_events_dropped"));
    assert_eq!(first[6].value(), 5 + 9);
    let trailer = telering_shm::stat(&path).unwrap().trailer.unwrap();
    assert_eq!((trailer.dropped_staging, trailer.dropped_ring_full), (5, 9));
    // Nothing new: nothing is reported twice.
    telemetry.update_rx_bytes(100);
    telemetry.flush().unwrap();
    let second = drain(&path);
    assert_eq!(second.len(), 1);
    assert_eq!(second[0].value(), 100);
    let stats = telemetry.stats();
    assert_eq!((stats.events_dropped, stats.exporter_dropped), (5, 9));
    // The ring's losses are known by name too (the lane's came back as `Dropped`).
    assert_eq!(
        telemetry.dropped_by_name().into_iter().collect::<Vec<_>>(),
        [("agent_rx_bytes".to_string(), 9)]
    );
}

#[test]
fn csv_exporter_writes_dir_agent_csv_with_header_and_quoting() {
    let dir = tempfile::tempdir().unwrap();
    let env = env_in(dir.path(), &[("NIXL_TELEMETRY_EXPORTER", "CSV")]);
    let telemetry = TelemetryBuilder::from_env("agent-csv", &env)
        .unwrap()
        .build()
        .unwrap();
    telemetry.update_memory_registered(1 << 30);
    telemetry
        .record(Category::Custom, "odd,\"name\"", 3)
        .unwrap();
    let backend = telemetry.backend("ucx");
    backend.add_telemetry_event("ucx_lanes", 4).unwrap();
    drop(telemetry);
    let text = std::fs::read_to_string(dir.path().join("agent-csv.csv")).unwrap();
    let rows: Vec<&str> = text.split("\r\n").collect();
    assert_eq!(rows[0], CSV_HEADER);
    let cells: Vec<Vec<&str>> = rows[1..4]
        .iter()
        .map(|r| r.splitn(2, ',').collect())
        .collect();
    assert!(cells.iter().all(|c| c[0].parse::<u64>().is_ok()));
    assert_eq!(cells[0][1], "MEMORY,agent_memory_registered,1073741824");
    assert_eq!(cells[1][1], "CUSTOM,\"odd,\"\"name\"\"\",3");
    assert_eq!(cells[2][1], "BACKEND,ucx_lanes,4");
    assert_eq!(rows[4], "");
}

#[test]
fn the_directory_is_created_if_missing() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("a/b/c");
    let telemetry = TelemetryBuilder::from_env("agent", &env_in(&nested, &[]))
        .unwrap()
        .build()
        .unwrap();
    drop(telemetry);
    assert!(nested.join("agent").is_file());
}

#[test]
fn a_directory_that_cannot_be_created_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let err = TelemetryBuilder::from_env("agent", &env_in(&file.join("sub"), &[]))
        .unwrap()
        .build()
        .unwrap_err();
    assert!(matches!(err, ConfigError::DirNotADirectory { .. }), "{err}");
    let text = err.to_string();
    assert!(text.starts_with("NIXL_TELEMETRY_DIR="), "{text}");
    assert!(text.contains("not-a-dir/sub"), "{text}");
    assert!(text.contains("which is not a directory"), "{text}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

#[test]
fn an_exporter_that_cannot_start_is_an_error_the_program_can_survive() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("agent.csv");
    std::fs::write(&foreign, "not,telemetry\n").unwrap();
    let env = env_in(dir.path(), &[("NIXL_TELEMETRY_EXPORTER", "csv")]);
    let err = TelemetryBuilder::from_env("agent", &env)
        .unwrap()
        .build()
        .unwrap_err();
    assert!(matches!(err, ConfigError::ExporterStart { .. }), "{err}");
    assert!(
        err.to_string()
            .starts_with("telemetry exporter `csv` could not start: "),
        "{err}"
    );
    // The program goes on without telemetry.
    let telemetry = Telemetry::disabled("agent");
    telemetry.update_tx_bytes(1);
    assert_eq!(
        std::fs::read_to_string(&foreign).unwrap(),
        "not,telemetry\n"
    );
}

#[test]
fn csv_without_a_directory_names_the_missing_variable() {
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "1"),
        ("NIXL_TELEMETRY_EXPORTER", "csv"),
    ]);
    let err = TelemetryBuilder::from_env("agent", &env)
        .unwrap()
        .build()
        .unwrap_err();
    assert!(
        err.to_string().contains("NIXL_TELEMETRY_DIR is not set"),
        "{err}"
    );
}

#[test]
fn enabled_without_exporter_or_directory_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let env = EnvSource::from_pairs([("NIXL_TELEMETRY_ENABLE", "on")]);
    let telemetry = TelemetryBuilder::from_env("agent", &env)
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(telemetry.mode(), &telering_std::Mode::Capture);
    telemetry.update_tx_bytes(1);
    let mut xfer = telemetry.start_xfer(true, 10, 1);
    telemetry.xfer_completed(&mut xfer).unwrap();
    assert!(telemetry.get_xfer_telemetry(&xfer).is_ok());
    drop(telemetry);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn nop_exporter_drains_and_discards() {
    let telemetry = Telemetry::builder("agent")
        .enabled(true)
        .exporter("Nop")
        .run_interval(HOUR)
        .build()
        .unwrap();
    for v in 0..100 {
        telemetry.update_tx_bytes(v);
    }
    telemetry.flush().unwrap();
    let stats = telemetry.stats();
    assert_eq!(
        (stats.events_recorded, stats.events_exported, stats.flushes),
        (100, 100, 1)
    );
}

#[test]
fn four_threads_through_the_shared_memory_ring_with_a_live_reader_account_for_every_event() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 250_000;
    let dir = tempfile::tempdir().unwrap();
    let env = env_in(dir.path(), &[("NIXL_TELEMETRY_RUN_INTERVAL", "1")]);
    let telemetry = TelemetryBuilder::from_env("agent-live", &env)
        .unwrap()
        .build()
        .unwrap();
    let mut telemetry = Some(std::sync::Arc::new(telemetry));
    let path = dir.path().join("agent-live");
    let done = std::sync::atomic::AtomicBool::new(false);
    let (mut written, mut lane_dropped) = (0u64, 0u64);
    let mut delivered = Vec::new();
    let mut reported = 0u64;
    let reported_live = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        // A draining reader in another thread while the agent records.
        let reader = s.spawn(|| {
            let mut reader = DrainingReader::open(&path).unwrap();
            let mut seen = vec![0u64; THREADS as usize];
            let mut reported = 0;
            let mut take = |e: telering_core::Event| {
                if e.name() == Ok("agent_telemetry_events_dropped") {
                    assert_eq!(e.category(), Ok(Category::Error));
                    reported += e.value();
                    reported_live.store(reported, std::sync::atomic::Ordering::Release);
                } else {
                    seen[(e.value() >> 32) as usize] += 1;
                }
            };
            while !done.load(std::sync::atomic::Ordering::Acquire) {
                match reader.pop().unwrap() {
                    Some(e) => take(e),
                    None => std::thread::yield_now(),
                }
            }
            // The writer is closed: drain the rest.
            while let Some(e) = reader.pop().unwrap() {
                take(e);
            }
            (seen, reported)
        });
        let recorders: Vec<_> = (0..THREADS)
            .map(|t| {
                let telemetry = std::sync::Arc::clone(telemetry.as_ref().unwrap());
                s.spawn(move || {
                    let (mut w, mut d) = (0u64, 0u64);
                    for seq in 0..PER_THREAD {
                        match telemetry
                            .record(Category::Custom, "live", t << 32 | seq)
                            .unwrap()
                        {
                            telering_std::Recorded::Written => w += 1,
                            _ => d += 1,
                        }
                    }
                    (w, d)
                })
            })
            .collect();
        for r in recorders {
            let (w, d) = r.join().unwrap();
            written += w;
            lane_dropped += d;
        }
        // Flush until the reader has every loss reported in-band: a report waits for
        // room in the ring, which the reader makes.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            telemetry.as_ref().unwrap().flush().unwrap();
            let lost = telering_shm::stat(&path)
                .unwrap()
                .trailer
                .unwrap()
                .events_dropped();
            if reported_live.load(std::sync::atomic::Ordering::Acquire) == lost {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{lost} lost, {} reported in-band after 60 s",
                reported_live.load(std::sync::atomic::Ordering::Acquire)
            );
            std::thread::yield_now();
        }
        // The last handle: final flush, clean close.
        drop(std::sync::Arc::into_inner(telemetry.take().unwrap()).unwrap());
        done.store(true, std::sync::atomic::Ordering::Release);
        let (seen, r) = reader.join().unwrap();
        delivered = seen;
        reported = r;
    });
    let trailer = telering_shm::stat(&path).unwrap().trailer.unwrap();
    let delivered_total: u64 = delivered.iter().sum();
    assert_eq!(written + lane_dropped, THREADS * PER_THREAD);
    // Lane losses reach the trailer exactly; the ring's own losses are the rest.
    assert_eq!(trailer.dropped_staging, lane_dropped);
    assert_eq!(delivered_total + trailer.dropped_ring_full, written);
    assert_eq!(
        delivered_total + trailer.events_dropped(),
        THREADS * PER_THREAD
    );
    // In-band reports account for every loss, exactly once.
    assert_eq!(reported, trailer.events_dropped());
    assert!(trailer.clean_close);
    println!(
        "live reader: {delivered_total} delivered, {lane_dropped} dropped in lanes, {} at the ring, {reported} reported in-band",
        trailer.dropped_ring_full
    );
}

#[test]
fn build_or_capture_keeps_the_agent_running_on_any_configuration_error() {
    // The exporter cannot start: capture in process, per-transfer telemetry works.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent.csv"), "foreign\n").unwrap();
    let env = env_in(dir.path(), &[("NIXL_TELEMETRY_EXPORTER", "csv")]);
    let (telemetry, error) = TelemetryBuilder::from_env("agent", &env)
        .unwrap()
        .build_or_capture();
    assert!(matches!(error, Some(ConfigError::ExporterStart { .. })));
    assert_eq!(telemetry.mode(), &telering_std::Mode::Capture);
    let mut xfer = telemetry.start_xfer(true, 8, 1);
    telemetry.xfer_completed(&mut xfer).unwrap();
    assert!(telemetry.get_xfer_telemetry(&xfer).is_ok());
    // An unusable value: even capture cannot be configured, so telemetry is disabled.
    let (telemetry, error) = Telemetry::builder("agent")
        .enabled(true)
        .buffer_size(1000)
        .build_or_capture();
    assert!(matches!(
        error,
        Some(ConfigError::BufferSizeNotPowerOfTwo { .. })
    ));
    assert_eq!(telemetry.mode(), &telering_std::Mode::Disabled);
}
