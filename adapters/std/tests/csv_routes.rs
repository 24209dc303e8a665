//! The `csv` exporter's route rows in `<agent>.routes.csv`: exact per-route sums read
//! back from the file, hostile route names kept on one row, `<agent>.csv` unchanged,
//! and the same refusals as the event file before anything is created.

use std::collections::BTreeMap;
use std::path::Path;
use telering_core::builtin::ErrorStatus;
use telering_std::Telemetry;
use telering_std::export::{CsvExporter, ExportError, ExporterContext};
use telering_std::route::{MemoryType, Operation, Route};

/// Splits an RFC 4180 line (without its CRLF) into fields.
fn fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (false, '"') if field.is_empty() => quoted = true,
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (false, ',') => out.push(std::mem::take(&mut field)),
            (_, c) => field.push(c),
        }
    }
    out.push(field);
    out
}

/// The file's rows as header → value maps, after checking that every line ends in
/// CRLF and has the header's field count.
fn rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with("\r\n"), "{text:?}");
    let mut lines = text.strip_suffix("\r\n").unwrap().split("\r\n");
    let header = fields(lines.next().unwrap());
    assert_eq!(header.join(","), CsvExporter::ROUTES_HEADER);
    lines
        .map(|line| {
            assert!(!line.contains(['\n', '\r']), "{line:?}");
            let f = fields(line);
            assert_eq!(f.len(), header.len(), "{line:?}");
            header.iter().cloned().zip(f).collect()
        })
        .collect()
}

/// An agent with the `csv` exporter that flushes only when told (so each test's
/// flushes are its intervals, and `route_report` is the last one's).
fn telemetry(dir: &Path, agent: &str) -> Telemetry {
    Telemetry::builder(agent)
        .enabled(true)
        .exporter("csv")
        .dir(dir)
        .run_interval(std::time::Duration::from_secs(3600))
        .build()
        .unwrap()
}

#[test]
fn route_rows_sum_to_each_routes_totals_and_leave_the_event_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let t = telemetry(dir.path(), "agent");
    let hostile = "=cmd|' /C calc'!A0,\"x\"\nnext\u{1b}[2J";
    let routes = [
        Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "decode-0",
        ),
        Route::new(
            Operation::Read,
            "POSIX",
            MemoryType::Dram,
            MemoryType::File,
            "",
        ),
        Route::new(
            Operation::Write,
            "-UCX",
            MemoryType::Vram,
            MemoryType::Dram,
            hostile,
        ),
    ];
    let ids: Vec<_> = routes.iter().map(|r| t.route(r).unwrap()).collect();
    let mut expected = [(0u64, 0u64, 0u64, 0u64, 0u64); 3];
    for round in 1..=4u64 {
        for (i, &id) in ids.iter().enumerate() {
            for n in 0..(round + i as u64) {
                let (us, bytes, post, descriptors) = (10 * round + n, 4096 * (n + 1), 3, 1 + n % 4);
                t.add_route_xfer_stats_us(id, us, bytes, post, descriptors);
                let e = &mut expected[i];
                e.0 += bytes;
                e.1 += 1;
                e.2 += descriptors;
                e.4 += us;
            }
        }
        if round == 2 {
            t.update_route_error_count(ids[2], ErrorStatus::RemoteDisconnect);
            expected[2].3 += 1;
        }
        // A flush with no transfer writes no row.
        t.flush().unwrap();
        t.flush().unwrap();
    }
    drop(t);
    let rows = rows(&dir.path().join("agent.routes.csv"));
    let shown = ["decode-0", "", "'=cmd|' /C calc'!A0,\"x\"\\nnext\\u{1b}[2J"];
    let backends = ["UCX", "POSIX", "'-UCX"];
    let mut row_count = 0;
    for (i, route) in routes.iter().enumerate() {
        let mine: Vec<_> = rows
            .iter()
            .filter(|r| r["peer"] == shown[i] && r["backend"] == backends[i])
            .collect();
        assert_eq!(mine.len(), 4, "one row per flush that moved: {rows:?}");
        row_count += mine.len();
        let sum =
            |column: &str| -> u64 { mine.iter().map(|r| r[column].parse::<u64>().unwrap()).sum() };
        let e = expected[i];
        assert_eq!(
            (
                sum("bytes"),
                sum("transfers"),
                sum("descriptors"),
                sum("errors"),
                sum("xfer_time_sum_us")
            ),
            e,
            "{route}"
        );
        assert_eq!(sum("post_time_sum_us"), 3 * e.1);
        for r in &mine {
            assert_eq!(r["operation"], route.operation.as_str());
            assert_eq!(r["local_mem"], route.local.as_str());
            assert_eq!(r["remote_mem"], route.remote.as_str());
            // The slowest transfer of each interval: round r's last, 10 r + n.
            assert!(r["slowest_xfer_us"].parse::<u64>().unwrap() >= 10);
            assert_eq!(r["slowest_trace_id"].len(), 32);
            assert_eq!(r["slowest_span_id"].len(), 16);
        }
    }
    assert_eq!(rows.len(), row_count);
    let events = std::fs::read_to_string(dir.path().join("agent.csv")).unwrap();
    assert!(events.starts_with("timestamp_us,category,event,value\r\n"));
    assert!(
        !events.contains("UCX") && !events.contains("decode-0"),
        "{events}"
    );
}

#[test]
fn the_slowest_transfer_of_each_interval_is_on_its_routes_row() {
    let dir = tempfile::tempdir().unwrap();
    let t = telemetry(dir.path(), "agent");
    let r = t
        .route(&Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "d",
        ))
        .unwrap();
    for us in [5, 900, 40] {
        t.add_route_xfer_stats_us(r, us, 1, 1, 1);
    }
    t.flush().unwrap();
    let report = t.route_report();
    drop(t);
    let rows = rows(&dir.path().join("agent.routes.csv"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["slowest_xfer_us"], "900");
    let (position, (route, x)) = report
        .slow
        .iter()
        .enumerate()
        .max_by_key(|(_, (_, x))| x.xfer_us)
        .unwrap();
    let ids = x.trace_ids("agent", route, position);
    assert_eq!(rows[0]["slowest_start_us"], x.start_us.to_string());
    assert_eq!(rows[0]["slowest_trace_id"], ids.trace_hex());
    assert_eq!(rows[0]["slowest_span_id"], ids.span_hex());
}

#[test]
fn an_agent_without_routes_gets_no_route_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = telemetry(dir.path(), "agent");
    let _ = t.add_xfer_stats_us(10, true, 1, 4096);
    t.flush().unwrap();
    drop(t);
    assert!(dir.path().join("agent.csv").exists());
    assert!(!dir.path().join("agent.routes.csv").exists());
}

#[test]
fn a_symlink_or_foreign_route_file_is_refused_before_anything_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ExporterContext::new("agent");
    ctx.dir = Some(dir.path().to_path_buf());
    let target = dir.path().join("elsewhere");
    std::fs::write(&target, "keep").unwrap();
    let routes = dir.path().join("agent.routes.csv");
    std::os::unix::fs::symlink(&target, &routes).unwrap();
    assert!(CsvExporter::check(&ctx).is_err());
    let err = CsvExporter::open(&ctx).unwrap_err();
    assert!(err.to_string().contains("agent.routes.csv"), "{err}");
    let built = Telemetry::builder("agent")
        .enabled(true)
        .exporter("csv")
        .dir(dir.path())
        .build();
    assert!(built.is_err());
    std::fs::remove_file(&routes).unwrap();
    std::fs::write(&routes, "my,own\n").unwrap();
    let err = CsvExporter::check(&ctx).unwrap_err();
    assert!(matches!(err, ExportError::ForeignFile { .. }), "{err}");
    assert!(CsvExporter::open(&ctx).is_err());
    assert!(!dir.path().join("agent.csv").exists());
    assert_eq!(std::fs::read_to_string(&routes).unwrap(), "my,own\n");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
}

#[test]
fn a_second_run_appends_route_rows_below_the_header() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        let t = telemetry(dir.path(), "agent");
        let r = t
            .route(&Route::new(
                Operation::Read,
                "GDS",
                MemoryType::Vram,
                MemoryType::File,
                "",
            ))
            .unwrap();
        t.add_route_xfer_stats_us(r, 7, 100, 1, 1);
        t.flush().unwrap();
    }
    let rows = rows(&dir.path().join("agent.routes.csv"));
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|r| r["bytes"] == "100" && r["transfers"] == "1")
    );
}

#[test]
fn an_agent_name_without_room_for_the_route_file_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // Room for `.csv` (251 bytes at most) but not for `.routes.csv`.
    let mut ctx = ExporterContext::new("n".repeat(248));
    ctx.dir = Some(dir.path().to_path_buf());
    for err in [
        CsvExporter::check(&ctx).unwrap_err(),
        CsvExporter::open(&ctx).unwrap_err(),
    ] {
        assert!(matches!(err, ExportError::TargetName { .. }), "{err}");
        assert!(err.to_string().contains(".routes.csv"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_symlink_planted_after_the_start_is_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let t = telemetry(dir.path(), "agent");
    let target = dir.path().join("elsewhere");
    std::fs::write(&target, "keep").unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join("agent.routes.csv")).unwrap();
    let r = t
        .route(&Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "d",
        ))
        .unwrap();
    t.add_route_xfer_stats_us(r, 7, 100, 1, 1);
    t.flush().unwrap();
    t.flush().unwrap();
    drop(t);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    // The events still reach `<agent>.csv`.
    let events = std::fs::read_to_string(dir.path().join("agent.csv")).unwrap();
    assert!(
        events.contains(",TRANSFER,agent_tx_bytes,100\r\n"),
        "{events}"
    );
}

#[test]
fn a_300_byte_route_name_is_refused_and_no_row_carries_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = telemetry(dir.path(), "agent");
    let long = "p".repeat(300);
    let refused = t.route(&Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        long.as_str(),
    ));
    assert!(refused.is_err());
    // The longest name a route keeps, all of it needing escapes, stays one field.
    let widest = "\u{7}".repeat(64);
    let r = t
        .route(&Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            widest.as_str(),
        ))
        .unwrap();
    t.add_route_xfer_stats_us(r, 5, 10, 1, 1);
    t.flush().unwrap();
    drop(t);
    let rows = rows(&dir.path().join("agent.routes.csv"));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["peer"], "\\u{7}".repeat(64));
    assert!(
        !std::fs::read_to_string(dir.path().join("agent.routes.csv"))
            .unwrap()
            .contains(&long)
    );
}
