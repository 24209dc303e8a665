//! How scrapes reach the renderer: scrapes that arrive while every render worker is busy
//! share one render made after they arrived, and a failing render is answered `500`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use telering_prometheus::{Format, HttpLimits, MetricsServer, MetricsSource};

/// A page source that counts its renders and holds each one until the test opens the
/// gate; the page is the render's number.
#[derive(Default)]
struct GatedSource {
    renders: AtomicUsize,
    gate: Mutex<usize>,
    opened: Condvar,
}

impl GatedSource {
    fn open_until(&self, renders: usize) {
        *self.gate.lock().unwrap() = renders;
        self.opened.notify_all();
    }
}

/// The source as the server holds it.
struct Gated(Arc<GatedSource>);

impl MetricsSource for Gated {
    fn render(&self, _format: Format) -> String {
        let source = &self.0;
        let n = source.renders.fetch_add(1, Ordering::SeqCst) + 1;
        let mut gate = source.gate.lock().unwrap();
        while *gate < n {
            gate = source.opened.wait(gate).unwrap();
        }
        format!("render {n}\n")
    }
}

fn send_scrape(addr: SocketAddr) -> TcpStream {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    conn.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    conn
}

fn body(mut conn: TcpStream) -> String {
    let mut response = String::new();
    conn.read_to_string(&mut response).unwrap();
    response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or(response)
}

fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(start.elapsed() < Duration::from_secs(10), "{what}");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn scrapes_waiting_for_a_busy_worker_share_one_fresh_render() {
    let source = Arc::new(GatedSource::default());
    let limits = HttpLimits {
        workers: 1,
        ..HttpLimits::default()
    };
    let server = MetricsServer::start(
        "127.0.0.1:0".parse().unwrap(),
        Gated(source.clone()),
        limits,
    )
    .unwrap();
    let addr = server.local_addr();
    let first = send_scrape(addr);
    eventually("the first render started", || {
        source.renders.load(Ordering::SeqCst) == 1
    });
    // These arrive while render 1 runs: they must not get its (older) page.
    let later: Vec<TcpStream> = (0..5).map(|_| send_scrape(addr)).collect();
    // A request sent after them and answered by the loop (a 404 needs no worker) shows
    // that the loop has read their heads: their bytes were queued before it connected.
    let mut probe = TcpStream::connect(addr).unwrap();
    probe.write_all(b"GET /other HTTP/1.1\r\n\r\n").unwrap();
    let mut answer = String::new();
    probe.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    source.open_until(usize::MAX);
    assert_eq!(body(first), "render 1\n");
    for conn in later {
        assert_eq!(
            body(conn),
            "render 2\n",
            "one render, made after they arrived"
        );
    }
    assert_eq!(source.renders.load(Ordering::SeqCst), 2);
}

struct PanickingSource;

impl MetricsSource for PanickingSource {
    fn render(&self, _format: Format) -> String {
        panic!("the model is broken")
    }
}

#[test]
fn a_render_that_panics_is_answered_500_and_the_endpoint_keeps_serving() {
    let server = MetricsServer::start(
        "127.0.0.1:0".parse().unwrap(),
        PanickingSource,
        HttpLimits::default(),
    )
    .unwrap();
    for _ in 0..3 {
        let mut response = String::new();
        send_scrape(server.local_addr())
            .read_to_string(&mut response)
            .unwrap();
        assert!(response.starts_with("HTTP/1.1 500"), "{response}");
    }
}
