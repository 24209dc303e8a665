//! The slowest transfers as spans: a real HTTP collector (a socket in this test)
//! receives one span per kept transfer on `/v1/traces`, the route as attributes.

use prost::Message;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use telering_otlp::proto::any_value;
use telering_otlp::spans::{ExportTraceServiceRequest, Span};
use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{EnvSource, ExporterRegistry, Telemetry};

/// Every request's path and body.
type Seen = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

fn read_request(stream: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_string();
            let length: usize = head
                .to_ascii_lowercase()
                .lines()
                .find_map(|l| l.strip_prefix("content-length:").map(str::to_owned))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if data.len() >= end + 4 + length {
                let path = head.split_whitespace().nth(1)?.to_owned();
                return Some((path, data[end + 4..end + 4 + length].to_vec()));
            }
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return None,
            Ok(n) => data.extend_from_slice(&buf[..n]),
        }
    }
}

fn collector() -> (u16, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen: Seen = Arc::default();
    let s = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let s = s.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                while let Some(request) = read_request(&mut stream) {
                    s.lock().unwrap().push(request);
                    let ok = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n";
                    if stream.write_all(ok).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, seen)
}

fn spans(seen: &Seen) -> Vec<Span> {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(path, _)| path == "/v1/traces")
        .flat_map(|(_, body)| {
            let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
            request
                .resource_spans
                .into_iter()
                .flat_map(|r| r.scope_spans)
                .flat_map(|s| s.spans)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn attr(span: &Span, key: &str) -> String {
    let a = span.attributes.iter().find(|a| a.key == key).unwrap();
    match a.value.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        other => panic!("{key}: {other:?}"),
    }
}

#[test]
fn each_kept_slow_transfer_reaches_the_collector_as_one_span() {
    let (port, seen) = collector();
    let mut registry = ExporterRegistry::with_builtins();
    telering_otlp::register(&mut registry);
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "y".to_string()),
        ("NIXL_TELEMETRY_EXPORTER", "otlp".to_string()),
        (
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        ),
        ("OTEL_METRIC_EXPORT_INTERVAL", "200".to_string()),
    ]);
    let t = Telemetry::builder("prefill-0")
        .registry(registry)
        .apply_env(&env)
        .unwrap()
        .slow_xfers_kept(3)
        .build()
        .unwrap();
    let slow = t
        .route(&Route::new(
            Operation::Write,
            "UCX",
            MemoryType::Vram,
            MemoryType::Vram,
            "decode-1",
        ))
        .unwrap();
    for i in 0..20u64 {
        t.add_route_xfer_stats_us(slow, 1000 + i, 4096 + i, 5, 2);
    }
    t.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while spans(&seen).len() < 3 {
        assert!(Instant::now() < deadline, "no spans arrived");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(t);
    let mut got = spans(&seen);
    assert_eq!(got.len(), 3, "one span per kept transfer, each once");
    got.sort_by_key(|s| {
        std::cmp::Reverse(attr(s, "telering.xfer_time_us").parse::<u64>().unwrap())
    });
    let times: Vec<String> = got
        .iter()
        .map(|s| attr(s, "telering.xfer_time_us"))
        .collect();
    assert_eq!(times, ["1019", "1018", "1017"]);
    let s = &got[0];
    assert_eq!(attr(s, "telering.peer"), "decode-1");
    assert_eq!(attr(s, "telering.remote_mem"), "VRAM");
    assert_eq!(attr(s, "telering.bytes"), "4115");
    assert_eq!(attr(s, "telering.descriptors"), "2");
    assert_eq!(s.end_time_unix_nano - s.start_time_unix_nano, 1019 * 1000);
    assert_eq!((s.trace_id.len(), s.span_id.len()), (16, 8));
    assert_ne!(got[0].trace_id, got[1].trace_id);
}
