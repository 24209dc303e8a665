//! The exporter's configuration from the standard OpenTelemetry variables.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` | — | full URL, used as is; takes precedence |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | `http://localhost:4318` | base URL; `/v1/metrics` is appended |
//! | `OTEL_EXPORTER_OTLP_HEADERS` | — | `key=value,key=value`, values percent-decoded |
//! | `OTEL_EXPORTER_OTLP_TIMEOUT` | `10000` | milliseconds per request |
//! | `OTEL_EXPORTER_OTLP_COMPRESSION` | `none` | `gzip` or `none` for the request body |
//! | `OTEL_METRIC_EXPORT_INTERVAL` | `60000` | milliseconds between exports |
//! | `OTEL_RESOURCE_ATTRIBUTES` | — | `key=value,key=value` resource attributes |
//! | `OTEL_SERVICE_NAME` | `unknown_service:<executable>` | `service.name`; wins over the attributes |
//! | `TELERING_OTLP_SHUTDOWN_TIMEOUT` | `2000` | milliseconds the last push at shutdown may take |
//!
//! As the specification says, the metrics-only forms `OTEL_EXPORTER_OTLP_METRICS_HEADERS`,
//! `OTEL_EXPORTER_OTLP_METRICS_TIMEOUT` and `OTEL_EXPORTER_OTLP_METRICS_COMPRESSION` win
//! over the general ones when set (the general one is then not read at all).

use std::fmt;
use std::time::Duration;

/// `OTEL_EXPORTER_OTLP_ENDPOINT`.
pub const ENV_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`.
pub const ENV_METRICS_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT";
/// `OTEL_EXPORTER_OTLP_HEADERS`.
pub const ENV_HEADERS: &str = "OTEL_EXPORTER_OTLP_HEADERS";
/// `OTEL_EXPORTER_OTLP_TIMEOUT`.
pub const ENV_TIMEOUT: &str = "OTEL_EXPORTER_OTLP_TIMEOUT";
/// `OTEL_EXPORTER_OTLP_METRICS_HEADERS`.
pub const ENV_METRICS_HEADERS: &str = "OTEL_EXPORTER_OTLP_METRICS_HEADERS";
/// `OTEL_EXPORTER_OTLP_METRICS_TIMEOUT`.
pub const ENV_METRICS_TIMEOUT: &str = "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT";
/// `OTEL_EXPORTER_OTLP_COMPRESSION`.
pub const ENV_COMPRESSION: &str = "OTEL_EXPORTER_OTLP_COMPRESSION";
/// `OTEL_EXPORTER_OTLP_METRICS_COMPRESSION`.
pub const ENV_METRICS_COMPRESSION: &str = "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION";
/// `OTEL_METRIC_EXPORT_INTERVAL`.
pub const ENV_INTERVAL: &str = "OTEL_METRIC_EXPORT_INTERVAL";
/// `OTEL_RESOURCE_ATTRIBUTES`.
pub const ENV_RESOURCE: &str = "OTEL_RESOURCE_ATTRIBUTES";
/// `OTEL_SERVICE_NAME`.
pub const ENV_SERVICE_NAME: &str = "OTEL_SERVICE_NAME";

/// `TELERING_OTLP_SHUTDOWN_TIMEOUT`: the bound on the last push at shutdown.
pub const ENV_SHUTDOWN_TIMEOUT: &str = "TELERING_OTLP_SHUTDOWN_TIMEOUT";

/// The default base endpoint.
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// A malformed variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The variable.
    pub variable: &'static str,
    /// Its value.
    pub value: String,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?}: {}", self.variable, self.value, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// How request bodies are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Compression {
    /// As is (the specification's default).
    #[default]
    None,
    /// gzip (`Content-Encoding: gzip`); about a tenth of the bytes on the wire, see
    /// `BENCHMARKS.md`.
    Gzip,
}

/// Where and how often to push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The URL requests are POSTed to.
    pub endpoint: String,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Request body encoding.
    pub compression: Compression,
    /// Time between exports.
    pub interval: Duration,
    /// Resource attributes, `service.name` first.
    pub resource: Vec<(String, String)>,
    /// The longest the last push at shutdown may take, a push under way included
    /// (`TELERING_OTLP_SHUTDOWN_TIMEOUT`, default 2 s): shutting down never waits a
    /// whole request `timeout` for a collector that does not answer.
    pub shutdown_timeout: Duration,
}

impl OtlpConfig {
    /// Reads the configuration through `lookup` (unset variables are `None`).
    ///
    /// ```
    /// use telering_otlp::OtlpConfig;
    /// let config = OtlpConfig::from_lookup(|name| match name {
    ///     "OTEL_EXPORTER_OTLP_ENDPOINT" => Some("http://collector:4318/".into()),
    ///     "OTEL_SERVICE_NAME" => Some("trainer".into()),
    ///     _ => None,
    /// })
    /// .unwrap();
    /// assert_eq!(config.endpoint, "http://collector:4318/v1/metrics");
    /// assert_eq!(config.resource[0], ("service.name".into(), "trainer".into()));
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<OtlpConfig, ConfigError> {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let endpoint = match (get(ENV_METRICS_ENDPOINT), get(ENV_ENDPOINT)) {
            (Some(url), _) => check_url(ENV_METRICS_ENDPOINT, url)?,
            (None, Some(base)) => {
                let base = check_url(ENV_ENDPOINT, base)?;
                format!("{}/v1/metrics", base.trim_end_matches('/'))
            }
            (None, None) => format!("{DEFAULT_ENDPOINT}/v1/metrics"),
        };
        // The metrics-only variable, when set, or else the general one.
        let pick = |metrics: &'static str, general: &'static str| match get(metrics) {
            Some(v) => (metrics, Some(v)),
            None => (general, get(general)),
        };
        let headers = match pick(ENV_METRICS_HEADERS, ENV_HEADERS) {
            (name, Some(v)) => parse_pairs(name, &v)?,
            (_, None) => Vec::new(),
        };
        let (name, value) = pick(ENV_METRICS_TIMEOUT, ENV_TIMEOUT);
        let timeout = millis(name, value, 10_000)?;
        let compression = match pick(ENV_METRICS_COMPRESSION, ENV_COMPRESSION) {
            (_, None) => Compression::None,
            (_, Some(v)) if v.eq_ignore_ascii_case("none") => Compression::None,
            (_, Some(v)) if v.eq_ignore_ascii_case("gzip") => Compression::Gzip,
            (variable, Some(value)) => {
                return Err(ConfigError {
                    variable,
                    value,
                    message: "expected gzip or none".into(),
                });
            }
        };
        let interval = millis(ENV_INTERVAL, get(ENV_INTERVAL), 60_000)?;
        let shutdown_timeout = millis(ENV_SHUTDOWN_TIMEOUT, get(ENV_SHUTDOWN_TIMEOUT), 2_000)?;
        let mut attributes = match get(ENV_RESOURCE) {
            Some(v) => parse_pairs(ENV_RESOURCE, &v)?,
            None => Vec::new(),
        };
        let from_attributes = attributes
            .iter()
            .position(|(k, _)| k == "service.name")
            .map(|i| attributes.remove(i).1);
        let service = get(ENV_SERVICE_NAME)
            .or(from_attributes)
            .unwrap_or_else(default_service_name);
        let mut resource = vec![("service.name".to_owned(), service)];
        resource.extend(attributes);
        Ok(OtlpConfig {
            endpoint,
            headers,
            timeout,
            compression,
            interval,
            resource,
            shutdown_timeout,
        })
    }

    /// Reads the configuration from the process environment.
    pub fn from_process_env() -> Result<OtlpConfig, ConfigError> {
        for name in [
            ENV_ENDPOINT,
            ENV_METRICS_ENDPOINT,
            ENV_HEADERS,
            ENV_METRICS_HEADERS,
            ENV_TIMEOUT,
            ENV_METRICS_TIMEOUT,
            ENV_COMPRESSION,
            ENV_METRICS_COMPRESSION,
            ENV_INTERVAL,
            ENV_RESOURCE,
            ENV_SERVICE_NAME,
            ENV_SHUTDOWN_TIMEOUT,
        ] {
            if let Err(std::env::VarError::NotUnicode(v)) = std::env::var(name) {
                return Err(ConfigError {
                    variable: name,
                    value: v.to_string_lossy().into_owned(),
                    message: "the value is not valid UTF-8".into(),
                });
            }
        }
        OtlpConfig::from_lookup(|name| std::env::var(name).ok())
    }
}

fn default_service_name() -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    format!("unknown_service:{exe}")
}

fn check_url(variable: &'static str, url: String) -> Result<String, ConfigError> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(host) if !host.is_empty() && !host.starts_with('/') => Ok(url),
        _ => Err(ConfigError {
            variable,
            value: url,
            message: "expected an http:// or https:// URL with a host, e.g. http://localhost:4318"
                .into(),
        }),
    }
}

fn millis(
    variable: &'static str,
    value: Option<String>,
    default: u64,
) -> Result<Duration, ConfigError> {
    let Some(value) = value else {
        return Ok(Duration::from_millis(default));
    };
    match value.parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(Duration::from_millis(ms)),
        _ => Err(ConfigError {
            variable,
            value,
            message: format!("expected a positive whole number of milliseconds, e.g. {default}"),
        }),
    }
}

/// `key=value,key=value` (W3C-baggage-like), keys trimmed, values percent-decoded.
fn parse_pairs(variable: &'static str, value: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let bad = |message: &str| ConfigError {
            variable,
            value: value.to_owned(),
            message: format!("{message} in `{item}`; expected key=value,key=value"),
        };
        let (k, v) = item.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let k = k.trim();
        if k.is_empty() {
            return Err(bad("empty key"));
        }
        let v = percent_decode(v.trim()).ok_or_else(|| bad("bad percent-encoding"))?;
        out.push((k.to_owned(), v));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<OtlpConfig, ConfigError> {
        OtlpConfig::from_lookup(|name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn defaults_follow_the_specification() {
        let c = config(&[]).unwrap();
        assert_eq!(c.endpoint, "http://localhost:4318/v1/metrics");
        assert_eq!(c.timeout, Duration::from_secs(10));
        assert_eq!(c.interval, Duration::from_secs(60));
        assert!(c.resource[0].1.starts_with("unknown_service:"));
    }

    #[test]
    fn metrics_endpoint_is_used_as_is_and_wins() {
        let c = config(&[
            (ENV_ENDPOINT, "http://a:1"),
            (ENV_METRICS_ENDPOINT, "http://b:2/custom"),
        ])
        .unwrap();
        assert_eq!(c.endpoint, "http://b:2/custom");
    }

    #[test]
    fn service_name_wins_over_resource_attributes() {
        let c = config(&[
            (
                ENV_RESOURCE,
                "service.name=x, deployment.environment=prod%20a",
            ),
            (ENV_SERVICE_NAME, "y"),
        ])
        .unwrap();
        assert_eq!(
            c.resource,
            vec![
                ("service.name".into(), "y".into()),
                ("deployment.environment".into(), "prod a".into())
            ]
        );
    }

    #[test]
    fn metrics_only_variables_win_over_the_general_ones() {
        let c = config(&[
            (ENV_HEADERS, "a=1"),
            (ENV_METRICS_HEADERS, "b=2"),
            (ENV_TIMEOUT, "1000"),
            (ENV_METRICS_TIMEOUT, "2000"),
            (ENV_COMPRESSION, "none"),
            (ENV_METRICS_COMPRESSION, "GZIP"),
        ])
        .unwrap();
        assert_eq!(c.headers, vec![("b".into(), "2".into())]);
        assert_eq!(c.timeout, Duration::from_secs(2));
        assert_eq!(c.compression, Compression::Gzip);
        // A malformed general variable is not read when the metrics one is set.
        assert!(config(&[(ENV_TIMEOUT, "x"), (ENV_METRICS_TIMEOUT, "5")]).is_ok());
        assert_eq!(
            config(&[(ENV_COMPRESSION, "gzip")]).unwrap().compression,
            Compression::Gzip
        );
        assert_eq!(config(&[]).unwrap().compression, Compression::None);
    }

    #[test]
    fn headers_are_parsed() {
        let c = config(&[(ENV_HEADERS, "api-key=s3cr%3Dt,x-team = infra")]).unwrap();
        assert_eq!(
            c.headers,
            vec![
                ("api-key".into(), "s3cr=t".into()),
                ("x-team".into(), "infra".into())
            ]
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (name, value) in [
            (ENV_TIMEOUT, "10s"),
            (ENV_INTERVAL, "0"),
            (ENV_HEADERS, "novalue"),
            (ENV_RESOURCE, "=x"),
            (ENV_ENDPOINT, "localhost:4318"),
            (ENV_METRICS_ENDPOINT, "ftp://x"),
            (ENV_COMPRESSION, "zstd"),
            (ENV_METRICS_COMPRESSION, "gz"),
            (ENV_METRICS_TIMEOUT, "-1"),
            (ENV_METRICS_HEADERS, "a"),
        ] {
            let e = config(&[(name, value)]).unwrap_err();
            assert_eq!(e.variable, name);
            assert!(e.to_string().starts_with(name), "{e}");
        }
    }
}
