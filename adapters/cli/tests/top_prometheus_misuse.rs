//! `telering top --prometheus URL` against servers that misbehave: silent, huge,
//! redirecting, answering values that are not numbers or label values and errors
//! holding terminal controls; and URLs that cannot be a server's. Each server is a real
//! 127.0.0.1 HTTP server in the test that answers what the case needs.

mod common;

use common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

/// What the test's server saw: bytes it sent and connections still open.
#[derive(Default)]
struct Seen {
    sent: AtomicU64,
    open: AtomicUsize,
}

/// A server that reads each request's head and hands the connection to `answer`, one
/// thread per connection.
fn server(answer: impl Fn(&mut TcpStream, &Seen) + Send + Sync + 'static) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let answer = Arc::new(answer);
    let shared = seen.clone();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let (answer, seen) = (answer.clone(), shared.clone());
            seen.open.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                }
                answer(&mut conn, &seen);
                seen.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (format!("http://{addr}"), seen)
}

/// A server answering every query with one series per `(labels, value)`.
fn answering_series(series: &'static [(&'static str, &'static str)]) -> String {
    let result: Vec<String> = series
        .iter()
        .map(|(labels, value)| format!(r#"{{"metric":{labels},"value":[1700000000,"{value}"]}}"#))
        .collect();
    let body = format!(
        r#"{{"status":"success","data":{{"resultType":"vector","result":[{}]}}}}"#,
        result.join(",")
    );
    server(move |conn, _| {
        let _ = write!(
            conn,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    })
    .0
}

fn top(args: &[&str]) -> std::process::Output {
    telering().arg("top").args(args).output().unwrap()
}

#[test]
fn a_silent_server_fails_the_refresh_at_the_timeout_whatever_the_interval() {
    let (url, _) = server(|conn, _| {
        // Hold the connection open, answering nothing, until the client leaves.
        let _ = conn.read(&mut [0u8; 1]);
    });
    let o = top(&[
        "--once",
        "--interval",
        "40s",
        "--timeout",
        "1s",
        "--prometheus",
        &url,
    ]);
    assert_fails(
        &o,
        1,
        &[
            &format!("cannot query Prometheus at {url}"),
            "no answer within 1 s",
        ],
    );
    assert!(!stderr(&o).contains("global"), "{}", stderr(&o));
    let o = top(&["--once", "--timeout", "0s", "--prometheus", &url]);
    assert_fails(&o, 2, &["--timeout 0s"]);
}

#[test]
fn a_huge_answer_is_cut_off_and_the_refresh_fails_saying_so() {
    let (url, seen) = server(|conn, seen| {
        let mut head = b"HTTP/1.1 200 OK\r\nContent-Length: 1073741824\r\n\r\n".to_vec();
        head.extend_from_slice(br#"{"status":"success","data":{"resultType":"vector","result":["#);
        let _ = conn.write_all(&head);
        let chunk = br#"{"metric":{"agent_name":"a"},"value":[0,"1"]},"#.repeat(1400);
        while conn.write_all(&chunk).is_ok() {
            seen.sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
        }
    });
    let o = top(&["--once", "--prometheus", &url]);
    assert_fails(&o, 1, &["an answer is larger than 2.5 MiB", "13 queries"]);
    eventually(Duration::from_secs(30), || {
        (seen.open.load(Ordering::SeqCst) == 0).then_some(())
    })
    .expect("every connection closed once top exited");
    // 32 MiB of answers at most, and what the sockets' buffers took besides.
    let sent = seen.sent.load(Ordering::SeqCst);
    assert!(sent < 256 << 20, "top took {} MiB", sent >> 20);
}

#[test]
fn a_redirect_is_not_followed_and_the_error_says_where_it_points() {
    let (url, _) = server(|conn, _| {
        let _ = conn.write_all(
            b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/elsewhere\r\nContent-Length: 0\r\n\r\n",
        );
    });
    let o = top(&["--once", "--prometheus", &url]);
    assert_fails(
        &o,
        1,
        &[
            &format!("cannot query Prometheus at {url}"),
            "HTTP 302, a redirect to http://127.0.0.1:1/elsewhere",
            "not followed",
        ],
    );
}

#[test]
fn values_that_are_not_numbers_or_are_huge_print_short() {
    let labels = r#"{"instance":"n1:9464","job":"j","agent_name":"a"}"#;
    // (the value, as a rate or count, as a percentile, as REQ/S: the sum of two)
    let cases = [
        ("NaN", "-", "-", "-"),
        ("+Inf", "+Inf", "+Inf", "+Inf"),
        ("-1e308", "-1.0e308", "-1.0e302s", "-Inf"),
    ];
    for (value, shown, percentile, sum) in cases {
        let series: &'static [(&str, &str)] = Box::leak(Box::new([(labels, value)]));
        let url = answering_series(series);
        let o = top(&["--once", "--prometheus", &url]);
        assert!(o.status.success(), "{}", stderr(&o));
        let text = stdout(&o);
        let row = text.lines().nth(1).expect("one row");
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[..2], ["n1:9464", "a"], "{text}");
        // Every figure: rates, percentiles and counts (TOP ERROR is `-`: no status).
        for (i, cell) in cells.iter().enumerate().skip(2) {
            let expected = match i {
                4 => sum,
                5..=7 => percentile,
                9 => "-",
                _ => shown,
            };
            assert!(
                cell.starts_with(expected) && cell.len() <= expected.len() + 4,
                "{value}: column {i} shows {cell:?}: {text}"
            );
        }
        let o = top(&["--once", "--json", "--prometheus", &url]);
        let rows = parse_json_lines(&stdout(&o));
        let expected = value.parse::<f64>().ok().filter(|v| v.is_finite());
        assert_eq!(
            rows[0]["tx_bytes_per_s"].as_f64(),
            expected,
            "{}",
            stdout(&o)
        );
        assert!(stdout(&o).len() < 600, "{}", stdout(&o));
    }
}

#[test]
fn label_values_and_server_errors_reach_the_terminal_escaped() {
    let url = answering_series(&[(
        r#"{"instance":"n\u001b]0;pwned\u0007","job":"j","agent_name":"a\r\nforged-row  1  2  3"}"#,
        "1",
    )]);
    let o = top(&["--once", "--prometheus", &url]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(!text.contains(['\u{1b}', '\u{7}', '\r']), "{text:?}");
    assert!(text.contains(r"n\u{1b}]0;pwned\u{7}"), "{text}");

    let body =
        r#"{"status":"error","errorType":"bad\u001b[31m","error":"x\r\nforged line \u202e"}"#;
    let (url, _) = server(move |conn, _| {
        let _ = write!(
            conn,
            "HTTP/1.1 400 Bad Request\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
    });
    let o = top(&["--once", "--prometheus", &url]);
    assert_fails(
        &o,
        1,
        &["HTTP 400, bad\\u{1b}[31m: x\\r\\nforged line \\u{202e}"],
    );
    assert!(!stderr(&o).contains(['\u{1b}', '\r', '\u{202e}']));
}

#[test]
fn a_url_that_cannot_be_a_servers_exits_2_naming_it() {
    for (url, why) in [
        ("http://127.0.0.1:99999", "port 99999"),
        ("http://127.0.0.1:0", "port 0"),
        ("http://127.0.0.1:90x", "port 90x"),
        ("http://[::1", "no closing `]`"),
        ("http://", "no host"),
        ("http://:9090", "no host"),
        ("http://host:9090/?query", "query"),
        ("http://ho st:9090", "space"),
        ("https://host:9090", "not an http:// URL"),
        ("localhost:9090", "not an http:// URL"),
    ] {
        let o = top(&["--once", "--prometheus", url]);
        assert_fails(&o, 2, &[&format!("--prometheus {url}: "), why]);
    }
    let o = top(&["--once", "--prometheus", "http://host\u{1b}]0;x\u{7}:1"]);
    assert_fails(&o, 2, &[r"--prometheus http://host\u{1b}]0;x\u{7}:1"]);
}
