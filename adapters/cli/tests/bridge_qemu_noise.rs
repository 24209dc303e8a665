//! The continuous firmware under QEMU through a noisy line: a proxy between QEMU's
//! `-serial tcp:` and `telering bridge` flips bits, drops runs of bytes and inserts
//! noise, chosen by a seeded generator, byte by byte. Every event the firmware
//! recorded into its ring is delivered or counted lost with its cause, against the
//! firmware's own totals, in the ring and at the bridge's `csv` exporter. Needs qemu-system-arm and the thumbv7m-none-eabi target
//! (`.ci/run`).

mod bridge_support;
mod common;

use bridge_support::qemu::*;
use common::scratch;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// What the proxy did to the line.
#[derive(Debug, Default)]
struct Damage {
    flipped: AtomicU64,
    dropped: AtomicU64,
    inserted: AtomicU64,
}

/// Damages a stream byte by byte, by a seeded xorshift: each byte after the first
/// `protected` (the hello and name table) is, one time in 1000 each, bit-flipped or the
/// start of a dropped run of 1 to 40 bytes; one frame end in 40 is followed by 1 to 30
/// bytes of noise ended by a zero of its own.
struct Corrupter {
    state: u64,
    seen: u64,
    protected: u64,
    skip: u64,
}

impl Corrupter {
    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn pass(&mut self, input: &[u8], out: &mut Vec<u8>, damage: &Damage) {
        for &byte in input {
            self.seen += 1;
            if self.skip > 0 {
                self.skip -= 1;
                damage.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if self.seen <= self.protected {
                out.push(byte);
                continue;
            }
            if byte == 0 && self.next() % 40 == 0 {
                // After a frame's end: noise, ended by a zero of its own.
                out.push(0);
                let n = 1 + self.next() % 30;
                for _ in 0..n {
                    out.push((self.next() as u8).max(1));
                }
                out.push(0);
                damage.inserted.fetch_add(n + 1, Ordering::Relaxed);
                continue;
            }
            match self.next() % 1000 {
                0 => {
                    out.push(byte ^ (1 << (self.next() % 8)));
                    damage.flipped.fetch_add(1, Ordering::Relaxed);
                }
                1 => {
                    self.skip = self.next() % 40;
                    damage.dropped.fetch_add(1, Ordering::Relaxed);
                }
                _ => out.push(byte),
            }
        }
    }
}

/// Relays QEMU's UART (a TCP server at `qemu_port`) to the first connection on
/// `listener`, damaged until `clean` is set, then as it is; ends when QEMU closes.
fn proxy(
    listener: TcpListener,
    qemu_port: u16,
    seed: u64,
    clean: Arc<AtomicBool>,
    damage: Arc<Damage>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let (mut to_bridge, _) = listener.accept().unwrap();
        drop(listener); // A reconnecting bridge finds no one after the end.
        let mut from_qemu = {
            let mut tries = 0;
            loop {
                match TcpStream::connect(("127.0.0.1", qemu_port)) {
                    Ok(s) => break s,
                    Err(e) if tries < 300 => {
                        tries += 1;
                        let _ = e;
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Err(e) => panic!("QEMU's UART never listened: {e}"),
                }
            }
        };
        let mut corrupter = Corrupter {
            state: seed | 1,
            seen: 0,
            protected: 1024,
            skip: 0,
        };
        let mut buf = vec![0u8; 4096];
        let mut out = Vec::with_capacity(8192);
        loop {
            let n = match from_qemu.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            out.clear();
            if clean.load(Ordering::SeqCst) {
                out.extend_from_slice(&buf[..n]);
            } else {
                corrupter.pass(&buf[..n], &mut out, &damage);
            }
            if to_bridge.write_all(&out).is_err() {
                return;
            }
        }
    })
}

#[test]
#[ignore = "needs qemu-system-arm"]
fn a_noisy_line_from_the_firmware_delivers_or_counts_every_event_with_its_cause() {
    let elf = build_firmware("plain", &[]);
    let dir = scratch();
    let qemu_port = free_port();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_port = listener.local_addr().unwrap().port();
    let clean = Arc::new(AtomicBool::new(false));
    let damage = Arc::new(Damage::default());
    let fw = qemu(&elf, dir.path(), qemu_port);
    let relay = proxy(
        listener,
        qemu_port,
        0x5eed_0001,
        clean.clone(),
        damage.clone(),
    );
    let bridge = bridge_with(
        &dir.path().join("rings"),
        proxy_port,
        &["--exporter", "csv"],
    );
    let ring = dir.path().join("rings/lm3s6965-fw");
    wait_until(
        Duration::from_secs(60),
        || published(&ring) >= 4000,
        "4000 events in the ring",
    );
    // From here the line is clean: the firmware's last frames arrive whole, and the
    // first of them shows every gap before it.
    clean.store(true, Ordering::SeqCst);
    let fw_totals = stop_firmware_totals(fw, dir.path());
    let totals = fw_totals.per_name;
    relay.join().unwrap();
    let s = stop_bridge(bridge);
    let (sums, _) = ring_sums(&ring);
    let damage = (
        damage.flipped.load(Ordering::Relaxed),
        damage.dropped.load(Ordering::Relaxed),
        damage.inserted.load(Ordering::Relaxed),
    );
    assert!(damage.0 > 0 && damage.1 > 0 && damage.2 > 0, "{damage:?}");
    let delivered: u64 = sums.values().map(|t| t.0).sum();
    let reports = s["device_reports"].as_u64().unwrap();
    let lost = ["lost_damaged", "lost_missing", "lost_unknown_name"]
        .iter()
        .map(|k| s[k].as_u64().unwrap())
        .sum::<u64>();
    // Every event the firmware wrote into its ring (its drop reports among them) is
    // delivered or counted as lost, exactly.
    assert_eq!(
        fw_totals.published,
        delivered + reports + lost,
        "damage {damage:?}; firmware {totals:?}, {} dropped; bridge {s}",
        fw_totals.dropped
    );
    // The device's own drops: those whose reports arrived (a report lost on the line
    // is one event lost, its count with it).
    assert!(
        s["lost_device_full"].as_u64().unwrap() <= fw_totals.dropped,
        "{s}"
    );
    assert!(s["lost_damaged"].as_u64().unwrap() > 0, "{s}");
    assert!(s["noise_bytes"].as_u64().unwrap() > 0, "{s}");
    assert_eq!(s["events"].as_u64(), Some(delivered), "{s}");
    // The exporter has what the ring has, and every loss before the ring reported.
    let csv = std::fs::read_to_string(dir.path().join("rings/lm3s6965-fw.csv")).unwrap();
    let (mut csv_sums, mut csv_dropped) = (std::collections::BTreeMap::new(), 0u64);
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let value: u64 = f[3].parse().unwrap();
        match f[2] {
            "agent_telemetry_events_dropped" => csv_dropped += value,
            name if name.starts_with("telering_link_") => {}
            name => {
                let e = csv_sums.entry(name.to_owned()).or_insert((0u64, 0u64));
                e.0 += 1;
                e.1 += value;
            }
        }
    }
    assert_eq!(csv_sums, sums, "{s}");
    assert_eq!(
        csv_dropped,
        lost + s["lost_device_full"].as_u64().unwrap(),
        "{s}"
    );
    // Nothing arrived that the firmware did not record: no name more, no count more.
    for (name, (count, sum)) in &sums {
        let (sent, sent_sum) = totals.get(name).copied().unwrap_or((0, 0));
        assert!(
            *count <= sent && *sum <= sent_sum,
            "{name}: {count} events (sum {sum}) delivered, {sent} (sum {sent_sum}) recorded"
        );
    }
}
