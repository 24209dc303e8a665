//! `telering bridge mem:PATH@OFFSET`: a device's ring laid out by telering-core at an
//! offset inside a larger file (page-unaligned), followed read-only; offsets that do
//! not fit exit 2 before anything is created; a window exported through `csv` too.

mod common;

use common::{Running, assert_fails, parse_json_lines, scratch, signal, telering};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use telering_core::ring::{HeaderInfo, RingRegion};
use telering_core::{Category, Event, ObserverStart, OverflowPolicy, event_name};
use telering_shm::ObserverReader;

/// One page and 24 bytes: not page-aligned, 8-aligned.
const OFFSET: u64 = 4096 + 24;
const CAPACITY: u32 = 1024;

/// Lays out a ring of [`CAPACITY`] slots `offset` bytes into `path`, after bytes of
/// other data, followed by more; pushes `events` into it.
fn window_file(path: &Path, offset: u64, events: &[Event]) {
    let ring_bytes = HeaderInfo::ring_bytes(CAPACITY as u64);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .unwrap();
    // Other data before the ring (0xA5 everywhere) and 512 bytes after it.
    std::fs::write(path, vec![0xA5u8; (offset + ring_bytes + 512) as usize]).unwrap();
    let map = memmap2::MmapRaw::map_raw(&file).unwrap();
    // SAFETY: `offset + ring_bytes` lies inside the mapping, so the pointer stays in it.
    let ptr = unsafe { map.as_mut_ptr().add(offset as usize) };
    // SAFETY: `ptr` is 8-aligned (the mapping is page-aligned, `offset` a multiple
    // of 8) and valid for `ring_bytes` bytes of the mapping the region owns (it stays
    // at its address when `MmapRaw` moves); nothing else has the file open while
    // `init` runs, and afterwards every access is through atomics.
    let region = unsafe { RingRegion::init(map, ptr, ring_bytes as usize, CAPACITY) }.unwrap();
    let mut producer =
        telering_core::Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    for e in events {
        producer.push(e).unwrap();
    }
}

fn events(n: u64) -> Vec<Event> {
    let mut out: Vec<Event> = (0..n)
        .map(|i| {
            Event::new(
                10_000 + i,
                Category::Transfer,
                event_name!("agent_tx_bytes"),
                i * 3 + 1,
            )
        })
        .collect();
    out.push(Event::new(
        20_000,
        Category::Custom,
        event_name!("test_stream_end"),
        1,
    ));
    out
}

fn device_events(path: &Path) -> Vec<Event> {
    let mut reader = telering_shm::DrainingReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(e) = reader.pop().unwrap() {
        let name = e.name().unwrap();
        if !name.starts_with("telering_link_") && name != "agent_telemetry_events_dropped" {
            out.push(e);
        }
    }
    out
}

fn wait_for_end_marker(path: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut observer = None;
    while Instant::now() < deadline {
        if observer.is_none() {
            observer = ObserverReader::open(path, ObserverStart::Oldest).ok();
        }
        if let Some(o) = &mut observer {
            while let Some(e) = o.poll().unwrap() {
                if e.name() == Ok("test_stream_end") {
                    return;
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{} never received the end marker", path.display());
}

#[test]
fn a_ring_at_a_page_unaligned_offset_in_a_larger_file_becomes_a_ring_with_every_event() {
    // Off a page, and at the file's start with more data after the ring (a BAR larger
    // than the ring it holds).
    for (offset, link) in [
        (OFFSET, format!("@{OFFSET:#x}")),
        (0, String::new()),
        (8, "@8".into()),
    ] {
        a_window_at(offset, &link);
    }
}

fn a_window_at(offset: u64, at: &str) {
    let dir = scratch();
    let window = dir.path().join("ram.bin");
    let sent = events(700);
    window_file(&window, offset, &sent);
    let mut cmd = telering();
    cmd.args(["bridge", "--json", "--dir"])
        .arg(dir.path())
        .arg(format!("ram=mem:{}{at}", window.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut bridge = Running::spawn(&mut cmd);
    let ring = dir.path().join("ram");
    wait_for_end_marker(&ring);
    signal(&bridge.child, "-TERM");
    let code = bridge.wait();
    let mut out = String::new();
    std::io::Read::read_to_string(bridge.child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert_eq!(code, Some(0), "offset {offset}: {out}");
    let s = parse_json_lines(&out).remove(0);
    assert_eq!(
        (
            s["events"].as_u64(),
            s["lost_lapped"].as_u64(),
            s["lost_damaged"].as_u64()
        ),
        (Some(701), Some(0), Some(0)),
        "{s}"
    );
    assert_eq!(device_events(&ring), sent);
}

#[test]
fn an_offset_whose_ring_does_not_fit_the_file_exits_2_naming_the_link_and_creates_nothing() {
    let dir = scratch();
    let window = dir.path().join("ram.bin");
    window_file(&window, OFFSET, &events(3));
    let size = std::fs::metadata(&window).unwrap().len();
    let out_dir = dir.path().join("rings");
    for (offset, needles) in [
        // Past the end of the file.
        (size + 4096, vec!["past", "offset"]),
        // As far as a number goes (8-aligned): no overflow, the same refusal.
        (u64::MAX - 7, vec!["past", "offset"]),
        // Inside the file, but no ring header there (the bytes before the ring).
        (8, vec!["offset 8"]),
        // A ring header whose ring would end past the file: the file cut short.
        (OFFSET, vec!["past the file's end"]),
    ] {
        if offset == OFFSET {
            let cut = std::fs::OpenOptions::new()
                .write(true)
                .open(&window)
                .unwrap();
            cut.set_len(OFFSET + 1024).unwrap();
        }
        let link = format!("ram=mem:{}@{offset}", window.display());
        let o = telering()
            .args(["bridge", "--dir"])
            .arg(&out_dir)
            .arg(&link)
            .output()
            .unwrap();
        let mut all = vec![link.as_str()];
        all.extend(needles);
        assert_fails(&o, 2, &all);
        assert!(
            !out_dir.exists(),
            "offset {offset}: a ring directory was made"
        );
    }
    // Not 8-aligned: refused when the link is read.
    let link = format!("mem:{}@4097", window.display());
    let o = telering()
        .args(["bridge", "--dir"])
        .arg(&out_dir)
        .arg(&link)
        .output()
        .unwrap();
    assert_fails(&o, 2, &["multiple of 8", "4097"]);
    assert!(!out_dir.exists());
}

#[test]
fn a_window_at_an_offset_exported_as_csv_has_every_event() {
    let dir = scratch();
    let window = dir.path().join("ram.bin");
    let sent = events(300);
    window_file(&window, OFFSET, &sent);
    let mut cmd = telering();
    cmd.args(["bridge", "--json", "--exporter", "csv", "--dir"])
        .arg(dir.path())
        .arg(format!("ram=mem:{}@{OFFSET}", window.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut bridge = Running::spawn(&mut cmd);
    wait_for_end_marker(&dir.path().join("ram"));
    signal(&bridge.child, "-TERM");
    assert_eq!(bridge.wait(), Some(0));
    let csv = std::fs::read_to_string(dir.path().join("ram.csv")).unwrap();
    let rows: Vec<(String, u64)> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[2].to_owned(), f[3].parse().unwrap())
        })
        .filter(|(name, _)| !name.starts_with("telering_link_"))
        .collect();
    let expected: Vec<(String, u64)> = sent
        .iter()
        .map(|e| (e.name().unwrap().to_owned(), e.value()))
        .collect();
    assert_eq!(rows, expected);
}
