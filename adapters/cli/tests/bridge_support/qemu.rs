//! Running the continuous firmware under QEMU with its UART on a TCP socket, the
//! bridge over it, and reading back what each says.

use crate::common::{Running, parse_json_lines, signal, telering};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use telering_shm::DrainingReader;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds the continuous-mode firmware with `env` (build-time settings) and returns
/// its ELF.
pub fn build_firmware(variant: &str, env: &[(&str, &str)]) -> PathBuf {
    let firmware = repo().join("firmware");
    let target = firmware
        .join("target")
        .join(format!("continuous-{variant}"));
    let status = Command::new("cargo")
        .current_dir(&firmware)
        .env("CARGO_TARGET_DIR", &target)
        .envs(env.iter().copied())
        .args([
            "build",
            "--release",
            "--quiet",
            "--no-default-features",
            "--features",
            "continuous",
        ])
        .status()
        .expect("run cargo");
    assert!(status.success(), "the firmware did not build");
    target.join("thumbv7m-none-eabi/release/telering-firmware")
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// QEMU running `elf` in `dir` (semihosting files are relative to it), UART0 on a TCP
/// server at `port` that waits for the bridge; its stdout (semihosting) piped.
pub fn qemu(elf: &Path, dir: &Path, port: u16) -> Running {
    qemu_serial(elf, dir, &format!("tcp:127.0.0.1:{port},server=on,wait=on"))
}

/// QEMU running `elf` in `dir`, UART0 on the character device `serial`.
pub fn qemu_serial(elf: &Path, dir: &Path, serial: &str) -> Running {
    let mut cmd = Command::new("qemu-system-arm");
    cmd.current_dir(dir)
        .args([
            "-machine",
            "lm3s6965evb",
            "-cpu",
            "cortex-m3",
            "-display",
            "none",
        ])
        .args(["-monitor", "none", "-nodefaults", "-net", "none"])
        .args(["-serial", serial])
        .args(["-semihosting-config", "enable=on,target=native", "-kernel"])
        .arg(elf)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    Running::spawn(&mut cmd)
}

pub fn bridge(dir: &Path, port: u16) -> Running {
    bridge_with(dir, port, &[])
}

/// [`bridge`] with more arguments (`--exporter csv`).
pub fn bridge_with(dir: &Path, port: u16, more: &[&str]) -> Running {
    let mut cmd = telering();
    cmd.arg("bridge")
        .args(more)
        .args([
            "--json",
            "--capacity",
            "65536",
            "--max-backoff",
            "200ms",
            "--dir",
        ])
        .arg(dir)
        .arg(format!("tcp:127.0.0.1:{port}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Running::spawn(&mut cmd)
}

pub fn published(ring: &Path) -> u64 {
    telering_shm::stat(ring)
        .ok()
        .and_then(|i| i.trailer)
        .map_or(0, |t| t.published)
}

pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool, what: &str) {
    let end = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `ring` has stopped growing for half a second (what a killed device
/// sent is all written) and returns the events it holds then.
pub fn settled(ring: &Path) -> u64 {
    let mut last = (published(ring), Instant::now());
    wait_until(
        Duration::from_secs(30),
        || {
            let now = published(ring);
            if now != last.0 {
                last = (now, Instant::now());
            }
            last.1.elapsed() > Duration::from_millis(500)
        },
        "the ring to stop growing",
    );
    last.0
}

/// Tells the firmware to stop, waits for it, and returns its totals:
/// per name (count, sum), and `dropped`.
pub fn stop_firmware(fw: Running, dir: &Path) -> (BTreeMap<String, (u64, u64)>, u64) {
    let t = stop_firmware_totals(fw, dir);
    (t.per_name, t.dropped)
}

/// What the firmware printed when it stopped.
#[derive(Debug)]
pub struct FirmwareTotals {
    /// Per name: (count, sum) of the events it recorded into its ring.
    pub per_name: BTreeMap<String, (u64, u64)>,
    /// Events its full ring refused.
    pub dropped: u64,
    /// Events written into its ring: the recorded ones and its drop reports.
    pub published: u64,
}

/// Tells the firmware to stop, waits for it, and returns its totals.
pub fn stop_firmware_totals(mut fw: Running, dir: &Path) -> FirmwareTotals {
    std::fs::write(dir.join("telering-stop"), b"").unwrap();
    assert_eq!(fw.wait(), Some(0));
    let mut out = String::new();
    std::io::Read::read_to_string(fw.child.stdout.as_mut().unwrap(), &mut out).unwrap();
    let mut totals = BTreeMap::new();
    let mut dropped = None;
    let mut published = None;
    for line in out.lines() {
        if let Some(rest) = line.strip_prefix("telering total: ") {
            let mut words = rest.split(' ');
            let name = words.next().unwrap().to_owned();
            let field = |w: Option<&str>| {
                w.unwrap()
                    .split('=')
                    .nth(1)
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            };
            totals.insert(name, (field(words.next()), field(words.next())));
        }
        if let Some(rest) = line.strip_prefix("telering totals: ") {
            let field = |key: &str| {
                rest.split(' ')
                    .find_map(|w| w.strip_prefix(key))
                    .map(|v| v.parse::<u64>().unwrap())
            };
            dropped = field("dropped=");
            published = field("published=");
        }
    }
    FirmwareTotals {
        per_name: totals,
        dropped: dropped.expect("the firmware printed its totals"),
        published: published.expect("the firmware printed its totals"),
    }
}

pub fn stop_bridge(mut b: Running) -> serde_json::Value {
    signal(&b.child, "-TERM");
    assert_eq!(b.wait(), Some(0));
    let mut out = String::new();
    std::io::Read::read_to_string(b.child.stdout.as_mut().unwrap(), &mut out).unwrap();
    parse_json_lines(&out).remove(0)
}

pub fn ring_sums(ring: &Path) -> (BTreeMap<String, (u64, u64)>, Vec<telering_core::Event>) {
    let mut reader = DrainingReader::open(ring).unwrap();
    let mut sums = BTreeMap::new();
    let mut all = Vec::new();
    while let Some(e) = reader.pop().unwrap() {
        all.push(e);
        let name = e.name().unwrap();
        if name.starts_with("telering_link_") || name == "agent_telemetry_events_dropped" {
            continue;
        }
        let s = sums.entry(name.to_owned()).or_insert((0, 0));
        s.0 += 1;
        s.1 += e.value();
    }
    (sums, all)
}
