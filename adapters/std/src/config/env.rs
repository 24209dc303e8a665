//! Where the variables are read from: the [`EnvSource`], a snapshot of the process
//! environment over NIXL's configuration file ([`super::file`]), or pairs a program
//! gives, and the [`EnvError`] of a variable that cannot be read.
//!
//! Exporters read their own variables (`NIXL_TELEMETRY_PROMETHEUS_PORT`, …) from the
//! [`EnvSource`] in their [`ExporterContext`](crate::ExporterContext).

use super::file::{ConfigFile, ConfigFileError, FileSearch, Source};
use super::vars::is_telering_variable;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// Where `NIXL_TELEMETRY_*` variables are read from: a snapshot of the process
/// environment, or pairs given by the program (tests use these instead of changing
/// the process environment), each over the values of a configuration file
/// ([`super::file`]) where one was read: a variable set (and not blank) in
/// the environment wins, the file's value applies otherwise.
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
    file: Option<Arc<ConfigFile>>,
    /// The configuration file that could not be read: every [`get`](Self::get)
    /// answers it, so no value is taken while the file meant to set it is broken.
    file_error: Option<ConfigFileError>,
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
    /// (telering's own, such as `TELERING_CLOCK`), taken now, over those of NIXL's
    /// configuration file ([`FileSearch::from_process`]: `$NIXL_CONFIG_FILE`, else
    /// `~/.nixl.cfg`, else `/etc/nixl.cfg`). A file that is named but missing, or
    /// that cannot be read or parsed, is the error every [`get`](Self::get) answers
    /// (and [`check`](Self::check)).
    ///
    /// ```
    /// let env = telering_std::EnvSource::from_process();
    /// assert!(env.names().all(|n| n.starts_with("NIXL_TELEMETRY_") || n.starts_with("TELERING_")));
    /// ```
    pub fn from_process() -> EnvSource {
        let vars = std::env::vars_os()
            .filter_map(|(k, v)| {
                let k = k.into_string().ok()?;
                is_telering_variable(&k).then_some((k, v))
            })
            .collect();
        EnvSource {
            vars: Arc::new(vars),
            ..EnvSource::default()
        }
        .with_file_from(&FileSearch::from_process())
    }

    /// A copy over the configuration file `search` finds ([`with_file`](Self::with_file));
    /// a file that is named but missing, or that cannot be read or parsed, is the
    /// error every [`get`](Self::get) of the copy answers.
    ///
    /// ```
    /// use telering_std::{EnvError, EnvSource, config::{ConfigFileError, FileSearch}};
    /// let search = FileSearch { explicit: Some("/no/such.cfg".into()), home: None, system: "/nonexistent".into() };
    /// let env = EnvSource::empty().with_file_from(&search);
    /// let missing = ConfigFileError::Missing { path: "/no/such.cfg".into() };
    /// assert_eq!(env.get("NIXL_TELEMETRY_DIR"), Err(EnvError::ConfigFile(missing)));
    /// ```
    pub fn with_file_from(&self, search: &FileSearch) -> EnvSource {
        match search.load() {
            Ok(Some(file)) => self.with_file(&file),
            Ok(None) => self.clone(),
            Err(e) => EnvSource {
                file_error: Some(e),
                ..self.clone()
            },
        }
    }

    /// A copy that takes the values `file` sets where this one has none (or a blank
    /// one): the environment wins over the file, as in NIXL, and each file entry
    /// the environment overrides is noted at debug level.
    ///
    /// ```
    /// use telering_std::{EnvSource, config::{ConfigFile, Source}};
    /// let file = ConfigFile::parse("n.cfg", "NIXL_TELEMETRY_DIR = '/f'\nNIXL_TELEMETRY_ENABLE = true").unwrap();
    /// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_DIR", "/e"), ("NIXL_TELEMETRY_ENABLE", " ")]).with_file(&file);
    /// assert_eq!(env.get("NIXL_TELEMETRY_DIR").unwrap().as_deref(), Some("/e"));
    /// assert_eq!(env.source("NIXL_TELEMETRY_DIR"), Some(Source::Environment));
    /// assert_eq!(env.get("NIXL_TELEMETRY_ENABLE").unwrap().as_deref(), Some("true"));
    /// assert_eq!(env.source("NIXL_TELEMETRY_ENABLE"), Some(Source::File("n.cfg".into())));
    /// ```
    pub fn with_file(&self, file: &ConfigFile) -> EnvSource {
        for (name, _) in file.values() {
            if self.env_value(name).is_some() {
                log::debug!(
                    "{name} is set in the environment; ignoring its entry in {}",
                    file.path().display()
                );
            }
        }
        EnvSource {
            vars: self.vars.clone(),
            file: Some(Arc::new(file.clone())),
            file_error: self.file_error.clone(),
        }
    }

    /// The configuration file read, if any.
    ///
    /// ```
    /// use telering_std::{EnvSource, config::ConfigFile};
    /// let file = ConfigFile::parse("/etc/nixl.cfg", "").unwrap();
    /// assert_eq!(EnvSource::empty().with_file(&file).config_file(), Some(std::path::Path::new("/etc/nixl.cfg")));
    /// assert_eq!(EnvSource::empty().config_file(), None);
    /// ```
    pub fn config_file(&self) -> Option<&Path> {
        self.file.as_deref().map(ConfigFile::path)
    }

    /// The configuration file that could not be read, if one could not.
    ///
    /// ```
    /// assert_eq!(telering_std::EnvSource::empty().config_file_error(), None);
    /// ```
    pub fn config_file_error(&self) -> Option<&ConfigFileError> {
        self.file_error.as_ref()
    }

    /// Checks that every variable can be read: the configuration file was, and each
    /// value is UTF-8.
    ///
    /// ```
    /// use telering_std::{EnvError, EnvSource};
    /// assert_eq!(EnvSource::from_pairs([("NIXL_TELEMETRY_DIR", "/t")]).check(), Ok(()));
    /// ```
    pub fn check(&self) -> Result<(), EnvError> {
        for name in self.names() {
            self.get(name)?;
        }
        match &self.file_error {
            Some(e) => Err(EnvError::ConfigFile(e.clone())),
            None => Ok(()),
        }
    }

    /// Where the value of `name` comes from, `None` when it is unset.
    ///
    /// ```
    /// use telering_std::{EnvSource, config::Source};
    /// let env = EnvSource::from_pairs([("NIXL_TELEMETRY_DIR", "/t")]);
    /// assert_eq!(env.source("NIXL_TELEMETRY_DIR"), Some(Source::Environment));
    /// assert_eq!(env.source("NIXL_TELEMETRY_ENABLE"), None);
    /// ```
    pub fn source(&self, name: &str) -> Option<Source> {
        if self.env_value(name).is_some() {
            return Some(Source::Environment);
        }
        match &self.file {
            Some(file) if file.get(name).is_some() => Some(Source::File(file.path().into())),
            _ => self.vars.get(name).map(|_| Source::Environment),
        }
    }

    /// The environment's own value of `name` when it is set and not blank (a value
    /// that is not UTF-8 is not blank).
    fn env_value(&self, name: &str) -> Option<&OsString> {
        self.vars
            .get(name)
            .filter(|v| v.to_str().is_none_or(|t| !t.trim().is_empty()))
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
            ..EnvSource::default()
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
            ..self.clone()
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
        if let Some(e) = &self.file_error {
            return Err(EnvError::ConfigFile(e.clone()));
        }
        let from_file = || Some(self.file.as_ref()?.get(name)?.into());
        let value = match self.env_value(name) {
            Some(v) => Some(v.clone()),
            None => from_file().or_else(|| self.vars.get(name).cloned()),
        };
        match value {
            None => Ok(None),
            Some(v) => v.into_string().map(Some).map_err(|_| EnvError::NotUnicode {
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

    /// The names of the variables that are set (in the environment or the file),
    /// sorted.
    ///
    /// ```
    /// let env = telering_std::EnvSource::from_pairs([("B", "1"), ("A", "2")]);
    /// assert_eq!(env.names().collect::<Vec<_>>(), ["A", "B"]);
    /// ```
    pub fn names(&self) -> impl Iterator<Item = &str> {
        let mut names: Vec<&str> = self.vars.keys().map(String::as_str).collect();
        if let Some(file) = &self.file {
            names.extend(file.values().map(|(k, _)| k));
            names.sort_unstable();
            names.dedup();
        }
        names.into_iter()
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
    /// The configuration file cannot be used.
    ConfigFile(ConfigFileError),
}

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvError::NotUnicode { variable } => {
                write!(f, "{variable} is not valid UTF-8; set it to plain text")
            }
            EnvError::ConfigFile(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for EnvError {}
