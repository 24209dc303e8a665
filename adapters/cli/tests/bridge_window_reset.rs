//! `telering bridge mem:PATH@OFFSET` when the device restarts and lays its ring out
//! again in place: the write position goes backwards. The bridge warns, counts a
//! reset and an unknown loss, and reads the new epoch's events once each.

mod common;

use common::{Running, eventually, parse_json_lines, scratch, signal, telering};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use telering_core::ring::{HeaderInfo, RingRegion};
use telering_core::{Category, Event, ObserverStart, OverflowPolicy, event_name};
use telering_shm::{DrainingReader, ObserverReader};

const OFFSET: u64 = 4096 + 24;
const CAPACITY: u32 = 1024;

/// Lays out a ring at [`OFFSET`] in the existing file `path` (as a device does at
/// each start, the file staying in place) and pushes `events` into it.
fn lay_out_and_push(path: &Path, events: &[Event]) {
    let ring_bytes = HeaderInfo::ring_bytes(CAPACITY as u64);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let map = memmap2::MmapRaw::map_raw(&file).unwrap();
    // SAFETY: `OFFSET + ring_bytes` lies inside the mapping (the file was made that
    // large), so the pointer stays in it.
    let ptr = unsafe { map.as_mut_ptr().add(OFFSET as usize) };
    // SAFETY: `ptr` is 8-aligned (the mapping is page-aligned, `OFFSET` a multiple of
    // 8) and valid for `ring_bytes` bytes of the mapping the region owns; the bridge
    // only reads the ring, through atomics, as a reader of a device's memory does.
    let region = unsafe { RingRegion::init(map, ptr, ring_bytes as usize, CAPACITY) }.unwrap();
    let mut producer =
        telering_core::Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    for e in events {
        producer.push(e).unwrap();
    }
}

fn events(first: u64, n: u64) -> Vec<Event> {
    (first..first + n)
        .map(|i| {
            Event::new(
                10_000 + i,
                Category::Transfer,
                event_name!("agent_tx_bytes"),
                i,
            )
        })
        .collect()
}

/// The device events (not the link's own) the ring `path` holds now.
fn observed(path: &Path) -> Vec<Event> {
    let Ok(mut o) = ObserverReader::open(path, ObserverStart::Oldest) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    while let Ok(Some(e)) = o.poll() {
        if !e.name().unwrap().starts_with("telering_link_") {
            out.push(e);
        }
    }
    out
}

#[test]
fn a_window_laid_out_again_is_a_reset_warned_about_and_nothing_is_read_twice() {
    let dir = scratch();
    let window = dir.path().join("ram.bin");
    let ring_bytes = HeaderInfo::ring_bytes(CAPACITY as u64);
    std::fs::write(&window, vec![0xA5u8; (OFFSET + ring_bytes + 512) as usize]).unwrap();
    let first = events(0, 100);
    lay_out_and_push(&window, &first);
    let mut cmd = telering();
    cmd.args(["bridge", "--json", "--dir"])
        .arg(dir.path())
        .arg(format!("ram=mem:{}@{OFFSET}", window.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut bridge = Running::spawn(&mut cmd);
    let ring = dir.path().join("ram");
    let got = eventually(Duration::from_secs(30), || {
        Some(()).filter(|()| observed(&ring).len() == 100)
    });
    assert!(got.is_some(), "the bridge never read the first epoch");
    // The device restarts: its ring laid out again in place, 30 new events.
    let second = events(1_000, 30);
    lay_out_and_push(&window, &second);
    let got = eventually(Duration::from_secs(30), || {
        Some(()).filter(|()| observed(&ring).len() >= 130)
    });
    assert!(got.is_some(), "the bridge never read the second epoch");
    signal(&bridge.child, "-TERM");
    let code = bridge.wait();
    let mut out = String::new();
    std::io::Read::read_to_string(bridge.child.stdout.as_mut().unwrap(), &mut out).unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(bridge.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(code, Some(0), "{out}\n{err}");
    let s = parse_json_lines(&out).remove(0);
    assert_eq!(
        (
            s["events"].as_u64(),
            s["resets"].as_u64(),
            s["lapped_unknown"].as_u64()
        ),
        (Some(130), Some(1), Some(1)),
        "{s}"
    );
    assert_eq!(
        err.lines().filter(|l| l.contains("went backwards")).count(),
        1,
        "{err}"
    );
    let mut drain = DrainingReader::open(&ring).unwrap();
    let mut all = Vec::new();
    while let Some(e) = drain.pop().unwrap() {
        all.push(e);
    }
    let device: Vec<Event> = all
        .iter()
        .filter(|e| !e.name().unwrap().starts_with("telering_link_"))
        .copied()
        .collect();
    let expected: Vec<Event> = first.iter().chain(&second).copied().collect();
    assert_eq!(device, expected);
    let reported = |name: &str| -> u64 {
        all.iter()
            .filter(|e| e.name() == Ok(name))
            .map(Event::value)
            .sum()
    };
    assert_eq!(
        (
            reported("telering_link_resets"),
            reported("telering_link_lapped_unknown")
        ),
        (1, 1)
    );
}
