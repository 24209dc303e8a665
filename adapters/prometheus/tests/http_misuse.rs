//! The endpoint under misuse: every bad client gets its status or a closed connection,
//! while a well-behaved scrape running at the same time still succeeds.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use telering_core::{Category, Event, builtin};
use telering_prometheus::{Buckets, HttpLimits, MetricModel, MetricsServer, SharedModel};

fn model(agents: usize) -> SharedModel {
    let mut model = MetricModel::new("testhost", Buckets::default());
    let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 777);
    for i in 0..agents {
        model.ingest(&format!("agent-{i}"), &[tx]);
    }
    model.into_shared()
}

fn server(limits: HttpLimits) -> MetricsServer {
    MetricsServer::start("127.0.0.1:0".parse().unwrap(), model(1), limits).unwrap()
}

/// Sends `bytes`, then reads until the server closes; returns what came back (possibly
/// empty if the server closed without answering).
fn exchange(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let _ = conn.write_all(bytes);
    read_all(&mut conn)
}

fn read_all(conn: &mut TcpStream) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn scrape(addr: SocketAddr) -> String {
    exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
}

fn assert_scrape_ok(addr: SocketAddr) {
    let response = scrape(addr);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains(r#"agent_tx_bytes_total{agent_name="agent-0",hostname="testhost"} 777"#),
        "{response}"
    );
}

/// Tells the test that the misbehaving client is connected and misbehaving.
type Started = mpsc::Sender<()>;

/// Runs `misuse` on its own thread and, once it reports that it has connected and
/// begun, scrapes while it runs.
fn with_parallel_scrape(addr: SocketAddr, misuse: impl FnOnce(Started) -> String + Send) -> String {
    thread::scope(|s| {
        let (started, wait) = mpsc::channel();
        let bad = s.spawn(move || misuse(started));
        wait.recv_timeout(Duration::from_secs(10))
            .expect("the misbehaving client connected");
        assert_scrape_ok(addr);
        bad.join().unwrap()
    })
}

/// [`exchange`] that reports when it has connected and sent `bytes`.
fn exchange_started(addr: SocketAddr, bytes: &[u8], started: Started) -> String {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let _ = conn.write_all(bytes);
    let _ = started.send(());
    read_all(&mut conn)
}

/// Polls `check` until it holds, failing after `timeout`.
fn eventually(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < timeout, "{what} within {timeout:?}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// Waits until the server has started writing to `conn` (bytes are readable).
fn wait_for_response_bytes(conn: &TcpStream) {
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut byte = [0u8; 1];
    assert_eq!(conn.peek(&mut byte).unwrap(), 1, "the server answered");
}

fn status_or_closed(response: &str, status: &str) {
    assert!(
        response.is_empty() || response.starts_with(&format!("HTTP/1.1 {status}")),
        "expected {status} or a closed connection, got {response:?}"
    );
}

#[test]
fn scrape_serves_prometheus_text_by_default_and_openmetrics_when_asked() {
    let server = server(HttpLimits::default());
    let text = scrape(server.local_addr());
    assert!(
        text.contains("Content-Type: text/plain; version=0.0.4"),
        "{text}"
    );
    let om = exchange(
        server.local_addr(),
        b"GET /metrics HTTP/1.1\r\nAccept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n",
    );
    assert!(
        om.contains("Content-Type: application/openmetrics-text"),
        "{om}"
    );
    assert!(om.trim_end().ends_with("# EOF"), "{om}");
    let head = exchange(server.local_addr(), b"HEAD /metrics HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(!head.contains("agent_tx_bytes_total{"), "{head}");
}

#[test]
fn the_root_page_links_the_metrics() {
    let server = server(HttpLimits::default());
    let addr = server.local_addr();
    let r = exchange(addr, b"GET / HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    assert!(r.contains("Content-Type: text/html"), "{r}");
    assert!(r.contains("<a href=\"/metrics\">"), "{r}");
    let head = exchange(addr, b"HEAD / HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(!head.contains("<a href"), "{head}");
    let r = exchange(addr, b"DELETE / HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 405"), "{r}");
}

#[test]
fn wrong_path_gets_404_and_wrong_method_gets_405() {
    let server = server(HttpLimits::default());
    let addr = server.local_addr();
    let r = with_parallel_scrape(addr, |started| {
        exchange_started(addr, b"GET /other HTTP/1.1\r\n\r\n", started)
    });
    assert!(r.starts_with("HTTP/1.1 404"), "{r}");
    let r = exchange(addr, b"GET /metrics/x HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 404"), "{r}");
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        let r = exchange(
            addr,
            format!("{method} /metrics HTTP/1.1\r\n\r\n").as_bytes(),
        );
        assert!(r.starts_with("HTTP/1.1 405"), "{method}: {r}");
        assert!(r.contains("Allow: GET, HEAD"), "{r}");
    }
    // A query string does not change the path.
    let r = exchange(addr, b"GET /metrics?x=1 HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
}

#[test]
fn oversized_request_head_gets_431_while_a_parallel_scrape_succeeds() {
    let server = server(HttpLimits::default());
    let addr = server.local_addr();
    let r = with_parallel_scrape(addr, |started| {
        let mut request = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
        request.extend(std::iter::repeat_n(b'a', 1 << 20));
        request.extend_from_slice(b"\r\n\r\n");
        exchange_started(addr, &request, started)
    });
    status_or_closed(&r, "431");
    // A header line that never ends is refused the same way, without reading it all.
    let r = exchange(addr, &[b'x'; 64 * 1024]);
    status_or_closed(&r, "431");
}

#[test]
fn too_many_headers_get_431_while_a_parallel_scrape_succeeds() {
    let limits = HttpLimits {
        max_headers: 8,
        ..HttpLimits::default()
    };
    let server = server(limits);
    let addr = server.local_addr();
    let mut request = String::from("GET /metrics HTTP/1.1\r\n");
    for i in 0..9 {
        request.push_str(&format!("X-{i}: y\r\n"));
    }
    request.push_str("\r\n");
    let r = with_parallel_scrape(addr, |started| {
        exchange_started(addr, request.as_bytes(), started)
    });
    assert!(r.starts_with("HTTP/1.1 431"), "{r}");
}

#[test]
fn slowloris_client_gets_408_while_a_parallel_scrape_succeeds() {
    let limits = HttpLimits {
        head_timeout: Duration::from_millis(800),
        ..HttpLimits::default()
    };
    let server = server(limits);
    let addr = server.local_addr();
    let started = Instant::now();
    let r = with_parallel_scrape(addr, |started| {
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let _ = started.send(());
        // One byte every 50 ms: each read is quick, only the total deadline stops it.
        for &b in b"GET /metrics HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" {
            if conn.write_all(&[b]).is_err() {
                break;
            }
            thread::sleep(Duration::from_millis(50));
        }
        read_all(&mut conn)
    });
    status_or_closed(&r, "408");
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn garbage_bytes_get_400_or_a_closed_connection_while_a_parallel_scrape_succeeds() {
    let server = server(HttpLimits::default());
    let addr = server.local_addr();
    let garbage: Vec<u8> = (0..4000u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let mut framed = garbage.clone();
    framed.extend_from_slice(b"\r\n\r\n");
    let r = with_parallel_scrape(addr, |started| exchange_started(addr, &framed, started));
    status_or_closed(&r, "400");
    for (bad, status) in [
        (&b"\r\n\r\n"[..], "400"),
        (b"GET\r\n\r\n", "400"),
        (b"GET /metrics HTTP/9.9\r\n\r\n", "505"),
        (b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", "400"),
        (b"\xff\xfe /metrics HTTP/1.1\r\n\r\n", "400"),
    ] {
        let r = exchange(addr, bad);
        assert!(r.starts_with(&format!("HTTP/1.1 {status}")), "{bad:?}: {r}");
    }
    // The endpoint still serves after all of that.
    assert_scrape_ok(addr);
}

#[test]
fn request_with_a_body_gets_413_while_a_parallel_scrape_succeeds() {
    let server = server(HttpLimits::default());
    let addr = server.local_addr();
    let r = with_parallel_scrape(addr, |started| {
        exchange_started(
            addr,
            b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
            started,
        )
    });
    assert!(r.starts_with("HTTP/1.1 413"), "{r}");
    let r = exchange(
        addr,
        b"POST /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 413"), "{r}");
}

#[test]
fn connections_past_the_limit_get_503_and_the_endpoint_recovers() {
    let limits = HttpLimits {
        max_connections: 4,
        ..HttpLimits::default()
    };
    let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), model(2000), limits).unwrap();
    let addr = server.local_addr();
    // Four idle connections fill the cap; a scrape past it takes the slot of the one
    // that has waited longest for its head, which is answered 503.
    let mut idle: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(addr).unwrap()).collect();
    assert_scrape_ok(addr);
    idle[0]
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let evicted = read_all(&mut idle[0]);
    assert!(evicted.starts_with("HTTP/1.1 503"), "{evicted}");
    assert!(evicted.contains("Retry-After: 1"), "{evicted}");
    drop(idle);
    // Four clients that take the big page and stall hold every slot past its head:
    // then a newcomer itself gets 503 at once.
    // (A client may still get 503 while the server closes the idle ones; it retries.)
    let mut stalled = Vec::new();
    let start = Instant::now();
    while stalled.len() < 4 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "four stalled clients"
        );
        let mut c = TcpStream::connect(addr).unwrap();
        // A small receive window, so that the page cannot fit in the socket buffers and
        // the server is still writing it.
        rustix::net::sockopt::set_socket_recv_buffer_size(&c, 4096).unwrap();
        c.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        wait_for_response_bytes(&c);
        let mut status = [0u8; 12];
        let mut got = 0;
        while got < status.len() {
            got = c.peek(&mut status).unwrap();
        }
        if &status == b"HTTP/1.1 200" {
            stalled.push(c);
        }
    }
    let r = scrape(addr);
    assert!(r.starts_with("HTTP/1.1 503"), "{:.100}", r);
    // When the stalled clients go, their slots are free again.
    drop(stalled);
    eventually("the endpoint serves again", Duration::from_secs(10), || {
        scrape(addr).starts_with("HTTP/1.1 200")
    });
    assert_scrape_ok(addr);
}

#[test]
fn a_client_that_never_reads_does_not_block_other_scrapes() {
    let server = MetricsServer::start(
        "127.0.0.1:0".parse().unwrap(),
        model(2000),
        HttpLimits {
            write_timeout: Duration::from_millis(500),
            ..HttpLimits::default()
        },
    )
    .unwrap();
    let addr = server.local_addr();
    // Several clients ask for the big page and never read it.
    let stuck: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
            c
        })
        .collect();
    for c in &stuck {
        wait_for_response_bytes(c);
    }
    let response = scrape(addr);
    assert!(
        response.starts_with("HTTP/1.1 200"),
        "{}",
        &response[..100.min(response.len())]
    );
    assert!(response.contains(r#"agent_name="agent-1999""#));
    drop(stuck);
}

#[test]
fn a_client_that_stalls_mid_response_is_cut_off_at_the_response_deadline() {
    let model = model(4000);
    let page_len = model
        .render(telering_prometheus::Format::PrometheusText)
        .len();
    let response_timeout = Duration::from_millis(500);
    let server = MetricsServer::start(
        "127.0.0.1:0".parse().unwrap(),
        model,
        HttpLimits {
            response_timeout,
            ..HttpLimits::default()
        },
    )
    .unwrap();
    let addr = server.local_addr();
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    // Once the response has started, a parallel scrape still succeeds.
    wait_for_response_bytes(&slow);
    let started = Instant::now();
    let response = scrape(addr);
    assert!(
        response.starts_with("HTTP/1.1 200"),
        "{}",
        &response[..100.min(response.len())]
    );
    // Stalling is this client's behaviour: it reads nothing for well past the deadline.
    thread::sleep((response_timeout * 4).saturating_sub(started.elapsed()));
    let got = read_all(&mut slow).len();
    assert!(
        got < page_len,
        "the stalled client got the whole page ({got} of {page_len} bytes)"
    );
}
