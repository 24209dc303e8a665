//! The csv exporter's own files in the ring directory (an agent exporting `buffer,csv`
//! to one folder, as the demo does) are known for what they are: no warning, while a
//! file that is neither a ring nor such a file is still warned about. An empty file is
//! looked at only once it holds something. One test per file: the logger is
//! process-wide.

#[path = "common/warnings.rs"]
mod warnings;

use std::io::Write;
use std::time::Duration;

use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_std::export::{CSV_HEADER, CsvExporter};

#[test]
fn the_csv_exporters_files_are_not_warned_about_and_other_files_still_are() {
    warnings::record();
    let dir = tempfile::tempdir().unwrap();
    let mut o = CollectorOptions::new(dir.path());
    o.rescan_interval = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();

    // Created empty, as the exporter opens it; its header comes with the first rows.
    let events = dir.path().join("agent.csv");
    let mut file = std::fs::File::create(&events).unwrap();
    c.poll();
    write!(file, "{CSV_HEADER}\r\n").unwrap();
    c.poll();
    write!(file, "17,TRANSFER,agent_tx_bytes,5\r\n").unwrap();
    c.poll();
    let routes = dir.path().join("agent.routes.csv");
    std::fs::write(&routes, format!("{}\r\n", CsvExporter::ROUTES_HEADER)).unwrap();
    // A file that only looks like one: the header without its line end, then other text.
    let lookalike = dir.path().join("lookalike");
    std::fs::write(&lookalike, format!("{CSV_HEADER}, and more")).unwrap();
    c.poll();

    let warnings = warnings::logged();
    let about = |name: &str| warnings.iter().filter(|w| w.contains(name)).count();
    assert_eq!(about("agent.csv"), 0, "{warnings:#?}");
    assert_eq!(about("agent.routes.csv"), 0, "{warnings:#?}");
    assert_eq!(about("lookalike"), 1, "{warnings:#?}");
    assert!(c.agents().is_empty());
}
