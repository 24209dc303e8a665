//! `telering bridge`: devices simulated by the Rust-side version-2 encoder, over real
//! sockets and files, into real ring files read back as any reader would.

mod bridge_support;
mod common;

use bridge_support::*;

use common::{parse_json_lines, scratch, signal, telering};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use telering_core::{Category, Event, ObserverStart, event_name};
use telering_embedded_io::FrameExporter;
use telering_embedded_io::link::LinkEncoder;
use telering_shm::ObserverReader;

/// A simulated device: its clock runs at `factor` × the host's from an arbitrary
/// start; it stamps each event when it sends it, in batches of 16 with a clock frame
/// after each, written straight to `out`.
struct Device {
    encoder: LinkEncoder<'static, Vec<u8>, 16>,
    start: Instant,
    factor: f64,
}

impl Device {
    fn new(agent: &'static str, factor: f64) -> Device {
        Device {
            encoder: LinkEncoder::new(Vec::new(), hello(agent)),
            start: Instant::now(),
            factor,
        }
    }

    fn ticks(&self) -> u64 {
        5_000_000 + (self.start.elapsed().as_micros() as f64 * self.factor) as u64
    }

    /// Sends `events` (their timestamps replaced by the device clock's); returns the
    /// host time each was stamped at.
    fn send(&mut self, events: &[Event], out: &mut impl Write, pace: Duration) -> Vec<u64> {
        let mut stamped = Vec::new();
        for chunk in events.chunks(16) {
            for e in chunk {
                let mut e = *e;
                e.set_timestamp_us(self.ticks());
                stamped.push(wall_us());
                self.encoder.push(&e).unwrap();
            }
            self.encoder.flush().unwrap();
            self.encoder.clock(self.ticks()).unwrap();
            out.write_all(self.encoder.writer()).unwrap();
            self.encoder.writer_mut().clear();
            std::thread::sleep(pace);
        }
        stamped
    }
}

fn wall_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

fn accept(listener: &TcpListener) -> TcpStream {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).unwrap();
                return s;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("the bridge never connected: {e}"),
        }
    }
}

fn stat_json(path: &Path) -> serde_json::Value {
    let out = telering()
        .arg("stat")
        .arg("--json")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_json_lines(&String::from_utf8_lossy(&out.stdout)).remove(0)
}

#[test]
fn a_tcp_link_becomes_a_ring_under_the_devices_agent_name_with_every_event() {
    let dir = scratch();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let bridge = spawn_bridge(dir.path(), &[format!("tcp:{addr}")]);
    let events = mix(3000, 7);
    let mut device = Device::new("dpu0-fw", 1.0);
    let before = wall_us();
    device.send(&events, &mut accept(&listener), Duration::ZERO);
    let ring = dir.path().join("dpu0-fw");
    wait_for_end_marker(&ring);
    let summary = stop(bridge);
    assert_eq!(summary[0]["agent"], "dpu0-fw");
    assert_eq!(summary[0]["events"], 3001);
    assert_eq!(lost(&summary[0]), 0);
    let got = device_events(&ring_events(&ring));
    assert_eq!(sums(&got), sums(&events));
    // Timestamps are host wall-clock microseconds now, not device ticks.
    assert!(got.iter().all(
        |e| e.timestamp_us() > before - 60_000_000 && e.timestamp_us() < wall_us() + 60_000_000
    ));
    let stat = stat_json(&ring);
    assert_eq!(stat["trailer"]["dropped_staging"], 0);
}

#[test]
fn a_device_clock_fast_or_slow_by_a_known_factor_is_mapped_with_its_drift_measured() {
    for factor in [1.05, 0.95] {
        let dir = scratch();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let bridge = spawn_bridge(dir.path(), &[format!("tcp:{addr}")]);
        let events = mix(2000, 9);
        let mut device = Device::new("clock-fw", factor);
        let stamped = device.send(&events, &mut accept(&listener), Duration::from_millis(2));
        let ring = dir.path().join("clock-fw");
        wait_for_end_marker(&ring);
        stop(bridge);
        let all = ring_events(&ring);
        let last = |name: &str| {
            all.iter()
                .rev()
                .find(|e| e.name() == Ok(name))
                .map(|e| e.value())
        };
        let drift = last("telering_link_clock_drift_ppb").expect("a drift report") as i64;
        let expected = ((1.0 / factor - 1.0) * 1e9) as i64;
        assert!(
            (drift - expected).abs() < 10_000_000,
            "factor {factor}: drift {drift} ppb, expected {expected}"
        );
        let bound = last("telering_link_clock_bound_us").expect("a bound report");
        // Every event lands near the host time it was stamped at: a wrong rate would
        // put the last ones 5% of the run (tens of ms) away.
        let got = device_events(&all);
        assert_eq!(got.len(), stamped.len());
        let run = stamped[stamped.len() - 1] - stamped[0];
        for (e, &t) in got.iter().zip(&stamped).skip(got.len() / 2) {
            let error = e.timestamp_us() as i64 - t as i64;
            assert!(
                error.unsigned_abs() < bound + run / 100 + 5_000,
                "factor {factor}: {error} µs off, bound {bound}, run {run} µs"
            );
        }
    }
}

#[test]
fn a_version_1_capture_from_a_file_is_ingested_exactly_and_the_bridge_ends_with_it() {
    let dir = scratch();
    let capture = dir.path().join("uart.bin");
    let events = mix(500, 3);
    let mut line = Vec::new();
    let mut exporter = FrameExporter::new(&mut line);
    for e in &events {
        exporter.export(e).unwrap();
    }
    std::fs::write(&capture, &line).unwrap();
    let out = telering()
        .args(["bridge", "--json", "--dir"])
        .arg(dir.path())
        .arg(format!("uart0=file:{}", capture.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = parse_json_lines(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        (summary[0]["agent"].as_str(), summary[0]["events"].as_u64()),
        (Some("uart0"), Some(501))
    );
    let got = device_events(&ring_events(&dir.path().join("uart0")));
    // Version 1 carries its timestamps as recorded: the very same events.
    assert_eq!(got, events);
}

#[test]
fn a_noisy_link_delivers_or_counts_every_event_with_its_cause() {
    let dir = scratch();
    let socket = dir.path().join("fw.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let bridge = spawn_bridge(dir.path(), &[format!("unix:{}", socket.display())]);
    let events = mix(5000, 11);
    let damaged = damage(&v2_stream("noisy-fw", &events), 5);
    assert_ne!(damaged.len(), v2_stream("noisy-fw", &events).len());
    let (mut conn, _) = listener.accept().unwrap();
    conn.write_all(&damaged).unwrap();
    let ring = dir.path().join("noisy-fw");
    wait_for_end_marker(&ring);
    let summary = stop(bridge);
    let s = &summary[0];
    let got = device_events(&ring_events(&ring));
    let lost = lost(s);
    assert!(lost > 0, "{s}");
    assert!(s["lost_damaged"].as_u64().unwrap() > 0, "{s}");
    assert!(s["noise_bytes"].as_u64().unwrap() > 0, "{s}");
    // Recorded = delivered + counted lost, exactly.
    assert_eq!(got.len() as u64 + lost, events.len() as u64, "{s}");
    assert_eq!(s["events"].as_u64().unwrap(), got.len() as u64);
    // Nothing delivered that was not sent.
    let sent: std::collections::HashSet<(u64, u64)> = events
        .iter()
        .map(|e| (e.value(), e.raw_category() as u64))
        .collect();
    assert!(
        got.iter()
            .all(|e| sent.contains(&(e.value(), e.raw_category() as u64)))
    );
    // The ring's loss counter holds them all, as for any agent.
    assert_eq!(
        stat_json(&ring)["trailer"]["dropped_staging"].as_u64(),
        Some(lost)
    );
}

#[test]
fn a_device_restart_is_one_epoch_more_and_nothing_is_repeated_or_lost_uncounted() {
    let dir = scratch();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let bridge = spawn_bridge(dir.path(), &[format!("tcp:{addr}")]);
    // Unique values: each event can be told apart.
    let unique = |n: u64, base: u64| -> Vec<Event> {
        let mut events = mix(n, 1);
        for (i, e) in events.iter_mut().enumerate() {
            e.set_value(base + i as u64);
        }
        events
    };
    let first = unique(700, 0);
    let second = unique(300, 1_000_000);
    {
        let mut conn = accept(&listener);
        // The device dies in the middle of a frame (its end marker never sent).
        let line = v2_stream("restart-fw", &first[..first.len() - 1]);
        conn.write_all(&line[..line.len() - 9]).unwrap();
    }
    // It comes back (the bridge reconnects) and starts a new epoch.
    accept(&listener)
        .write_all(&v2_stream("restart-fw", &second))
        .unwrap();
    let ring = dir.path().join("restart-fw");
    wait_for_end_marker(&ring);
    let s = stop(bridge).remove(0);
    assert_eq!(s["resets"], 1, "{s}");
    assert!(s["connections"].as_u64().unwrap() >= 2, "{s}");
    let got: Vec<u64> = device_events(&ring_events(&ring))
        .iter()
        .map(Event::value)
        .collect();
    let mut seen = std::collections::HashSet::new();
    assert!(got.iter().all(|v| seen.insert(*v)), "an event was repeated");
    // The second epoch arrived whole; of the first, the events of the cut frame
    // are the only ones missing. The cut frame was the clock frame after the last
    // batch, so none is.
    assert!(second.iter().all(|e| seen.contains(&e.value())));
    assert_eq!(got.len() as u64 + lost(&s), 700 + 301, "{s}");
}

#[test]
fn two_devices_through_one_bridge_get_a_ring_each() {
    let dir = scratch();
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    let links = [
        format!("tcp:{}", a.local_addr().unwrap()),
        format!("tcp:{}", b.local_addr().unwrap()),
    ];
    let bridge = spawn_bridge(dir.path(), &links);
    let (ea, eb) = (mix(1200, 21), mix(900, 22));
    let (sa, sb) = (v2_stream("fw-a", &ea), v2_stream("fw-b", &eb));
    let ta = std::thread::spawn(move || accept(&a).write_all(&sa).unwrap());
    let tb = std::thread::spawn(move || accept(&b).write_all(&sb).unwrap());
    ta.join().unwrap();
    tb.join().unwrap();
    wait_for_end_marker(&dir.path().join("fw-a"));
    wait_for_end_marker(&dir.path().join("fw-b"));
    let summary = stop(bridge);
    assert_eq!(summary.len(), 2);
    assert_eq!(
        sums(&device_events(&ring_events(&dir.path().join("fw-a")))),
        sums(&ea)
    );
    assert_eq!(
        sums(&device_events(&ring_events(&dir.path().join("fw-b")))),
        sums(&eb)
    );
    let listing = telering().arg("stat").arg(dir.path()).output().unwrap();
    let text = String::from_utf8_lossy(&listing.stdout);
    assert!(text.contains("fw-a") && text.contains("fw-b"), "{text}");
}

#[test]
fn the_devices_ring_full_reports_become_the_rings_losses() {
    let dir = scratch();
    let capture = dir.path().join("fw.bin");
    let mut events = mix(100, 4);
    let drop_report = Event::new(
        2_000,
        Category::Error,
        event_name!("agent_telemetry_events_dropped"),
        7,
    );
    events.insert(50, drop_report);
    std::fs::write(&capture, v2_stream("full-fw", &events)).unwrap();
    let out = telering()
        .args(["bridge", "--json", "--dir"])
        .arg(dir.path())
        .arg(format!("file:{}", capture.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = parse_json_lines(&String::from_utf8_lossy(&out.stdout)).remove(0);
    assert_eq!(
        (s["lost_device_full"].as_u64(), s["events"].as_u64()),
        (Some(7), Some(101))
    );
    let ring = dir.path().join("full-fw");
    assert_eq!(
        stat_json(&ring)["trailer"]["dropped_staging"].as_u64(),
        Some(7)
    );
    let all = ring_events(&ring);
    let link_report: u64 = all
        .iter()
        .filter(|e| e.name() == Ok("telering_link_lost_device_full"))
        .map(Event::value)
        .sum();
    assert_eq!(link_report, 7);
}

#[test]
fn bad_link_specifications_exit_2_naming_the_link_and_create_nothing() {
    let dir = scratch();
    for bad in ["tcp:nohost", "modem:/dev/x", "serial:/dev/x@fast"] {
        let out = telering()
            .args(["bridge", "--dir"])
            .arg(dir.path().join("t"))
            .arg(bad)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(bad), "{bad}");
    }
    assert!(!dir.path().join("t").exists());
}

#[test]
fn a_hostile_agent_name_in_a_hello_is_not_a_path_and_the_events_go_under_the_links_name() {
    let dir = scratch();
    let capture = dir.path().join("fw.bin");
    let events = mix(20, 5);
    std::fs::write(&capture, v2_stream("../evil\u{1b}[31m", &events)).unwrap();
    let out = telering()
        .args(["bridge", "--json", "--dir"])
        .arg(dir.path().join("rings"))
        .arg(format!("file:{}", capture.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains('\u{1b}'), "{stderr}");
    let s = parse_json_lines(&String::from_utf8_lossy(&out.stdout)).remove(0);
    assert_eq!(s["agent"], "link-fw.bin");
    assert_eq!(
        sums(&device_events(&ring_events(
            &dir.path().join("rings/link-fw.bin")
        ))),
        sums(&events)
    );
    assert!(!dir.path().join("evil").exists());
    let entries: Vec<_> = std::fs::read_dir(dir.path().join("rings"))
        .unwrap()
        .collect();
    assert_eq!(entries.len(), 1);
}

#[test]
fn a_capacity_that_is_not_a_power_of_two_exits_2_and_creates_nothing() {
    let dir = scratch();
    let out = telering()
        .args(["bridge", "--capacity", "1000", "--dir"])
        .arg(dir.path().join("t"))
        .arg("-")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--capacity 1000"));
    assert!(!dir.path().join("t").exists());
}

#[test]
fn two_devices_that_give_the_same_agent_name_make_the_second_link_fail_with_exit_1() {
    let dir = scratch();
    let (a, b) = (dir.path().join("a.sock"), dir.path().join("b.sock"));
    // One ring has one writer: two links held open under one agent name cannot both
    // write it.
    let la = UnixListener::bind(&a).unwrap();
    let lb = UnixListener::bind(&b).unwrap();
    let bridge = spawn_bridge(
        dir.path(),
        &[
            format!("unix:{}", a.display()),
            format!("unix:{}", b.display()),
        ],
    );
    let events = mix(10, 1);
    let (mut ca, _) = la.accept().unwrap();
    let (mut cb, _) = lb.accept().unwrap();
    ca.write_all(&v2_stream("same-fw", &events)).unwrap();
    wait_for_end_marker(&dir.path().join("same-fw"));
    cb.write_all(&v2_stream("same-fw", &events)).unwrap();
    let mut bridge = bridge;
    // The second stream is in the socket (a Unix socket delivers on write): stopped,
    // the bridge still takes it, and that link ends on its error.
    signal(&bridge.child, "-TERM");
    let code = bridge.wait();
    let mut err = String::new();
    std::io::Read::read_to_string(bridge.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    let mut out = String::new();
    std::io::Read::read_to_string(bridge.child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(err.contains("same-fw"), "{err}");
}

#[test]
fn a_memory_window_the_device_shares_becomes_a_ring_with_every_event() {
    use telering_core::OverflowPolicy;
    use telering_core::ring::{HeaderInfo, RingRegion};
    let dir = scratch();
    let window = dir.path().join("bar0.bin");
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&window)
        .unwrap();
    file.set_len(HeaderInfo::ring_bytes(1024)).unwrap();
    let map = memmap2::MmapRaw::map_raw(&file).unwrap();
    let (ptr, len) = (map.as_mut_ptr(), map.len());
    // SAFETY: the mapping is page-aligned, `len` bytes long and owned by the region
    // (it stays at its address when `MmapRaw` moves); nothing else has the file open
    // yet, so `init` has it to itself; afterwards every access is through atomics.
    let region = unsafe { RingRegion::init(map, ptr, len, 1024) }.unwrap();
    let mut producer =
        telering_core::Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    let events = mix(600, 8);
    for e in &events {
        producer.push(e).unwrap();
    }
    let bridge = spawn_bridge(dir.path(), &[format!("bar0=mem:{}", window.display())]);
    let ring = dir.path().join("bar0");
    wait_for_end_marker(&ring);
    let s = stop(bridge).remove(0);
    assert_eq!(
        (s["events"].as_u64(), lost(&s), s["lost_lapped"].as_u64()),
        (Some(601), 0, Some(0)),
        "{s}"
    );
    // Memory-window events keep their timestamps: the very same events.
    assert_eq!(device_events(&ring_events(&ring)), events);
}

/// A pseudo-terminal pair: the master (the device's end) and the slave's path.
fn pty() -> (std::fs::File, std::path::PathBuf) {
    use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};
    // Close-on-exec: a bridge another test starts meanwhile must not inherit the
    // device's end, which would keep this device from ever going away.
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    (
        std::fs::File::from(master),
        name.to_string_lossy().into_owned().into(),
    )
}

/// Waits until the bridge has the terminal `slave` open in raw mode (no line editing,
/// no echo): before that, the line discipline would change the bytes. (The slave's
/// settings are the terminal's, whoever opened it.)
fn wait_for_raw_mode(slave: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let tty = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NOCTTY.bits() as i32)
            .open(slave)
            .unwrap();
        let t = rustix::termios::tcgetattr(&tty).unwrap();
        if !t.local_modes.contains(rustix::termios::LocalModes::ICANON) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the bridge never set {} to raw mode",
            slave.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_serial_device_absent_then_present_then_gone_then_back_is_reopened_and_its_restart_is_an_epoch()
{
    let dir = scratch();
    let link = dir.path().join("ttyFW");
    // The bridge starts before the device is there (and so cannot inherit the
    // device's end of the terminal, which would keep it from ever going away).
    let bridge = spawn_bridge(dir.path(), &[format!("serial:{}@921600", link.display())]);
    let (mut first_master, first_slave) = pty();
    std::os::unix::fs::symlink(&first_slave, &link).unwrap();
    wait_for_raw_mode(&first_slave);
    let first = mix(300, 31);
    first_master
        .write_all(&v2_stream("serial-fw", &first))
        .unwrap();
    let ring = dir.path().join("serial-fw");
    wait_for_end_marker(&ring);
    // The device goes away (its end of the line closes), and comes back on another
    // terminal behind the same path, restarted.
    drop(first_master);
    let (mut second_master, second_slave) = pty();
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&second_slave, &link).unwrap();
    wait_for_raw_mode(&second_slave);
    let mut second = mix(200, 32);
    second.pop(); // its own end marker comes last
    second.push(Event::new(
        99,
        Category::Custom,
        event_name!("second_end"),
        1,
    ));
    second_master
        .write_all(&v2_stream("serial-fw", &second))
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut observer = ObserverReader::open(&ring, ObserverStart::Oldest).unwrap();
    'wait: loop {
        while let Some(e) = observer.poll().unwrap() {
            if e.name() == Ok("second_end") {
                break 'wait;
            }
        }
        assert!(Instant::now() < deadline, "the second run never arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = stop(bridge).remove(0);
    assert_eq!(s["resets"], 1, "{s}");
    assert!(s["connections"].as_u64().unwrap() >= 2, "{s}");
    assert_eq!(lost(&s), 0, "{s}");
    let got = device_events(&ring_events(&ring));
    assert_eq!(sums(&got), sums(&[first, second].concat()));
}

#[test]
fn standard_input_is_a_link_that_ends_with_its_input() {
    let dir = scratch();
    let events = mix(50, 12);
    let mut child = telering()
        .args(["bridge", "--json", "--dir"])
        .arg(dir.path())
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&v2_stream("stdin-fw", &events))
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let s = parse_json_lines(&String::from_utf8_lossy(&out.stdout)).remove(0);
    assert_eq!(
        (s["agent"].as_str(), s["events"].as_u64()),
        (Some("stdin-fw"), Some(51))
    );
    assert_eq!(
        sums(&device_events(&ring_events(&dir.path().join("stdin-fw")))),
        sums(&events)
    );
}

#[test]
fn a_links_name_wins_over_the_name_its_device_gives() {
    let dir = scratch();
    let capture = dir.path().join("fw.bin");
    let events = mix(30, 13);
    std::fs::write(&capture, v2_stream("same-image-fw", &events)).unwrap();
    let out = telering()
        .args(["bridge", "--json", "--dir"])
        .arg(dir.path().join("rings"))
        .arg(format!("board-7=file:{}", capture.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = parse_json_lines(&String::from_utf8_lossy(&out.stdout)).remove(0);
    assert_eq!(s["agent"], "board-7");
    assert_eq!(
        sums(&device_events(&ring_events(
            &dir.path().join("rings/board-7")
        ))),
        sums(&events)
    );
}
