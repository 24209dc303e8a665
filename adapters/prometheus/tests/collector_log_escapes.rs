//! Every line the node collector logs quotes agent and file names escaped: a ring
//! file, a stray file, a link or a directory named with a newline, an `ESC`, a bell,
//! a right-to-left override or bytes that are not UTF-8 cannot forge a log line or
//! drive the terminal that shows the log. One test per file: the logger is
//! process-wide.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;
use std::time::Duration;

use telering_core::text::first_unsafe_char;
use telering_core::{Category, Event, builtin};
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_shm::{ShmWriter, WriterOptions};

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Recorder;

impl log::Log for Recorder {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        LINES.lock().unwrap().push(record.args().to_string());
    }
    fn flush(&self) {}
}

const HOSTILE: &str = "ag\u{1b}]0;pwned\u{7}\nforged: line\u{202e}<b>";

fn event() -> Event {
    Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 64)
}

#[test]
fn collector_log_lines_escape_every_agent_and_file_name() {
    log::set_logger(&Recorder).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // A ring under a hostile name (made under a plain one, then renamed into place).
    let mut w = ShmWriter::create(WriterOptions::new(dir, "plain")).unwrap();
    w.write_batch(&[event()]);
    std::fs::rename(dir.join("plain"), dir.join(HOSTILE)).unwrap();
    // Entries that are not rings, under hostile names.
    std::fs::write(dir.join(format!("{HOSTILE}.junk")), b"not a ring at all").unwrap();
    std::os::unix::fs::symlink("/nonexistent", dir.join(format!("{HOSTILE}.link"))).unwrap();
    std::fs::create_dir(dir.join(format!("{HOSTILE}.dir"))).unwrap();
    std::fs::write(dir.join(OsStr::from_bytes(b"bad-\xff\x1b[2J")), b"x").unwrap();

    let mut o = CollectorOptions::new(dir);
    o.rescan_interval = Duration::ZERO;
    o.ttl = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    assert_eq!(
        c.model().lock().counter(HOSTILE, "agent_tx_bytes"),
        Some(64)
    );
    // A new writer replaces the file (a restart), then closes it (gone, then dropped).
    drop(w);
    let mut w = ShmWriter::create(WriterOptions::new(dir, "plain")).unwrap();
    w.write_batch(&[event()]);
    std::fs::rename(dir.join("plain"), dir.join(HOSTILE)).unwrap();
    c.poll();
    w.close().unwrap();
    for _ in 0..3 {
        c.poll();
    }

    let lines = LINES.lock().unwrap().clone();
    let about_hostile = lines
        .iter()
        .filter(|l| l.contains("ag\\u{1b}]0;pwned"))
        .count();
    assert!(about_hostile >= 5, "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.contains("bad-\\xff\\u{1b}[2J")),
        "{lines:#?}"
    );
    for line in &lines {
        assert_eq!(first_unsafe_char(line), None, "a raw control in {line:?}");
        assert!(!line.contains('\u{fffd}'), "a lossy name in {line:?}");
    }
}
