//! The exporter a bad telering setting leaves behind, so that telering never stops a
//! NIXL agent from starting.
//!
//! NIXL's agent constructor throws when `create_exporter` answers null (the main
//! branch, 1.3.0, 1.3.1 and 1.4.0), so refusing the exporter over a telering setting
//! would stop the data-movement agent. Instead, unless [`STRICT_VAR`] asks for the
//! refusal, the plug-in logs the error at NIXL's error level and hands NIXL a
//! degraded exporter: it delivers nothing, counts every event NIXL hands over as
//! undelivered (cause: *not exported: telering's settings were refused*) and NIXL's
//! own loss reports as dropped upstream, repeats the error at most once a minute
//! ([`REPEAT_EVERY`]) while events keep coming, and logs the counts when NIXL
//! destroys it.

use std::time::{Duration, Instant};
use telering_core::text::Escaped;

/// `TELERING_PLUGIN_STRICT=1`: a bad telering setting makes `create_exporter` answer
/// null, as any NIXL plug-in that fails (NIXL's agent then does not start). Read
/// like any telering variable, from the environment or NIXL's configuration file.
pub const STRICT_VAR: &str = "TELERING_PLUGIN_STRICT";

/// Whether [`STRICT_VAR`], in `env` (the environment over NIXL's configuration
/// file), asks for the refusal ([`strict_from`]). A configuration file that cannot be
/// used is itself a bad setting, reported by the caller; then only the process's
/// environment is read, so that it cannot hide a strict refusal.
///
/// ```
/// use telering_std::EnvSource;
/// use telering_std::config::ConfigFile;
/// use telemetry_exporter_telering::degraded::strict_setting;
/// let file = ConfigFile::parse("/etc/nixl.cfg", "TELERING_PLUGIN_STRICT = true").unwrap();
/// assert_eq!(strict_setting(&EnvSource::empty().with_file(&file)), Ok(true));
/// assert_eq!(strict_setting(&EnvSource::from_pairs([("TELERING_PLUGIN_STRICT", "0")])), Ok(false));
/// ```
pub fn strict_setting(env: &telering_std::EnvSource) -> Result<bool, String> {
    match env.get(STRICT_VAR) {
        Ok(value) => strict_from(value.as_deref().map(std::ffi::OsStr::new)),
        Err(telering_std::EnvError::ConfigFile(_)) => {
            strict_from(std::env::var_os(STRICT_VAR).as_deref())
        }
        Err(e) => Err(e.to_string()),
    }
}

/// The shortest time between two repeats of a degraded exporter's error.
pub const REPEAT_EVERY: Duration = Duration::from_secs(60);

/// Whether [`STRICT_VAR`]'s value asks for the refusal: unset or blank is `false`;
/// a boolean word (`1`, `y`, `yes`, `on`, `true`, and their negations) says; anything
/// else is itself a bad setting, with a message naming the variable.
///
/// ```
/// use telemetry_exporter_telering::degraded::strict_from;
/// assert_eq!(strict_from(None), Ok(false));
/// assert_eq!(strict_from(Some("1".as_ref())), Ok(true));
/// assert_eq!(strict_from(Some(" no ".as_ref())), Ok(false));
/// let e = strict_from(Some("sure\n".as_ref())).unwrap_err();
/// assert_eq!(e, "TELERING_PLUGIN_STRICT=sure\\n is not a boolean; use 1 to refuse the exporter on a bad setting, or 0");
/// ```
pub fn strict_from(value: Option<&std::ffi::OsStr>) -> Result<bool, String> {
    let Some(value) = value else {
        return Ok(false);
    };
    let bytes = value.as_encoded_bytes();
    let text = std::str::from_utf8(bytes).ok();
    match text.map(|t| telering_std::parse::value(t).map(telering_std::parse::boolean)) {
        Some(None) => Ok(false),
        Some(Some(Some(strict))) => Ok(strict),
        _ => Err(format!(
            "{STRICT_VAR}={} is not a boolean; use 1 to refuse the exporter on a bad setting, or 0",
            Escaped::bytes(bytes)
        )),
    }
}

/// When a degraded exporter's error is due again.
#[derive(Debug, Clone, Copy)]
pub struct Repeat {
    next: Instant,
}

impl Repeat {
    /// The error was logged at `now`; the next repeat is due [`REPEAT_EVERY`] later.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use telemetry_exporter_telering::degraded::{REPEAT_EVERY, Repeat};
    /// let t0 = Instant::now();
    /// let mut repeat = Repeat::logged_at(t0);
    /// assert!(!repeat.due(t0 + Duration::from_secs(59)));
    /// assert!(repeat.due(t0 + REPEAT_EVERY));
    /// assert!(!repeat.due(t0 + REPEAT_EVERY + Duration::from_secs(1)), "once a minute");
    /// assert!(repeat.due(t0 + 2 * REPEAT_EVERY));
    /// ```
    pub fn logged_at(now: Instant) -> Repeat {
        Repeat {
            next: now + REPEAT_EVERY,
        }
    }

    /// Whether the error is due at `now`; if so, it counts as logged then.
    pub fn due(&mut self, now: Instant) -> bool {
        if now < self.next {
            return false;
        }
        self.next = now + REPEAT_EVERY;
        true
    }
}

/// A degraded exporter's state: why, and what it did not deliver.
#[derive(Debug)]
pub(crate) struct Degraded {
    /// The agent's name, escaped.
    pub(crate) agent: String,
    /// The refused setting's message (foreign text in it already escaped).
    pub(crate) error: String,
    /// Events NIXL handed over (its loss reports left out), none delivered.
    pub(crate) undelivered: u64,
    /// The sum of NIXL's loss reports.
    pub(crate) nixl_dropped: u64,
    pub(crate) repeat: Repeat,
}

impl Degraded {
    pub(crate) fn new(agent: String, error: String) -> Degraded {
        Degraded {
            agent,
            error,
            undelivered: 0,
            nixl_dropped: 0,
            repeat: Repeat::logged_at(Instant::now()),
        }
    }

    /// Counts one event NIXL handed over; repeats the error when due. Answers
    /// `NIXL_ERR_BACKEND` (-3) for an event, `NIXL_SUCCESS` for a loss report (its
    /// count was taken).
    pub(crate) fn export(&mut self, is_loss_report: bool, value: u64) -> i32 {
        let status = if is_loss_report {
            self.nixl_dropped = self.nixl_dropped.saturating_add(value);
            0
        } else {
            self.undelivered += 1;
            -3
        };
        if self.repeat.due(Instant::now()) {
            log::error!(
                "NIXL agent `{}`: telering is not exporting ({}); {} events not delivered so far",
                self.agent,
                self.error,
                self.undelivered
            );
        }
        status
    }

    /// What the degraded exporter counted, as a telemetry's statistics: every event
    /// NIXL handed over undelivered, NIXL's reported losses recorded and dropped.
    pub(crate) fn stats(&self) -> telering_std::TelemetryStats {
        telering_std::TelemetryStats {
            events_recorded: self.undelivered.saturating_add(self.nixl_dropped),
            events_dropped: self.nixl_dropped,
            events_undelivered: self.undelivered,
            exporter_failing: true,
            ..Default::default()
        }
    }

    /// The summary logged when NIXL destroys the exporter.
    pub(crate) fn log_close(&self) {
        log::error!(
            "NIXL agent `{}`: telering exported nothing ({}): {} events not delivered, {} dropped upstream by NIXL",
            self.agent,
            self.error,
            self.undelivered,
            self.nixl_dropped
        );
    }
}
