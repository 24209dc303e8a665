//! The Rust firmware in continuous mode under QEMU, its UART on a TCP socket, through
//! `telering bridge` into a ring: what the ring holds is what the firmware says it
//! recorded. Needs qemu-system-arm and the thumbv7m-none-eabi target (`.ci/run`).

mod bridge_support;
mod common;

use bridge_support::qemu::*;

use common::{Running, scratch, signal, telering};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
#[ignore = "needs qemu-system-arm"]
fn continuous_firmware_through_the_bridge_matches_the_firmwares_own_totals() {
    let elf = build_firmware("plain", &[]);
    let dir = scratch();
    let port = free_port();
    let fw = qemu(&elf, dir.path(), port);
    let bridge = bridge(&dir.path().join("rings"), port);
    let ring = dir.path().join("rings/lm3s6965-fw");
    wait_until(
        Duration::from_secs(60),
        || published(&ring) >= 3000,
        "3000 events in the ring",
    );
    let (totals, dropped) = stop_firmware(fw, dir.path());
    // The firmware closed the link: everything it sent is in the ring.
    let s = stop_bridge(bridge);
    let (sums, _) = ring_sums(&ring);
    assert_eq!(sums, totals, "{s}");
    assert_eq!(s["lost_device_full"].as_u64(), Some(dropped), "{s}");
    assert_eq!(
        (s["lost_damaged"].as_u64(), s["lost_missing"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
}

#[test]
#[ignore = "needs qemu-system-arm"]
fn a_firmware_killed_and_started_again_is_a_new_epoch_and_nothing_is_repeated() {
    let elf = build_firmware("plain", &[]);
    let dir = scratch();
    let port = free_port();
    let bridge = bridge(&dir.path().join("rings"), port);
    let ring = dir.path().join("rings/lm3s6965-fw");
    let mut first = qemu(&elf, dir.path(), port);
    wait_until(
        Duration::from_secs(60),
        || published(&ring) >= 1000,
        "the first run's events",
    );
    first.child.kill().unwrap();
    first.wait();
    // The bridge read what the killed device had sent: the ring stops growing.
    let first_written = settled(&ring);
    let first_run = observed_sums(&ring);
    let fw = qemu(&elf, dir.path(), port);
    wait_until(
        Duration::from_secs(60),
        || published(&ring) >= first_written + 1000,
        "the second run's events",
    );
    let (totals, _) = stop_firmware(fw, dir.path());
    let s = stop_bridge(bridge);
    assert_eq!(s["resets"].as_u64(), Some(1), "{s}");
    assert_eq!(
        (s["lost_damaged"].as_u64(), s["lost_missing"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
    let (sums, _) = ring_sums(&ring);
    // Exactly what the first run delivered before it was killed, plus exactly the
    // second run's totals: nothing repeated, nothing of the second run lost.
    let mut expected = first_run;
    for (name, (count, sum)) in totals {
        let e = expected.entry(name).or_insert((0, 0));
        e.0 += count;
        e.1 += sum;
    }
    assert_eq!(sums, expected, "{s}");
}

/// Per-name counts and sums of the device events in a ring, read by an observer (the
/// ring is left as it is).
fn observed_sums(ring: &Path) -> BTreeMap<String, (u64, u64)> {
    let mut observer =
        telering_shm::ObserverReader::open(ring, telering_core::ObserverStart::Oldest).unwrap();
    let mut sums = BTreeMap::new();
    while let Some(e) = observer.poll().unwrap() {
        let name = e.name().unwrap();
        if name.starts_with("telering_link_") || name == "agent_telemetry_events_dropped" {
            continue;
        }
        let s = sums.entry(name.to_owned()).or_insert((0, 0));
        s.0 += 1;
        s.1 += e.value();
    }
    assert_eq!(observer.events_missed(), 0);
    sums
}

#[test]
#[ignore = "needs qemu-system-arm"]
fn a_firmware_clock_two_percent_fast_is_measured_and_mapped_within_its_bound() {
    let elf = build_firmware("fast", &[("TELERING_FW_CLOCK_PPM", "20000")]);
    let dir = scratch();
    let port = free_port();
    let fw = qemu(&elf, dir.path(), port);
    let bridge = bridge(&dir.path().join("rings"), port);
    let ring = dir.path().join("rings/lm3s6965-fw");
    wait_until(
        Duration::from_secs(60),
        || published(&ring) >= 4000,
        "4000 events",
    );
    let (totals, _) = stop_firmware(fw, dir.path());
    let done = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    let s = stop_bridge(bridge);
    let (sums, all) = ring_sums(&ring);
    assert_eq!(sums, totals, "{s}");
    let last = |name: &str| {
        all.iter()
            .rev()
            .find(|e| e.name() == Ok(name))
            .map(|e| e.value())
            .unwrap()
    };
    let drift = last("telering_link_clock_drift_ppb") as i64;
    let expected = ((1.0 / 1.02 - 1.0) * 1e9) as i64;
    assert!(
        (drift - expected).abs() < 2_000_000,
        "drift {drift} ppb, expected {expected}"
    );
    let bound = last("telering_link_clock_bound_us");
    // The last event was recorded before the firmware stopped: mapped, it is not
    // later than now, give or take the bound.
    let newest = all
        .iter()
        .filter(|e| e.name() == Ok("agent_tx_bytes"))
        .map(|e| e.timestamp_us())
        .max()
        .unwrap();
    assert!(
        newest <= done + bound,
        "newest {newest}, done {done}, bound {bound}"
    );
}

#[test]
#[ignore = "needs qemu-system-arm and gcc-arm-none-eabi"]
fn continuous_c_firmware_version_1_frames_through_the_bridge_match_its_totals() {
    let out = Command::new("bash")
        .arg(repo().join("firmware-c/build.sh"))
        .arg("continuous")
        .output()
        .expect("run firmware-c/build.sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let elf = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let dir = scratch();
    let port = free_port();
    let fw = qemu(&elf, dir.path(), port);
    let mut cmd = telering();
    cmd.args([
        "bridge",
        "--json",
        "--capacity",
        "65536",
        "--max-backoff",
        "200ms",
        "--dir",
    ])
    .arg(dir.path().join("rings"))
    .arg(format!("c-fw=tcp:127.0.0.1:{port}"))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let bridge = Running::spawn(&mut cmd);
    let ring = dir.path().join("rings/c-fw");
    wait_until(
        Duration::from_secs(60),
        || published(&ring) >= 2000,
        "2000 events in the ring",
    );
    let (totals, dropped) = stop_firmware(fw, dir.path());
    let s = stop_bridge(bridge);
    let (sums, _) = ring_sums(&ring);
    assert_eq!(sums, totals, "{s}");
    assert_eq!(s["lost_device_full"].as_u64(), Some(dropped), "{s}");
    assert_eq!(
        (s["lost_damaged"].as_u64(), s["lost_missing"].as_u64()),
        (Some(0), Some(0)),
        "{s}"
    );
}

#[test]
#[ignore = "needs qemu-system-arm"]
fn two_firmware_through_one_bridge_each_match_their_totals() {
    let elf = build_firmware("plain", &[]);
    let dir = scratch();
    let (pa, pb) = (free_port(), free_port());
    let (da, db) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&da).unwrap();
    std::fs::create_dir_all(&db).unwrap();
    let fa = qemu(&elf, &da, pa);
    let fb = qemu(&elf, &db, pb);
    // One firmware image: both say `lm3s6965-fw`; the links name them.
    let mut cmd = telering();
    cmd.args([
        "bridge",
        "--json",
        "--capacity",
        "65536",
        "--max-backoff",
        "200ms",
        "--dir",
    ])
    .arg(dir.path().join("rings"))
    .arg(format!("board-a=tcp:127.0.0.1:{pa}"))
    .arg(format!("board-b=tcp:127.0.0.1:{pb}"))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut bridge = Running::spawn(&mut cmd);
    let (ra, rb) = (
        dir.path().join("rings/board-a"),
        dir.path().join("rings/board-b"),
    );
    wait_until(
        Duration::from_secs(60),
        || published(&ra) >= 2000 && published(&rb) >= 2000,
        "both rings",
    );
    let (ta, _) = stop_firmware(fa, &da);
    let (tb, _) = stop_firmware(fb, &db);
    signal(&bridge.child, "-TERM");
    assert_eq!(bridge.wait(), Some(0));
    assert_eq!(ring_sums(&ra).0, ta);
    assert_eq!(ring_sums(&rb).0, tb);
}
