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
    /// `NIXL_TELEMETRY_MP_STALE_TTL` is not a number of seconds: plain decimal digits,
    /// with at most three after a decimal point (milliseconds); no sign, no exponent.
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

impl MultiprocConfigError {
    /// What is wrong with the value and what to use, without naming the variable (for
    /// messages that name it already, as `ExportError::Config` does).
    pub fn reason(&self) -> String {
        match self {
            MultiprocConfigError::MissingDir => format!(
                "is not set; prometheus_mp needs a directory shared by every rank of the node, e.g. {ENV_MULTIPROC_DIR}=/dev/shm/telering-mp"
            ),
            MultiprocConfigError::InvalidTtl { .. } => "is not a number of seconds: plain decimal digits, at most three after the point (no sign, no exponent); use e.g. 30 or 0.5".to_string(),
            MultiprocConfigError::InvalidRankEnv { .. } => {
                "is not an environment variable name; use e.g. LOCAL_RANK".to_string()
            }
            MultiprocConfigError::Prometheus(e) => e.to_string(),
        }
    }
}

impl fmt::Display for MultiprocConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MultiprocConfigError::MissingDir => {
                write!(f, "{ENV_MULTIPROC_DIR} {}", self.reason())
            }
            MultiprocConfigError::InvalidTtl { value } => {
                write!(f, "{ENV_STALE_TTL}={value} {}", self.reason())
            }
            MultiprocConfigError::InvalidRankEnv { value } => {
                write!(f, "{ENV_RANK_ENV}={value} {}", self.reason())
            }
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
            Some(value) => seconds(&value).ok_or(MultiprocConfigError::InvalidTtl { value })?,
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

/// A number of seconds by the rule of every telering number (`telering_std::parse`:
/// plain decimal digits, no sign or exponent, too large is an error), with up to three
/// digits after a decimal point for milliseconds.
fn seconds(text: &str) -> Option<Duration> {
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) if (1..=3).contains(&f.len()) => (w, f),
        Some(_) => return None,
        None => (text, ""),
    };
    let secs = telering_std::parse::unsigned(whole).ok()?;
    let millis = if fraction.is_empty() {
        0
    } else {
        let digits = telering_std::parse::unsigned(fraction).ok()?;
        digits * 10u64.pow(3 - fraction.len() as u32)
    };
    Duration::from_secs(secs).checked_add(Duration::from_millis(millis))
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
    fn the_ttl_is_read_by_the_rule_of_every_number() {
        let ttl = |v: &str| with(&[(ENV_MULTIPROC_DIR, "/d"), (ENV_STALE_TTL, v)]);
        for (value, expected) in [
            ("30", Duration::from_secs(30)),
            ("0", Duration::ZERO),
            ("0.5", Duration::from_millis(500)),
            ("2.25", Duration::from_millis(2250)),
            ("1.001", Duration::from_millis(1001)),
        ] {
            assert_eq!(ttl(value).unwrap().stale_ttl, expected, "{value}");
        }
        for value in [
            "1e3",
            "1e-400",
            "-0",
            "+5",
            "0.0000001",
            "1e20",
            ".5",
            "5.",
            "1.2.3",
            "0x10",
            "100000000000000000000",
        ] {
            let e = ttl(value).unwrap_err();
            assert_eq!(
                e,
                MultiprocConfigError::InvalidTtl {
                    value: value.to_string()
                },
                "{value}"
            );
            assert!(!e.reason().contains(ENV_STALE_TTL), "{}", e.reason());
            assert_eq!(e.to_string().matches(ENV_STALE_TTL).count(), 1, "{e}");
        }
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
