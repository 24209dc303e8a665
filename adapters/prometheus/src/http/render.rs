//! The render workers: threads that render a metrics page and compress it, off the
//! readiness loop.
//!
//! A 1024-agent page takes milliseconds to render and compress (see `BENCHMARKS.md`);
//! on the loop thread that time would delay every other connection's reads, writes and
//! deadlines. So the loop hands a [`Job`] to a worker over a channel, and the worker
//! sends the [`Response`] back and wakes the loop with a [`mio::Waker`]. The loop, not
//! the worker, owns every socket: a worker never waits for a client.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, PoisonError};

use crate::format::Format;

use super::MetricsSource;
use super::response::Response;

/// The variants of a page: two formats, each plain or gzip.
pub(crate) const VARIANTS: usize = 4;

/// Which page to render.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Variant {
    pub format: Format,
    pub gzip: bool,
}

impl Variant {
    /// A dense index in `0..VARIANTS`.
    pub(crate) fn index(self) -> usize {
        let format = match self.format {
            Format::PrometheusText => 0,
            Format::OpenMetrics => 1,
        };
        format * 2 + usize::from(self.gzip)
    }
}

/// A page to render for one batch of scrapes.
#[derive(Debug)]
pub(crate) struct Job {
    pub batch: u64,
    pub variant: Variant,
}

/// A rendered page for a batch.
#[derive(Debug)]
pub(crate) struct Done {
    pub batch: u64,
    pub response: Response,
}

/// Runs until the job channel closes: renders each job and reports it.
pub(crate) fn worker(
    source: &dyn MetricsSource,
    jobs: &Mutex<Receiver<Job>>,
    done: &Sender<Done>,
    waker: &mio::Waker,
) {
    loop {
        let job = jobs.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(Job { batch, variant }) = job else {
            return;
        };
        let rendered = catch_unwind(AssertUnwindSafe(|| {
            Response::page(variant.format, variant.gzip, source.render(variant.format))
        }));
        let response = rendered.unwrap_or_else(|_| {
            log::error!("rendering the metrics page panicked; answering 500");
            Response::render_failed()
        });
        if done.send(Done { batch, response }).is_err() {
            return;
        }
        if let Err(e) = waker.wake() {
            log::warn!("metrics endpoint: cannot wake the connection loop: {e}");
        }
    }
}

/// Shared ends of the job channel, for the workers.
pub(crate) type Jobs = Arc<Mutex<Receiver<Job>>>;
