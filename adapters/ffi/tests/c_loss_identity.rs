//! `recorded = delivered + counted as lost`, exactly and with the cause, in C's
//! `telering_stats_t`: a C agent (`loss_identity.c`) whose lane fills and whose CSV
//! exporter cannot write (a file size limit, `SIGXFSZ` ignored, as on a full disk).
//! The lane's refusals are `events_dropped` (each one a `TELERING_DROPPED` the agent
//! saw), the refused writes `exporter_dropped`, and the exporter says it is failing.

mod common;

use common::compile;
use std::process::Command;

#[test]
fn a_c_agent_with_a_full_lane_and_a_failing_csv_exporter_accounts_for_every_event() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("loss_identity.c", scratch.path());
    let dir = scratch.path().join("rings");
    // 1 block: the header fits, a flush's 15 rows do not.
    let script = format!(
        "trap '' XFSZ; ulimit -f 1; exec '{}' '{}'",
        exe.display(),
        dir.display()
    );
    let out = Command::new("sh").args(["-c", &script]).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Vec<u64>> = stdout
        .lines()
        .map(|l| l.split(' ').skip(1).map(|f| f.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), 5, "{stdout}");
    for (i, r) in rows.iter().enumerate() {
        let [
            _,
            answers,
            recorded,
            dropped,
            exported,
            exporter_dropped,
            not_in_layout,
            undelivered,
            errors,
            failing,
        ] = r[..]
        else {
            panic!("{stdout}")
        };
        assert_eq!(
            recorded,
            exported + dropped + exporter_dropped + not_in_layout + undelivered,
            "{stdout}"
        );
        assert_eq!(
            dropped, answers,
            "the lane's refusals, each answered: {stdout}"
        );
        if i < 4 {
            let round = i as u64 + 1;
            assert_eq!((recorded, dropped), (20 * round, 5 * round), "{stdout}");
            assert_eq!((exported, exporter_dropped), (0, 15 * round), "{stdout}");
            assert_eq!((errors, failing), (round, 1), "{stdout}");
        }
    }
    let close = &rows[4];
    assert_eq!((close[2], close[3], close[5]), (80, 20, 60), "{stdout}");
}
