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
//! The same thread serves one agent (the `otlp` exporter) or a whole node (`telering
//! serve --otlp` over the node collector's model): it only needs a [`SharedModel`].

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message;
use telering_prometheus::SharedModel;

use crate::config::{Compression, OtlpConfig};

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

/// The running push thread of one [`SharedModel`].
#[derive(Debug)]
pub struct Pusher {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
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
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("telering-otlp".into())
            .spawn(move || run(&model, &config, &stop2))?;
        Ok(Pusher {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the thread after one last export attempt (idempotent).
    pub fn shutdown(&mut self) {
        *self.stop.0.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.stop.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Pusher {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn run(model: &SharedModel, config: &OtlpConfig, stop: &(Mutex<bool>, Condvar)) {
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
        let stopping = {
            let mut stopped = stop.0.lock().unwrap_or_else(PoisonError::into_inner);
            while !*stopped {
                let now = Instant::now();
                if now >= next {
                    break;
                }
                stopped = stop
                    .1
                    .wait_timeout(stopped, next - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            *stopped
        };
        // The lock is held to build the request only; serialising (about half of the
        // CPU time of an export, see BENCHMARKS.md) and compressing happen after it.
        let request = {
            let model = model.lock();
            crate::encode::encode(&model, &config.resource, start_ns, unix_ns())
        };
        let body = compress(request.encode_to_vec(), config.compression);
        let outcome = post(&agent, config, body);
        if stopping {
            if !matches!(outcome, Outcome::Delivered) {
                log::warn!(
                    "OTLP export to {}: the last export at shutdown was not delivered ({outcome:?})",
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

fn post(agent: &ureq::Agent, config: &OtlpConfig, body: Vec<u8>) -> Outcome {
    let mut request = agent
        .post(&config.endpoint)
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
