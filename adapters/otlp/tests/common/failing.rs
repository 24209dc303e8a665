//! Three real local collectors that fail, bound to 127.0.0.1 on ephemeral ports: one
//! that answers 500 to every push, one that is down (a port nothing listens on), and
//! one that accepts connections and never answers; and, to compare with, one that
//! accepts every push.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A failing collector; its thread ends with the test process.
#[derive(Debug)]
pub struct Failing {
    /// The OTLP base endpoint, `http://127.0.0.1:PORT`.
    pub endpoint: String,
    /// Requests (500) or connections (never answered) it took.
    pub hits: Arc<AtomicU64>,
}

impl Failing {
    /// Requests or connections taken so far.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::SeqCst)
    }
}

fn listener() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    (listener, endpoint)
}

/// Reads one HTTP request (headers and a `Content-Length` body); `false` at EOF.
fn read_request(stream: &mut TcpStream) -> bool {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                return true;
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
}

/// Answers every request with `500 Internal Server Error`.
pub fn answering_500() -> Failing {
    answering(
        "500 Internal Server Error",
        "text/plain",
        "collector failure",
    )
}

/// Answers every request with `200 OK` and an empty body (an empty
/// `ExportMetricsServiceResponse`); `hits` counts the pushes.
pub fn accepting() -> Failing {
    answering("200 OK", "application/x-protobuf", "")
}

/// Answers every request with `status` and `body`.
fn answering(status: &'static str, content_type: &'static str, body: &'static str) -> Failing {
    let (listener, endpoint) = listener();
    let hits = Arc::new(AtomicU64::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let counted = counted.clone();
            std::thread::spawn(move || {
                while read_request(&mut stream) {
                    counted.fetch_add(1, Ordering::SeqCst);
                    let answer = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n{body}",
                        body.len()
                    );
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    Failing { endpoint, hits }
}

/// A port with nothing listening: bound, then closed.
pub fn down() -> Failing {
    let (listener, endpoint) = listener();
    drop(listener);
    Failing {
        endpoint,
        hits: Arc::default(),
    }
}

/// Accepts every connection and never answers (the connections stay open).
pub fn never_answering() -> Failing {
    let (listener, endpoint) = listener();
    let hits = Arc::new(AtomicU64::new(0));
    let counted = hits.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            counted.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    Failing { endpoint, hits }
}
