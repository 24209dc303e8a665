//! The HTTP endpoint: a bounding guard in front of a `tiny_http` server.
//!
//! `tiny_http` 0.12 parses requests and writes responses well, but bounds nothing: it
//! reads a header line until CRLF however long it is, accepts any number of headers,
//! sets no socket timeouts and starts a thread for every connection. A scrape endpoint
//! on 0.0.0.0 needs all of those bounds, so [`MetricsServer`] puts a small guard in
//! front:
//!
//! 1. the guard owns the TCP listener and serves at most
//!    [`HttpLimits::max_connections`] connections at once, each on its own thread; a
//!    connection past the limit gets `503` and is closed at once;
//! 2. it reads the request head (request line and headers, up to the blank line) within
//!    [`HttpLimits::head_timeout`] in total — a slowloris client that trickles bytes
//!    gets `408` when the time is up, however steadily it sends — and refuses a head
//!    larger than [`HttpLimits::max_head_bytes`] or with more than
//!    [`HttpLimits::max_headers`] header lines with `431`, and any request with a body
//!    with `413` (the endpoint has no use for one), and a head with bytes that are not
//!    visible ASCII with `400`;
//! 3. it forwards the bounded head, with `Connection: close`, to `tiny_http` listening
//!    on a Unix socket in a private (mode 0700) directory, reads the whole response,
//!    and writes it to the client with [`HttpLimits::write_timeout`] per write and
//!    [`HttpLimits::response_timeout`] in all.
//!
//! Because the guard buffers the response, the `tiny_http` workers that render metrics
//! never wait for a slow client, and one request per connection keeps the accounting
//! simple (Prometheus reconnects each scrape at no measurable cost at scrape
//! intervals). `tiny_http` answers garbage with `400`, other paths with `404` and other
//! methods on `/metrics` with `405`.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::model::{Format, SharedModel};

/// Anything that can render the metrics page.
pub trait MetricsSource: Send + Sync + 'static {
    /// Renders all metrics in `format`.
    fn render(&self, format: Format) -> String;
}

impl MetricsSource for SharedModel {
    fn render(&self, format: Format) -> String {
        SharedModel::render(self, format)
    }
}

/// Bounds the guard enforces on every connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Connections served at once; more get `503`.
    pub max_connections: usize,
    /// Largest request head (request line and headers) in bytes; larger gets `431`.
    pub max_head_bytes: usize,
    /// Most header lines; more get `431`.
    pub max_headers: usize,
    /// Time a client has to send its whole request head; then `408`.
    pub head_timeout: Duration,
    /// Time one write to a client may block before the connection is dropped.
    pub write_timeout: Duration,
    /// Time the whole response may take to deliver, so that a client reading a byte
    /// at a time cannot hold a connection slot for long.
    pub response_timeout: Duration,
    /// Threads that render responses.
    pub workers: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        HttpLimits {
            max_connections: 32,
            max_head_bytes: 8 * 1024,
            max_headers: 64,
            head_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(60),
            workers: 2,
        }
    }
}

/// Why the endpoint could not start.
#[derive(Debug)]
pub enum ServeError {
    /// The TCP address could not be bound (in use, not permitted).
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        source: io::Error,
    },
    /// The private Unix socket for the HTTP server could not be set up.
    InternalSocket {
        /// The path tried.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// A thread could not be started.
    Thread(io::Error),
}

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServeError::Bind { addr, source } => write!(
                f,
                "cannot listen on {addr}: {source}; choose another port with NIXL_TELEMETRY_PROMETHEUS_PORT (or --port)"
            ),
            ServeError::InternalSocket { path, source } => write!(
                f,
                "cannot create the endpoint's private socket {}: {source}; check that TMPDIR is writable and short",
                path.display()
            ),
            ServeError::Thread(e) => write!(f, "cannot start an HTTP thread: {e}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Bind { source, .. } | ServeError::InternalSocket { source, .. } => {
                Some(source)
            }
            ServeError::Thread(e) => Some(e),
        }
    }
}

/// A running `/metrics` endpoint. Dropping it (or [`MetricsServer::shutdown`]) stops
/// accepting, stops the workers and removes the private socket.
///
/// ```
/// use std::io::{Read, Write};
/// use telering_prometheus::{Buckets, HttpLimits, MetricModel, MetricsServer};
/// let model = MetricModel::new("host", Buckets::default()).into_shared();
/// let server = MetricsServer::start("127.0.0.1:0".parse().unwrap(), model, HttpLimits::default()).unwrap();
/// let mut conn = std::net::TcpStream::connect(server.local_addr()).unwrap();
/// conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
/// let mut response = String::new();
/// conn.read_to_string(&mut response).unwrap();
/// assert!(response.starts_with("HTTP/1.1 200"));
/// assert!(response.contains("# TYPE agent_tx_bytes_total counter"));
/// ```
pub struct MetricsServer {
    local_addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept_thread: Option<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
    inner: Option<Arc<tiny_http::Server>>,
    socket_dir: PathBuf,
}

static SOCKET_DIRS: AtomicUsize = AtomicUsize::new(0);

impl MetricsServer {
    /// Binds `addr` (port 0 picks a free port) and serves `source` on `/metrics`.
    pub fn start(
        addr: SocketAddr,
        source: impl MetricsSource,
        limits: HttpLimits,
    ) -> Result<MetricsServer, ServeError> {
        let listener =
            TcpListener::bind(addr).map_err(|source| ServeError::Bind { addr, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| ServeError::Bind { addr, source })?;
        let socket_dir = private_dir()?;
        let socket_path = socket_dir.join("http.sock");
        let unix = UnixListener::bind(&socket_path).map_err(|source| {
            let _ = std::fs::remove_dir(&socket_dir);
            ServeError::InternalSocket {
                path: socket_path.clone(),
                source,
            }
        })?;
        let inner = match tiny_http::Server::from_listener(unix, None) {
            Ok(server) => Arc::new(server),
            Err(e) => {
                remove_private_dir(&socket_dir);
                return Err(ServeError::InternalSocket {
                    path: socket_path,
                    source: io::Error::other(e.to_string()),
                });
            }
        };
        let mut server = MetricsServer {
            local_addr,
            stop: Arc::new(AtomicBool::new(false)),
            accept_thread: None,
            workers: Vec::new(),
            inner: Some(inner.clone()),
            socket_dir,
        };
        let source: Arc<dyn MetricsSource> = Arc::new(source);
        for i in 0..limits.workers.max(1) {
            let inner = inner.clone();
            let source = source.clone();
            let stop = server.stop.clone();
            let handle = std::thread::Builder::new()
                .name(format!("telering-prom-worker-{i}"))
                .spawn(move || worker(&inner, &*source, &stop))
                .map_err(ServeError::Thread)?;
            server.workers.push(handle);
        }
        let stop = server.stop.clone();
        let guard = Arc::new(Guard {
            limits,
            socket_path,
            active: AtomicUsize::new(0),
        });
        let handle = std::thread::Builder::new()
            .name("telering-prom-accept".into())
            .spawn(move || accept_loop(listener, guard, &stop))
            .map_err(ServeError::Thread)?;
        server.accept_thread = Some(handle);
        log::info!("serving metrics on http://{local_addr}/metrics");
        Ok(server)
    }

    /// The address actually bound (with the port chosen when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stops the endpoint and waits for its threads.
    pub fn shutdown(mut self) {
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(handle) = self.accept_thread.take() {
            // Wake the blocking accept with one connection of our own.
            let wake = match self.local_addr {
                SocketAddr::V4(a) if a.ip().is_unspecified() => {
                    SocketAddr::new(Ipv4Addr::LOCALHOST.into(), a.port())
                }
                SocketAddr::V6(a) if a.ip().is_unspecified() => {
                    SocketAddr::new(Ipv6Addr::LOCALHOST.into(), a.port())
                }
                other => other,
            };
            let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
            let _ = handle.join();
        }
        if let Some(inner) = self.inner.take() {
            inner.unblock();
            for handle in self.workers.drain(..) {
                let _ = handle.join();
            }
            drop(inner);
        }
        remove_private_dir(&self.socket_dir);
    }
}

impl fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsServer")
            .field("local_addr", &self.local_addr)
            .field("socket_dir", &self.socket_dir)
            .finish_non_exhaustive()
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

fn private_dir() -> Result<PathBuf, ServeError> {
    let base = std::env::temp_dir();
    let mut last_error = None;
    for _ in 0..64 {
        let n = SOCKET_DIRS.fetch_add(1, Ordering::Relaxed);
        let dir = base.join(format!("telering-prom-{}-{n}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = Some((dir, e)),
            Err(source) => return Err(ServeError::InternalSocket { path: dir, source }),
        }
    }
    let (path, source) = last_error.unwrap_or_else(|| (base, io::Error::other("no free name")));
    Err(ServeError::InternalSocket { path, source })
}

fn remove_private_dir(dir: &Path) {
    let _ = std::fs::remove_file(dir.join("http.sock"));
    let _ = std::fs::remove_dir(dir);
}

fn worker(inner: &tiny_http::Server, source: &dyn MetricsSource, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        match inner.recv_timeout(Duration::from_millis(200)) {
            Ok(Some(request)) => respond(request, source),
            Ok(None) => {}
            Err(e) => {
                log::warn!("metrics endpoint stopped receiving: {e}");
                return;
            }
        }
    }
}

/// Adds a header; every caller passes constant ASCII, which `tiny_http` always accepts.
fn with_header<R: Read>(
    response: tiny_http::Response<R>,
    name: &str,
    value: &str,
) -> tiny_http::Response<R> {
    match tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
        Ok(h) => response.with_header(h),
        Err(()) => response,
    }
}

fn respond(request: tiny_http::Request, source: &dyn MetricsSource) {
    use tiny_http::{Method, Response};
    let path = request.url().split('?').next().unwrap_or("");
    let result = if path != "/metrics" {
        request.respond(with_header(
            Response::from_string("not found; metrics are served at /metrics\n")
                .with_status_code(404),
            "Content-Type",
            "text/plain; charset=utf-8",
        ))
    } else if !matches!(request.method(), Method::Get | Method::Head) {
        let response = Response::from_string("method not allowed; use GET\n").with_status_code(405);
        let response = with_header(response, "Allow", "GET, HEAD");
        request.respond(with_header(
            response,
            "Content-Type",
            "text/plain; charset=utf-8",
        ))
    } else {
        let accept = request
            .headers()
            .iter()
            .find(|h| h.field.equiv("Accept"))
            .map(|h| h.value.as_str().to_owned());
        let format = Format::from_accept(accept.as_deref());
        let body = source.render(format);
        request.respond(with_header(
            Response::from_string(body),
            "Content-Type",
            format.content_type(),
        ))
    };
    if let Err(e) = result {
        log::debug!("metrics response not delivered: {e}");
    }
}

#[derive(Debug)]
struct Guard {
    limits: HttpLimits,
    socket_path: PathBuf,
    active: AtomicUsize,
}

/// Releases a connection slot when the connection's thread ends, however it ends.
struct Slot(Arc<Guard>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

fn accept_loop(listener: TcpListener, guard: Arc<Guard>, stop: &AtomicBool) {
    let mut spawn_failures = 0u64;
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                log::warn!("metrics endpoint cannot accept: {e}");
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        if guard.active.fetch_add(1, Ordering::SeqCst) >= guard.limits.max_connections {
            guard.active.fetch_sub(1, Ordering::SeqCst);
            reject(stream, 503, "Service Unavailable");
            continue;
        }
        let slot = Slot(guard.clone());
        let spawned = std::thread::Builder::new()
            .name("telering-prom-conn".into())
            .stack_size(128 * 1024)
            .spawn(move || {
                let slot = slot;
                serve_connection(stream, &slot.0);
            });
        if let Err(e) = spawned {
            spawn_failures += 1;
            log::warn!(
                "metrics endpoint cannot start a connection thread ({spawn_failures} so far): {e}"
            );
        }
    }
}

fn reject(mut stream: TcpStream, status: u16, reason: &str) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(500)));
    let response =
        format!("HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n");
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.shutdown(Shutdown::Write);
}

/// Why a request head was refused.
#[derive(Debug, PartialEq, Eq)]
enum HeadError {
    Closed,
    TimedOut,
    TooLarge,
    TooManyHeaders,
    HasBody,
    Malformed,
}

fn serve_connection(mut client: TcpStream, guard: &Guard) {
    let limits = &guard.limits;
    let _ = client.set_nodelay(true);
    let _ = client.set_write_timeout(Some(limits.write_timeout));
    let head = match read_head(&mut client, limits) {
        Ok(head) => head,
        Err(HeadError::Closed) => return,
        Err(HeadError::TimedOut) => return reject(client, 408, "Request Timeout"),
        Err(HeadError::TooLarge | HeadError::TooManyHeaders) => {
            return reject(client, 431, "Request Header Fields Too Large");
        }
        Err(HeadError::HasBody) => return reject(client, 413, "Content Too Large"),
        Err(HeadError::Malformed) => return reject(client, 400, "Bad Request"),
    };
    let mut upstream = match UnixStream::connect(&guard.socket_path) {
        Ok(upstream) => upstream,
        Err(e) => {
            log::warn!("metrics endpoint: internal server unreachable: {e}");
            return reject(client, 503, "Service Unavailable");
        }
    };
    let response = match forward(&mut upstream, &head) {
        Ok(response) if !response.is_empty() => response,
        // tiny_http hangs up without an answer on some malformed heads.
        _ => return reject(client, 400, "Bad Request"),
    };
    if let Err(e) = write_within(&mut client, &response, limits) {
        log::debug!("metrics client went away or was too slow: {e}");
        return;
    }
    let _ = client.shutdown(Shutdown::Write);
}

/// Writes `bytes` with at most `write_timeout` per write and `response_timeout` in all.
fn write_within(client: &mut TcpStream, bytes: &[u8], limits: &HttpLimits) -> io::Result<()> {
    let deadline = Instant::now() + limits.response_timeout;
    for chunk in bytes.chunks(64 * 1024) {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "response took too long to deliver",
            ));
        }
        client.set_write_timeout(Some(left.min(limits.write_timeout)))?;
        client.write_all(chunk)?;
    }
    Ok(())
}

fn forward(upstream: &mut UnixStream, head: &[u8]) -> io::Result<Vec<u8>> {
    upstream.set_write_timeout(Some(Duration::from_secs(5)))?;
    upstream.set_read_timeout(Some(Duration::from_secs(60)))?;
    upstream.write_all(head)?;
    let mut response = Vec::new();
    upstream.read_to_end(&mut response)?;
    Ok(response)
}

/// Reads one request head within the limits and returns it rewritten for forwarding:
/// hop-by-hop headers dropped, `Connection: close` added.
fn read_head(client: &mut TcpStream, limits: &HttpLimits) -> Result<Vec<u8>, HeadError> {
    let deadline = Instant::now() + limits.head_timeout;
    let mut buf: Vec<u8> = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    let end = loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(HeadError::TimedOut);
        }
        client
            .set_read_timeout(Some(deadline - now))
            .map_err(|_| HeadError::Closed)?;
        let n = match client.read(&mut chunk) {
            Ok(0) => return Err(HeadError::Closed),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(HeadError::TimedOut);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(HeadError::Closed),
        };
        let scan_from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = find(&buf[scan_from..], b"\r\n\r\n") {
            break scan_from + at;
        }
        if buf.len() > limits.max_head_bytes {
            return Err(HeadError::TooLarge);
        }
    };
    if end + 4 > limits.max_head_bytes {
        return Err(HeadError::TooLarge);
    }
    // HTTP/1.1 heads are visible ASCII, spaces and tabs; anything else is garbage.
    if buf[..end]
        .iter()
        .any(|&b| !(b.is_ascii_graphic() || matches!(b, b' ' | b'\t' | b'\r' | b'\n')))
    {
        return Err(HeadError::Malformed);
    }
    let mut lines = buf[..end]
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
    let request_line = lines.next().unwrap_or(b"");
    let mut out = Vec::with_capacity(end + 24);
    out.extend_from_slice(request_line);
    out.extend_from_slice(b"\r\n");
    let mut headers = 0usize;
    for line in lines {
        headers += 1;
        if headers > limits.max_headers {
            return Err(HeadError::TooManyHeaders);
        }
        let name = line.split(|&b| b == b':').next().unwrap_or(b"");
        let name = name.trim_ascii();
        let value = line.get(name.len() + 1..).unwrap_or(b"").trim_ascii();
        if name.eq_ignore_ascii_case(b"transfer-encoding")
            || (name.eq_ignore_ascii_case(b"content-length") && value != b"0")
        {
            return Err(HeadError::HasBody);
        }
        let hop_by_hop = [
            &b"connection"[..],
            b"keep-alive",
            b"expect",
            b"proxy-connection",
        ];
        if hop_by_hop.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            continue;
        }
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(out)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
