//! The `prometheus_mp` variables, with NIXL's names and defaults.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::config::{ConfigError as PromConfigError, PrometheusConfig};

/// The directory every rank of a node shares; required.
pub const ENV_MULTIPROC_DIR: &str = "NIXL_TELEMETRY_MULTIPROC_DIR";
/// Seconds after a rank's death at which its series are dropped.
pub const ENV_STALE_TTL: &str = "NIXL_TELEMETRY_MP_STALE_TTL";
/// The name of the variable holding the rank's `local_rank` label.
pub const ENV_RANK_ENV: &str = "NIXL_TELEMETRY_RANK_ENV";
/// Default of [`ENV_STALE_TTL`].
pub const DEFAULT_STALE_TTL: Duration = Duration::from_secs(30);
/// Default of [`ENV_RANK_ENV`].
pub const DEFAULT_RANK_ENV: &str = "LOCAL_RANK";
/// The `local_rank` label when the rank variable is unset.
pub const UNKNOWN_RANK: &str = "unknown";

/// A `prometheus_mp` variable with a value that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MultiprocConfigError {
    /// `NIXL_TELEMETRY_MULTIPROC_DIR` is unset or empty.
    MissingDir,
    /// `NIXL_TELEMETRY_MP_STALE_TTL` is not a non-negative number of seconds.
    InvalidTtl {
        /// The value given.
        value: String,
    },
    /// `NIXL_TELEMETRY_RANK_ENV` is not a variable name.
    InvalidRankEnv {
        /// The value given.
        value: String,
    },
    /// A variable shared with the `prometheus` exporter is invalid.
    Prometheus(PromConfigError),
}

impl MultiprocConfigError {
    /// The variable the error is about.
    pub fn variable(&self) -> &'static str {
        match self {
            MultiprocConfigError::MissingDir => ENV_MULTIPROC_DIR,
            MultiprocConfigError::InvalidTtl { .. } => ENV_STALE_TTL,
            MultiprocConfigError::InvalidRankEnv { .. } => ENV_RANK_ENV,
            MultiprocConfigError::Prometheus(e) => e.variable_and_value().0,
        }
    }

    /// The offending value (empty when the variable is missing).
    pub fn value(&self) -> String {
        match self {
            MultiprocConfigError::MissingDir => String::new(),
            MultiprocConfigError::InvalidTtl { value }
            | MultiprocConfigError::InvalidRankEnv { value } => value.clone(),
            MultiprocConfigError::Prometheus(e) => e.variable_and_value().1,
        }
    }
}

impl fmt::Display for MultiprocConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MultiprocConfigError::MissingDir => write!(
                f,
                "{ENV_MULTIPROC_DIR} is not set; prometheus_mp needs a directory shared by every rank of the node, e.g. {ENV_MULTIPROC_DIR}=/dev/shm/telering-mp"
            ),
            MultiprocConfigError::InvalidTtl { value } => write!(
                f,
                "{ENV_STALE_TTL}={value} is not a number of seconds; use e.g. 30 or 0.5"
            ),
            MultiprocConfigError::InvalidRankEnv { value } => write!(
                f,
                "{ENV_RANK_ENV}={value} is not an environment variable name; use e.g. LOCAL_RANK"
            ),
            MultiprocConfigError::Prometheus(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for MultiprocConfigError {}

/// The configuration of the `prometheus_mp` exporter.
///
/// ```
/// use telering_prometheus::multiproc::MultiprocConfig;
/// let env = |name: &str| match name {
///     "NIXL_TELEMETRY_MULTIPROC_DIR" => Some("/tmp/mp".to_string()),
///     "NIXL_TELEMETRY_MP_STALE_TTL" => Some("2.5".to_string()),
///     "LOCAL_RANK" => Some("3".to_string()),
///     _ => None,
/// };
/// let config = MultiprocConfig::from_lookup(env).unwrap();
/// assert_eq!(config.local_rank, "3");
/// assert_eq!(config.stale_ttl.as_millis(), 2500);
/// assert!(MultiprocConfig::from_lookup(|_| None).is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct MultiprocConfig {
    /// Where every rank keeps its store file.
    pub dir: PathBuf,
    /// Port, bind address and histogram buckets, as for the `prometheus` exporter.
    pub prometheus: PrometheusConfig,
    /// How long a dead rank's series stay.
    pub stale_ttl: Duration,
    /// The `local_rank` label value.
    pub local_rank: String,
}

impl MultiprocConfig {
    /// Reads the configuration through `lookup`; unset or empty variables take their
    /// defaults, except the required directory.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<MultiprocConfig, MultiprocConfigError> {
        let get = |name: &str| {
            lookup(name).and_then(|v| telering_std::parse::value(&v).map(str::to_owned))
        };
        let dir = get(ENV_MULTIPROC_DIR).ok_or(MultiprocConfigError::MissingDir)?;
        let stale_ttl = match get(ENV_STALE_TTL) {
            None => DEFAULT_STALE_TTL,
            Some(value) => value
                .parse::<f64>()
                .ok()
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .ok_or(MultiprocConfigError::InvalidTtl { value })?,
        };
        let rank_env = get(ENV_RANK_ENV).unwrap_or_else(|| DEFAULT_RANK_ENV.to_string());
        let valid_name = rank_env
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !rank_env.starts_with(|c: char| c.is_ascii_digit());
        if !valid_name {
            return Err(MultiprocConfigError::InvalidRankEnv { value: rank_env });
        }
        let local_rank = get(&rank_env).unwrap_or_else(|| UNKNOWN_RANK.to_string());
        let prometheus =
            PrometheusConfig::from_lookup(&lookup).map_err(MultiprocConfigError::Prometheus)?;
        Ok(MultiprocConfig {
            dir: PathBuf::from(dir),
            prometheus,
            stale_ttl,
            local_rank,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<MultiprocConfig, MultiprocConfigError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        MultiprocConfig::from_lookup(move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn defaults_follow_nixl() {
        let c = with(&[(ENV_MULTIPROC_DIR, "/d")]).unwrap();
        assert_eq!(c.stale_ttl, Duration::from_secs(30));
        assert_eq!(c.local_rank, UNKNOWN_RANK);
        assert_eq!(c.prometheus.port, crate::DEFAULT_PORT);
    }

    #[test]
    fn the_rank_variable_can_be_renamed() {
        let c = with(&[
            (ENV_MULTIPROC_DIR, "/d"),
            (ENV_RANK_ENV, "OMPI_COMM_WORLD_LOCAL_RANK"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "5"),
            ("LOCAL_RANK", "1"),
        ])
        .unwrap();
        assert_eq!(c.local_rank, "5");
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (pairs, variable) in [
            (vec![], ENV_MULTIPROC_DIR),
            (vec![(ENV_STALE_TTL, "soon")], ENV_STALE_TTL),
            (vec![(ENV_STALE_TTL, "-1")], ENV_STALE_TTL),
            (vec![(ENV_RANK_ENV, "A=B")], ENV_RANK_ENV),
            (
                vec![("NIXL_TELEMETRY_PROMETHEUS_PORT", "99999")],
                "NIXL_TELEMETRY_PROMETHEUS_PORT",
            ),
        ] {
            let mut pairs = pairs;
            if variable != ENV_MULTIPROC_DIR {
                pairs.push((ENV_MULTIPROC_DIR, "/d"));
            }
            let e = with(&pairs).unwrap_err();
            assert_eq!(e.variable(), variable);
            assert!(e.to_string().contains(variable), "{e}");
        }
    }
}
