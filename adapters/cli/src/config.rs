//! `telering config`: the effective configuration, each variable's value with where
//! it comes from — the environment, the configuration file
//! (`$NIXL_CONFIG_FILE`, `~/.nixl.cfg` or `/etc/nixl.cfg`), or the default — then the
//! same checks an agent makes when it starts, so a setting that seems ignored can be
//! traced to a typo, a shadowing variable or another file.

use crate::CliError;
use std::io::Write;
use telering_std::EnvSource;
use telering_std::config::{Source, is_telering_variable};

/// Every variable telering reads, with its default in words (the README's table).
pub const VARIABLES: [(&str, &str); 18] = [
    ("NIXL_TELEMETRY_ENABLE", "off"),
    ("NIXL_TELEMETRY_DIR", "unset"),
    (
        "NIXL_TELEMETRY_EXPORTER",
        "buffer when DIR is set, else none",
    ),
    ("NIXL_TELEMETRY_BUFFER_SIZE", "4096"),
    ("NIXL_TELEMETRY_RUN_INTERVAL", "100"),
    ("NIXL_TELEMETRY_ENABLED_METRICS", "everything"),
    ("NIXL_TELEMETRY_PROMETHEUS_PORT", "9090"),
    ("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "false"),
    ("NIXL_TELEMETRY_HISTOGRAM_BUCKETS_US", "NIXL's 18 buckets"),
    ("NIXL_TELEMETRY_MULTIPROC_DIR", "unset"),
    ("NIXL_TELEMETRY_MP_STALE_TTL", "30"),
    ("NIXL_TELEMETRY_RANK_ENV", "LOCAL_RANK"),
    ("TELERING_CLOCK", "auto"),
    ("TELERING_RING_LAYOUT", "v1"),
    ("TELERING_ROUTES_MAX", "64"),
    ("TELERING_SLOW_XFERS", "8"),
    ("TELERING_LOG", "warn"),
    ("NIXL_PLUGIN_DIR", "unset"),
];

/// One variable's effective setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// The variable.
    pub name: String,
    /// Its value, or the default in words when it is unset.
    pub value: String,
    /// Where the value comes from; `None` for the default.
    pub source: Option<Source>,
    /// Whether telering reads the variable (a set variable it does not read is
    /// probably a misspelling).
    pub known: bool,
}

/// The settings of every variable telering reads, then every other
/// `NIXL_TELEMETRY_*` or `TELERING_*` variable set in `env`.
///
/// ```
/// use telering_std::{EnvSource, config::Source};
/// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_BUFER_SIZE", "64"), ("NIXL_TELEMETRY_ENABLE", "y")]);
/// let settings = telering_cli::config::settings(&env).unwrap();
/// let enable = &settings[0];
/// assert_eq!((enable.value.as_str(), &enable.source), ("y", &Some(Source::Environment)));
/// let typo = settings.last().unwrap();
/// assert_eq!((typo.name.as_str(), typo.known), ("NIXL_TELEMETRY_BUFER_SIZE", false));
/// ```
pub fn settings(env: &EnvSource) -> Result<Vec<Setting>, CliError> {
    let config_error = |e: telering_std::EnvError| CliError::Config(e.to_string());
    let mut out = Vec::new();
    for (name, default) in VARIABLES {
        let setting = match env.get(name).map_err(config_error)? {
            Some(value) => Setting {
                name: name.into(),
                value,
                source: env.source(name),
                known: true,
            },
            None => Setting {
                name: name.into(),
                value: default.into(),
                source: None,
                known: true,
            },
        };
        out.push(setting);
    }
    for name in env.names() {
        if is_telering_variable(name) && !VARIABLES.iter().any(|(n, _)| *n == name) {
            out.push(Setting {
                name: name.into(),
                value: env.get(name).map_err(config_error)?.unwrap_or_default(),
                source: env.source(name),
                known: false,
            });
        }
    }
    Ok(out)
}

/// Writes the configuration `env` gives: the file read, then one line per variable
/// (`NAME  VALUE  SOURCE`), then checks it as an agent would; a value an agent
/// would refuse is the error returned (after the table is written).
///
/// ```
/// use telering_std::EnvSource;
/// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_BUFFER_SIZE", "8192")]);
/// let mut out = Vec::new();
/// telering_cli::config::config(&env, &mut out).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains("NIXL_TELEMETRY_BUFFER_SIZE          8192"));
/// assert!(text.contains("NIXL_TELEMETRY_RUN_INTERVAL         100 (default)"));
/// let bad = EnvSource::from_pairs([("NIXL_TELEMETRY_BUFFER_SIZE", "1000")]);
/// let e = telering_cli::config::config(&bad, &mut Vec::new()).unwrap_err();
/// assert_eq!(e.exit_code(), telering_cli::EXIT_USAGE);
/// ```
pub fn config(env: &EnvSource, out: &mut dyn Write) -> Result<(), CliError> {
    let write_error = CliError::Output;
    match (env.config_file(), env.config_file_error()) {
        (_, Some(e)) => return Err(CliError::Config(e.to_string())),
        (Some(path), None) => writeln!(out, "configuration file: {}", path.display()),
        (None, None) => writeln!(
            out,
            "configuration file: none (NIXL_CONFIG_FILE unset, no ~/.nixl.cfg, no /etc/nixl.cfg)"
        ),
    }
    .map_err(write_error)?;
    for s in settings(env)? {
        let (value, source) = match (&s.source, s.known) {
            (None, _) => (format!("{} (default)", s.value), String::new()),
            (Some(source), true) => (s.value.clone(), source.to_string()),
            (Some(source), false) => (
                s.value.clone(),
                format!("{source}; telering does not read this variable"),
            ),
        };
        writeln!(out, "{:<35} {:<30} {}", s.name, value, source)
            .map(|_| ())
            .map_err(write_error)?;
    }
    out.flush().map_err(write_error)?;
    // The checks an agent makes when it starts (without creating anything).
    let agent = "telering-config";
    telering_std::TelemetryBuilder::from_env(agent, env)
        .and_then(|b| b.resolve())
        .map_err(|e| CliError::Config(e.to_string()))?;
    telering_prometheus::PrometheusConfig::from_lookup(|name| env.get(name).ok().flatten())?;
    Ok(())
}
