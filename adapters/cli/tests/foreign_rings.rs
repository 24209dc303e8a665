//! `telering read`, `tail` and `stat` on rings that meet other programs: a ring NIXL
//! made and telering reused in place, and a ring NIXL re-created in place under a
//! running `read -f`. The NIXL files are laid out byte by byte here.

mod common;

use common::*;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;
use telering_core::builtin;
use telering_core::{Category, Event, OverflowPolicy};
use telering_shm::{RingLayout, ShmWriter, WriterOptions};

const CAPACITY: u64 = 128;

/// NIXL's version-4 writer on an existing file: truncate to its own size, lay out
/// the header again, publish `events` (type 0, values 500 + i) whose padding bytes
/// hold 0xA7, as uninitialised memory may.
fn nixl_v4(path: &Path, written: u64, read: u64) {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .unwrap();
    file.set_len(40 + CAPACITY * 16).unwrap();
    let mut b = Vec::new();
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&(read % CAPACITY).to_le_bytes());
    b.extend_from_slice(&4i32.to_le_bytes());
    b.extend_from_slice(&4i32.to_le_bytes());
    b.extend_from_slice(&CAPACITY.to_le_bytes());
    b.extend_from_slice(&(CAPACITY - 1).to_le_bytes());
    file.write_all_at(&b, 0).unwrap();
    for i in 0..written {
        let mut slot = [0xA7u8; 16];
        slot[..4].copy_from_slice(&0u32.to_le_bytes());
        slot[8..].copy_from_slice(&(500 + i).to_le_bytes());
        file.write_all_at(&slot, 40 + (i % CAPACITY) * 16).unwrap();
    }
    file.write_all_at(&(written % CAPACITY).to_le_bytes(), 0)
        .unwrap();
}

fn v4_options(dir: &Path) -> WriterOptions {
    let mut o = WriterOptions::new(dir, "a");
    o.capacity = CAPACITY as u32;
    o.policy = OverflowPolicy::DropNewest;
    o.layout = RingLayout::V4;
    o
}

fn tx(value: u64) -> Event {
    Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, value)
}

fn values(json: &str) -> Vec<u64> {
    parse_json_lines(json)
        .iter()
        .map(|l| l["value"].as_u64().unwrap())
        .collect()
}

#[test]
fn tail_of_a_nixl_ring_reused_in_place_prints_exactly_telerings_events() {
    for read in [100, 90, 40] {
        let dir = scratch();
        let path = dir.path().join("a");
        nixl_v4(&path, 100, read);
        let mut writer = ShmWriter::create(v4_options(dir.path())).unwrap();
        writer.write_batch(&(0..20).map(tx).collect::<Vec<_>>());
        let out = run_in(dir.path(), telering().args(["tail", "--json", "a"]));
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(
            values(&stdout(&out)),
            (0..20).collect::<Vec<_>>(),
            "{read} read"
        );
        assert!(!stderr(&out).contains("gap"), "{}", stderr(&out));
        // `read` drains NIXL's unread events first, then telering's.
        let out = run_in(dir.path(), telering().args(["read", "--json", "a"]));
        let expected: Vec<u64> = (read..100).map(|i| 500 + i).chain(0..20).collect();
        assert_eq!(values(&stdout(&out)), expected);
    }
}

/// A telering v4 ring `a` in a scratch directory holding values 0..5, followed by
/// `telering COMMAND -f --json` whose output and errors go to files.
struct Following {
    // Dropped in this order: the reader, the writer, then the directory.
    reader: Running,
    writer: Option<ShmWriter>,
    path: std::path::PathBuf,
    out_file: std::path::PathBuf,
    err_file: std::path::PathBuf,
    dir: tempfile::TempDir,
}

impl Following {
    fn start(command: &str) -> Following {
        let dir = scratch();
        let mut writer = ShmWriter::create(v4_options(dir.path())).unwrap();
        let path = writer.path().to_path_buf();
        writer.write_batch(&(0..5).map(tx).collect::<Vec<_>>());
        let out_file = dir.path().join("out.jsonl");
        let err_file = dir.path().join("err.txt");
        let reader = Running::spawn(
            telering()
                .args([command, "-f", "--json", "--interval", "10"])
                .arg(&path)
                .stdout(std::fs::File::create(&out_file).unwrap())
                .stderr(std::fs::File::create(&err_file).unwrap()),
        );
        let f = Following {
            reader,
            writer: Some(writer),
            path,
            out_file,
            err_file,
            dir,
        };
        assert_eq!(f.printed(5).unwrap(), (0..5).collect::<Vec<_>>());
        f
    }

    /// The values printed, once there are at least `n` (within 30 s).
    fn printed(&self, n: usize) -> Option<Vec<u64>> {
        eventually(Duration::from_secs(30), || {
            let got = values(&std::fs::read_to_string(&self.out_file).unwrap());
            (got.len() >= n).then_some(got)
        })
    }

    /// NIXL's writer re-creates the ring in place with 30 events; the reader is
    /// stopped meanwhile, so that it sees no half-written header (NIXL's writer takes
    /// no lock a reader could wait for).
    fn nixl_re_creates(&self) {
        signal(&self.reader.child, "-STOP");
        nixl_v4(&self.path, 30, 0);
        signal(&self.reader.child, "-CONT");
    }

    fn errors(&self) -> String {
        std::fs::read_to_string(&self.err_file).unwrap()
    }

    /// Still running; ends it with SIGINT and expects exit 0.
    fn stop(mut self) {
        assert_eq!(
            self.reader.child.try_wait().unwrap(),
            None,
            "still following"
        );
        signal(&self.reader.child, "-INT");
        assert_eq!(self.reader.wait(), Some(0), "{}", self.errors());
    }
}

#[test]
fn read_follow_goes_on_with_a_ring_nixl_re_created_in_place() {
    let f = Following::start("read");
    f.nixl_re_creates();
    let got = f.printed(35).expect("the re-created ring's 30 events");
    let expected: Vec<u64> = (0..5).chain(500..530).collect();
    assert_eq!(got, expected);
    f.stop();
}

#[test]
fn tail_follow_waits_out_a_ring_nixl_re_created_in_place_and_takes_up_the_next() {
    let mut f = Following::start("tail");
    f.nixl_re_creates();
    // NIXL's ring has no slot stamps: said once, and `tail` goes on waiting.
    let said = "waiting for a ring with slot stamps at the path";
    eventually(Duration::from_secs(30), || {
        f.errors().contains(said).then_some(())
    })
    .expect("the stampless ring reported");
    // A telering writer takes the path over with a ring of its own (another
    // capacity: a new file), carrying the NIXL ring's 30 unread events into it (for
    // a draining reader): `tail` follows it from the first event after them.
    drop(f.writer.take()); // its file was truncated under it: closing is an error
    let mut options = v4_options(f.dir.path());
    options.capacity = 64;
    let mut next = ShmWriter::create(options).unwrap();
    next.write_batch(&(100..110).map(tx).collect::<Vec<_>>());
    f.writer = Some(next);
    let got = f.printed(15).expect("the new ring's 10 events");
    assert_eq!(got, (0..5).chain(100..110).collect::<Vec<_>>());
    assert_eq!(f.errors().matches(said).count(), 1, "{}", f.errors());
    f.stop();
}

#[test]
fn a_second_read_on_one_ring_is_refused_naming_the_first() {
    let dir = scratch();
    let mut writer = ShmWriter::create(WriterOptions::new(dir.path(), "a")).unwrap();
    writer.write_batch(&[tx(1)]);
    let out_file = dir.path().join("first.jsonl");
    let mut first = Running::spawn(
        telering()
            .current_dir(dir.path())
            .args(["read", "-f", "--json", "--interval", "10", "a"])
            .stdout(std::fs::File::create(&out_file).unwrap()),
    );
    // Once it printed the event it holds the ring.
    eventually(Duration::from_secs(30), || {
        (!std::fs::read_to_string(&out_file).unwrap().is_empty()).then_some(())
    })
    .expect("the first reader's event");
    let second = run_in(dir.path(), telering().args(["read", "--json", "a"]));
    assert_fails(
        &second,
        1,
        &[
            &format!("pid {}", first.child.id()),
            "one draining reader",
            "telering tail",
        ],
    );
    // Observers are never refused.
    let tail = run_in(dir.path(), telering().args(["tail", "--json", "a"]));
    assert_eq!(tail.status.code(), Some(0), "{}", stderr(&tail));
    signal(&first.child, "-INT");
    assert_eq!(first.wait(), Some(0));
    let again = run_in(dir.path(), telering().args(["read", "--json", "a"]));
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
}

#[test]
fn serve_warns_once_about_a_ring_nixl_re_created_in_place_and_serves_the_others() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let mut a = ShmWriter::create(v4_options(&rings)).unwrap();
    a.write_batch(&[tx(1)]);
    let err_file = dir.path().join("err.txt");
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&err_file).unwrap()),
    );
    let mut out = std::io::BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving"));
    let tx_total = |agent: &str, want: f64| {
        let series = format!("agent_tx_bytes_total{{agent_name=\"{agent}\"");
        eventually(Duration::from_secs(30), || {
            (sample(&http_get(addr, "/metrics"), &series) == Some(want)).then_some(())
        })
        .unwrap_or_else(|| panic!("{agent}'s total {want}"))
    };
    tx_total("a", 1.0);
    // Stopped while the file is laid out again, so that it sees no half-written
    // header (NIXL's writer takes no lock a reader could wait for).
    signal(&serve.child, "-STOP");
    nixl_v4(a.path(), 30, 0);
    signal(&serve.child, "-CONT");
    let stampless = "does not stamp the slots";
    eventually(Duration::from_secs(30), || {
        std::fs::read_to_string(&err_file)
            .unwrap()
            .contains(stampless)
            .then_some(())
    })
    .expect("a warning that the re-created ring cannot be observed");
    // Two more events of another agent, seen at two later polls: `a` was polled in
    // between, and failed again.
    let mut b_options = v4_options(&rings);
    b_options.agent_name = "b".into();
    let mut b = ShmWriter::create(b_options).unwrap();
    b.write_batch(&[tx(1)]);
    tx_total("b", 1.0);
    b.write_batch(&[tx(2)]);
    tx_total("b", 3.0);
    let err = std::fs::read_to_string(&err_file).unwrap();
    assert_eq!(err.matches(stampless).count(), 1, "{err}");
    assert_eq!(serve.child.try_wait().unwrap(), None, "still serving");
    drop((a, b));
}

#[test]
fn a_writer_restarted_with_another_capacity_or_layout_warns_that_it_replaces_the_ring() {
    let dir = scratch();
    let demo = |size: &str, layout: &str| {
        run_in(
            dir.path(),
            telering()
                .args(["demo", "--dir", "d", "--agent", "a", "--events", "10"])
                .args(["--rate", "0", "--no-serve"])
                .env("NIXL_TELEMETRY_BUFFER_SIZE", size)
                .env("TELERING_RING_LAYOUT", layout),
        )
    };
    let first = demo("256", "v1");
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(!stderr(&first).contains("replacing"), "{}", stderr(&first));
    // At the default log level: readers still following the old file see nothing new
    // until they have read it to the end.
    let bigger = demo("512", "v1");
    assert_eq!(bigger.status.code(), Some(0), "{}", stderr(&bigger));
    let err = stderr(&bigger);
    assert!(
        err.lines().any(|l| l.contains("warning")
            && l.contains("replacing a")
            && l.contains("256 slots")
            && l.contains("512 slots")
            && l.contains("unread events are carried into the new ring")),
        "{err}"
    );
    // The first run's events, unread, are in the new ring: nothing went with the old.
    let info = telering_shm::stat(&dir.path().join("d/a")).unwrap();
    assert!(info.fill >= 10, "{info:?}");
    assert_eq!(info.trailer.unwrap().dropped_staging, 0);
    let other_layout = demo("512", "v4");
    let err = stderr(&other_layout);
    assert!(
        err.lines()
            .any(|l| l.contains("warning") && l.contains("replacing a") && l.contains("version 4")),
        "{err}"
    );
}

#[test]
fn serve_and_top_count_no_missed_events_in_a_nixl_ring_reused_in_place() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    std::fs::create_dir_all(&rings).unwrap();
    nixl_v4(&rings.join("a"), 100, 0);
    let mut writer = ShmWriter::create(v4_options(&rings)).unwrap();
    writer.write_batch(&(1..=20).map(tx).collect::<Vec<_>>());
    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(std::process::Stdio::piped()),
    );
    let mut out = std::io::BufReader::new(serve.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving"));
    // Exactly telering's 20 events (1 + 2 + … + 20 bytes), none of NIXL's.
    let page = eventually(Duration::from_secs(30), || {
        let page = http_get(addr, "/metrics");
        (sample(&page, "agent_tx_bytes_total{agent_name=\"a\"") == Some(210.0)).then_some(page)
    })
    .expect("telering's 20 events served");
    assert_eq!(
        sample(
            &page,
            "agent_telemetry_events_missed_total{agent_name=\"a\""
        ),
        Some(0.0),
        "{page}"
    );
    let top = run_in(dir.path(), telering().args(["top", "--once", "rings"]));
    assert_eq!(top.status.code(), Some(0), "{}", stderr(&top));
    let text = stdout(&top);
    let header = text.lines().next().unwrap();
    let row = text.lines().find(|l| l.starts_with("a ")).unwrap();
    let column = |name: &str| {
        let at = header.find(name).unwrap();
        row[at..].split_whitespace().next().unwrap().to_string()
    };
    assert_eq!(column("MISSED"), "0", "{text}");
    drop(writer);
}

#[test]
fn a_demo_whose_ring_file_is_unlinked_counts_what_went_into_it_as_lost_not_exported() {
    let dir = scratch();
    let ring = dir.path().join("telemetry/u");
    let out_file = dir.path().join("out.txt");
    let mut demo = Running::spawn(
        telering()
            .current_dir(dir.path())
            .env("NIXL_TELEMETRY_BUFFER_SIZE", "65536")
            .args(["demo", "--agent", "u", "--events", "4000", "--rate", "1000"])
            .args(["--no-serve", "--seed", "1"])
            .stdout(std::fs::File::create(&out_file).unwrap())
            .stderr(std::process::Stdio::piped()),
    );
    eventually(Duration::from_secs(30), || {
        telering_shm::stat(&ring)
            .is_ok_and(|info| info.fill > 0)
            .then_some(())
    })
    .expect("events in the demo's ring file");
    // As NIXL's reader does with a ring file of another version.
    std::fs::remove_file(&ring).unwrap();
    assert_eq!(demo.wait(), Some(0));
    let text = std::fs::read_to_string(&out_file).unwrap();
    let exported = text
        .lines()
        .find(|l| l.starts_with("exported: "))
        .unwrap_or_else(|| panic!("{text}"));
    let numbers: Vec<u64> = exported
        .split_whitespace()
        .filter_map(|w| w.trim_end_matches([',', ')']).parse().ok())
        .collect();
    let [delivered, recorded, lost] = numbers[..] else {
        panic!("three totals expected in: {exported}");
    };
    assert!(
        exported.ends_with(" lost in a ring file another program unlinked (made again)"),
        "{exported}"
    );
    assert!(lost > 0 && !exported.contains("refused"), "{exported}");
    assert_eq!(delivered + lost, recorded, "{exported}");
    // What the summary calls delivered is in the file made again, or was in the old
    // one before the writer's previous check of its path.
    assert!(ring.exists());
}

/// NIXL's version-1 writer (0.5.1 to 1.0.1), byte by byte: 56-byte slots, no
/// trailer, no stamps; it writes a slot, then `write_pos`. When it starts it
/// re-creates the ring in place at the same size (same inode, positions 0, here
/// with the slots zeroed too).
struct NixlV1(std::fs::File, u64);

impl NixlV1 {
    fn start(path: &Path, capacity: u64) -> NixlV1 {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .unwrap();
        file.set_len(0).unwrap();
        file.set_len(40 + capacity * 56).unwrap();
        let mut b = vec![0u8; 16];
        b.extend_from_slice(&1i32.to_le_bytes());
        b.extend_from_slice(&1i32.to_le_bytes());
        b.extend_from_slice(&capacity.to_le_bytes());
        b.extend_from_slice(&(capacity - 1).to_le_bytes());
        file.write_all_at(&b, 0).unwrap();
        NixlV1(file, capacity)
    }

    fn position(&self, at: u64) -> u64 {
        let mut b = [0u8; 8];
        self.0.read_exact_at(&mut b, at).unwrap();
        u64::from_le_bytes(b)
    }

    /// Publishes `agent_tx_bytes` events of these values, waiting while full.
    fn write(&self, values: std::ops::Range<u64>) {
        for value in values {
            let w = self.position(0);
            let next = (w + 1) & (self.1 - 1);
            eventually(Duration::from_secs(30), || {
                (next != self.position(8)).then_some(())
            })
            .expect("the reader takes events");
            let mut slot = [0u8; 56];
            slot[..8].copy_from_slice(&(1_700_000_000_000_000 + value).to_le_bytes());
            slot[8..12].copy_from_slice(&1i32.to_le_bytes());
            slot[12..26].copy_from_slice(b"agent_tx_bytes");
            slot[48..].copy_from_slice(&value.to_le_bytes());
            self.0.write_all_at(&slot, 40 + w * 56).unwrap();
            self.0.write_all_at(&next.to_le_bytes(), 0).unwrap();
        }
    }
}

#[test]
fn read_follow_neither_invents_nor_repeats_events_when_a_nixl_v1_writer_restarts() {
    // 3000 events at capacity 4096: the second run's would follow 1096 never-written
    // slots; 72 at capacity 64: its slots 8.. hold the first run's last events.
    for (capacity, first) in [(4096, 3000), (64, 72)] {
        let dir = scratch();
        let path = dir.path().join("a");
        let out_file = dir.path().join("out.jsonl");
        let err_file = dir.path().join("err.txt");
        let nixl = NixlV1::start(&path, capacity);
        let mut reader = Running::spawn(
            telering()
                .args(["read", "-f", "--json", "--interval", "10"])
                .arg(&path)
                .stdout(std::fs::File::create(&out_file).unwrap())
                .stderr(std::fs::File::create(&err_file).unwrap()),
        );
        let printed = |n: usize| {
            eventually(Duration::from_secs(30), || {
                let got = values(&std::fs::read_to_string(&out_file).unwrap());
                (got.len() >= n).then_some(got)
            })
        };
        nixl.write(0..first);
        assert_eq!(printed(first as usize).unwrap().len() as u64, first);
        // The restart, while the reader is stopped (NIXL's writer takes no lock).
        signal(&reader.child, "-STOP");
        drop(nixl);
        let nixl = NixlV1::start(&path, capacity);
        signal(&reader.child, "-CONT");
        nixl.write(100_000..100_000 + first);
        // A last event: whatever a reader invents comes before it.
        nixl.write(999_999..1_000_000);
        let got = eventually(Duration::from_secs(30), || {
            let got = values(&std::fs::read_to_string(&out_file).unwrap());
            (got.last() == Some(&999_999)).then_some(got)
        })
        .expect("the second run's events");
        let mut expected: Vec<u64> = (0..first).chain(100_000..100_000 + first).collect();
        expected.push(999_999);
        let first_wrong = got.iter().zip(&expected).position(|(g, e)| g != e);
        assert!(
            got.len() == expected.len() && first_wrong.is_none(),
            "capacity {capacity}: {} events printed for {}; first wrong at {first_wrong:?}",
            got.len(),
            expected.len()
        );
        let errors = std::fs::read_to_string(&err_file).unwrap();
        assert!(errors.contains("restarted following"), "{errors}");
        signal(&reader.child, "-INT");
        assert_eq!(reader.wait(), Some(0), "{errors}");
    }
}
