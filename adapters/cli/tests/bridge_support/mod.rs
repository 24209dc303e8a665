//! What the `telering bridge` tests share: a simulated device's event mix and
//! version-2 stream, damage done to a line, the bridge run and stopped, and the
//! rings read back.

#![allow(dead_code)]

pub mod qemu;

use crate::common::{Running, parse_json_lines, signal, telering};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};
use telering_core::{Category, Event, EventName, ObserverStart, event_name};
use telering_embedded_io::link::{Hello, LinkEncoder};
use telering_shm::{DrainingReader, ObserverReader};

/// The demo mix a device records: (category, name, value range).
pub const MIX: [(Category, EventName, u64); 6] = [
    (Category::Transfer, event_name!("agent_tx_bytes"), 65_536),
    (Category::Transfer, event_name!("agent_tx_requests_num"), 2),
    (Category::Performance, event_name!("agent_xfer_time"), 5_000),
    (Category::Transfer, event_name!("agent_rx_bytes"), 65_536),
    (Category::Custom, event_name!("dpu_queue_depth"), 64),
    (
        Category::System,
        event_name!("dpu_temp_millicelsius"),
        90_000,
    ),
];

pub const END: EventName = event_name!("test_stream_end");

pub fn hello(agent: &str) -> Hello<'_> {
    Hello {
        agent,
        firmware_version: "test-1",
        ticks_per_second: 1_000_000,
        ring_capacity: 64,
    }
}

/// `n` events of the mix with deterministic values, then one end marker.
pub fn mix(n: u64, seed: u64) -> Vec<Event> {
    let mut state = seed | 1;
    let mut events: Vec<Event> = (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let (c, name, max) = MIX[(i % MIX.len() as u64) as usize];
            Event::new(1_000 + i * 50, c, name, state % max)
        })
        .collect();
    events.push(Event::new(1_000 + n * 50, Category::Custom, END, 1));
    events
}

/// A version-2 stream of `events` in batches of 16, a clock frame after each.
pub fn v2_stream(agent: &str, events: &[Event]) -> Vec<u8> {
    let mut line = Vec::new();
    let mut encoder: LinkEncoder<_, 16> = LinkEncoder::new(&mut line, hello(agent));
    for chunk in events.chunks(16) {
        for e in chunk {
            encoder.push(e).unwrap();
        }
        encoder.flush().unwrap();
        encoder
            .clock(chunk[chunk.len() - 1].timestamp_us())
            .unwrap();
    }
    line
}

/// Sums of values and counts per event name.
pub fn sums(events: &[Event]) -> BTreeMap<String, (u64, u64)> {
    let mut out = BTreeMap::new();
    for e in events {
        let entry = out.entry(e.name().unwrap().to_owned()).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += e.value();
    }
    out
}

/// Every event in a ring file, taken by a draining reader.
pub fn ring_events(path: &Path) -> Vec<Event> {
    let mut reader = DrainingReader::open(path).unwrap();
    let mut events = Vec::new();
    while let Some(e) = reader.pop().unwrap() {
        events.push(e);
    }
    events
}

/// The device's own events (not the link's `telering_link_*` ones, nor drop reports).
pub fn device_events(events: &[Event]) -> Vec<Event> {
    events
        .iter()
        .filter(|e| {
            let name = e.name().unwrap();
            !name.starts_with("telering_link_") && name != "agent_telemetry_events_dropped"
        })
        .copied()
        .collect()
}

/// Waits until the ring `path` holds an event named `test_stream_end`.
pub fn wait_for_end_marker(path: &Path) {
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

pub fn spawn_bridge(dir: &Path, links: &[String]) -> Running {
    let mut cmd = telering();
    cmd.arg("bridge")
        .arg("--json")
        .arg("--dir")
        .arg(dir)
        .args(links);
    cmd.arg("--max-backoff").arg("200ms");
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    Running::spawn(&mut cmd)
}

/// SIGTERMs the bridge and returns its summary, one JSON object per link.
pub fn stop(mut bridge: Running) -> Vec<serde_json::Value> {
    signal(&bridge.child, "-TERM");
    let code = bridge.wait();
    let mut out = String::new();
    std::io::Read::read_to_string(bridge.child.stdout.as_mut().unwrap(), &mut out).unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(bridge.child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(code, Some(0), "stdout: {out}\nstderr: {err}");
    parse_json_lines(&out)
}

pub fn lost(summary: &serde_json::Value) -> u64 {
    [
        "lost_damaged",
        "lost_missing",
        "lost_unknown_name",
        "lost_device_full",
    ]
    .iter()
    .map(|k| summary[k].as_u64().unwrap())
    .sum()
}

/// Corrupts a stream: flips bits, drops runs of bytes and inserts noise, from a
/// deterministic sequence, never in the first frames (hello and names) nor the last
/// 400 bytes (the end marker's batch).
pub fn damage(line: &[u8], seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::with_capacity(line.len());
    let protected_head = 200;
    let protected_tail = line.len().saturating_sub(400);
    let mut i = 0;
    while i < line.len() {
        let free = i > protected_head && i < protected_tail;
        match next() % 1000 {
            0..=2 if free => {
                out.push(line[i] ^ (1 << (next() % 8)));
                i += 1;
            }
            3 if free => i += 1 + (next() % 40) as usize, // bytes lost on the line
            4..=9 if free && line[i - 1] == 0 => {
                // Noise between two frames, ended by a zero of its own.
                let n = 1 + next() % 30;
                out.extend((0..n).map(|_| (next() as u8).max(1)));
                out.push(0);
            }
            10 if free => {
                let n = next() % 30;
                out.extend((0..n).map(|_| next() as u8)); // noise inside a frame
            }
            _ => {
                out.push(line[i]);
                i += 1;
            }
        }
    }
    out
}

/// CRC-32 (IEEE, reflected), as the version-2 frames carry it.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A varint as the link writes it (LEB128).
pub fn varint(mut n: u64) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

/// A length-prefixed text field.
pub fn text(s: &[u8]) -> Vec<u8> {
    let mut out = vec![s.len() as u8];
    out.extend_from_slice(s);
    out
}

/// One version-2 frame, built by hand (COBS, CRC-32, zero delimiter): for what the
/// encoder would never send.
pub fn raw_frame(kind: u8, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut body = vec![2, kind];
    body.extend_from_slice(&seq.to_le_bytes());
    body.extend_from_slice(payload);
    let crc = crc32(&body);
    body.extend_from_slice(&crc.to_le_bytes());
    let mut out = Vec::with_capacity(body.len() + 3);
    let mut block = Vec::new();
    for b in body {
        if b == 0 {
            out.push(block.len() as u8 + 1);
            out.append(&mut block);
        } else {
            block.push(b);
            if block.len() == 254 {
                out.push(255);
                out.append(&mut block);
            }
        }
    }
    out.push(block.len() as u8 + 1);
    out.append(&mut block);
    out.push(0);
    out
}

/// A hand-built hello frame.
pub fn raw_hello(seq: u32, agent: &[u8], ticks_per_second: u64) -> Vec<u8> {
    let mut p = varint(ticks_per_second);
    p.extend(varint(256));
    p.extend(text(agent));
    p.extend(text(b"1.0"));
    raw_frame(1, seq, &p)
}

/// A hand-built names frame defining id 1 as `name` (category 1).
pub fn raw_names(seq: u32, name: &[u8]) -> Vec<u8> {
    let mut p = varint(1);
    p.push(1);
    p.extend(text(name));
    raw_frame(2, seq, &p)
}

/// A hand-built events frame: events `first`.. of name id 1, each 1 tick apart.
pub fn raw_events(seq: u32, first: u64, values: &[u64]) -> Vec<u8> {
    let mut p = varint(first);
    p.extend(varint(100));
    for v in values {
        p.extend(varint(1));
        p.extend(varint(2)); // zigzag(1)
        p.extend(varint(*v));
    }
    raw_frame(3, seq, &p)
}
