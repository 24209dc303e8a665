//! The readiness loop: one thread that accepts, reads heads, hands scrapes to the render
//! workers in batches, writes responses and enforces every deadline.

use std::io;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

use super::connection::{Connection, Step};
use super::render::{Done, Job, VARIANTS, Variant};
use super::request::{Refusal, Scrape};
use super::response::Response;
use super::{HttpLimits, MetricsSource};

pub(crate) const LISTENER: Token = Token(0);
pub(crate) const WAKER: Token = Token(1);
const FIRST_CONNECTION: usize = 2;

/// Connections accepted per loop turn before the ready ones are served, so that a
/// flood of connections cannot keep the loop from reading the heads already there.
const ACCEPT_BATCH: usize = 32;

/// How long accepting pauses when the process is out of file descriptors.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A connection waiting for a page, named by slot and id (a slot may be reused).
#[derive(Clone, Copy, Debug)]
struct Waiter {
    slot: usize,
    id: u64,
}

/// The source, for its pages.
struct Pages(Arc<dyn MetricsSource>);

impl std::fmt::Debug for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pages")
    }
}

/// The loop's state; [`EventLoop::run`] drives it until the stop flag is set.
#[derive(Debug)]
pub(crate) struct EventLoop {
    pub(crate) poll: Poll,
    pub(crate) listener: TcpListener,
    pub(crate) limits: HttpLimits,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) jobs: Sender<Job>,
    pub(crate) done: Receiver<Done>,
    /// Answers targets other than `/metrics` ([`MetricsSource::page`]).
    source: Pages,
    connections: Vec<Option<Connection>>,
    free: Vec<usize>,
    open: usize,
    next_id: u64,
    /// Scrapes waiting for a free worker, by variant.
    pending: [Vec<Waiter>; VARIANTS],
    /// Renders running (at most one per worker): batch number and the scrapes it answers.
    rendering: Vec<(u64, Vec<Waiter>)>,
    next_batch: u64,
    /// No connection's deadline is earlier than this.
    earliest: Option<Instant>,
    accept_paused_until: Option<Instant>,
    /// The last accept stopped at [`ACCEPT_BATCH`]; more connections may be queued.
    accept_more: bool,
    scratch: Vec<u8>,
}

impl EventLoop {
    pub(crate) fn new(
        poll: Poll,
        listener: TcpListener,
        limits: HttpLimits,
        stop: Arc<AtomicBool>,
        jobs: Sender<Job>,
        done: Receiver<Done>,
        source: Arc<dyn MetricsSource>,
    ) -> EventLoop {
        EventLoop {
            source: Pages(source),
            poll,
            listener,
            limits,
            stop,
            jobs,
            done,
            connections: Vec::new(),
            free: Vec::new(),
            open: 0,
            next_id: 0,
            pending: Default::default(),
            rendering: Vec::new(),
            next_batch: 0,
            earliest: None,
            accept_paused_until: None,
            accept_more: false,
            scratch: vec![0; 16 * 1024],
        }
    }

    /// Serves until the stop flag is set (and the loop woken).
    pub(crate) fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        while !self.stop.load(Ordering::SeqCst) {
            let now = Instant::now();
            let wake_at = match (self.earliest, self.accept_paused_until) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let timeout = if self.accept_more {
                Some(Duration::ZERO)
            } else {
                wake_at.map(|at| at.saturating_duration_since(now))
            };
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                log::error!("metrics endpoint stopped: cannot wait for connections: {e}");
                return;
            }
            for event in events.iter() {
                match event.token() {
                    LISTENER => self.accept_all(),
                    WAKER => {}
                    Token(t) => self.advance(t - FIRST_CONNECTION),
                }
            }
            self.collect_pages();
            if self.accept_more {
                self.accept_all();
            }
            let now = Instant::now();
            if self.accept_paused_until.is_some_and(|at| at <= now) {
                self.accept_paused_until = None;
                // Edge-triggered: connections queued meanwhile raise no new event.
                self.accept_all();
            }
            if self.earliest.is_some_and(|at| at <= now) {
                self.expire(now);
            }
        }
    }

    /// Accepts up to [`ACCEPT_BATCH`] connections; if more may be queued, the loop
    /// comes back after serving the ready connections (readiness is edge-triggered, so
    /// no new event would say so).
    fn accept_all(&mut self) {
        self.accept_more = false;
        if self.accept_paused_until.is_some() {
            return;
        }
        for _ in 0..ACCEPT_BATCH {
            match self.listener.accept() {
                Ok((stream, peer)) => self.admit(stream, peer.ip()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) => {}
                Err(e) => {
                    // EMFILE and friends: the pending connection stays queued; retry
                    // shortly instead of spinning on a listener that stays readable.
                    log::warn!("metrics endpoint cannot accept: {e}");
                    self.accept_paused_until = Some(Instant::now() + ACCEPT_BACKOFF);
                    return;
                }
            }
        }
        self.accept_more = true;
    }

    fn admit(&mut self, mut stream: TcpStream, peer: IpAddr) {
        if self.open >= self.limits.max_connections && !self.make_room() {
            return self.refuse_busy(stream);
        }
        let _ = stream.set_nodelay(true);
        let slot = self.free.pop().unwrap_or_else(|| {
            self.connections.push(None);
            self.connections.len() - 1
        });
        let token = Token(slot + FIRST_CONNECTION);
        if let Err(e) = self.poll.registry().register(
            &mut stream,
            token,
            Interest::READABLE | Interest::WRITABLE,
        ) {
            log::warn!("metrics endpoint cannot watch a connection: {e}");
            self.free.push(slot);
            return;
        }
        self.next_id += 1;
        let connection = Connection::new(stream, self.next_id, peer, Instant::now(), &self.limits);
        self.note_deadline(connection.deadline);
        self.connections[slot] = Some(connection);
        self.open += 1;
        // A scraper's head usually arrives with the handshake: read it now, so that a
        // flood of accepts cannot make it the longest-waiting head (see `make_room`).
        self.advance(slot);
    }

    /// Answers `503` without taking a slot: what the client already sent is read first
    /// (so that closing does not reset the connection before it reads the answer), the
    /// answer fits in the socket buffer, and the socket is closed at once.
    fn refuse_busy(&mut self, mut stream: TcpStream) {
        use std::io::{Read, Write};
        let _ = stream.read(&mut self.scratch);
        let _ = stream.write(Response::refusal(Refusal::Busy).bytes(false));
        let _ = stream.shutdown(std::net::Shutdown::Write);
    }

    fn advance(&mut self, slot: usize) {
        let Some(Some(connection)) = self.connections.get_mut(slot) else {
            return;
        };
        let step = connection.advance(&mut self.scratch, &self.limits);
        self.after(slot, step);
    }

    fn after(&mut self, slot: usize, step: Step) {
        match step {
            Step::Wait => {
                if let Some(Some(c)) = self.connections.get(slot) {
                    let deadline = c.deadline;
                    self.note_deadline(deadline);
                }
            }
            Step::Render(scrape) => self.queue_render(slot, scrape),
            Step::Page { target, head_only } => {
                let response = Response::for_page(self.source.0.page(&target), &target);
                if let Some(Some(connection)) = self.connections.get_mut(slot) {
                    let step = connection.answer(response, head_only, &self.limits);
                    self.after(slot, step);
                }
            }
            Step::OtherMethod { path } => {
                let refusal = if self.source.0.serves(&path) {
                    Refusal::MethodNotAllowed
                } else {
                    Refusal::NotFound
                };
                if let Some(Some(connection)) = self.connections.get_mut(slot) {
                    let step = connection.answer(Response::refusal(refusal), false, &self.limits);
                    self.after(slot, step);
                }
            }
            Step::Close => self.close(slot),
        }
    }

    /// At the cap, makes room for a new client: closes a connection whose response is
    /// already sent, or else answers `503` to a connection still waiting for its request
    /// head: one of the client address that holds the most such connections, the one of
    /// them that has waited longest. A real scraper sends its head with the handshake
    /// and is read as it is accepted, so what waits is a slow or idle client; however
    /// many such clients one host opens and reopens, each newcomer evicts one of that
    /// host's, never a scraper from another host — even a scraper that is itself slow
    /// to send its head (a loaded machine may not run it for a while between connect
    /// and write). False if every connection is past its head (being served): then the
    /// newcomer gets `503`.
    ///
    /// Before a connection is evicted, what it has sent is read: a scraper accepted
    /// just before its head arrived, whose readiness event waits behind a burst of
    /// accepts, is then served instead of evicted, and the next candidate is tried. Each
    /// connection is tried at most once per call (at most `max_connections` reads).
    fn make_room(&mut self) -> bool {
        let lingering = self
            .connections
            .iter()
            .position(|c| c.as_ref().is_some_and(Connection::is_lingering));
        if let Some(slot) = lingering {
            self.close(slot);
            return true;
        }
        for (slot, id) in self.eviction_order() {
            self.advance(slot);
            if self.open < self.limits.max_connections {
                return true; // reading it ended it: its slot is free
            }
            let still_reading_head = self.connections[slot]
                .as_ref()
                .is_some_and(|c| c.id == id && c.is_reading_head());
            if !still_reading_head {
                continue; // its head arrived: it is being served
            }
            if let Some(mut connection) = self.connections[slot].take() {
                let _ = self.poll.registry().deregister(&mut connection.stream);
                self.free.push(slot);
                self.open -= 1;
                self.refuse_busy(connection.stream);
            }
            return true;
        }
        false
    }

    /// The connections still reading their head, as (slot, id), in the order
    /// [`make_room`](Self::make_room) tries them: those of the address holding the most
    /// head-reading connections first, oldest first within an address.
    fn eviction_order(&self) -> Vec<(usize, u64)> {
        let mut waiting: Vec<(IpAddr, u64, usize)> = self
            .connections
            .iter()
            .enumerate()
            .filter_map(|(slot, c)| Some((slot, c.as_ref()?)))
            .filter(|(_, c)| c.is_reading_head())
            .map(|(slot, c)| (c.peer, c.id, slot))
            .collect();
        waiting.sort_unstable();
        // Each address's run, with its length, then runs longest first (stable: ties
        // keep address order), oldest first within a run (already sorted by id).
        let mut runs: Vec<&[(IpAddr, u64, usize)]> = waiting.chunk_by(|a, b| a.0 == b.0).collect();
        runs.sort_by_key(|run| std::cmp::Reverse(run.len()));
        runs.iter()
            .flat_map(|run| run.iter().map(|&(_, id, slot)| (slot, id)))
            .collect()
    }

    fn note_deadline(&mut self, deadline: Instant) {
        self.earliest = Some(self.earliest.map_or(deadline, |e| e.min(deadline)));
    }

    fn close(&mut self, slot: usize) {
        if let Some(mut connection) = self.connections.get_mut(slot).and_then(Option::take) {
            let _ = self.poll.registry().deregister(&mut connection.stream);
            self.free.push(slot);
            self.open -= 1;
        }
    }

    /// Adds the scrape to its variant's pending batch and starts renders while workers
    /// are free.
    ///
    /// A scrape joins only a batch whose render has not started, so every page reflects
    /// the model as it was at or after the scrape arrived; scrapes that arrive while
    /// every worker is busy share one render.
    fn queue_render(&mut self, slot: usize, scrape: Scrape) {
        let Some(Some(connection)) = self.connections.get(slot) else {
            return;
        };
        let waiter = Waiter {
            slot,
            id: connection.id,
        };
        self.note_deadline(connection.deadline);
        let variant = Variant {
            format: scrape.format,
            gzip: scrape.gzip,
        };
        self.pending[variant.index()].push(waiter);
        self.start_renders();
    }

    fn start_renders(&mut self) {
        while self.rendering.len() < self.limits.workers.max(1) {
            // The variant whose first waiter came first, so that no variant starves.
            let next = all_variants()
                .filter(|v| !self.pending[v.index()].is_empty())
                .min_by_key(|v| self.pending[v.index()][0].id);
            let Some(variant) = next else { return };
            let waiters = std::mem::take(&mut self.pending[variant.index()]);
            self.next_batch += 1;
            let batch = self.next_batch;
            if self.jobs.send(Job { batch, variant }).is_err() {
                log::error!("metrics endpoint: no render worker is running; answering 500");
                self.answer(&waiters, &Response::render_failed());
                continue;
            }
            self.rendering.push((batch, waiters));
        }
    }

    fn collect_pages(&mut self) {
        loop {
            let done = match self.done.try_recv() {
                Ok(done) => done,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => return,
            };
            let Some(at) = self.rendering.iter().position(|(b, _)| *b == done.batch) else {
                continue;
            };
            let (_, waiters) = self.rendering.swap_remove(at);
            self.answer(&waiters, &done.response);
            drop(done);
            self.release_pages_over_budget();
            self.start_renders();
        }
    }

    fn answer(&mut self, batch: &[Waiter], response: &Response) {
        for waiter in batch {
            let Some(Some(connection)) = self.connections.get_mut(waiter.slot) else {
                continue;
            };
            if connection.id != waiter.id {
                continue;
            }
            let step = connection.deliver(response.clone(), &self.limits);
            self.after(waiter.slot, step);
        }
    }

    /// Keeps the pages held by connections still writing within
    /// [`HttpLimits::max_buffered_page_bytes`]: past it, the connections holding the
    /// oldest pages (the slowest readers) are closed.
    fn release_pages_over_budget(&mut self) {
        let mut pages: Vec<(u64, usize, usize)> = Vec::new(); // (id, slot, page bytes)
        let mut total = 0usize;
        let mut seen: Vec<Response> = Vec::new();
        for (slot, connection) in self.connections.iter().enumerate() {
            let Some(connection) = connection else {
                continue;
            };
            let Some(page) = connection.page() else {
                continue;
            };
            pages.push((connection.id, slot, page.len()));
            if !seen.iter().any(|p| p.same_page(page)) {
                total += page.len();
                seen.push(page.clone());
            }
        }
        drop(seen);
        if total <= self.limits.max_buffered_page_bytes {
            return;
        }
        pages.sort_unstable_by_key(|&(id, _, _)| id);
        for (_, slot, _) in pages {
            if total <= self.limits.max_buffered_page_bytes {
                return;
            }
            let Some(page) = self.connections[slot]
                .as_ref()
                .and_then(|c| c.page().cloned())
            else {
                continue;
            };
            self.close(slot);
            let still_held = self
                .connections
                .iter()
                .flatten()
                .any(|c| c.page().is_some_and(|p| p.same_page(&page)));
            if !still_held {
                total -= page.len();
            }
            log::warn!("metrics endpoint: closed a slow client to stay within its page memory");
        }
    }

    fn expire(&mut self, now: Instant) {
        self.earliest = None;
        for slot in 0..self.connections.len() {
            let Some(connection) = self.connections[slot].as_mut() else {
                continue;
            };
            if connection.deadline <= now {
                let step = connection.expire(&self.limits);
                self.after(slot, step);
            } else {
                let deadline = connection.deadline;
                self.note_deadline(deadline);
            }
        }
    }
}

fn all_variants() -> impl Iterator<Item = Variant> {
    use crate::format::Format;
    [Format::PrometheusText, Format::OpenMetrics]
        .into_iter()
        .flat_map(|format| [false, true].map(|gzip| Variant { format, gzip }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{ErrorKind, Read, Write};
    use std::sync::mpsc;

    /// Accepts the next connection from the loop's listener (the handshake completes
    /// in the kernel; the accept may need a moment).
    fn accept(el: &mut EventLoop) -> (TcpStream, IpAddr) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match el.listener.accept() {
                Ok((stream, peer)) => return (stream, peer.ip()),
                Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                    std::thread::yield_now();
                }
                Err(e) => panic!("accept: {e}"),
            }
        }
    }

    /// Waits until the server sides of `slots` have been readable (the bytes written by
    /// the clients have arrived). Readiness is edge-triggered: each is reported once.
    fn wait_readable(el: &mut EventLoop, slots: &[usize]) {
        let mut events = Events::with_capacity(16);
        let mut seen = vec![false; slots.len()];
        let deadline = Instant::now() + Duration::from_secs(10);
        while seen.contains(&false) {
            assert!(
                Instant::now() < deadline,
                "slots {slots:?} readable: {seen:?}"
            );
            el.poll
                .poll(&mut events, Some(Duration::from_millis(100)))
                .unwrap();
            for event in events.iter().filter(|e| e.is_readable()) {
                if let Some(i) = slots
                    .iter()
                    .position(|&s| Token(s + FIRST_CONNECTION) == event.token())
                {
                    seen[i] = true;
                }
            }
        }
    }

    /// A loop on a fresh local listener with at most `max_connections` open; the render
    /// queue's receiver and the done channel's sender, which must outlive the loop.
    fn capped_loop(
        max_connections: usize,
    ) -> (
        EventLoop,
        std::net::SocketAddr,
        mpsc::Receiver<Job>,
        mpsc::Sender<Done>,
    ) {
        let poll = Poll::new().unwrap();
        let mut listener = TcpListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let (jobs_tx, jobs_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel();
        let limits = HttpLimits {
            max_connections,
            ..HttpLimits::default()
        };
        let model = crate::MetricModel::new("host", crate::Buckets::default()).into_shared();
        let el = EventLoop::new(
            poll,
            listener,
            limits,
            Arc::default(),
            jobs_tx,
            done_rx,
            Arc::new(model),
        );
        (el, addr, jobs_rx, done_tx)
    }

    #[test]
    fn at_the_cap_a_head_that_arrived_unread_is_served_and_the_next_oldest_evicted() {
        let (mut el, addr, jobs_rx, _done_tx) = capped_loop(2);

        // Two clients fill the cap before sending anything.
        let mut scraper = std::net::TcpStream::connect(addr).unwrap();
        let (stream, peer) = accept(&mut el);
        el.admit(stream, peer);
        let mut slow = std::net::TcpStream::connect(addr).unwrap();
        let (stream, peer) = accept(&mut el);
        el.admit(stream, peer);
        assert_eq!(el.open, 2);

        // The older one's whole head arrives, but the loop has not read it yet; the
        // younger one has sent part of a head.
        scraper
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        slow.write_all(b"GET /met").unwrap();
        wait_readable(&mut el, &[0, 1]);

        // A newcomer at the cap: the scraper's head is read and its render queued; the
        // slow client, now the oldest still waiting for its head, gets the 503.
        let _newcomer = std::net::TcpStream::connect(addr).unwrap();
        let (stream, peer) = accept(&mut el);
        el.admit(stream, peer);
        assert_eq!(el.open, 2);
        jobs_rx.try_recv().expect("the scraper's render was queued");
        slow.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answer = Vec::new();
        slow.read_to_end(&mut answer).unwrap();
        assert!(
            answer.starts_with(b"HTTP/1.1 503"),
            "the slow client was refused: {:?}",
            String::from_utf8_lossy(&answer)
        );
        scraper.set_nonblocking(true).unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(
            scraper.read(&mut byte).map_err(|e| e.kind()),
            Err(ErrorKind::WouldBlock),
            "the scraper waits for its page, not refused"
        );
    }

    #[test]
    fn at_the_cap_the_address_holding_most_waiting_connections_loses_one_not_an_older_scraper() {
        let (mut el, addr, _jobs_rx, _done_tx) = capped_loop(3);
        // The addresses the loop sees are given here: one scraper host, one crowd host.
        let scraper_host: IpAddr = "10.0.0.1".parse().unwrap();
        let crowd_host: IpAddr = "10.0.0.2".parse().unwrap();

        // The scraper is the oldest and has not sent its head yet (its process was not
        // scheduled between connect and write); two crowd connections follow.
        let mut scraper = std::net::TcpStream::connect(addr).unwrap();
        let (stream, _) = accept(&mut el);
        el.admit(stream, scraper_host);
        let mut crowd = Vec::new();
        for _ in 0..2 {
            crowd.push(std::net::TcpStream::connect(addr).unwrap());
            let (stream, _) = accept(&mut el);
            el.admit(stream, crowd_host);
        }
        assert_eq!(el.open, 3);

        // Newcomers from the crowd at the cap: each evicts the crowd's oldest, never the
        // scraper, however many arrive.
        for round in 0..4 {
            crowd.push(std::net::TcpStream::connect(addr).unwrap());
            let (stream, _) = accept(&mut el);
            el.admit(stream, crowd_host);
            assert_eq!(el.open, 3);
            let scraper_slot = el.connections[0].as_ref().expect("round {round}");
            assert_eq!(
                scraper_slot.peer, scraper_host,
                "round {round}: scraper kept"
            );
            let evicted = &mut crowd[round];
            evicted
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut answer = Vec::new();
            evicted.read_to_end(&mut answer).unwrap();
            assert!(
                answer.starts_with(b"HTTP/1.1 503"),
                "round {round}: the crowd's oldest was refused"
            );
        }
        scraper.set_nonblocking(true).unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(
            scraper.read(&mut byte).map_err(|e| e.kind()),
            Err(ErrorKind::WouldBlock),
            "the scraper is still connected, waiting"
        );
    }
}
