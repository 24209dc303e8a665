//! The push thread: every interval it encodes the current cumulative state and POSTs it.
//!
//! The agent's flush thread only folds events into the shared model (a mutex held for
//! one batch); this thread holds the lock only while encoding, never while on the
//! network, so recording never waits for the collector. Memory is bounded: the state is
//! the cumulative model itself, and a retry re-encodes the latest state instead of
//! keeping old points.
//!
//! Responses 429, 502, 503 and 504 and transport errors are retried with exponential
//! backoff (250 ms doubling to 30 s), or after the response's `Retry-After` seconds,
//! as the OTLP specification says. Other non-2xx responses are refused: logged with
//! status and body, and the next interval sends the (still complete) cumulative state.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message;
use telering_prometheus::SharedModel;

use crate::config::OtlpConfig;

const INITIAL_BACKOFF: Duration = Duration::from_millis(250);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

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

/// The running push thread.
#[derive(Debug)]
pub(crate) struct Pusher {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

impl Pusher {
    pub(crate) fn start(model: SharedModel, config: OtlpConfig) -> std::io::Result<Pusher> {
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

    /// Stops the thread after one last export attempt.
    pub(crate) fn shutdown(&mut self) {
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
        let body = {
            let model = model.lock();
            crate::encode::encode(&model, &config.resource, start_ns, unix_ns()).encode_to_vec()
        };
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
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| Duration::from_secs(s.min(300)));
    let text = response
        .body_mut()
        .with_config()
        .limit(4096)
        .read_to_string()
        .unwrap_or_default();
    let reason = format!("HTTP {status} {}", text.trim());
    if matches!(status, 429 | 502 | 503 | 504) {
        Outcome::Retry {
            after: retry_after,
            reason,
        }
    } else {
        Outcome::Refused(reason)
    }
}
