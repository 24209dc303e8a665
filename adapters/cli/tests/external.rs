//! The `telering` binary with the real outside tools: a Prometheus server scraping
//! `telering serve`, and the firmware under QEMU piped into `telering decode`.
//!
//! Both are ignored in a plain `cargo test`; run them with
//! `cargo test -p telering-cli --test external -- --ignored` after installing the
//! Debian packages `prometheus` and `qemu-system-arm` and the Rust target
//! `thumbv7m-none-eabi`.

mod common;

use common::*;
use std::io::BufReader;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use telering_core::{Category, Event, EventName};
use telering_shm::{ShmWriter, WriterOptions};

/// A Prometheus server with its own configuration and data directory; killed on drop.
struct Prometheus {
    child: Child,
    api: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn scraping(target: SocketAddr) -> Prometheus {
        let dir = scratch();
        std::fs::write(
            dir.path().join("prometheus.yml"),
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: telering\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let api: SocketAddr = ([127, 0, 0, 1], port).into();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={api}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus is installed (Debian package `prometheus`)");
        Prometheus {
            child,
            api,
            _dir: dir,
        }
    }

    /// The single value of an instant query, once Prometheus has one.
    fn value(&self, query: &str) -> Option<f64> {
        let encoded: String = query
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let response = try_http_get(self.api, &format!("/api/v1/query?query={encoded}")).ok()?;
        let body = response.split("\r\n\r\n").nth(1)?;
        let json: serde_json::Value = serde_json::from_str(body.trim()).ok()?;
        json["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "needs prometheus"]
fn prometheus_scrapes_telering_serve_and_sees_every_byte() {
    let dir = scratch();
    let rings = dir.path().join("rings");
    let mut writer = ShmWriter::create(WriterOptions::new(&rings, "e2e-agent")).unwrap();
    let name = EventName::new("agent_tx_bytes").unwrap();
    let sizes = [4096u64, 65536, 1 << 20, 123];
    let events: Vec<Event> = sizes
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            Event::new(
                1_700_000_000_000_000 + i as u64,
                Category::Transfer,
                name,
                v,
            )
        })
        .collect();
    writer.write_batch(&events);

    let mut serve = Running::spawn(
        telering()
            .args(["serve", "--port", "0", "--local", "--dir"])
            .arg(&rings)
            .stdout(Stdio::piped()),
    );
    let mut out = BufReader::new(serve.child.stdout.take().unwrap());
    let target = addr_in(&wait_for_line(&mut out, "serving http://"));
    let prometheus = Prometheus::scraping(target);

    let expected: u64 = sizes.iter().sum();
    let query = "agent_tx_bytes_total{agent_name=\"e2e-agent\"}";
    let seen = eventually(Duration::from_secs(60), || {
        prometheus.value(query).filter(|v| *v == expected as f64)
    });
    // A later event reaches Prometheus too.
    writer.write_batch(&[Event::new(
        1_700_000_000_000_100,
        Category::Transfer,
        name,
        7,
    )]);
    let seen_later = eventually(Duration::from_secs(30), || {
        prometheus
            .value(query)
            .filter(|v| *v == (expected + 7) as f64)
    });
    signal(&serve.child, "-TERM");
    assert_eq!(serve.wait(), Some(0));
    writer.close().unwrap();
    assert_eq!(
        seen,
        Some(expected as f64),
        "Prometheus never saw {expected} bytes"
    );
    assert!(seen_later.is_some(), "Prometheus never saw the later event");
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

#[test]
#[ignore = "needs qemu-system-arm and the thumbv7m-none-eabi target"]
fn firmware_uart_output_under_qemu_decodes_with_telering_decode() {
    let dir = scratch();
    let uart = dir.path().join("uart.bin");
    let defmt = dir.path().join("defmt.bin");
    let status = Command::new("bash")
        .arg(repo_root().join("firmware/run-qemu.sh"))
        .arg(&uart)
        .arg(&defmt)
        .env("QEMU_TIMEOUT", "120")
        .status()
        .expect("run firmware/run-qemu.sh");
    assert!(status.success(), "firmware run failed: {status}");

    let o = run_in(
        dir.path(),
        telering()
            .arg("decode")
            .arg("--json")
            .arg("--input")
            .arg(&uart),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let lines = parse_json_lines(&stdout(&o));
    let named = |n: &'static str| lines.iter().filter(move |l| l["event"] == n);
    // The firmware's script (firmware/src/main.rs): 70 doorbells into a ring that
    // holds 63, so 63 arrive, then the in-band report of the 7 drops, then one more.
    assert_eq!(named("dpu_doorbell").count(), 64);
    let drops: Vec<_> = named("agent_telemetry_events_dropped").collect();
    assert_eq!(drops.len(), 1);
    assert_eq!(drops[0]["value"], 7);
    assert_eq!(drops[0]["category"], "ERROR");
    assert_eq!(named("agent_tx_bytes").next().unwrap()["value"], 4096);
    assert_eq!(named("NIXL_ERR_REMOTE_DISCONNECT").count(), 1);
    // Timestamps never go backwards on the device's clock.
    let ts: Vec<u64> = lines
        .iter()
        .map(|l| l["timestamp_us"].as_u64().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
}
