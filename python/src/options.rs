//! The keyword options of `Telemetry(...)` and `Telemetry.from_env(...)`, mirroring
//! `TelemetryBuilder`'s methods one for one with the same defaults.

use crate::args;
use crate::checks;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyString};
use std::path::PathBuf;
use std::time::Duration;
use telering_std::config::{MAX_RUN_INTERVAL, check_buffer_size, vars};
use telering_std::{ClockSource, EnvSource, ExporterRegistry, TelemetryBuilder};

/// Every option name, in the order of the builder's documentation.
const NAMES: [&str; 10] = [
    "enabled",
    "capture_telemetry",
    "enabled_metrics",
    "buffer_size",
    "lane_capacity",
    "run_interval",
    "exporter",
    "dir",
    "clock",
    "early_flush",
];

/// The exporters a Python agent can name: the built-ins (`buffer`, `csv`, `nop`),
/// `prometheus` and `prometheus_mp`, and `otlp` (OTLP/HTTP push to OpenTelemetry
/// collectors, configured by the `OTEL_*` variables), as for Rust and C agents.
pub(crate) fn registry() -> ExporterRegistry {
    let mut registry = ExporterRegistry::with_builtins();
    telering_prometheus::register(&mut registry);
    telering_otlp::register(&mut registry);
    registry
}

/// The process environment as the Rust side sees it. `os.environ` writes through to
/// it (`putenv`), so variables a Python program sets before calling `from_env` count.
pub(crate) fn process_env() -> EnvSource {
    EnvSource::from_process()
}

/// `env` as given to `from_env`: a mapping of names to `str` values.
pub(crate) fn env_from_mapping(env: &Bound<'_, PyAny>) -> PyResult<EnvSource> {
    let mapping = env.cast::<PyMapping>().map_err(|_| {
        PyTypeError::new_err(format!(
            "env must be a mapping of variable names to str values, not {}",
            args::type_name(env)
        ))
    })?;
    let mut pairs = Vec::new();
    for item in mapping.items()?.iter() {
        let (name, value): (String, String) = item.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "env: every name and value must be a str; got {}",
                args::repr(&item)
            ))
        })?;
        pairs.push((name, value));
    }
    Ok(EnvSource::from_pairs(pairs))
}

/// Applies the keyword options (only those given) on top of `builder`.
pub(crate) fn apply(
    mut builder: TelemetryBuilder,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<TelemetryBuilder> {
    let Some(options) = options else {
        return Ok(builder);
    };
    for (key, value) in options.iter() {
        let key = key.cast::<PyString>()?.to_cow()?.into_owned();
        if value.is_none() && matches!(key.as_str(), "lane_capacity" | "exporter" | "dir") {
            // `None`: the default (no exporter, no directory, lanes as large as
            // the buffer).
            continue;
        }
        builder = match key.as_str() {
            "enabled" => builder.enabled(checks::flag(&value, &key)?),
            "capture_telemetry" => builder.capture_telemetry(checks::flag(&value, &key)?),
            "enabled_metrics" => builder.enabled_metrics(&text(&value, &key)?),
            "buffer_size" => builder.buffer_size(ring_size(&value, "buffer_size")?),
            "lane_capacity" => builder.lane_capacity(ring_size(&value, "lane_capacity")?),
            "run_interval" => builder.run_interval(run_interval(&value)?),
            "exporter" => builder.exporter(&exporters(&value)?),
            "dir" => builder.dir(value.extract::<PathBuf>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "dir must be a str or os.PathLike, not {}",
                    args::type_name(&value)
                ))
            })?),
            "early_flush" => builder.early_flush(checks::flag(&value, &key)?),
            "clock" => {
                let name = text(&value, &key)?;
                builder.clock(ClockSource::from_name(&name).ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "clock={name:?} is not a clock; use one of: {}",
                        ClockSource::CHOICES
                    ))
                })?)
            }
            other => {
                return Err(PyTypeError::new_err(format!(
                    "unexpected option {other:?}; the options are: {}",
                    NAMES.join(", ")
                )));
            }
        };
    }
    Ok(builder)
}

/// `exporter`: a name, a comma-separated list, or a list or tuple of names.
fn exporters(value: &Bound<'_, PyAny>) -> PyResult<String> {
    if value.is_instance_of::<PyString>() {
        return text(value, "exporter");
    }
    let names: Vec<String> = value.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "exporter must be a str or a list of str, not {}",
            args::type_name(value)
        ))
    })?;
    Ok(names.join(","))
}

fn text(value: &Bound<'_, PyAny>, key: &str) -> PyResult<String> {
    value
        .cast::<PyString>()
        .map_err(|_| {
            PyTypeError::new_err(format!(
                "{key} must be a str, not {}",
                args::type_name(value)
            ))
        })?
        .to_cow()
        .map(|s| s.into_owned())
}

/// A buffer or lane size, checked by the builder's own rule, its error naming the
/// keyword given (the builder's would name `NIXL_TELEMETRY_BUFFER_SIZE` for both).
fn ring_size(value: &Bound<'_, PyAny>, what: &str) -> PyResult<u32> {
    let n = args::to_u64(value, what)?;
    check_buffer_size(n)
        .map_err(|e| PyValueError::new_err(with_prefix(e.to_string(), vars::BUFFER_SIZE, what)))
}

/// The flush interval, checked in seconds, as the caller gave it (the builder's
/// error would name the variable and milliseconds).
fn run_interval(value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let interval = args::duration(value, "run_interval")?;
    if interval < Duration::from_millis(1) {
        return Err(PyValueError::new_err(format!(
            "run_interval={} is shorter than a millisecond; use at least 0.001 seconds",
            args::repr(value)
        )));
    }
    if interval > MAX_RUN_INTERVAL {
        return Err(PyValueError::new_err(format!(
            "run_interval={} is longer than a day; use at most {} seconds",
            args::repr(value),
            MAX_RUN_INTERVAL.as_secs()
        )));
    }
    Ok(interval)
}

/// The keyword options that stand for a variable whose value a configuration
/// error quotes as `VARIABLE=value`.
const KEYWORD_VARIABLES: [(&str, &str); 2] = [("exporter", vars::EXPORTER), ("dir", vars::DIR)];

/// A configuration error's text in the caller's terms: when it quotes a variable
/// whose value came from a keyword option (given, and winning over the
/// environment), it names the keyword instead.
pub(crate) fn in_keyword_terms(message: String, options: Option<&Bound<'_, PyDict>>) -> String {
    let Some(options) = options else {
        return message;
    };
    for (keyword, variable) in KEYWORD_VARIABLES {
        let given = matches!(options.get_item(keyword), Ok(Some(v)) if !v.is_none());
        if given && message.starts_with(&format!("{variable}=")) {
            return with_prefix(message, variable, keyword);
        }
        // "buffer is listed twice in NIXL_TELEMETRY_EXPORTER=…"
        let quoted = format!(" in {variable}=");
        if given && message.contains(&quoted) {
            return message.replacen(&quoted, &format!(" in {keyword}="), 1);
        }
    }
    message
}

/// `message` with its leading `VARIABLE=` said as `keyword=`.
fn with_prefix(message: String, variable: &str, keyword: &str) -> String {
    match message.strip_prefix(variable) {
        Some(rest) if rest.starts_with('=') => format!("{keyword}{rest}"),
        _ => message,
    }
}
