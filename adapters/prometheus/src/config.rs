//! Configuration read from `NIXL_TELEMETRY_PROMETHEUS_*` and
//! `NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US`, with typed errors that name the variable at
//! fault and say what to do. Values follow the one rule of [`telering_std::parse`]:
//! trimmed, blank means unset, integers (the port, each bucket bound) are plain
//! decimal digits, booleans are its fixed set of words, lists skip empty items.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

/// Port of the metrics endpoint (default [`DEFAULT_PORT`]).
pub const ENV_PORT: &str = "NIXL_TELEMETRY_PROMETHEUS_PORT";
/// `true` binds 127.0.0.1 only; `false` (the default) binds 0.0.0.0.
pub const ENV_LOCAL: &str = "NIXL_TELEMETRY_PROMETHEUS_LOCAL";
/// Comma-separated histogram bucket bounds in microseconds.
pub const ENV_BUCKETS: &str = "NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US";

/// The port NIXL's Prometheus exporter listens on by default.
pub const DEFAULT_PORT: u16 = 9090;

/// NIXL's default latency buckets in microseconds (10 µs to 10 s).
pub const DEFAULT_BUCKETS_US: [f64; 18] = [
    10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 25000.0, 50000.0,
    100000.0, 250000.0, 500000.0, 1000000.0, 5000000.0, 10000000.0,
];

/// Largest bucket bound accepted, 2⁵³ µs (285 years): every bound up to it is exact
/// as the `f64` the histogram holds.
pub const MAX_BUCKET_US: u64 = 1 << 53;

/// Most bucket bounds accepted; each bound costs 8 bytes per histogram per agent and one
/// line per scrape, so an accidental paste of thousands of numbers is refused.
pub const MAX_BUCKETS: usize = 128;

/// Why a configuration value was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The port is not a number from 0 to 65535.
    InvalidPort {
        /// The text found.
        value: String,
    },
    /// The local flag is not a boolean.
    InvalidLocal {
        /// The text found.
        value: String,
    },
    /// A bucket bound is not a whole number of microseconds from 1 to [`MAX_BUCKET_US`].
    InvalidBucket {
        /// The whole variable.
        value: String,
        /// The offending item (1-based position and text).
        position: usize,
        /// The offending item's text.
        item: String,
    },
    /// Bucket bounds are not strictly increasing.
    BucketsNotIncreasing {
        /// The whole variable.
        value: String,
        /// 1-based position of the bound that is not larger than the one before it.
        position: usize,
    },
    /// No bucket bounds at all.
    NoBuckets,
    /// A variable's value is not UTF-8.
    NotUnicode {
        /// The variable.
        variable: &'static str,
    },
    /// More than [`MAX_BUCKETS`] bounds.
    TooManyBuckets {
        /// How many were given.
        count: usize,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::InvalidPort { value } => write!(
                f,
                "{ENV_PORT}={value:?} is not a TCP port; use a number from 0 to 65535 (default {DEFAULT_PORT})"
            ),
            ConfigError::InvalidLocal { value } => write!(
                f,
                "{ENV_LOCAL}={value:?} is not a boolean; use true (bind 127.0.0.1) or false (bind 0.0.0.0)"
            ),
            ConfigError::InvalidBucket {
                value,
                position,
                item,
            } => write!(
                f,
                "{ENV_BUCKETS}={value:?}: item {position} ({item:?}) is not a whole number of microseconds from 1 to {MAX_BUCKET_US}; use e.g. \"10,100,1000\""
            ),
            ConfigError::BucketsNotIncreasing { value, position } => write!(
                f,
                "{ENV_BUCKETS}={value:?}: item {position} is not larger than the one before it; bounds must be strictly increasing"
            ),
            ConfigError::NoBuckets => write!(
                f,
                "{ENV_BUCKETS} lists no bounds; give comma-separated bounds in microseconds or unset it for the defaults"
            ),
            ConfigError::NotUnicode { variable } => {
                write!(f, "{variable} is not valid UTF-8; set it to plain text")
            }
            ConfigError::TooManyBuckets { count } => write!(
                f,
                "{ENV_BUCKETS} lists {count} bounds; at most {MAX_BUCKETS} are accepted"
            ),
        }
    }
}

impl std::error::Error for ConfigError {}

impl ConfigError {
    /// The variable the error is about, and its value.
    pub(crate) fn variable_and_value(&self) -> (&'static str, String) {
        match self {
            ConfigError::InvalidPort { value } => (ENV_PORT, value.clone()),
            ConfigError::InvalidLocal { value } => (ENV_LOCAL, value.clone()),
            ConfigError::InvalidBucket { value, .. }
            | ConfigError::BucketsNotIncreasing { value, .. } => (ENV_BUCKETS, value.clone()),
            ConfigError::NoBuckets | ConfigError::TooManyBuckets { .. } => {
                (ENV_BUCKETS, String::new())
            }
            ConfigError::NotUnicode { variable } => (*variable, "(not UTF-8)".into()),
        }
    }
}

/// Histogram bucket upper bounds in microseconds: non-empty, whole numbers from 1 to
/// [`MAX_BUCKET_US`], strictly increasing. The `+Inf` bucket is implicit.
///
/// ```
/// use telering_prometheus::Buckets;
/// let b = Buckets::parse("10, 100,1000").unwrap();
/// assert_eq!(b.bounds(), &[10.0, 100.0, 1000.0]);
/// assert!(Buckets::parse("10,5").is_err());
/// assert!(Buckets::parse("1e3").is_err() && Buckets::parse("0.5").is_err());
/// assert_eq!(Buckets::default().bounds().len(), 18);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Buckets(Vec<f64>);

impl Buckets {
    /// Parses a comma-separated list such as `10,25,50` (items trimmed, empty items
    /// skipped; positions in errors count the items given).
    pub fn parse(text: &str) -> Result<Buckets, ConfigError> {
        let items: Vec<&str> = telering_std::parse::list(text).collect();
        if items.is_empty() {
            return Err(ConfigError::NoBuckets);
        }
        if items.len() > MAX_BUCKETS {
            return Err(ConfigError::TooManyBuckets { count: items.len() });
        }
        let mut bounds: Vec<u64> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let bound = telering_std::parse::unsigned(item)
                .ok()
                .filter(|b| (1..=MAX_BUCKET_US).contains(b))
                .ok_or_else(|| ConfigError::InvalidBucket {
                    value: text.to_owned(),
                    position: i + 1,
                    item: (*item).to_owned(),
                })?;
            if bounds.last().is_some_and(|&last| bound <= last) {
                return Err(ConfigError::BucketsNotIncreasing {
                    value: text.to_owned(),
                    position: i + 1,
                });
            }
            bounds.push(bound);
        }
        // Exact: every bound is at most 2^53.
        Ok(Buckets(bounds.into_iter().map(|b| b as f64).collect()))
    }

    /// The upper bounds, without `+Inf`.
    pub fn bounds(&self) -> &[f64] {
        &self.0
    }
}

impl Default for Buckets {
    fn default() -> Self {
        Buckets(DEFAULT_BUCKETS_US.to_vec())
    }
}

/// Everything the endpoint reads from the environment.
///
/// ```
/// use telering_prometheus::PrometheusConfig;
/// let c = PrometheusConfig::from_lookup(|name| match name {
///     "NIXL_TELEMETRY_PROMETHEUS_PORT" => Some("9400".into()),
///     "NIXL_TELEMETRY_PROMETHEUS_LOCAL" => Some("true".into()),
///     _ => None,
/// }).unwrap();
/// assert_eq!(c.bind_addr().to_string(), "127.0.0.1:9400");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PrometheusConfig {
    /// TCP port; 0 picks a free one.
    pub port: u16,
    /// Bind 127.0.0.1 instead of 0.0.0.0.
    pub local: bool,
    /// Histogram buckets in microseconds.
    pub buckets: Buckets,
}

impl Default for PrometheusConfig {
    fn default() -> Self {
        PrometheusConfig {
            port: DEFAULT_PORT,
            local: false,
            buckets: Buckets::default(),
        }
    }
}

impl PrometheusConfig {
    /// Reads the configuration through `lookup` (an environment variable lookup), so it
    /// can be tested without touching the process environment. Values are trimmed;
    /// unset or blank variables take their defaults.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<PrometheusConfig, ConfigError> {
        let get = |name: &str| {
            lookup(name).and_then(|v| telering_std::parse::value(&v).map(str::to_owned))
        };
        let mut config = PrometheusConfig::default();
        if let Some(value) = get(ENV_PORT) {
            config.port = telering_std::parse::unsigned(&value)
                .ok()
                .and_then(|p| u16::try_from(p).ok())
                .ok_or(ConfigError::InvalidPort { value })?;
        }
        if let Some(value) = get(ENV_LOCAL) {
            config.local = parse_bool(&value).ok_or(ConfigError::InvalidLocal { value })?;
        }
        if let Some(value) = get(ENV_BUCKETS) {
            config.buckets = Buckets::parse(&value)?;
        }
        Ok(config)
    }

    /// Reads the configuration from the process environment; a value that is not
    /// UTF-8 is an error naming the variable.
    pub fn from_env() -> Result<PrometheusConfig, ConfigError> {
        for variable in [ENV_PORT, ENV_LOCAL, ENV_BUCKETS] {
            if std::env::var_os(variable).is_some_and(|v| v.into_string().is_err()) {
                return Err(ConfigError::NotUnicode { variable });
            }
        }
        PrometheusConfig::from_lookup(|name| std::env::var(name).ok())
    }

    /// The address to bind: 127.0.0.1 or 0.0.0.0 with the configured port.
    pub fn bind_addr(&self) -> SocketAddr {
        let ip = if self.local {
            Ipv4Addr::LOCALHOST
        } else {
            Ipv4Addr::UNSPECIFIED
        };
        SocketAddr::new(IpAddr::V4(ip), self.port)
    }
}

/// A boolean by [`telering_std::parse::boolean`]: `true`/`false`, `1`/`0`, `yes`/`no`,
/// `on`/`off`, `y`/`n`, `enable`/`disable`, any case.
pub(crate) fn parse_bool(text: &str) -> Option<bool> {
    telering_std::parse::boolean(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn defaults_are_port_9090_on_all_interfaces_with_nixl_buckets() {
        let c = PrometheusConfig::from_lookup(lookup(&[])).unwrap();
        assert_eq!(c.bind_addr().to_string(), "0.0.0.0:9090");
        assert_eq!(c.buckets.bounds(), &DEFAULT_BUCKETS_US);
    }

    #[test]
    fn malformed_variables_are_typed_errors_naming_the_variable() {
        let e = PrometheusConfig::from_lookup(lookup(&[(ENV_PORT, "99999")])).unwrap_err();
        assert!(matches!(e, ConfigError::InvalidPort { .. }));
        assert!(e.to_string().contains(ENV_PORT));
        let e = PrometheusConfig::from_lookup(lookup(&[(ENV_LOCAL, "maybe")])).unwrap_err();
        assert!(e.to_string().contains(ENV_LOCAL));
        let e = PrometheusConfig::from_lookup(lookup(&[(ENV_BUCKETS, "10,x,30")])).unwrap_err();
        assert_eq!(
            e,
            ConfigError::InvalidBucket {
                value: "10,x,30".into(),
                position: 2,
                item: "x".into()
            }
        );
        assert!(e.to_string().contains(ENV_BUCKETS));
        let e = PrometheusConfig::from_lookup(lookup(&[(ENV_BUCKETS, "10,10")])).unwrap_err();
        assert!(matches!(
            e,
            ConfigError::BucketsNotIncreasing { position: 2, .. }
        ));
        for bad in [
            "-1",
            "0",
            "inf",
            "NaN",
            "+10",
            "1e3",
            "0.5",
            "10.0",
            "18446744073709551616",
            "9007199254740993",
        ] {
            assert!(Buckets::parse(bad).is_err(), "{bad} accepted");
        }
        assert_eq!(Buckets::parse(" "), Err(ConfigError::NoBuckets));
        assert_eq!(Buckets::parse(" , "), Err(ConfigError::NoBuckets));
        let many = vec!["1"; MAX_BUCKETS + 1].join(",");
        assert!(matches!(
            Buckets::parse(&many),
            Err(ConfigError::TooManyBuckets { .. })
        ));
    }

    /// The rule of `telering_std::parse` for every variable read here.
    #[test]
    fn every_variable_follows_the_one_parsing_rule() {
        let read = |pairs: &[(&str, &str)]| PrometheusConfig::from_lookup(lookup(pairs));
        // Blank is unset, for the buckets too.
        for blank in ["", " ", "\n"] {
            let c = read(&[(ENV_PORT, blank), (ENV_LOCAL, blank), (ENV_BUCKETS, blank)]).unwrap();
            assert_eq!(c, PrometheusConfig::default(), "{blank:?}");
        }
        // Trimmed.
        let c = read(&[
            (ENV_PORT, " 9400\n"),
            (ENV_LOCAL, "\tyes "),
            (ENV_BUCKETS, " 10, 20 ,\n"),
        ])
        .unwrap();
        assert_eq!(
            (c.port, c.local, c.buckets.bounds()),
            (9400, true, &[10.0, 20.0][..])
        );
        // Integers are plain digits only.
        for bad in [
            "+9400",
            "-1",
            "9400.0",
            "9e3",
            "0x2000",
            "65536",
            "18446744073709551616",
        ] {
            let e = read(&[(ENV_PORT, bad)]).unwrap_err();
            assert!(matches!(e, ConfigError::InvalidPort { .. }), "{bad}");
        }
        for bad in ["10,1e3", "0.5", "10,18446744073709551616", "+5"] {
            let e = read(&[(ENV_BUCKETS, bad)]).unwrap_err();
            assert!(matches!(e, ConfigError::InvalidBucket { .. }), "{bad}: {e}");
            assert!(e.to_string().starts_with(ENV_BUCKETS), "{e}");
        }
    }

    #[test]
    fn local_accepts_the_usual_boolean_spellings() {
        for (text, want) in [("TRUE", true), ("1", true), ("off", false), ("no", false)] {
            let c = PrometheusConfig::from_lookup(lookup(&[(ENV_LOCAL, text)])).unwrap();
            assert_eq!(c.local, want, "{text}");
        }
    }
}
