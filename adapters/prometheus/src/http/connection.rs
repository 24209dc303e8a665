//! One client connection and its state machine (drawn in the [module docs](super)).
//!
//! A [`Connection`] never blocks: each method does what the socket allows now and
//! returns a [`Step`] telling the loop what comes next. The only memory a connection
//! owns is its request head buffer, at most [`HttpLimits::max_head_bytes`] + 1 bytes;
//! a response is a shared page (see [`Response`]).

use std::io::{self, Read, Write};
use std::net::{IpAddr, Shutdown};
use std::time::{Duration, Instant};

use mio::net::TcpStream;

use super::HttpLimits;
use super::request::{self, Head, Refusal, Scrape};
use super::response::Response;

/// How long a connection whose response is sent waits for the client to close, reading
/// and discarding what it still sends, so that closing does not reset the connection
/// while the client reads the response.
pub(crate) const LINGER: Duration = Duration::from_secs(1);

/// Most bytes discarded while lingering before the connection is closed anyway.
pub(crate) const MAX_DISCARD: usize = 64 * 1024;

/// Where a connection is in its one request.
#[derive(Debug)]
pub(crate) enum State {
    /// Reading the request head; deadline: accepted + head time limit.
    Head { buf: Vec<u8> },
    /// The head asked for a page, which is being rendered; deadline: the render time
    /// limit, counted from the end of the head.
    Rendering { head_only: bool },
    /// Writing a response; deadline: the response time limit counted from the first
    /// byte, or the write time limit after the last progress, whichever is first.
    Writing {
        response: Response,
        head_only: bool,
        written: usize,
        response_deadline: Instant,
    },
    /// Response sent and write side shut; discarding input until the client closes;
    /// deadline: [`LINGER`].
    Lingering { discarded: usize },
}

/// What the loop must do with a connection after a step.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Wait for readiness or the deadline.
    Wait,
    /// Queue this scrape for rendering (the connection is now `Rendering`).
    Render(Scrape),
    /// Answer the page at this target (the connection still reads its head until
    /// [`Connection::answer`]).
    Page {
        /// The request target: path and query.
        target: String,
        /// `HEAD`: the same headers, no body.
        head_only: bool,
    },
    /// Answer `405` if the source serves this path, else `404` (a method other than
    /// `GET` or `HEAD`; the connection still reads its head until
    /// [`Connection::answer`]).
    OtherMethod {
        /// The request's path, without its query.
        path: String,
    },
    /// Close the connection.
    Close,
}

/// A client connection.
#[derive(Debug)]
pub(crate) struct Connection {
    pub(crate) stream: TcpStream,
    /// Distinguishes this connection from a later one in the same slot.
    pub(crate) id: u64,
    /// The client's address: at the cap, a newcomer evicts a head-reading connection
    /// of the address holding the most of them (see `EventLoop::make_room`).
    pub(crate) peer: IpAddr,
    pub(crate) state: State,
    /// When the current state runs out of time.
    pub(crate) deadline: Instant,
}

impl Connection {
    /// A connection just accepted.
    pub(crate) fn new(
        stream: TcpStream,
        id: u64,
        peer: IpAddr,
        now: Instant,
        limits: &HttpLimits,
    ) -> Self {
        Connection {
            stream,
            id,
            peer,
            state: State::Head { buf: Vec::new() },
            deadline: now + limits.head_timeout,
        }
    }

    /// Does what readiness allows in the current state.
    pub(crate) fn advance(&mut self, scratch: &mut [u8], limits: &HttpLimits) -> Step {
        match self.state {
            State::Head { .. } => self.read_head(scratch, limits),
            State::Rendering { .. } => Step::Wait,
            State::Writing { .. } => self.write(limits),
            State::Lingering { .. } => self.linger(),
        }
    }

    /// The deadline has passed.
    pub(crate) fn expire(&mut self, limits: &HttpLimits) -> Step {
        match self.state {
            State::Head { .. } => self.respond(Response::refusal(Refusal::Timeout), false, limits),
            State::Rendering { .. } => {
                log::warn!("metrics page not rendered within the response time limit");
                Step::Close
            }
            State::Writing { .. } => {
                log::debug!("metrics client too slow to take its response; closed");
                Step::Close
            }
            State::Lingering { .. } => Step::Close,
        }
    }

    /// A rendered page for a connection in `Rendering`.
    pub(crate) fn deliver(&mut self, response: Response, limits: &HttpLimits) -> Step {
        let State::Rendering { head_only } = self.state else {
            return Step::Wait;
        };
        self.respond(response, head_only, limits)
    }

    fn read_head(&mut self, scratch: &mut [u8], limits: &HttpLimits) -> Step {
        let State::Head { buf } = &mut self.state else {
            return Step::Wait;
        };
        loop {
            // Never hold more than one byte past the limit: that byte proves the excess.
            let room = (limits.max_head_bytes + 1).saturating_sub(buf.len());
            let want = room.min(scratch.len()).max(1);
            let n = match self.stream.read(&mut scratch[..want]) {
                Ok(0) => return Step::Close,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return Step::Close,
            };
            buf.extend_from_slice(&scratch[..n]);
            match request::examine(buf, n, limits) {
                Head::Partial => continue,
                Head::Scrape(scrape) => {
                    self.state = State::Rendering {
                        head_only: scrape.head_only,
                    };
                    self.deadline = Instant::now() + limits.render_timeout;
                    return Step::Render(scrape);
                }
                Head::Page { target, head_only } => return Step::Page { target, head_only },
                Head::OtherMethod { path } => return Step::OtherMethod { path },
                Head::Refused(refusal) => {
                    return self.respond(Response::refusal(refusal), false, limits);
                }
            }
        }
    }

    /// Answers a [`Step::Page`] or [`Step::OtherMethod`] with `response`.
    pub(crate) fn answer(
        &mut self,
        response: Response,
        head_only: bool,
        limits: &HttpLimits,
    ) -> Step {
        self.respond(response, head_only, limits)
    }

    fn respond(&mut self, response: Response, head_only: bool, limits: &HttpLimits) -> Step {
        let response_deadline = Instant::now() + limits.response_timeout;
        self.state = State::Writing {
            response,
            head_only,
            written: 0,
            response_deadline,
        };
        self.deadline = response_deadline.min(Instant::now() + limits.write_timeout);
        // Readiness is edge-triggered and the socket may have been writable all along:
        // write now rather than wait for an edge that may not come.
        self.write(limits)
    }

    fn write(&mut self, limits: &HttpLimits) -> Step {
        let State::Writing {
            response,
            head_only,
            written,
            response_deadline,
        } = &mut self.state
        else {
            return Step::Wait;
        };
        let bytes = response.bytes(*head_only);
        while *written < bytes.len() {
            match self.stream.write(&bytes[*written..]) {
                Ok(0) => return Step::Close,
                Ok(n) => {
                    *written += n;
                    self.deadline = (*response_deadline).min(Instant::now() + limits.write_timeout);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log::debug!("metrics response not delivered: {e}");
                    return Step::Close;
                }
            }
        }
        let _ = self.stream.shutdown(Shutdown::Write);
        self.state = State::Lingering { discarded: 0 };
        self.deadline = Instant::now() + LINGER;
        // As for writing: input that arrived earlier raises no new edge.
        self.linger()
    }

    fn linger(&mut self) -> Step {
        let mut scratch = [0u8; 4096];
        let State::Lingering { discarded } = &mut self.state else {
            return Step::Wait;
        };
        loop {
            match self.stream.read(&mut scratch) {
                Ok(0) => return Step::Close,
                Ok(n) => {
                    *discarded += n;
                    if *discarded > MAX_DISCARD {
                        return Step::Close;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Step::Close,
            }
        }
    }

    /// Whether the response is sent and the connection only waits for the client to close.
    pub(crate) fn is_lingering(&self) -> bool {
        matches!(self.state, State::Lingering { .. })
    }

    /// Whether the connection is still waiting for its request head.
    pub(crate) fn is_reading_head(&self) -> bool {
        matches!(self.state, State::Head { .. })
    }

    /// Bytes of the page this connection still holds, if it is writing one.
    pub(crate) fn page(&self) -> Option<&Response> {
        match &self.state {
            State::Writing { response, .. } => Some(response),
            _ => None,
        }
    }
}
