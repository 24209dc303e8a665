//! The variables telering reads, their defaults and limits, and the names of the
//! files they point at: the one list every part of telering takes them from.
//!
//! Values are read by [`crate::parse`]'s rule from an [`EnvSource`](super::EnvSource);
//! the workspace README's table (*Environment variables*) says what each one does.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Turns exporting on.
pub const ENABLE: &str = "NIXL_TELEMETRY_ENABLE";
/// The metric allowlist.
pub const ENABLED_METRICS: &str = "NIXL_TELEMETRY_ENABLED_METRICS";
/// Events in the cyclic buffer.
pub const BUFFER_SIZE: &str = "NIXL_TELEMETRY_BUFFER_SIZE";
/// Flush interval in milliseconds.
pub const RUN_INTERVAL: &str = "NIXL_TELEMETRY_RUN_INTERVAL";
/// The exporter's name.
pub const EXPORTER: &str = "NIXL_TELEMETRY_EXPORTER";
/// The directory for files.
pub const DIR: &str = "NIXL_TELEMETRY_DIR";
/// The clock stamping events (`auto`, `tsc`, `realtime`, `coarse`).
pub const CLOCK: &str = "TELERING_CLOCK";
/// Routes an agent keeps of its own before folding into `other` ([`crate::route`]).
pub const ROUTES_MAX: &str = "TELERING_ROUTES_MAX";
/// Slowest transfers kept per route and flush interval ([`crate::route`]).
pub const SLOW_XFERS: &str = "TELERING_SLOW_XFERS";
/// Prefix of every telemetry variable.
pub const PREFIX: &str = "NIXL_TELEMETRY_";
/// The layout of the ring file the `buffer` exporter writes, `v1` or `v4`
/// (telering's own variable: NIXL has no such setting).
pub const RING_LAYOUT: &str = telering_shm::RING_LAYOUT_VAR;
/// NIXL's variable naming the exporter plug-in folder ([`crate::plugin`]).
pub const PLUGIN_DIR: &str = "NIXL_PLUGIN_DIR";
/// NIXL's variable naming the configuration file ([`super::file`]).
pub const CONFIG_FILE: &str = "NIXL_CONFIG_FILE";

/// `NIXL_TELEMETRY_BUFFER_SIZE` when unset.
pub const DEFAULT_BUFFER_SIZE: u32 = 4096;
/// Largest accepted `NIXL_TELEMETRY_BUFFER_SIZE`: 2²⁰ events, 56 MiB per ring.
pub const MAX_BUFFER_SIZE: u32 = 1 << 20;
/// `NIXL_TELEMETRY_RUN_INTERVAL` when unset.
pub const DEFAULT_RUN_INTERVAL: Duration = Duration::from_millis(100);
/// Longest accepted `NIXL_TELEMETRY_RUN_INTERVAL`: one day.
pub const MAX_RUN_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// Whether a variable is one telering reads: `NIXL_TELEMETRY_*`, `TELERING_*`, or
/// NIXL's `NIXL_PLUGIN_DIR` (where exporter plug-ins are, [`crate::plugin`]).
///
/// ```
/// use telering_std::config::is_telering_variable;
/// assert!(is_telering_variable("NIXL_TELEMETRY_DIR") && is_telering_variable("TELERING_CLOCK"));
/// assert!(is_telering_variable("NIXL_PLUGIN_DIR") && !is_telering_variable("NIXL_CONFIG_FILE"));
/// ```
pub fn is_telering_variable(name: &str) -> bool {
    name.starts_with(PREFIX) || name.starts_with("TELERING_") || name == PLUGIN_DIR
}

/// Whether `name` can name a plug-in library: ASCII letters, digits, `_` and `-`
/// only, and not empty (a `/` would leave `NIXL_PLUGIN_DIR`).
///
/// ```
/// use telering_std::plugin::is_plugin_name;
/// assert!(is_plugin_name("kafka_2") && !is_plugin_name("../kafka") && !is_plugin_name(""));
/// ```
pub fn is_plugin_name(name: &str) -> bool {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let name = name.trim();
    !name.is_empty() && name.chars().all(valid)
}

/// The file the exporter plug-in named `name` is loaded from, in `dir`
/// (`NIXL_PLUGIN_DIR`): NIXL's `libtelemetry_exporter_<name>.so`, the name in lower
/// case.
///
/// ```
/// let p = telering_std::plugin::library_path("/opt/nixl/plugins".as_ref(), "Kafka");
/// assert_eq!(p, std::path::Path::new("/opt/nixl/plugins/libtelemetry_exporter_kafka.so"));
/// ```
pub fn plugin_library_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!(
        "libtelemetry_exporter_{}.so",
        name.trim().to_ascii_lowercase()
    ))
}
