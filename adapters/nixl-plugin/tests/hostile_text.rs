//! Text telering did not create reaches NIXL's log escaped, every time: an agent name
//! with ESC, a newline that would forge a log line and NUL, and an OTLP collector's
//! error body with control characters. Each record is one line starting
//! `telering: `, with no control character in it.

mod common;

use common::{Setup, run_expecting};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

/// The agent name: a colour escape, a newline and a forged log line, a NUL.
const HOSTILE_AGENT: &[u8] = b"rank\x1b[31m\ntelering: error: forged\x00";
/// How it must appear in every line.
const HOSTILE_AGENT_SHOWN: &str = "rank\\u{1b}[31m\\ntelering: error: forged\\u{0}";

/// The body the collector answers: a title-setting escape, a bell, a forged line, NUL.
const HOSTILE_BODY: &str = "collector\x1b]0;pwned\x07\ntelering: error: forged\x00 end";
const HOSTILE_BODY_SHOWN: &str =
    "collector\\u{1b}]0;pwned\\u{7}\\ntelering: error: forged\\u{0} end";

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every line of `err` is the host's or one record of telering's, with no control
/// character and nothing escaped twice.
fn assert_clean_lines(err: &str) {
    for line in err.lines() {
        assert!(
            line.starts_with("telering: ") || line.starts_with("nixl_host: "),
            "a forged or broken line {line:?} in:\n{err}"
        );
        assert!(!line.starts_with("telering: error: forged"), "{err}");
        assert!(!line.chars().any(char::is_control), "{line:?}");
        // The hostile texts hold no backslash: one in the output escaped twice.
        assert!(!line.contains("\\\\"), "escaped twice: {line}");
    }
}

#[test]
fn a_refused_agent_name_is_escaped_in_every_line() {
    let setup = Setup::new();
    let (_, err) = run_expecting(
        setup
            .host(&["--agent-hex", &hex(HOSTILE_AGENT), "--events", "3"])
            .env("TELERING_EXPORTERS", "buffer")
            .env("NIXL_TELEMETRY_DIR", setup.path("rings")),
        0,
    );
    assert_clean_lines(&err);
    let first = err.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "telering: error: cannot create the exporter of NIXL agent `{HOSTILE_AGENT_SHOWN}`: "
        )),
        "{err}"
    );
    let closing = err
        .lines()
        .find(|l| l.contains("telering exported nothing"))
        .unwrap_or_else(|| panic!("a closing summary: {err}"));
    assert!(
        closing.starts_with(&format!(
            "telering: error: NIXL agent `{HOSTILE_AGENT_SHOWN}`: telering exported nothing"
        )),
        "{closing}"
    );
}

#[test]
fn a_hostile_agent_name_is_escaped_in_a_strict_refusal() {
    let setup = Setup::new();
    let (_, err) = run_expecting(
        setup
            .host(&["--agent-hex", &hex(HOSTILE_AGENT)])
            .env("TELERING_EXPORTERS", "buffer")
            .env("NIXL_TELEMETRY_DIR", setup.path("rings"))
            .env("TELERING_PLUGIN_STRICT", "1"),
        6,
    );
    let first = err.lines().next().unwrap();
    assert!(
        first.starts_with(&format!(
            "telering: error: cannot create the exporter of NIXL agent `{HOSTILE_AGENT_SHOWN}`: "
        )),
        "{err}"
    );
    // The host's own line quotes nothing of the name.
    assert_clean_lines(&err);
}

#[test]
fn an_agent_name_that_is_not_utf8_is_shown_byte_by_byte() {
    let setup = Setup::new();
    let (out, err) = run_expecting(
        setup
            .host(&["--agent-hex", "61ff0a62"])
            .env("TELERING_EXPORTERS", "nop"),
        0,
    );
    assert_clean_lines(&err);
    assert!(out.contains("100 not successful"), "{out}");
    assert!(
        err.contains(
            "telering: error: cannot create the exporter of NIXL agent `a\\xff\\nb`: the agent name is not UTF-8;"
        ),
        "{err}"
    );
}

#[test]
fn an_exporter_name_from_the_environment_is_escaped() {
    let setup = Setup::new();
    let (_, err) = run_expecting(
        setup
            .host(&[])
            .env("TELERING_EXPORTERS", "nop,kafka\u{1b}[2J\u{202e}"),
        0,
    );
    assert_clean_lines(&err);
    assert!(
        err.contains("TELERING_EXPORTERS=kafka\\u{1b}[2j\\u{202e} is not a known exporter"),
        "{err}"
    );
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

/// A collector on 127.0.0.1 answering every push `500` with [`HOSTILE_BODY`]; its
/// thread ends with the test process.
fn hostile_collector() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                while read_request(&mut stream) {
                    let answer = format!(
                        "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{HOSTILE_BODY}",
                        HOSTILE_BODY.len()
                    );
                    if stream.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    endpoint
}

#[test]
fn a_collectors_error_body_is_escaped_in_the_log() {
    let endpoint = hostile_collector();
    let setup = Setup::new();
    let (_, err) = run_expecting(
        setup
            .host(&["--batches", "2", "--events", "50"])
            .env("TELERING_EXPORTERS", "otlp")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
            .env("OTEL_EXPORTER_OTLP_TIMEOUT", "2000"),
        0,
    );
    assert_clean_lines(&err);
    assert!(err.contains(HOSTILE_BODY_SHOWN), "{err}");
    // And the losses are told: nothing reached the collector.
    assert!(
        err.contains("exporter `otlp` delivered 0 events, lost 100"),
        "{err}"
    );
}
