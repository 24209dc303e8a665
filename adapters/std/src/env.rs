//! Where the `NIXL_TELEMETRY_*` variables come from: their names, their defaults and
//! limits, and the [`EnvSource`] they are read from (a snapshot of the process
//! environment, or pairs a program gives).
//!
//! This module knows nothing of exporters or of the builder, so exporters read their
//! own variables from the [`EnvSource`] in their
//! [`ExporterContext`](crate::ExporterContext) without depending on configuration.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// The variable names.
pub mod vars {
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
    /// Prefix of every telemetry variable.
    pub const PREFIX: &str = "NIXL_TELEMETRY_";
    /// The layout of the ring file the `buffer` exporter writes, `v1` or `v4`
    /// (telering's own variable: NIXL has no such setting).
    pub const RING_LAYOUT: &str = telering_shm::RING_LAYOUT_VAR;
}

/// `NIXL_TELEMETRY_BUFFER_SIZE` when unset.
pub const DEFAULT_BUFFER_SIZE: u32 = 4096;
/// Largest accepted `NIXL_TELEMETRY_BUFFER_SIZE`: 2²⁰ events, 56 MiB per ring.
pub const MAX_BUFFER_SIZE: u32 = 1 << 20;
/// `NIXL_TELEMETRY_RUN_INTERVAL` when unset.
pub const DEFAULT_RUN_INTERVAL: Duration = Duration::from_millis(100);
/// Longest accepted `NIXL_TELEMETRY_RUN_INTERVAL`: one day.
pub const MAX_RUN_INTERVAL: Duration = Duration::from_secs(24 * 3600);

/// Where `NIXL_TELEMETRY_*` variables are read from: a snapshot of the process
/// environment, or pairs given by the program (tests use these instead of changing
/// the process environment).
///
/// ```
/// use telering_std::EnvSource;
/// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_ENABLE", "y")]);
/// assert_eq!(env.get("NIXL_TELEMETRY_ENABLE").unwrap().as_deref(), Some("y"));
/// assert_eq!(env.get("NIXL_TELEMETRY_DIR").unwrap(), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvSource {
    vars: Arc<BTreeMap<String, OsString>>,
}

impl EnvSource {
    /// No variables set.
    ///
    /// ```
    /// let env = telering_std::EnvSource::empty();
    /// assert_eq!(env.names().count(), 0);
    /// ```
    pub fn empty() -> EnvSource {
        EnvSource::default()
    }

    /// A snapshot of the process's `NIXL_TELEMETRY_*` and `TELERING_*` variables
    /// (telering's own, such as `TELERING_CLOCK`), taken now.
    ///
    /// ```
    /// let env = telering_std::EnvSource::from_process();
    /// assert!(env.names().all(|n| n.starts_with("NIXL_TELEMETRY_") || n.starts_with("TELERING_")));
    /// ```
    pub fn from_process() -> EnvSource {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| {
                let k = k.into_string().ok()?;
                (k.starts_with(vars::PREFIX) || k.starts_with("TELERING_")).then_some((k, v))
            })
            .collect();
        EnvSource {
            vars: Arc::new(vars),
        }
    }

    /// The given variables.
    ///
    /// ```
    /// let env = telering_std::EnvSource::from_pairs([("NIXL_TELEMETRY_DIR", "/tmp/t")]);
    /// assert_eq!(env.get("NIXL_TELEMETRY_DIR").unwrap().as_deref(), Some("/tmp/t"));
    /// ```
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> EnvSource
    where
        K: Into<String>,
        V: Into<OsString>,
    {
        EnvSource {
            vars: Arc::new(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
        }
    }

    /// A copy with `name` set to `value`.
    ///
    /// ```
    /// let env = telering_std::EnvSource::empty();
    /// let more = env.with("NIXL_TELEMETRY_ENABLE", "y");
    /// assert_eq!(more.get("NIXL_TELEMETRY_ENABLE").unwrap().as_deref(), Some("y"));
    /// assert_eq!(env.get("NIXL_TELEMETRY_ENABLE").unwrap(), None); // a copy
    /// ```
    pub fn with(&self, name: impl Into<String>, value: impl Into<OsString>) -> EnvSource {
        let mut vars = (*self.vars).clone();
        vars.insert(name.into(), value.into());
        EnvSource {
            vars: Arc::new(vars),
        }
    }

    /// The value of `name`, or [`EnvError::NotUnicode`] if it is not UTF-8.
    ///
    /// ```
    /// use std::os::unix::ffi::OsStringExt;
    /// use telering_std::{EnvError, EnvSource};
    /// let env = EnvSource::from_pairs([("A", std::ffi::OsString::from_vec(vec![0xff]))]);
    /// assert_eq!(env.get("A"), Err(EnvError::NotUnicode { variable: "A".into() }));
    /// assert_eq!(env.get("B"), Ok(None));
    /// ```
    pub fn get(&self, name: &str) -> Result<Option<String>, EnvError> {
        match self.vars.get(name) {
            None => Ok(None),
            Some(v) => v
                .clone()
                .into_string()
                .map(Some)
                .map_err(|_| EnvError::NotUnicode {
                    variable: name.to_string(),
                }),
        }
    }

    /// The value of `name` by [`crate::parse::value`]: trimmed, `None` when unset or
    /// blank.
    ///
    /// ```
    /// use telering_std::EnvSource;
    /// let env = EnvSource::from_pairs([("A", " 1024\n"), ("B", "  ")]);
    /// assert_eq!(env.get_trimmed("A").unwrap().as_deref(), Some("1024"));
    /// assert_eq!(env.get_trimmed("B").unwrap(), None);
    /// ```
    pub fn get_trimmed(&self, name: &str) -> Result<Option<String>, EnvError> {
        Ok(self
            .get(name)?
            .and_then(|v| crate::parse::value(&v).map(str::to_string)))
    }

    /// The names of the variables that are set, sorted.
    ///
    /// ```
    /// let env = telering_std::EnvSource::from_pairs([("B", "1"), ("A", "2")]);
    /// assert_eq!(env.names().collect::<Vec<_>>(), ["A", "B"]);
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(String::as_str)
    }
}

/// A variable that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnvError {
    /// A variable's value is not UTF-8.
    NotUnicode {
        /// The variable.
        variable: String,
    },
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvError::NotUnicode { variable } => {
                write!(f, "{variable} is not valid UTF-8; set it to plain text")
            }
        }
    }
}

impl std::error::Error for EnvError {}
