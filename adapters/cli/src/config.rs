//! `telering config`: the effective configuration, each variable's value with where
//! it comes from — the environment, the configuration file
//! (`$NIXL_CONFIG_FILE`, `~/.nixl.cfg` or `/etc/nixl.cfg`), or the default — then the
//! checks an agent makes when it starts, so a setting that seems ignored can be
//! traced to a typo, a shadowing variable or another file.
//!
//! The checks are the agents' own parsers, not copies: telering-std's builder (with
//! every exporter registered, and as if exporting were on, so that the exporter list
//! is checked even while `NIXL_TELEMETRY_ENABLE` is off), its telemetry-directory
//! check (which creates nothing), the Prometheus, `prometheus_mp` and OTLP
//! configuration readers, and the rule of `TELERING_LOG`.

use crate::CliError;
use crate::output::message_line;
use std::io::Write;
use telering_std::EnvSource;
use telering_std::config::{Source, TelemetryBuilder, is_telering_variable, vars};

/// Every variable telering reads, with its default in words (the README's tables),
/// in the order `config` lists them.
pub const VARIABLES: [(&str, &str); 34] = [
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
    (
        "TELERING_EXPORTERS",
        "the ring file in DIR (NIXL plug-in); none beside the ring (telering bridge)",
    ),
    ("TELERING_PLUGIN_STRICT", "false (NIXL plug-in)"),
    ("NIXL_PLUGIN_DIR", "unset"),
    ("NIXL_LOG_LEVEL", "unset (C library, NIXL plug-in)"),
    ("NIXL_CONFIG_FILE", "~/.nixl.cfg, else /etc/nixl.cfg"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://localhost:4318"),
    ("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "ENDPOINT/v1/metrics"),
    ("OTEL_EXPORTER_OTLP_HEADERS", "none"),
    (
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
        "OTEL_EXPORTER_OTLP_HEADERS",
    ),
    ("OTEL_EXPORTER_OTLP_TIMEOUT", "10000"),
    (
        "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ),
    ("OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
    (
        "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION",
        "OTEL_EXPORTER_OTLP_COMPRESSION",
    ),
    ("OTEL_METRIC_EXPORT_INTERVAL", "60000"),
    ("OTEL_RESOURCE_ATTRIBUTES", "none"),
    ("OTEL_SERVICE_NAME", "unknown_service:<program>"),
    ("TELERING_OTLP_SHUTDOWN_TIMEOUT", "2000"),
];

/// The process's variables `config` shows: telering-std's
/// ([`EnvSource::from_process`]: `NIXL_TELEMETRY_*`, `TELERING_*`, `NIXL_PLUGIN_DIR`,
/// over the configuration file), and the others of [`VARIABLES`] (`OTEL_*`,
/// `NIXL_LOG_LEVEL`, `NIXL_CONFIG_FILE`), which only the environment sets.
pub fn process_env() -> EnvSource {
    let mut env = EnvSource::from_process();
    for (name, _) in VARIABLES {
        if !is_telering_variable(name) {
            if let Some(value) = std::env::var_os(name) {
                env = env.with(name, value);
            }
        }
    }
    env
}

/// One variable's effective setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// The variable.
    pub name: String,
    /// Its value, or the default in words when it is unset (or blank).
    pub value: String,
    /// Where the value comes from; `None` for the default.
    pub source: Option<Source>,
    /// Whether telering reads the variable (a set variable it does not read is
    /// probably a misspelling).
    pub known: bool,
    /// The variable is set in the environment but blank, which counts as unset.
    pub blank: bool,
}

/// The settings of every variable telering reads, then every other
/// `NIXL_TELEMETRY_*` or `TELERING_*` variable set in `env`. A variable set but
/// blank is unset ([`telering_std::parse`]): it shows the file's value or the
/// default.
///
/// ```
/// use telering_std::{EnvSource, config::Source};
/// let env = EnvSource::from_pairs([
///     ("NIXL_TELEMETRY_BUFER_SIZE", "64"),
///     ("NIXL_TELEMETRY_ENABLE", "y"),
///     ("NIXL_TELEMETRY_BUFFER_SIZE", " "),
/// ]);
/// let settings = telering_cli::config::settings(&env).unwrap();
/// let enable = &settings[0];
/// assert_eq!((enable.value.as_str(), &enable.source), ("y", &Some(Source::Environment)));
/// let blank = settings.iter().find(|s| s.name == "NIXL_TELEMETRY_BUFFER_SIZE").unwrap();
/// assert_eq!((blank.value.as_str(), &blank.source, blank.blank), ("4096", &None, true));
/// let typo = settings.last().unwrap();
/// assert_eq!((typo.name.as_str(), typo.known), ("NIXL_TELEMETRY_BUFER_SIZE", false));
/// ```
pub fn settings(env: &EnvSource) -> Result<Vec<Setting>, CliError> {
    let config_error = |e: telering_std::EnvError| CliError::Config(e.to_string());
    let mut out = Vec::new();
    for (name, default) in VARIABLES {
        let raw = env.get(name).map_err(config_error)?;
        let blank = raw
            .as_deref()
            .is_some_and(|v| telering_std::parse::value(v).is_none());
        let setting = match env.get_trimmed(name).map_err(config_error)? {
            Some(value) => Setting {
                name: name.into(),
                value,
                source: env.source(name),
                known: true,
                blank: false,
            },
            None => Setting {
                name: name.into(),
                value: default.into(),
                source: None,
                known: true,
                blank,
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
                blank: false,
            });
        }
    }
    Ok(out)
}

/// Writes the configuration `env` gives: the file read, then one line per variable
/// (`NAME  VALUE  SOURCE`, values escaped), then checks it as an agent would ([`check`]);
/// a value an agent would refuse is the error returned (after the table is written),
/// and warnings go to the log.
///
/// ```
/// use telering_std::EnvSource;
/// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_BUFFER_SIZE", "8192")]);
/// let mut out = Vec::new();
/// telering_cli::config::config(&env, &mut out).unwrap();
/// let text = String::from_utf8(out).unwrap();
/// assert!(text.contains("NIXL_TELEMETRY_BUFFER_SIZE             8192"));
/// assert!(text.contains("NIXL_TELEMETRY_RUN_INTERVAL            100 (default)"));
/// let bad = EnvSource::from_pairs([("NIXL_TELEMETRY_BUFFER_SIZE", "1000")]);
/// let e = telering_cli::config::config(&bad, &mut Vec::new()).unwrap_err();
/// assert_eq!(e.exit_code(), telering_cli::EXIT_USAGE);
/// ```
pub fn config(env: &EnvSource, out: &mut dyn Write) -> Result<(), CliError> {
    let write_error = CliError::Output;
    match (env.config_file(), env.config_file_error()) {
        (_, Some(e)) => return Err(CliError::Config(e.to_string())),
        (Some(path), None) => writeln!(
            out,
            "configuration file: {}",
            crate::output::shown_path(path)
        ),
        (None, None) => writeln!(
            out,
            "configuration file: none (NIXL_CONFIG_FILE unset, no ~/.nixl.cfg, no /etc/nixl.cfg)"
        ),
    }
    .map_err(write_error)?;
    for s in settings(env)? {
        let value = message_line(&s.value);
        let (value, source) = match (&s.source, s.known) {
            (None, _) if s.blank => (
                format!("{value} (default)"),
                "blank in the environment, which counts as unset".to_string(),
            ),
            (None, _) => (format!("{value} (default)"), String::new()),
            (Some(source), true) => (value.into_owned(), source_text(source)),
            (Some(source), false) => (
                value.into_owned(),
                format!(
                    "{}; telering does not read this variable",
                    source_text(source)
                ),
            ),
        };
        let line = format!("{:<38} {:<30} {}", s.name, value, source);
        writeln!(out, "{}", line.trim_end())
            .map(|_| ())
            .map_err(write_error)?;
    }
    out.flush().map_err(write_error)?;
    for warning in check(env)? {
        log::warn!("{warning}");
    }
    Ok(())
}

fn source_text(source: &Source) -> String {
    match source {
        Source::Environment => "environment".into(),
        Source::File(path) => format!("file {}", crate::output::shown_path(path)),
    }
}

/// Checks the values in `env` with the agents' own parsers, creating nothing:
/// telering-std's builder (as if exporting were on, so the exporter list is checked
/// whatever `NIXL_TELEMETRY_ENABLE` says), `NIXL_TELEMETRY_DIR` (a path that is not
/// a directory), the Prometheus, `prometheus_mp` and OTLP variables, and
/// `TELERING_EXPORTERS` (the exporter list of the NIXL plug-in and of
/// `telering bridge` without `--exporter`) and
/// `TELERING_PLUGIN_STRICT` (a boolean). Returns the warnings
/// (values an agent accepts with a warning); the first value an agent would refuse
/// is the error.
///
/// ```
/// use telering_std::EnvSource;
/// use telering_cli::config::check;
/// let bad = |name: &str, value: &str| check(&EnvSource::from_pairs([(name, value)])).unwrap_err().to_string();
/// assert!(bad("NIXL_TELEMETRY_EXPORTER", "buffer,,csv").contains("empty entry at position 2"));
/// assert!(bad("NIXL_TELEMETRY_MP_STALE_TTL", "-1").starts_with("NIXL_TELEMETRY_MP_STALE_TTL=-1"));
/// assert!(bad("NIXL_TELEMETRY_RANK_ENV", "1abc").starts_with("NIXL_TELEMETRY_RANK_ENV=1abc"));
/// assert!(bad("NIXL_TELEMETRY_DIR", "/etc/passwd").contains("is a regular file"));
/// assert!(bad("TELERING_EXPORTERS", "nop,,csv").starts_with("TELERING_EXPORTERS=nop,,csv"));
/// assert!(bad("OTEL_METRIC_EXPORT_INTERVAL", "soon").contains("OTEL_METRIC_EXPORT_INTERVAL"));
/// let warnings = check(&EnvSource::from_pairs([("TELERING_LOG", "loud")])).unwrap();
/// assert!(warnings[0].starts_with("TELERING_LOG=loud is not a log level"));
/// ```
pub fn check(env: &EnvSource) -> Result<Vec<String>, CliError> {
    let config_error = |e: &dyn std::fmt::Display| CliError::Config(e.to_string());
    let lookup = |name: &str| env.get(name).ok().flatten();
    let builder = |env: &EnvSource| -> Result<TelemetryBuilder, CliError> {
        let mut b =
            TelemetryBuilder::from_env("telering-config", env).map_err(|e| config_error(&e))?;
        telering_prometheus::register(b.registry_mut());
        telering_otlp::register(b.registry_mut());
        Ok(b.enabled(true))
    };
    let agent = builder(env)?;
    let mut warnings: Vec<String> = agent.warnings().iter().map(|w| w.to_string()).collect();
    agent.resolve().map_err(|e| config_error(&e))?;
    if let Some(dir) = env.get_trimmed(vars::DIR).map_err(|e| config_error(&e))? {
        telering_std::config::check_dir(dir.as_ref()).map_err(|e| config_error(&e))?;
    }
    telering_prometheus::PrometheusConfig::from_lookup(lookup)?;
    // `prometheus_mp` needs its directory only when it is chosen; its other
    // variables are checked either way.
    let plugin_list = env
        .get_trimmed(PLUGIN_EXPORTERS)
        .map_err(|e| config_error(&e))?;
    let lists = [
        env.get_trimmed(vars::EXPORTER)
            .map_err(|e| config_error(&e))?,
        plugin_list.clone(),
    ];
    let mp_chosen = lists.iter().flatten().any(|list| {
        list.split(',')
            .any(|n| n.trim().eq_ignore_ascii_case("prometheus_mp"))
    });
    use telering_prometheus::multiproc::{ENV_MULTIPROC_DIR, MultiprocConfig};
    MultiprocConfig::from_lookup(|name| match lookup(name) {
        None if name == ENV_MULTIPROC_DIR && !mp_chosen => Some("unused".into()),
        value => value,
    })
    .map_err(|e| config_error(&e))?;
    telering_otlp::OtlpConfig::from_lookup(lookup).map_err(|e| config_error(&e))?;
    // The NIXL plug-in runs `TELERING_EXPORTERS` through the same builder, as the
    // exporter list; its errors say which variable held the list.
    if let Some(list) = plugin_list {
        builder(&env.with(vars::EXPORTER, list.as_str()))?
            .resolve()
            .map_err(|e| {
                CliError::Config(e.to_string().replacen(vars::EXPORTER, PLUGIN_EXPORTERS, 1))
            })?;
    }
    // The NIXL plug-in reads it by the boolean rule every variable follows.
    if let Some(strict) = env
        .get_trimmed(PLUGIN_STRICT)
        .map_err(|e| config_error(&e))?
    {
        if telering_std::parse::boolean(&strict).is_none() {
            return Err(CliError::Config(format!(
                "{PLUGIN_STRICT}={} is not a boolean; use 1 to refuse the exporter on a bad setting, or 0",
                message_line(&strict)
            )));
        }
    }
    if let Some(unknown) =
        crate::logger::unknown_level(env.get_trimmed("TELERING_LOG").ok().flatten())
    {
        warnings.push(unknown);
    }
    Ok(warnings)
}

/// The exporter list of the NIXL plug-in (telemetry_exporter_telering's `EXPORTERS_VAR`)
/// and of `telering bridge` without `--exporter` (its `EXPORTERS_VAR`).
const PLUGIN_EXPORTERS: &str = "TELERING_EXPORTERS";
/// The NIXL plug-in's refusal switch (telemetry_exporter_telering's `STRICT_VAR`).
const PLUGIN_STRICT: &str = "TELERING_PLUGIN_STRICT";
