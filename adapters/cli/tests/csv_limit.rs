//! The CSV exporter on a file system that refuses part of a batch (here a file size
//! limit, `RLIMIT_FSIZE`, which needs no root, unlike a full tmpfs): the file keeps
//! whole rows only, and the rows in it are exactly the events counted as exported.

mod common;

use common::*;

#[test]
fn a_refused_append_leaves_whole_rows_that_match_the_exported_count() {
    let dir = scratch();
    let telering_bin = env!("CARGO_BIN_EXE_telering");
    // SIGXFSZ ignored (kept across exec), so a write past the limit fails with EFBIG
    // after writing what fits, cutting a row.
    for (limit, events, rate) in [("400", "20000", "20000"), ("100", "50000", "0")] {
        let _ = std::fs::remove_dir_all(dir.path().join("tel"));
        let script = format!(
            "trap '' XFSZ; ulimit -f {limit}; exec {telering_bin} demo --dir tel --agent csvag --exporter csv --events {events} --rate {rate} --no-serve --json"
        );
        let out = run_in(
            dir.path(),
            std::process::Command::new("sh").args(["-c", &script]),
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let summary: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        let exported = summary["events_exported"].as_u64().unwrap();
        let dropped = summary["events_dropped"].as_u64().unwrap();
        assert!(dropped > 0, "the limit refused some batches: {summary}");
        assert_eq!(exported + dropped, events.parse::<u64>().unwrap());
        // Each failed append is a counted failure, and warned about.
        assert!(summary["export_errors"].as_u64().unwrap() > 0, "{summary}");
        assert!(
            stderr(&out).contains("telemetry export of"),
            "{}",
            stderr(&out)
        );

        let text = std::fs::read_to_string(dir.path().join("tel/csvag.csv")).unwrap();
        assert!(
            text.ends_with("\r\n"),
            "ends in a cut row: {:?}",
            &text[text.len().saturating_sub(80)..]
        );
        let rows: Vec<&str> = text.split_terminator("\r\n").skip(1).collect();
        for row in &rows {
            let fields: Vec<&str> = row.split(',').collect();
            assert_eq!(fields.len(), 4, "not a whole row: {row:?}");
            assert!(
                fields[0].parse::<u64>().is_ok() && fields[3].parse::<u64>().is_ok(),
                "{row:?}"
            );
        }
        // In-band loss reports are rows too, but not events of the run.
        let event_rows = rows
            .iter()
            .filter(|r| !r.contains(",agent_telemetry_events_dropped,"))
            .count() as u64;
        assert_eq!(event_rows, exported, "limit {limit}");
    }
}
