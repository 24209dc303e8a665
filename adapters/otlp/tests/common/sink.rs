//! oteltest's OTLP/HTTP sink (PyPI), run by `otlp_receiver.py` with `python3` from
//! `PATH`, and the JSON lines it prints: one per request the sink decoded (with the
//! official `opentelemetry-proto` package), and, in front modes, one per request the
//! front answered. Shared by telering-otlp's and the `telering` command's tests.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The receiver process and the JSON lines it prints.
pub struct Sink {
    child: Child,
    /// The loopback port it accepts OTLP/HTTP requests on.
    pub port: u16,
    /// Every line the receiver printed, in order.
    pub lines: Receiver<Value>,
}

impl Sink {
    /// Starts the receiver on a port it chooses itself and waits until it accepts
    /// connections: no other process can take the port between choosing and binding
    /// it, as one could take a port from [`free_port`].
    pub fn start_any(args: &[&str]) -> Sink {
        Sink::start(0, args)
    }

    /// Starts the receiver on `port` (0: one it chooses, see [`Sink::start_any`]) with
    /// `args` (see `otlp_receiver.py`) and waits until it accepts connections.
    pub fn start(port: u16, args: &[&str]) -> Sink {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../otlp/tests/otlp_receiver.py"
        );
        let mut child = Command::new("python3")
            .arg(script)
            .arg(port.to_string())
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 with oteltest on PATH");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut sink = Sink { child, port, lines };
        if port == 0 {
            // Its first line names the port, once it is bound.
            let left = deadline.saturating_duration_since(Instant::now());
            let line = sink.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!("the receiver did not start: {:?}", sink.child.try_wait())
            });
            sink.port = line["listening"]
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or_else(|| panic!("expected the receiver's port, got {line}"));
            return sink;
        }
        while TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], port))).is_err() {
            assert!(Instant::now() < deadline, "receiver did not start");
            assert!(
                sink.child.try_wait().unwrap().is_none(),
                "the receiver exited at start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        sink
    }

    /// Waits up to 30 s for a line `done` accepts; returns it and every line before it.
    pub fn wait_for(&self, what: &str, done: impl Fn(&Value) -> bool) -> (Value, Vec<Value>) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no request with {what}; saw {seen:?}"));
            if done(&line) {
                return (line, seen);
            }
            seen.push(line);
        }
    }

    /// Waits for a request whose sum `key` equals `want`; returns that request and every
    /// line seen before it.
    pub fn wait_for_sum(&self, key: &str, want: u64) -> (Value, Vec<Value>) {
        self.wait_for(&format!("{key} = {want}"), |line| {
            line["sums"][key].as_u64() == Some(want)
        })
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
