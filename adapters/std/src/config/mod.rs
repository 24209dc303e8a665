//! Configuration: the [`TelemetryBuilder`] and the `NIXL_TELEMETRY_*` variables.
//!
//! Every variable has a builder method; [`TelemetryBuilder::from_env`] is a thin layer
//! that parses the variables from an [`EnvSource`] and calls those methods, so a
//! program can read the environment and then apply its own flags on top.
//!
//! Every value is read by the one rule of [`crate::parse`]: trimmed, empty means
//! unset, integers are plain decimal digits (no sign, fraction or exponent), booleans
//! are one fixed set of words, lists skip empty items — except the exporter list,
//! which refuses an empty entry and a name listed twice (rule 7).
//!
//! The variables, their defaults and rules are listed once, in the workspace README's
//! table (*Environment variables*). Each maps to one builder method:
//! `NIXL_TELEMETRY_ENABLE` → [`enabled`](TelemetryBuilder::enabled),
//! `NIXL_TELEMETRY_ENABLED_METRICS` → [`enabled_metrics`](TelemetryBuilder::enabled_metrics),
//! `NIXL_TELEMETRY_BUFFER_SIZE` → [`buffer_size`](TelemetryBuilder::buffer_size) (at most
//! [`MAX_BUFFER_SIZE`]), `NIXL_TELEMETRY_RUN_INTERVAL` →
//! [`run_interval`](TelemetryBuilder::run_interval) (at most [`MAX_RUN_INTERVAL`]),
//! `NIXL_TELEMETRY_EXPORTER` → [`exporter`](TelemetryBuilder::exporter) (names in the
//! [`ExporterRegistry`](crate::ExporterRegistry), or plug-ins), `NIXL_TELEMETRY_DIR` → [`dir`](TelemetryBuilder::dir),
//! `TELERING_CLOCK` → [`clock`](TelemetryBuilder::clock) ([`ClockSource`](crate::ClockSource)).
//!
//! How they combine ([`TelemetryBuilder::resolve`]):
//!
//! - not enabled and [`capture_telemetry`](TelemetryBuilder::capture_telemetry) off →
//!   [`Mode::Disabled`]: recording does nothing (answering
//!   [`Recorded::Disabled`](crate::Recorded::Disabled)), per-transfer telemetry
//!   answers [`XferError::NoTelemetry`](crate::XferError::NoTelemetry);
//! - enabled with an exporter → [`Mode::Export`] with it;
//! - enabled, no exporter, `DIR` set → [`Mode::Export`] with the registry's
//!   directory default
//!   ([`ExporterRegistry::dir_default`](crate::ExporterRegistry::dir_default)):
//!   `buffer` (`DIR/<agent>`), which registers itself as such;
//! - enabled, no exporter, no `DIR` → [`Mode::Capture`]: per-transfer and backend
//!   telemetry work in process, nothing is written, `RUN_INTERVAL` is unused;
//! - `capture_telemetry` on but not enabled → [`Mode::Capture`] too.
//!
//! Errors are [`ConfigError`]s whose text names the variable, the value and what to
//! use instead; the program decides whether to run without telemetry. Warnings are
//! collected as [`ConfigWarning`]s and logged through `log` when the
//! [`Telemetry`](crate::Telemetry) is built.
//!
//! Every variable may also be set in NIXL's configuration file (`$NIXL_CONFIG_FILE`,
//! `~/.nixl.cfg` or `/etc/nixl.cfg`, TOML); the environment wins over it. See
//! [`file`](mod@file).
//!
//! This module is where configuration comes from, and it depends on nothing else
//! in the crate but [`crate::parse`]: [`vars`] names every variable and holds the
//! defaults, limits and the plug-in file naming; [`env`](mod@env) reads them
//! ([`EnvSource`]); [`file`](mod@file) reads NIXL's configuration file under the
//! environment. The exporters ([`crate::export`]), the plug-in loader
//! ([`crate::plugin`]) and the builder (`builder`) read from it. The builder's items
//! keep their public path here ([`TelemetryBuilder`], [`ConfigError`], [`Mode`], …);
//! the re-export below is a path only, nothing in this module uses them.

pub mod env;
pub mod file;
pub mod vars;

pub use self::env::{EnvError, EnvSource};
pub use self::file::{ConfigFile, ConfigFileError, FileSearch, Source};
pub use self::vars::{
    DEFAULT_BUFFER_SIZE, DEFAULT_RUN_INTERVAL, MAX_BUFFER_SIZE, MAX_RUN_INTERVAL,
    is_telering_variable,
};

// The builder's public path (`telering_std::config::TelemetryBuilder`, …).
#[doc(no_inline)]
pub use crate::builder::{
    ConfigError, ConfigWarning, Mode, ResolvedConfig, TelemetryBuilder, check_buffer_size,
    check_dir, parse_enable,
};
