//! The Rust and C firmware under QEMU, through `telering bridge`, read back by every
//! surface a user has: the ring, `telering stat --json` and `telering serve`'s
//! /metrics. Per event name, what arrives equals what the firmware itself says it
//! recorded (its totals over semihosting); what the firmware dropped is counted lost
//! at each surface. Also: two firmware through one bridge, the version-1 fixed
//! sequence, and a clock 0.1 % fast or slow mapped within the bound the bridge states.
//! Needs qemu-system-arm, gcc-arm-none-eabi and the thumbv7m-none-eabi target
//! (`.ci/run`).

mod bridge_support;
mod common;

use bridge_support::qemu::{free_port, published, qemu, qemu_serial, repo, settled, wait_until};
use common::{Running, parse_json_lines, scratch, signal, telering};
use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use telering_shm::DrainingReader;

/// Per event name: (count, sum).
type Totals = BTreeMap<String, (u64, u64)>;

/// Builds the Rust firmware (`features`, without the default ones when `features`
/// is not empty) with build-time `env`, in its own target directory `variant`.
fn rust_firmware(variant: &str, features: &str, env: &[(&str, &str)]) -> PathBuf {
    let firmware = repo().join("firmware");
    let target = firmware.join("target").join(variant);
    let mut cmd = Command::new("cargo");
    cmd.current_dir(&firmware)
        .env("CARGO_TARGET_DIR", &target)
        .envs(env.iter().copied())
        .args(["build", "--release", "--quiet"]);
    if !features.is_empty() {
        cmd.args(["--no-default-features", "--features", features]);
    }
    assert!(
        cmd.status().expect("run cargo").success(),
        "the firmware did not build"
    );
    target.join("thumbv7m-none-eabi/release/telering-firmware")
}

/// Builds the C firmware in continuous mode (link format version 2) with `env`.
fn c_firmware(variant: &str, env: &[(&str, &str)]) -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("firmware-c/build.sh"))
        .arg("continuous")
        .env("TELERING_FW_ELF", format!("e2e-{variant}"))
        .envs(env.iter().copied())
        .output()
        .expect("run firmware-c/build.sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// `telering bridge --json` writing rings into `dir`, following `links`.
fn bridge(dir: &Path, links: &[String]) -> Running {
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
    .arg(dir)
    .args(links)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    Running::spawn(&mut cmd)
}

/// What a firmware printed when it stopped.
#[derive(Debug)]
struct Stopped {
    totals: Totals,
    dropped: u64,
    frames: u64,
}

/// Creates `dir/telering-stop`, waits for the firmware to exit with 0 and parses its
/// totals (`telering total: NAME count=N sum=S`, `telering totals: … dropped=D
/// frames=F`).
fn stop_firmware(mut fw: Running, dir: &Path) -> Stopped {
    std::fs::write(dir.join("telering-stop"), b"").unwrap();
    assert_eq!(fw.wait(), Some(0), "the firmware's exit status");
    let mut out = String::new();
    std::io::Read::read_to_string(fw.child.stdout.as_mut().unwrap(), &mut out).unwrap();
    let field = |words: &str, key: &str| -> Option<u64> {
        words
            .split(' ')
            .find_map(|w| w.strip_prefix(key))
            .map(|v| v.parse().unwrap())
    };
    let mut stopped = Stopped {
        totals: Totals::new(),
        dropped: u64::MAX,
        frames: 0,
    };
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("telering total: ") {
            let name = rest.split(' ').next().unwrap().to_owned();
            let count = field(rest, "count=").unwrap();
            stopped
                .totals
                .insert(name, (count, field(rest, "sum=").unwrap()));
        }
        if let Some(rest) = line.strip_prefix("telering totals: ") {
            stopped.dropped = field(rest, "dropped=").unwrap();
            stopped.frames = field(rest, "frames=").unwrap();
        }
    }
    assert_ne!(stopped.dropped, u64::MAX, "no totals in: {out}");
    stopped
}

/// SIGTERM to the bridge; its JSON summary, one object per link.
fn stop_bridge(mut b: Running) -> Vec<serde_json::Value> {
    signal(&b.child, "-TERM");
    assert_eq!(b.wait(), Some(0));
    let mut out = String::new();
    std::io::Read::read_to_string(b.child.stdout.as_mut().unwrap(), &mut out).unwrap();
    parse_json_lines(&out)
}

fn is_link_event(name: &str) -> bool {
    name.starts_with("telering_link_") || name == "agent_telemetry_events_dropped"
}

/// The device events of a ring per name, and every event, draining it.
fn ring_events(ring: &Path) -> (Totals, Vec<telering_core::Event>) {
    let mut reader = DrainingReader::open(ring).unwrap();
    let (mut totals, mut all) = (Totals::new(), Vec::new());
    while let Some(e) = reader.pop().unwrap() {
        all.push(e);
        let name = e.name().unwrap();
        if !is_link_event(name) {
            let t = totals.entry(name.to_owned()).or_insert((0, 0));
            t.0 += 1;
            t.1 += e.value();
        }
    }
    (totals, all)
}

/// `telering stat --json RING`.
fn stat_json(ring: &Path) -> serde_json::Value {
    let out = telering()
        .arg("stat")
        .arg("--json")
        .arg(ring)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_json_lines(&String::from_utf8(out.stdout).unwrap()).remove(0)
}

/// One /metrics page of `telering serve --dir DIR` once `done(page)` says every event
/// has been read.
fn metrics(dir: &Path, done: impl Fn(&str) -> bool) -> String {
    let mut cmd = telering();
    cmd.args(["serve", "--local", "--port", "0", "--dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut serve = Running::spawn(&mut cmd);
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let addr = common::addr_in(&common::wait_for_line(&mut out, "/metrics"));
    common::eventually(Duration::from_secs(30), || {
        let page = common::http_get(addr, "/metrics");
        done(&page).then_some(page)
    })
    .expect("/metrics never showed every event")
}

fn rust_continuous(variant: &str, env: &[(&str, &str)]) -> PathBuf {
    rust_firmware(&format!("continuous-{variant}"), "continuous", env)
}

#[test]
#[ignore = "needs qemu-system-arm"]
fn rust_firmware_totals_equal_the_ring_stat_and_metrics_and_its_drops_are_counted_lost() {
    // 8000 events/s into a 64-slot ring drained every 10 ms (80 a drain for 63 slots):
    // the firmware's own ring overflows, so the loss path is exercised with delivery.
    let elf = rust_continuous("rate-8000", &[("TELERING_FW_RATE", "8000")]);
    let dir = scratch();
    let port = free_port();
    let fw = qemu(&elf, dir.path(), port);
    let rings = dir.path().join("rings");
    let b = bridge(&rings, &[format!("tcp:127.0.0.1:{port}")]);
    let ring = rings.join("lm3s6965-fw");
    wait_until(
        Duration::from_secs(60),
        || published(&ring) >= 5000,
        "5000 events",
    );
    let fw = stop_firmware(fw, dir.path());
    let summary = stop_bridge(b).remove(0);
    assert!(fw.dropped > 0, "the firmware dropped nothing: {fw:?}");
    assert_eq!(
        summary["lost_device_full"].as_u64(),
        Some(fw.dropped),
        "{summary}"
    );
    assert_eq!(summary["lost_damaged"].as_u64(), Some(0), "{summary}");
    assert_eq!(summary["lost_missing"].as_u64(), Some(0), "{summary}");

    // stat: the ring's loss counter (events lost before the ring) is the firmware's
    // drop count; the bridge closed the ring cleanly.
    let stat = stat_json(&ring);
    let trailer = &stat["trailer"];
    assert_eq!(
        trailer["dropped_staging"].as_u64(),
        Some(fw.dropped),
        "{stat}"
    );
    assert_eq!(trailer["dropped_ring_full"].as_u64(), Some(0), "{stat}");
    assert_eq!(trailer["clean_close"].as_bool(), Some(true), "{stat}");

    // /metrics, read by an observer before the ring is drained.
    let tx = fw.totals["agent_tx_bytes"].1;
    let labels = "{agent_name=\"lm3s6965-fw\"";
    let tx_series = format!("agent_tx_bytes_total{labels}");
    let page = metrics(&rings, |page| {
        common::sample(page, &tx_series) == Some(tx as f64)
    });
    let value = |prefix: &str| common::sample(&page, prefix);
    assert_eq!(
        value(&format!("agent_tx_bytes_total{labels}")),
        Some(tx as f64),
        "{page}"
    );
    assert_eq!(
        value(&format!("agent_rx_bytes_total{labels}")),
        Some(fw.totals["agent_rx_bytes"].1 as f64)
    );
    assert_eq!(
        value(&format!("agent_custom_event_dpu_queue_depth_total{labels}")),
        Some(fw.totals["dpu_queue_depth"].1 as f64),
        "{page}"
    );

    // The ring itself, event by event.
    let (totals, _) = ring_events(&ring);
    assert_eq!(totals, fw.totals, "{summary}");
}

#[test]
#[ignore = "needs qemu-system-arm and gcc-arm-none-eabi"]
fn a_rust_and_a_c_firmware_over_tcp_and_a_unix_socket_through_one_bridge_each_fill_their_own_ring()
{
    let rust = rust_continuous("plain", &[]);
    let c = c_firmware("plain", &[]);
    let (rust_dir, c_dir) = (scratch(), scratch());
    // One over TCP, one over a Unix socket.
    let rust_port = free_port();
    let c_socket = c_dir.path().join("uart.sock");
    let rust_fw = qemu(&rust, rust_dir.path(), rust_port);
    let c_fw = qemu_serial(
        &c,
        c_dir.path(),
        &format!("unix:{},server=on,wait=on", c_socket.display()),
    );
    // QEMU creates the socket as it starts listening.
    wait_until(
        Duration::from_secs(30),
        || c_socket.exists(),
        "the C firmware's socket",
    );
    let rings = rust_dir.path().join("rings");
    let b = bridge(
        &rings,
        &[
            format!("tcp:127.0.0.1:{rust_port}"),
            format!("unix:{}", c_socket.display()),
        ],
    );
    let (rust_ring, c_ring) = (rings.join("lm3s6965-fw"), rings.join("c-fw"));
    wait_until(
        Duration::from_secs(60),
        || published(&rust_ring) >= 2000 && published(&c_ring) >= 2000,
        "2000 events in each ring",
    );
    let rust_fw = stop_firmware(rust_fw, rust_dir.path());
    let c_fw = stop_firmware(c_fw, c_dir.path());
    let summaries = stop_bridge(b);
    assert_eq!(summaries.len(), 2, "{summaries:?}");
    for (fw, ring, agent) in [
        (&rust_fw, &rust_ring, "lm3s6965-fw"),
        (&c_fw, &c_ring, "c-fw"),
    ] {
        let s = summaries.iter().find(|s| s["agent"] == agent).expect(agent);
        assert_eq!(s["lost_device_full"].as_u64(), Some(fw.dropped), "{s}");
        assert_eq!(s["lost_missing"].as_u64(), Some(0), "{s}");
        assert_eq!(s["lost_damaged"].as_u64(), Some(0), "{s}");
        let (totals, _) = ring_events(ring);
        assert_eq!(&totals, &fw.totals, "{agent}: {s}");
    }
    // Version 2 is compact: the C firmware's frames are batches, not one per event.
    let c_events: u64 = c_fw.totals.values().map(|t| t.0).sum();
    assert!(
        c_fw.frames * 4 < c_events,
        "{} frames for {c_events} events",
        c_fw.frames
    );
}

#[test]
#[ignore = "needs qemu-system-arm"]
fn the_version_1_fixed_sequence_through_the_bridge_arrives_exactly() {
    // Today's firmware, default features: the fixed sequence as version-1 frames.
    let elf = rust_firmware("fixed", "", &[]);
    let dir = scratch();
    let port = free_port();
    let mut fw = qemu(&elf, dir.path(), port);
    let rings = dir.path().join("rings");
    let b = bridge(&rings, &[format!("fixed=tcp:127.0.0.1:{port}")]);
    assert_eq!(fw.wait(), Some(0));
    let ring = rings.join("fixed");
    // 8 + 63 doorbells + 1 + the stack figure; the drop report is counted, not written.
    wait_until(
        Duration::from_secs(30),
        || published(&ring) >= 73,
        "73 events",
    );
    let summary = stop_bridge(b).remove(0);
    assert_eq!(summary["lost_device_full"].as_u64(), Some(7), "{summary}");
    assert_eq!(summary["lost_missing"].as_u64(), Some(0), "{summary}");
    let (_, all) = ring_events(&ring);
    let device: Vec<(String, u64)> = all
        .iter()
        .filter(|e| !is_link_event(e.name().unwrap()))
        .map(|e| (e.name().unwrap().to_owned(), e.value()))
        .collect();
    let mut expected: Vec<(String, u64)> = [
        ("agent_memory_registered", 65536),
        ("agent_tx_bytes", 4096),
        ("agent_tx_requests_num", 1),
        ("agent_xfer_time", 250),
        ("agent_rx_bytes", 8192),
        ("NIXL_ERR_REMOTE_DISCONNECT", 1),
        ("dpu_queue_depth", 17),
        ("dpu_temp_millicelsius", 41250),
    ]
    .iter()
    .map(|(n, v)| (n.to_string(), *v))
    .collect();
    expected.extend((0..63).map(|v| ("dpu_doorbell".to_owned(), v)));
    expected.push(("dpu_doorbell".to_owned(), 70));
    assert_eq!(device.len(), 73, "{device:?}");
    assert_eq!(device[..72], expected[..]);
    assert_eq!(device[72].0, "fw_stack_high_water");
    // The drop report became the ring's own loss count.
    let lost: u64 = all
        .iter()
        .filter(|e| e.name() == Ok("agent_telemetry_events_dropped"))
        .map(|e| e.value())
        .sum();
    assert_eq!(lost, 7);
}

/// A continuous firmware whose clock runs `ppm` fast (or slow): the bridge measures the
/// drift, and every event's host time, as mapped, is within the bound the bridge
/// states of when the event can have happened: not after the test saw it in the ring,
/// not before the batch before it was sent.
fn clock_within_bound(variant: &str, elf: &Path, agent: &str, ppm: i64, stall: bool) {
    // The drift the bridge measures, against the factor: within 300 ppm (a fifth of the
    // distance between the fast and the slow build). After a pause the firmware's clock
    // is set from the host's to within a few ms, which the fit over its last 13 s
    // reads as up to about a thousand ppm (1246 measured once), so 5000 ppm there;
    // without the repair a 1.5 s pause reads as 176 000.
    let tolerance_ppb = if stall { 5_000_000 } else { 300_000 };
    let dir = scratch();
    let port = free_port();
    let fw = qemu(elf, dir.path(), port);
    let rings = dir.path().join("rings");
    let b = bridge(&rings, &[format!("tcp:127.0.0.1:{port}")]);
    let ring = rings.join(agent);
    let now_us = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64
    };
    // Each agent_tx_bytes event as mapped, and a host time by which the ring held it.
    wait_until(Duration::from_secs(30), || ring.exists(), "the ring");
    let mut observer =
        telering_shm::ObserverReader::open(&ring, telering_core::ObserverStart::Oldest).unwrap();
    let mut seen: Vec<(u64, u64)> = Vec::new(); // (mapped, seen at)
    let end = Instant::now() + Duration::from_secs(12);
    let mut stall_at = stall.then(|| Instant::now() + Duration::from_secs(4));
    while Instant::now() < end {
        if stall_at.is_some_and(|t| Instant::now() >= t) {
            // The emulator held off for 1.5 s, as a busy host deschedules it: its
            // timers run on, and the firmware must not lose the counter's wraps.
            signal(&fw.child, "-STOP");
            std::thread::sleep(Duration::from_millis(1500));
            signal(&fw.child, "-CONT");
            stall_at = None;
        }
        while let Some(e) = observer.poll().unwrap() {
            // The ring held the event at the latest now.
            let at = now_us();
            if e.name() == Ok("agent_tx_bytes") {
                seen.push((e.timestamp_us(), at));
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let fw = stop_firmware(fw, dir.path());
    let _ = stop_bridge(b);
    let (totals, all) = ring_events(&ring);
    assert_eq!(totals, fw.totals, "{variant}");
    let last = |name: &str| {
        all.iter()
            .rev()
            .find(|e| e.name() == Ok(name))
            .map(|e| e.value())
    };
    let drift = last("telering_link_clock_drift_ppb").unwrap() as i64;
    let expected = ((1.0 / (1.0 + ppm as f64 / 1e6) - 1.0) * 1e9) as i64;
    assert!(
        (drift - expected).abs() < tolerance_ppb,
        "{variant}: drift {drift} ppb, expected {expected}"
    );
    // The largest bound the bridge stated after its first second: each mapping is
    // held to the bound of a fit at least as old as this run's first second.
    let bounds: Vec<u64> = all
        .iter()
        .filter(|e| e.name() == Ok("telering_link_clock_bound_us"))
        .map(|e| e.value())
        .collect();
    let bound = bounds.iter().skip(1).copied().max().unwrap_or(bounds[0]);
    // Skip the first second: until enough clock frames came, the fit is coarse.
    let first = seen.first().unwrap().1 + 1_000_000;
    let late: Vec<&(u64, u64)> = seen.iter().filter(|(_, at)| *at > first).collect();
    assert!(
        late.len() > 1000,
        "{variant}: only {} events observed",
        late.len()
    );
    let start = seen.first().unwrap().1;
    // Not in the future: the bridge never maps an event later than it arrived (its
    // true time plus the link's minimum delay is before its arrival), and the ring
    // held it, and the test saw it, after that.
    let future: Vec<(i64, u64)> = late
        .iter()
        .filter(|&&&(mapped, at)| mapped > at)
        .map(|&&(mapped, at)| ((mapped - at) as i64, (at - start) / 1000))
        .collect();
    assert!(
        future.is_empty(),
        "{variant}: {} of {} events mapped later than seen (bound {bound} µs, stated \
         {bounds:?}); (µs ahead, ms into the run): {:?}",
        future.len(),
        late.len(),
        &future[..future.len().min(20)]
    );
    // Not long before either; how long an event waits (the 10 ms drain period, an
    // emulator descheduled on a busy host, the bridge's write) has no bound a test could
    // rely on, so this only catches a mapping that is grossly off.
    for &&(mapped, at) in &late {
        assert!(
            at <= mapped + 2_000_000 + bound,
            "{variant}: mapped {mapped}, seen {at}"
        );
    }
}

#[test]
#[ignore = "needs qemu-system-arm"]
fn a_firmware_clock_a_thousandth_fast_or_slow_is_mapped_within_the_stated_bound() {
    for (variant, ppm) in [("clock-fast", 1000i64), ("clock-slow", -1000)] {
        let elf = rust_continuous(variant, &[("TELERING_FW_CLOCK_PPM", &ppm.to_string())]);
        clock_within_bound(variant, &elf, "lm3s6965-fw", ppm, false);
    }
}

#[test]
#[ignore = "needs qemu-system-arm"]
fn a_firmware_held_off_for_longer_than_its_counter_wraps_keeps_its_clock_rate() {
    let elf = rust_continuous("plain", &[]);
    clock_within_bound("stalled", &elf, "lm3s6965-fw", 0, true);
}

/// Per-name counts and sums of the device events in a ring, read by an observer (the
/// ring is left as it is).
fn observed_totals(ring: &Path) -> Totals {
    let mut observer =
        telering_shm::ObserverReader::open(ring, telering_core::ObserverStart::Oldest).unwrap();
    let mut totals = Totals::new();
    while let Some(e) = observer.poll().unwrap() {
        let name = e.name().unwrap();
        if !is_link_event(name) {
            let t = totals.entry(name.to_owned()).or_insert((0, 0));
            t.0 += 1;
            t.1 += e.value();
        }
    }
    assert_eq!(observer.events_missed(), 0);
    totals
}

#[test]
#[ignore = "needs qemu-system-arm and gcc-arm-none-eabi"]
fn a_c_firmware_killed_and_started_again_is_one_reset_and_its_agent_continues() {
    let elf = c_firmware("plain", &[]);
    let dir = scratch();
    let port = free_port();
    let rings = dir.path().join("rings");
    let b = bridge(&rings, &[format!("tcp:127.0.0.1:{port}")]);
    let ring = rings.join("c-fw");
    let mut first = qemu(&elf, dir.path(), port);
    wait_until(
        Duration::from_secs(60),
        || published(&ring) >= 1000,
        "the first run",
    );
    first.child.kill().unwrap();
    first.wait();
    // Everything the killed run sent is in the ring once it stops growing.
    let first_written = settled(&ring);
    let first_run = observed_totals(&ring);
    let second = qemu(&elf, dir.path(), port);
    wait_until(
        Duration::from_secs(60),
        || published(&ring) >= first_written + 1000,
        "the second run",
    );
    let fw = stop_firmware(second, dir.path());
    let summary = stop_bridge(b).remove(0);
    assert_eq!(summary["resets"].as_u64(), Some(1), "{summary}");
    assert_eq!(summary["lost_missing"].as_u64(), Some(0), "{summary}");
    assert_eq!(summary["lost_damaged"].as_u64(), Some(0), "{summary}");
    // The same ring: the first run's events as delivered, then exactly the second's.
    let mut expected = first_run;
    for (name, (count, sum)) in fw.totals {
        let e = expected.entry(name).or_insert((0, 0));
        e.0 += count;
        e.1 += sum;
    }
    let (totals, _) = ring_events(&ring);
    assert_eq!(totals, expected, "{summary}");
}

#[test]
#[ignore = "needs qemu-system-arm"]
fn a_byte_sent_to_the_firmwares_uart_stops_it_and_the_stream_holds_its_totals() {
    use std::io::{Read, Write};
    let elf = rust_continuous("plain", &[]);
    let dir = scratch();
    let socket = dir.path().join("uart.sock");
    let mut fw = qemu_serial(
        &elf,
        dir.path(),
        &format!("unix:{},server=on,wait=on", socket.display()),
    );
    wait_until(Duration::from_secs(30), || socket.exists(), "QEMU's socket");
    let mut line = std::os::unix::net::UnixStream::connect(&socket).unwrap();
    let mut reader = line.try_clone().unwrap();
    let capture = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        reader.read_to_end(&mut bytes).unwrap();
        bytes
    });
    // A few seconds of the stream, then one byte the other way.
    std::thread::sleep(Duration::from_secs(3));
    line.write_all(b"q").unwrap();
    assert_eq!(fw.wait(), Some(0), "the firmware's exit status");
    let mut out = String::new();
    fw.child
        .stdout
        .as_mut()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let bytes = capture.join().unwrap();
    let stream = dir.path().join("uart.bin");
    std::fs::write(&stream, &bytes).unwrap();
    // What it printed, as stop_firmware parses it.
    let mut totals = Totals::new();
    for rest in out
        .lines()
        .filter_map(|l| l.strip_prefix("telering total: "))
    {
        let mut words = rest.split(' ');
        let name = words.next().unwrap().to_owned();
        let field = |w: Option<&str>| w.unwrap().split('=').nth(1).unwrap().parse().unwrap();
        totals.insert(name, (field(words.next()), field(words.next())));
    }
    assert!(!totals.is_empty(), "no totals in: {out}");
    let rings = dir.path().join("rings");
    let status = telering()
        .args(["bridge", "--capacity", "65536", "--dir"])
        .arg(&rings)
        .arg(format!("file:{}", stream.display()))
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let (ring_totals, _) = ring_events(&rings.join("lm3s6965-fw"));
    assert_eq!(ring_totals, totals);
}
