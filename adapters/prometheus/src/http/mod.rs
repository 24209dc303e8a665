//! The HTTP endpoint: one bounded HTTP/1.1 server that answers `/metrics` itself (and
//! `/` with a small page linking it, or any other target its [`MetricsSource::page`]
//! answers, such as `telering serve`'s dashboard).
//!
//! # Threads
//!
//! One **loop thread** owns the listening socket and every connection. It waits for
//! readiness with `mio` (epoll on Linux), so an idle or slow socket costs a file
//! descriptor, about a hundred bytes of state and its head buffer — never a thread. It
//! accepts, reads and parses request heads (`httparse`), writes responses and enforces
//! every deadline.
//!
//! [`HttpLimits::workers`] **render threads** turn a scrape into a page: render the
//! metrics, compress them when the scraper accepts gzip, and hand the bytes back to the
//! loop. This runs off the loop because a 1024-agent page takes about 18 ms to render
//! and compress (`BENCHMARKS.md`; longer on a busy machine), during which a loop that
//! rendered would read, write and time out nobody else; a worker never touches a
//! socket, so a slow client cannot hold one either.
//!
//! A scrape starts a render at once when a worker is free. Scrapes of the same format
//! and encoding that arrive while every worker is busy wait together and share the next
//! render. So every page shows the model as it was at or after its scrape arrived, and
//! a flood of scrapes costs at most one render per worker at a time, not one per
//! request.
//!
//! # One connection
//!
//! ```text
//!  accept ─┬─ cap reached ─────────────────► 503 ──► closed
//!          └─► Head ─┬─ GET/HEAD /metrics ──► Rendering ── page ──────┐
//!                    ├─ GET/HEAD other ── MetricsSource::page, / ─────┤
//!                    ├─ 400 404 405 413 431 505 ──────────────────────┤
//!                    └─ head time limit: 408 ─────────────────────────┤
//!                                                                     ▼
//!     closed ◄── Lingering ◄── all sent ──────────────────────────── Writing
//!  (client closed,                                                    │
//!   1 s or 64 KiB)            closed ◄── response or write time limit ┘
//!
//!  Rendering ── render time limit ──► closed
//! ```
//!
//! - **Head** — bytes are read into the connection's buffer, at most
//!   [`HttpLimits::max_head_bytes`] + 1; the head is parsed each time a line completes.
//!   A request line that is not HTTP/1.x is refused as soon as its line ends (`505` for
//!   another version, e.g. the HTTP/2 preface `PRI * HTTP/2.0`; `400` for anything else
//!   malformed); a head past the size or [`HttpLimits::max_headers`] gets `431`; a body
//!   (`Content-Length` other than 0, or `Transfer-Encoding`) `413`; `GET` or `HEAD` of
//!   another target what [`MetricsSource::page`] answers, else for `/` the small page
//!   linking `/metrics` and `404` for the rest; another method on `/metrics`, `/` or a
//!   path the source [serves](MetricsSource::serves) `405` with `Allow: GET, HEAD`, on
//!   another path `404`. A target in absolute form (`GET http://host/metrics`, as sent
//!   to a proxy) is served as its path and query (RFC 9112 §3.2.2). The whole head must
//!   arrive within [`HttpLimits::head_timeout`] of the accept, however steadily a
//!   slowloris client trickles it, or the client gets `408`.
//! - **Rendering** — the scrape waits for its page; if no page comes within
//!   [`HttpLimits::render_timeout`] the connection is closed.
//! - **Writing** — the response is written as the socket accepts it. The connection is
//!   closed when delivering takes longer than [`HttpLimits::response_timeout`], or when
//!   no byte is taken for [`HttpLimits::write_timeout`].
//! - **Lingering** — the write side is shut and input is read and discarded for up to
//!   1 s (64 KiB), so that closing does not reset a connection whose client has unread
//!   request bytes in flight before it has read the answer. A lingering connection
//!   gives its slot to a new client when the cap is reached.
//!
//! Every response says `Connection: close`: one request per connection keeps the state
//! small, and a scraper reconnecting once per scrape costs nothing measurable. Every
//! response says `X-Content-Type-Options: nosniff`, so a browser never runs a metrics
//! page or an error text as a script or page of another type; every HTML page
//! carries a `Content-Security-Policy` that lets it load scripts, styles, images and
//! data from this server only: `default-src 'self'`, no inline or foreign script, no
//! plug-in, no framing by another site, no form posts; inline styles are allowed (the
//! dashboard's page has a `<style>` block, and its charts set element styles).
//!
//! # Limits and memory
//!
//! At most [`HttpLimits::max_connections`] connections are open. When one more
//! arrives, a connection that has sent its response and lingers gives up its slot, or
//! else a connection still waiting for its request head is answered `503` (with
//! `Retry-After`) and closed: one of the client address that holds the most waiting
//! connections, the one of them that has waited longest. A slowloris crowd from one
//! host, of any size and reconnecting as fast as it likes, so only ever evicts its own
//! connections, never a scraper from another host, even one that is slow to send its
//! head. Within one address the oldest goes first: a real scraper sends its head with
//! the handshake and is read as it is accepted (connections are accepted 32 at a time
//! between serving ready ones), so it is not the one waiting longest unless its own
//! host does not run it between its connect and its write. What a
//! connection has sent is read before it is evicted, so a scraper whose head arrived
//! just after its accept, its readiness event still queued behind a burst of accepts,
//! is served and the next candidate is evicted instead. Only when every
//! slot is past its head (being rendered or written) is the newcomer itself answered
//! `503` and closed at once. A connection
//! holds its head buffer (≤ `max_head_bytes` + 1) and a reference to a page; pages are
//! shared by the scrapes of a batch, and the pages held by connections still writing
//! are kept within [`HttpLimits::max_buffered_page_bytes`] by closing the oldest
//! connections past it. Asked for gzip, a page is about 20× smaller (`BENCHMARKS.md`).

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::format::Format;
use crate::model::SharedModel;

mod connection;
mod event_loop;
mod negotiate;
mod render;
mod request;
mod response;

pub use response::gzip_bytes;

/// Anything that can render the metrics page.
pub trait MetricsSource: Send + Sync + 'static {
    /// Renders all metrics in `format`.
    fn render(&self, format: Format) -> String;

    /// The answer to a `GET` or `HEAD` of `target` (path and query) other than
    /// `/metrics`, or `None`: then `/` gets a small page linking `/metrics` and other
    /// paths `404`. It is called on the connection loop, so it must be quick: hand out
    /// bytes prepared elsewhere, never render a page here.
    fn page(&self, target: &str) -> Option<Page> {
        let _ = target;
        None
    }

    /// Whether `path` (without a query) is a page this source answers, so that a
    /// method other than `GET` or `HEAD` on it gets `405` with `Allow: GET, HEAD`
    /// rather than `404`. The default asks [`MetricsSource::page`] for `path`; a
    /// source whose pages cost something to answer, or count their requests, can say
    /// it more cheaply. Called on the connection loop, like `page`.
    fn serves(&self, path: &str) -> bool {
        self.page(path).is_some()
    }
}

/// A page other than `/metrics` that a [`MetricsSource`] serves (a dashboard, its data).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The HTTP status line's code and reason, e.g. `200 OK`.
    pub status: &'static str,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
}

impl MetricsSource for SharedModel {
    fn render(&self, format: Format) -> String {
        SharedModel::render(self, format)
    }
}

/// Bounds the server enforces on every connection (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpLimits {
    /// Connections open at once. Past it, a connection waiting for its head gets `503`
    /// and yields its slot (the longest-waiting one of the address holding the most
    /// waiting connections), or the newcomer does if none is waiting.
    pub max_connections: usize,
    /// Largest request head (request line and headers) in bytes; larger gets `431`.
    pub max_head_bytes: usize,
    /// Most header lines; more get `431`.
    pub max_headers: usize,
    /// Time a client has, from the accept, to send its whole request head; then `408`.
    pub head_timeout: Duration,
    /// Time a response may make no progress before the connection is dropped.
    pub write_timeout: Duration,
    /// Time a response may take to deliver, so that a client reading a byte at a time
    /// cannot hold a connection.
    pub response_timeout: Duration,
    /// Longest a scrape waits for its page to be rendered (and compressed).
    pub render_timeout: Duration,
    /// Bytes of distinct pages that connections still writing may hold; past it the
    /// oldest such connections are closed.
    pub max_buffered_page_bytes: usize,
    /// Threads that render (and compress) pages.
    pub workers: usize,
}

impl Default for HttpLimits {
    /// 512 connections, 8 KiB and 64 headers per head, 5 s for the head, 10 s without
    /// progress and 60 s in all for the response, 60 s for a render, 256 MiB of buffered pages, 2 workers.
    fn default() -> Self {
        HttpLimits {
            max_connections: 512,
            max_head_bytes: 8 * 1024,
            max_headers: 64,
            head_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(60),
            render_timeout: Duration::from_secs(60),
            max_buffered_page_bytes: 256 << 20,
            workers: 2,
        }
    }
}

/// Why the endpoint could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum ServeError {
    /// The TCP address could not be bound (in use, not permitted).
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The operating system's reason.
        source: io::Error,
    },
    /// The readiness poller (epoll) could not be set up.
    Poll(io::Error),
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
            ServeError::Poll(e) => write!(
                f,
                "cannot set up the endpoint's connection poller: {e}; check the open-file limit (ulimit -n)"
            ),
            ServeError::Thread(e) => write!(f, "cannot start an HTTP thread: {e}"),
        }
    }
}

impl std::error::Error for ServeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ServeError::Bind { source, .. } => Some(source),
            ServeError::Poll(e) | ServeError::Thread(e) => Some(e),
        }
    }
}

/// A running `/metrics` endpoint. Dropping it (or [`MetricsServer::shutdown`]) closes
/// every connection and stops its threads.
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
    waker: Arc<mio::Waker>,
    event_loop: Option<JoinHandle<()>>,
    workers: Vec<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (port 0 picks a free port) and serves `source` on `/metrics`.
    pub fn start(
        addr: SocketAddr,
        source: impl MetricsSource,
        limits: HttpLimits,
    ) -> Result<MetricsServer, ServeError> {
        let bind_error = |source| ServeError::Bind { addr, source };
        let listener = listen(addr).map_err(bind_error)?;
        let local_addr = listener.local_addr().map_err(bind_error)?;
        let mut listener = mio::net::TcpListener::from_std(listener);
        let poll = mio::Poll::new().map_err(ServeError::Poll)?;
        poll.registry()
            .register(&mut listener, event_loop::LISTENER, mio::Interest::READABLE)
            .map_err(ServeError::Poll)?;
        let waker = Arc::new(
            mio::Waker::new(poll.registry(), event_loop::WAKER).map_err(ServeError::Poll)?,
        );
        let stop = Arc::new(AtomicBool::new(false));
        let (job_tx, job_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel();
        let jobs: render::Jobs = Arc::new(Mutex::new(job_rx));
        let source: Arc<dyn MetricsSource> = Arc::new(source);
        let mut server = MetricsServer {
            local_addr,
            stop: stop.clone(),
            waker: waker.clone(),
            event_loop: None,
            workers: Vec::new(),
        };
        for i in 0..limits.workers.max(1) {
            let (source, jobs, done, waker) =
                (source.clone(), jobs.clone(), done_tx.clone(), waker.clone());
            let handle = std::thread::Builder::new()
                .name(format!("telering-prom-render-{i}"))
                .spawn(move || render::worker(&*source, &jobs, &done, &waker))
                .map_err(ServeError::Thread)?;
            server.workers.push(handle);
        }
        let event_loop =
            event_loop::EventLoop::new(poll, listener, limits, stop, job_tx, done_rx, source);
        let handle = std::thread::Builder::new()
            .name("telering-prom-http".into())
            .spawn(move || event_loop.run())
            .map_err(ServeError::Thread)?;
        server.event_loop = Some(handle);
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
        if let Some(handle) = self.event_loop.take() {
            if let Err(e) = self.waker.wake() {
                log::warn!("metrics endpoint: cannot wake the connection loop to stop: {e}");
            }
            // The loop owns the job sender: when it ends, the workers' channel closes.
            let _ = handle.join();
        }
        for handle in self.workers.drain(..) {
            let _ = handle.join();
        }
    }
}

/// Queued connections the kernel keeps before the loop accepts them (capped by
/// `net.core.somaxconn`). The standard library's 128 overflows under a reconnecting
/// flood such as `wrk -c256` with `Connection: close`; a dropped SYN costs a real
/// scraper a one-second retransmission.
const LISTEN_BACKLOG: i32 = 1024;

/// A non-blocking listening socket on `addr` with [`LISTEN_BACKLOG`].
fn listen(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    use rustix::net::{AddressFamily, SocketFlags, SocketType};
    let family = if addr.is_ipv4() {
        AddressFamily::INET
    } else {
        AddressFamily::INET6
    };
    let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
    let socket = rustix::net::socket_with(family, SocketType::STREAM, flags, None)?;
    // As the standard library does: a restarted endpoint rebinds despite TIME_WAIT.
    rustix::net::sockopt::set_socket_reuseaddr(&socket, true)?;
    rustix::net::bind(&socket, &addr)?;
    rustix::net::listen(&socket, LISTEN_BACKLOG)?;
    Ok(std::net::TcpListener::from(socket))
}

impl fmt::Debug for MetricsServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetricsServer")
            .field("local_addr", &self.local_addr)
            .finish_non_exhaustive()
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop_threads();
    }
}
