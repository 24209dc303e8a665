//! Single values and the result: the rules for one `NIXL_TELEMETRY_ENABLE` word, a
//! buffer size and an agent name, and the [`ResolvedConfig`] (with its [`Mode`]) that
//! resolution makes of them.

use super::{ConfigError, ConfigWarning};
use crate::clock::ClockSource;
use crate::config::vars::MAX_BUFFER_SIZE;
use std::path::PathBuf;
use std::time::Duration;
use telering_shm::RingLayout;

/// Parses a `NIXL_TELEMETRY_ENABLE` value: whether it enables, and a warning for a
/// value that is neither an enabling nor a disabling word.
///
/// ```
/// use telering_std::config::parse_enable;
/// assert_eq!(parse_enable(" TRUE ").0, true);
/// assert_eq!(parse_enable("off"), (false, None));
/// let (on, warning) = parse_enable("ture");
/// assert!(!on && warning.is_some());
/// ```
pub fn parse_enable(value: &str) -> (bool, Option<ConfigWarning>) {
    match crate::parse::boolean(value) {
        Some(on) => (on, None),
        None if value.trim().is_empty() => (false, None),
        None => (
            false,
            Some(ConfigWarning::UnrecognizedEnable {
                value: value.trim().to_string(),
            }),
        ),
    }
}

/// Checks a buffer size: a power of two from 2 to [`MAX_BUFFER_SIZE`].
///
/// ```
/// use telering_std::config::check_buffer_size;
/// assert_eq!(check_buffer_size(1024).unwrap(), 1024);
/// assert_eq!(
///     check_buffer_size(1000).unwrap_err().to_string(),
///     "NIXL_TELEMETRY_BUFFER_SIZE=1000 is not a power of two; use 512 or 1024"
/// );
/// ```
pub fn check_buffer_size(value: u64) -> Result<u32, ConfigError> {
    if value < 2 {
        Err(ConfigError::BufferSizeTooSmall { value })
    } else if value > MAX_BUFFER_SIZE as u64 {
        Err(ConfigError::BufferSizeTooLarge { value })
    } else if !value.is_power_of_two() {
        let above = value.next_power_of_two();
        Err(ConfigError::BufferSizeNotPowerOfTwo {
            value,
            below: above / 2,
            above,
        })
    } else {
        Ok(value as u32)
    }
}

/// What a built [`Telemetry`](crate::Telemetry) does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Nothing is recorded or captured.
    Disabled,
    /// Per-transfer and backend telemetry are captured in process; nothing is
    /// exported and no flush thread runs.
    Capture,
    /// Events are recorded and flushed to the named exporter (lower case).
    Export {
        /// The exporter's registered name.
        exporter: String,
    },
}

/// The configuration after every rule was applied ([`TelemetryBuilder::resolve`](crate::TelemetryBuilder::resolve)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedConfig {
    /// The agent's name.
    pub agent_name: String,
    /// What the telemetry does.
    pub mode: Mode,
    /// The allowlist patterns (empty: everything).
    pub enabled_metrics: String,
    /// Events in the exporter's cyclic buffer.
    pub buffer_size: u32,
    /// Events each recording thread's lane holds before it drops.
    pub lane_capacity: u32,
    /// How often the flush thread runs.
    pub run_interval: Duration,
    /// The telemetry directory.
    pub dir: Option<PathBuf>,
    /// The clock stamping events, resolved: [`ClockSource::Tsc`],
    /// [`ClockSource::Realtime`] or [`ClockSource::RealtimeCoarse`], never `Auto`.
    pub clock: ClockSource,
    /// The layout of the ring file the `buffer` exporter writes.
    pub ring_layout: RingLayout,
    /// Whether a lane at its high-water mark wakes the flush thread early
    /// ([`TelemetryBuilder::early_flush`](crate::TelemetryBuilder::early_flush)).
    pub early_flush: bool,
    /// Route bound and slow transfers kept per route and interval ([`crate::route`]).
    pub routes: crate::route::RouteLimits,
}

/// The agent name names the agent's files in `NIXL_TELEMETRY_DIR`, so it must be one
/// file name (not empty, `.` or `..`, no `/` or NUL, at most 255 bytes). What an
/// exporter adds to it (`.csv`) it checks itself
/// ([`ExporterContext::target_file`](crate::export::ExporterContext::target_file)).
pub(crate) fn check_agent_name(name: &str) -> Result<(), ConfigError> {
    match telering_shm::validate_agent_name(name) {
        Ok(()) => Ok(()),
        Err(telering_shm::ShmError::InvalidAgentName { reason, .. }) => {
            Err(ConfigError::AgentName {
                name: name.to_string(),
                reason,
            })
        }
        Err(_) => Err(ConfigError::AgentName {
            name: name.to_string(),
            reason: "it cannot name a file",
        }),
    }
}
