//! The firmware link: bytes per event and events per second of the demo mix through
//! a simulated 115 200-baud UART, link format version 2 against version 1; encode and
//! decode cost per event; and the CPU `telering bridge` uses to follow 100 such links
//! at full rate (see `BENCHMARKS.md`, "Firmware link").
//!
//! The demo mix is the firmware's continuous mode's (`firmware/src/continuous.rs`):
//! per transfer `agent_tx_bytes` (4 to 64 KiB), `agent_tx_requests_num` (1) and
//! `agent_xfer_time` (20 to 2000 µs), one transfer in three also `agent_rx_bytes`;
//! `dpu_queue_depth` every 10th event, `dpu_temp_millicelsius` every 100th, a
//! `NIXL_ERR_REMOTE_DISCONNECT` every 500th; events about 1 ms apart on a 1 MHz
//! device clock. The device drains its ring every 10 ms (one batch) and sends a clock
//! frame every 100 ms.
//!
//! A 115 200-baud UART with 8N1 framing carries 11 520 bytes per second; the link's
//! event rate is that divided by the bytes per event, which the encoder fixes
//! exactly, so it is computed rather than waited for. The bridge part is timed: 100
//! Unix-socket links each fed at that rate (pre-encoded bytes, every 10 ms) for
//! `SECONDS`, the bridge in this process, its CPU = the process's minus the feeder
//! thread's (`/proc`).

use std::io::Write;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use telering_benches::{Spread, rounds};
use telering_core::{Category, Event, EventName, event_name};
use telering_embedded_io::FrameExporter;
use telering_embedded_io::link::{Hello, LinkDecoder, LinkEncoder, LinkItem};

const UART_BYTES_PER_SEC: f64 = 115_200.0 / 10.0;
const EVENTS: usize = 100_000;
const LINKS: usize = 100;
const SECONDS: u64 = 5;

struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// `n` events of the demo mix, timestamps in device microseconds.
fn demo_mix(n: usize, seed: u64) -> Vec<Event> {
    const TX: EventName = event_name!("agent_tx_bytes");
    const REQ: EventName = event_name!("agent_tx_requests_num");
    const TIME: EventName = event_name!("agent_xfer_time");
    const RX: EventName = event_name!("agent_rx_bytes");
    const DEPTH: EventName = event_name!("dpu_queue_depth");
    const TEMP: EventName = event_name!("dpu_temp_millicelsius");
    const ERR: EventName = event_name!("NIXL_ERR_REMOTE_DISCONNECT");
    let mut rng = Rng(seed | 1);
    let mut ts = 1_000_000u64;
    let mut out = Vec::with_capacity(n + 8);
    let mut i = 0u64;
    while out.len() < n {
        let mut push = |c, name, v, rng: &mut Rng| {
            ts += 800 + rng.below(400);
            out.push(Event::new(ts, c, name, v));
        };
        push(Category::Transfer, TX, 4096 * (1 + rng.below(16)), &mut rng);
        push(Category::Transfer, REQ, 1, &mut rng);
        push(Category::Performance, TIME, 20 + rng.below(1980), &mut rng);
        if i % 3 == 0 {
            push(Category::Transfer, RX, 4096 * (1 + rng.below(16)), &mut rng);
        }
        i += 1;
        if i % 3 == 0 {
            push(Category::Custom, DEPTH, rng.below(64), &mut rng);
        }
        if i % 30 == 0 {
            push(Category::System, TEMP, 40_000 + rng.below(6_000), &mut rng);
        }
        if i % 150 == 0 {
            push(Category::Error, ERR, 1, &mut rng);
        }
    }
    out.truncate(n);
    out
}

/// The version-2 stream of `events`: a batch per 10 ms of device time, a clock frame
/// per 100 ms.
fn encode_v2(events: &[Event], agent: &str) -> Vec<u8> {
    let hello = Hello {
        agent,
        firmware_version: "bench",
        ticks_per_second: 1_000_000,
        ring_capacity: 64,
    };
    let mut encoder: LinkEncoder<_, 16> =
        LinkEncoder::new(Vec::with_capacity(events.len() * 8), hello);
    let mut batch_end = events[0].timestamp_us() + 10_000;
    let mut clock_at = events[0].timestamp_us() + 100_000;
    for e in events {
        if e.timestamp_us() >= batch_end {
            encoder.flush().unwrap();
            batch_end += 10_000;
            if e.timestamp_us() >= clock_at {
                encoder.clock(e.timestamp_us()).unwrap();
                clock_at += 100_000;
            }
        }
        encoder.push(e).unwrap();
    }
    encoder.flush().unwrap();
    encoder.into_inner()
}

fn encode_v1(events: &[Event]) -> Vec<u8> {
    let mut line = Vec::with_capacity(events.len() * 68 + 1);
    let mut exporter = FrameExporter::new(&mut line);
    for e in events {
        exporter.export(e).unwrap();
    }
    line
}

fn decode(line: &[u8]) -> usize {
    let mut decoder = LinkDecoder::new();
    let mut n = 0;
    for piece in line.chunks(4096) {
        for item in decoder.feed(piece) {
            if let LinkItem::Event { event, .. } = item {
                std::hint::black_box(&event);
                n += 1;
            }
        }
    }
    n
}

fn fmt(s: Spread, digits: usize) -> String {
    format!(
        "{:.*} ({:.*}–{:.*})",
        digits, s.median, digits, s.min, digits, s.max
    )
}

/// utime + stime of a `/proc/.../stat` file, in seconds.
fn cpu_secs(path: &str) -> f64 {
    let text = std::fs::read_to_string(path).unwrap();
    let after = &text[text.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after.split(' ').collect();
    // Fields 14 and 15 of stat(5), counted from the state field (3).
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// The bridge following `LINKS` links, each fed `line` at `bytes_per_sec`, for
/// `SECONDS`: the bridge's CPU in cores (1.0 = one core busy), and events written.
fn bridge_cpu(lines: &[Vec<u8>], bytes_per_sec: f64) -> (f64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let sockets: Vec<_> = (0..LINKS)
        .map(|i| dir.path().join(format!("l{i}.sock")))
        .collect();
    let listeners: Vec<UnixListener> = sockets
        .iter()
        .map(|p| UnixListener::bind(p).unwrap())
        .collect();
    let stop = AtomicBool::new(false);
    let args = telering_cli::bridge::BridgeArgs {
        links: sockets
            .iter()
            .map(|p| format!("unix:{}", p.display()))
            .collect(),
        dir: Some(dir.path().join("rings")),
        capacity: Some(65_536),
        max_backoff: Duration::from_millis(200),
        json: true,
        exporter: None,
    };
    std::thread::scope(|scope| {
        let bridge = scope.spawn(|| {
            let mut out = Vec::new();
            telering_cli::bridge::bridge(args, &telering_std::EnvSource::empty(), &stop, &mut out)
                .unwrap();
            out
        });
        let mut conns: Vec<_> = listeners.iter().map(|l| l.accept().unwrap().0).collect();
        let step = Duration::from_millis(10);
        let chunk = (bytes_per_sec * step.as_secs_f64()) as usize;
        let feeder_cpu_before = cpu_secs("/proc/thread-self/stat");
        let process_before = cpu_secs("/proc/self/stat");
        let start = Instant::now();
        let mut sent = 0usize;
        let mut tick = start;
        let shortest = lines.iter().map(Vec::len).min().unwrap();
        while start.elapsed() < Duration::from_secs(SECONDS) && sent + chunk <= shortest {
            for (c, line) in conns.iter_mut().zip(lines) {
                c.write_all(&line[sent..sent + chunk]).unwrap();
            }
            sent += chunk;
            tick += step;
            std::thread::sleep(tick.saturating_duration_since(Instant::now()));
        }
        let elapsed = start.elapsed().as_secs_f64();
        let feeder = cpu_secs("/proc/thread-self/stat") - feeder_cpu_before;
        let process = cpu_secs("/proc/self/stat") - process_before;
        stop.store(true, Ordering::Relaxed);
        drop(conns);
        let out = String::from_utf8(bridge.join().unwrap()).unwrap();
        let written: u64 = out
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                v["written"].as_u64().unwrap()
            })
            .sum();
        ((process - feeder) / elapsed, written)
    })
}

fn main() {
    let rounds = rounds(7);
    let (mut v2_bpe, mut v1_bpe, mut enc_ns, mut dec_ns) = (vec![], vec![], vec![], vec![]);
    for r in 0..rounds {
        let events = demo_mix(EVENTS, 0x5EED + r as u64);
        let t = Instant::now();
        let v2 = encode_v2(&events, "dpu-bench");
        enc_ns.push(t.elapsed().as_nanos() as f64 / EVENTS as f64);
        let t = Instant::now();
        assert_eq!(decode(&v2), EVENTS);
        dec_ns.push(t.elapsed().as_nanos() as f64 / EVENTS as f64);
        v2_bpe.push(v2.len() as f64 / EVENTS as f64);
        v1_bpe.push(encode_v1(&events).len() as f64 / EVENTS as f64);
        std::hint::black_box(&v2);
    }
    let v2 = Spread::of(&v2_bpe);
    let v1 = Spread::of(&v1_bpe);
    let rate = |s: Spread| Spread {
        median: UART_BYTES_PER_SEC / s.median,
        min: UART_BYTES_PER_SEC / s.max,
        max: UART_BYTES_PER_SEC / s.min,
    };
    println!(
        "### Demo mix through a 115 200-baud UART ({EVENTS} events per round, {rounds} rounds)\n"
    );
    println!("| link format | bytes/event | events/s at 115 200 baud |");
    println!("|---|---|---|");
    println!(
        "| version 1 (one 68-byte frame per event) | {} | {} |",
        fmt(v1, 2),
        fmt(rate(v1), 0)
    );
    println!(
        "| version 2 (batches per 10 ms, clock per 100 ms) | {} | {} |",
        fmt(v2, 2),
        fmt(rate(v2), 0)
    );
    println!(
        "\nversion 2 encode: {} ns/event; decode (host): {} ns/event\n",
        fmt(Spread::of(&enc_ns), 1),
        fmt(Spread::of(&dec_ns), 1)
    );

    // The bridge: 100 links at the full version-2 rate of a 115 200-baud UART.
    let events = demo_mix(((SECONDS + 1) as f64 * rate(v2).median) as usize + 1000, 1);
    let lines: Vec<Vec<u8>> = (0..LINKS)
        .map(|i| encode_v2(&events, &format!("dpu-bench-{i}")))
        .collect();
    let (mut cores, mut written) = (vec![], vec![]);
    for _ in 0..rounds {
        let (c, w) = bridge_cpu(&lines, UART_BYTES_PER_SEC);
        cores.push(c * 100.0);
        written.push(w as f64 / SECONDS as f64);
    }
    println!(
        "### telering bridge: {LINKS} links at 11 520 bytes/s each, {SECONDS} s per round, {rounds} rounds\n"
    );
    println!("| bridge CPU (% of one core) | events written/s (all links) |");
    println!("|---|---|");
    println!(
        "| {} | {} |",
        fmt(Spread::of(&cores), 1),
        fmt(Spread::of(&written), 0)
    );
}
