//! The push thread: every interval it encodes the current cumulative state and POSTs it.
//!
//! The agent's flush thread only folds events into the shared model (a mutex held for
//! one batch); this thread holds the lock only while encoding, never while on the
//! network, so recording never waits for the collector. Memory is bounded: the state is
//! the cumulative model itself, and a retry re-encodes the latest state instead of
//! keeping old points.
//!
//! Responses 429, 502, 503 and 504 and transport errors are retried with exponential
//! backoff (250 ms doubling to 30 s), or after the response's `Retry-After`, as the
//! OTLP specification says: delta-seconds (`Retry-After: 5`) or an HTTP-date
//! (`Retry-After: Tue, 01 Dec 2026 13:00:05 GMT`, which is relative to this host's
//! clock; a date in the past retries at once), capped at 5 minutes so that a wrong
//! clock cannot stall the export. Other non-2xx responses are refused: logged with
//! status and body, and the next interval sends the (still complete) cumulative state.
//!
//! Every failed attempt — a refusal, an unreachable collector, a timeout — counts in
//! the pusher's [`Delivery`] (`export_errors` in the agent's statistics), and a 2xx
//! marks every event folded into the model before that state was encoded as
//! delivered (`events_exported`).
//!
//! Shutting down is bounded by `TELERING_OTLP_SHUTDOWN_TIMEOUT` (default 2 s): the last
//! push gets what is left of it, and a push still under way when it runs out (a
//! collector that accepts and never answers) is abandoned to finish on its own. What
//! the last push could not deliver is logged with its count.
//!
//! The same thread serves one agent (the `otlp` exporter) or a whole node (`telering
//! serve --otlp` over the node collector's model): it only needs a [`SharedModel`].

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message;
use telering_prometheus::SharedModel;
use telering_std::export::Delivery;

use crate::config::{Compression, OtlpConfig};
use crate::spans::SpanQueue;

const INITIAL_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The longest `Retry-After` honoured.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

/// How one POST ended.
#[derive(Debug)]
enum Outcome {
    Delivered,
    Retry {
        after: Option<Duration>,
        reason: String,
    },
    Refused(String),
}

/// What the caller and the push thread share: the stop request and its deadline, and
/// whether the thread has finished.
#[derive(Debug, Default)]
struct Control {
    state: Mutex<ControlState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct ControlState {
    /// When shutdown was asked for, the time by which it must be done.
    stop_by: Option<Instant>,
    done: bool,
    /// Shutdown gave up on a push under way and counted it as failed; the thread
    /// counts nothing more.
    abandoned: bool,
}

impl Control {
    fn lock(&self) -> MutexGuard<'_, ControlState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The running push thread of one [`SharedModel`].
#[derive(Debug)]
pub struct Pusher {
    control: Arc<Control>,
    thread: Option<JoinHandle<()>>,
    delivery: Arc<Delivery>,
    endpoint: String,
    shutdown_timeout: Duration,
    spans: Arc<SpanQueue>,
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Pusher {
    /// Starts pushing `model` every `config.interval` to `config.endpoint`; the first
    /// export is one interval from now.
    ///
    /// ```
    /// use telering_otlp::{OtlpConfig, Pusher};
    /// use telering_prometheus::{Buckets, MetricModel};
    /// let model = MetricModel::new("node-1", Buckets::default()).into_shared();
    /// let config = OtlpConfig::from_lookup(|_| None).unwrap();
    /// let mut pusher = Pusher::start(model, config)?;
    /// pusher.shutdown(); // one last export attempt, then the thread ends
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start(model: SharedModel, config: OtlpConfig) -> std::io::Result<Pusher> {
        Pusher::start_counting(model, config, Arc::default())
    }

    /// [`start`](Self::start), counting deliveries and failures in `delivery`: a 2xx
    /// delivers every event [`Delivery::accept`]ed (under the model's lock) before the
    /// pushed state was encoded.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use telering_otlp::{OtlpConfig, Pusher};
    /// use telering_prometheus::{Buckets, MetricModel};
    /// let model = MetricModel::new("node-1", Buckets::default()).into_shared();
    /// // Nothing listens on port 9 here: the last push fails and counts as one error.
    /// let config = OtlpConfig::from_lookup(|name| match name {
    ///     "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://127.0.0.1:9".into()),
    ///     _ => None,
    /// }).unwrap();
    /// let mut pusher = Pusher::start_counting(model, config, Arc::default())?;
    /// pusher.shutdown();
    /// assert_eq!((pusher.delivery().failures(), pusher.delivery().failing()), (1, true));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn start_counting(
        model: SharedModel,
        config: OtlpConfig,
        delivery: Arc<Delivery>,
    ) -> std::io::Result<Pusher> {
        let control = Arc::new(Control::default());
        let endpoint = config.endpoint.clone();
        let shutdown_timeout = config.shutdown_timeout;
        let spans = Arc::new(SpanQueue::default());
        let thread = {
            let (control, delivery, spans) = (control.clone(), delivery.clone(), spans.clone());
            std::thread::Builder::new()
                .name("telering-otlp".into())
                .spawn(move || {
                    run(&model, &config, &control, &delivery, &spans);
                    control.lock().done = true;
                    control.changed.notify_all();
                })?
        };
        Ok(Pusher {
            control,
            thread: Some(thread),
            delivery,
            endpoint,
            shutdown_timeout,
            spans,
        })
    }

    /// The slow transfers waiting to be pushed as spans after the next metrics push
    /// ([`crate::spans`]).
    pub fn spans(&self) -> &Arc<SpanQueue> {
        &self.spans
    }

    /// The delivery counters this pusher keeps.
    pub fn delivery(&self) -> &Arc<Delivery> {
        &self.delivery
    }

    /// Stops the thread after one last export attempt (idempotent), within
    /// `shutdown_timeout`: a push still under way then is abandoned (the thread ends
    /// when it does). Logs what the last push could not deliver.
    pub fn shutdown(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        let deadline = Instant::now() + self.shutdown_timeout;
        let mut state = self.control.lock();
        state.stop_by = Some(deadline);
        self.control.changed.notify_all();
        while !state.done {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self
                .control
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let done = state.done;
        if !done {
            state.abandoned = true;
            self.delivery.fail();
        }
        drop(state);
        if done {
            let _ = thread.join();
        }
        let undelivered = self
            .delivery
            .accepted()
            .saturating_sub(self.delivery.delivered());
        if !done || undelivered > 0 {
            log::warn!(
                "OTLP export to {}: {undelivered} events were not delivered by shutdown{}",
                self.endpoint,
                if done {
                    String::new()
                } else {
                    format!(
                        " (no answer within {:?}, {}; the push was abandoned)",
                        self.shutdown_timeout, ENV_SHUTDOWN
                    )
                }
            );
        }
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        self.shutdown();
    }
}

const ENV_SHUTDOWN: &str = crate::config::ENV_SHUTDOWN_TIMEOUT;

fn run(
    model: &SharedModel,
    config: &OtlpConfig,
    control: &Control,
    delivery: &Delivery,
    spans: &SpanQueue,
) {
    let traces_endpoint = crate::spans::traces_endpoint(&config.endpoint);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(config.timeout))
        .http_status_as_error(false)
        .build()
        .into();
    let start_ns = unix_ns();
    let mut backoff = INITIAL_BACKOFF;
    let mut failing = false;
    let mut next = Instant::now() + config.interval;
    loop {
        let stop_by = {
            let mut state = control.lock();
            while state.stop_by.is_none() {
                let now = Instant::now();
                if now >= next {
                    break;
                }
                state = control
                    .changed
                    .wait_timeout(state, next - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            state.stop_by
        };
        // The last push gets what is left of the shutdown bound; none is left when a
        // push under way outlived it.
        let last_agent = match stop_by.map(|by| by.saturating_duration_since(Instant::now())) {
            Some(Duration::ZERO) => return,
            Some(left) => Some(ureq::Agent::from(
                ureq::Agent::config_builder()
                    .timeout_global(Some(left.min(config.timeout)))
                    .http_status_as_error(false)
                    .build(),
            )),
            None => None,
        };
        // The lock is held to build the request only; serialising (about half of the
        // CPU time of an export, see BENCHMARKS.md) and compressing happen after it.
        // The events accepted so far are read under it: a 2xx delivers exactly those.
        let (request, covered) = {
            let model = model.lock();
            let covered = delivery.accepted();
            (
                crate::encode::encode(&model, &config.resource, start_ns, unix_ns()),
                covered,
            )
        };
        let body = compress(request.encode_to_vec(), config.compression);
        let outcome = post(
            last_agent.as_ref().unwrap_or(&agent),
            config,
            &config.endpoint,
            body,
        );
        push_spans(
            last_agent.as_ref().unwrap_or(&agent),
            config,
            &traces_endpoint,
            spans,
        );
        {
            // Counted under the control lock, so that a push shutdown abandoned is
            // counted once, by shutdown.
            let state = control.lock();
            if state.abandoned {
                return;
            }
            match &outcome {
                Outcome::Delivered => delivery.delivered_up_to(covered),
                Outcome::Retry { .. } | Outcome::Refused(_) => delivery.fail(),
            }
        }
        if last_agent.is_some() {
            if let Outcome::Retry { reason, .. } | Outcome::Refused(reason) = &outcome {
                log::warn!(
                    "OTLP export to {}: the last push at shutdown was not delivered: {reason}",
                    config.endpoint
                );
            }
            return;
        }
        match outcome {
            Outcome::Delivered => {
                if failing {
                    log::info!("OTLP export to {}: delivered again", config.endpoint);
                }
                failing = false;
                backoff = INITIAL_BACKOFF;
                next = Instant::now() + config.interval;
            }
            Outcome::Retry { after, reason } => {
                let delay = after.unwrap_or(backoff);
                if !failing {
                    log::warn!(
                        "OTLP export to {}: {reason}; retrying with backoff (cumulative values, nothing is lost)",
                        config.endpoint
                    );
                }
                failing = true;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                next = Instant::now() + delay;
            }
            Outcome::Refused(reason) => {
                log::error!(
                    "OTLP export to {} refused: {reason}; not retried, the next export in {:?} sends the full cumulative state",
                    config.endpoint,
                    config.interval
                );
                failing = true;
                next = Instant::now() + config.interval;
            }
        }
    }
}

/// Pushes the waiting spans, once: a span that does not reach the collector is
/// counted as dropped, not retried (see [`crate::spans`]).
fn push_spans(agent: &ureq::Agent, config: &OtlpConfig, url: &str, spans: &SpanQueue) {
    let waiting = spans.take();
    if waiting.is_empty() {
        return;
    }
    let n = waiting.len() as u64;
    let request = crate::spans::encode_spans(&config.resource, waiting);
    let body = compress(request.encode_to_vec(), config.compression);
    match post(agent, config, url, body) {
        Outcome::Delivered => spans.count_pushed(n),
        Outcome::Retry { reason, .. } | Outcome::Refused(reason) => {
            spans.count_dropped(n);
            log::debug!("OTLP traces to {url}: {n} slow-transfer spans dropped: {reason}");
        }
    }
}

fn post(agent: &ureq::Agent, config: &OtlpConfig, url: &str, body: Vec<u8>) -> Outcome {
    let mut request = agent
        .post(url)
        .header("Content-Type", "application/x-protobuf");
    if config.compression == Compression::Gzip {
        request = request.header("Content-Encoding", "gzip");
    }
    for (k, v) in &config.headers {
        request = request.header(k.as_str(), v.as_str());
    }
    let mut response = match request.send(&body[..]) {
        Ok(r) => r,
        Err(e) => {
            return Outcome::Retry {
                after: None,
                reason: format!("cannot reach the collector ({e})"),
            };
        }
    };
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Outcome::Delivered;
    }
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()));
    let text = response
        .body_mut()
        .with_config()
        .limit(4096)
        .read_to_string()
        .unwrap_or_default();
    let reason = format!("HTTP {status} {}", text.trim());
    if is_retryable(status) {
        Outcome::Retry {
            after: retry_after,
            reason,
        }
    } else {
        Outcome::Refused(reason)
    }
}

/// The request body for `protobuf` (the encoded request) under `compression`.
///
/// ```
/// use telering_otlp::{Compression, push::compress};
/// let body = vec![7u8; 4096];
/// assert_eq!(compress(body.clone(), Compression::None), body);
/// let gz = compress(body, Compression::Gzip);
/// assert!(gz.starts_with(&[0x1f, 0x8b]) && gz.len() < 100);
/// ```
pub fn compress(protobuf: Vec<u8>, compression: Compression) -> Vec<u8> {
    match compression {
        Compression::None => protobuf,
        Compression::Gzip => {
            use std::io::Write;
            // zlib's default level 6, as OTLP exporters commonly use: a push runs once
            // per interval and crosses the network to a collector, so bytes matter more
            // than the ~2 ms per 64-agent export it costs over level 1, which sends 48 %
            // more bytes (BENCHMARKS.md, "OTLP export").
            let mut gz = flate2::write::GzEncoder::new(
                Vec::with_capacity(protobuf.len() / 4),
                flate2::Compression::default(),
            );
            // Writing into a Vec cannot fail.
            let _ = gz.write_all(&protobuf);
            gz.finish().unwrap_or_default()
        }
    }
}

/// Whether the OTLP specification says a response with `status` is retried.
fn is_retryable(status: u16) -> bool {
    matches!(status, 429 | 502 | 503 | 504)
}

/// The delay a `Retry-After` value asks for at `now`: delta-seconds or an HTTP-date
/// (RFC 9110 §10.2.3), at most [`MAX_RETRY_AFTER`]; `None` when it is neither.
fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    let delay = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Digits too many for a u64 are a very long delay, not a malformed one.
        Duration::from_secs(
            value
                .parse::<u64>()
                .unwrap_or(u64::MAX)
                .min(u32::MAX.into()),
        )
    } else {
        let when = httpdate::parse_http_date(value).ok()?;
        when.duration_since(now).unwrap_or(Duration::ZERO)
    };
    Some(delay.min(MAX_RETRY_AFTER))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_delta_seconds_is_the_delay() {
        let now = SystemTime::now();
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("99999999999999999999999", now),
            Some(MAX_RETRY_AFTER)
        );
    }

    #[test]
    fn retry_after_http_date_is_the_time_until_that_date() {
        // 1 Dec 2026 13:00:00 UTC.
        let now = UNIX_EPOCH + Duration::from_secs(1_796_130_000);
        let date = httpdate::fmt_http_date(now + Duration::from_secs(42));
        assert_eq!(parse_retry_after(&date, now), Some(Duration::from_secs(42)));
        assert_eq!(
            parse_retry_after("Tue, 01 Dec 2026 13:00:42 GMT", now),
            Some(Duration::from_secs(42))
        );
        // In the past: retry at once. Far ahead: capped.
        assert_eq!(
            parse_retry_after("Tue, 01 Dec 2026 12:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            parse_retry_after("Fri, 01 Jan 2027 00:00:00 GMT", now),
            Some(MAX_RETRY_AFTER)
        );
    }

    #[test]
    fn malformed_retry_after_falls_back_to_the_backoff() {
        let now = SystemTime::now();
        for bad in ["", "soon", "-5", "1.5", "Tue, 32 Dec 2026 13:00:00 GMT"] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad:?}");
        }
    }

    #[test]
    fn only_throttling_and_gateway_errors_are_retried() {
        for status in [429, 502, 503, 504] {
            assert!(is_retryable(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 500, 501] {
            assert!(!is_retryable(status), "{status}");
        }
    }
}
