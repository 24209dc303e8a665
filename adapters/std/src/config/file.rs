//! NIXL's configuration file: telering's variables written as TOML keys.
//!
//! NIXL (`src/utils/common/configuration.cpp`) reads its variables from a TOML file as
//! well as from the environment, and so does telering, for every `NIXL_TELEMETRY_*`
//! and `TELERING_*` variable:
//!
//! - **Which file.** `$NIXL_CONFIG_FILE` if that is set (a missing file is then an
//!   error); otherwise `$HOME/.nixl.cfg` if it exists; otherwise `/etc/nixl.cfg` if it
//!   exists; otherwise none ([`FileSearch`]).
//! - **The format.** A value sits under a top-level key named exactly like the
//!   variable: `NIXL_TELEMETRY_ENABLE = true`, `NIXL_TELEMETRY_BUFFER_SIZE = 8192`,
//!   `NIXL_TELEMETRY_DIR = "/dev/shm/telemetry"`. Strings, booleans, integers and
//!   floats stand for the text they spell; an array of them is a comma-separated
//!   list (`NIXL_TELEMETRY_ENABLED_METRICS = ["agent_*_bytes", "NIXL_ERR_*"]`). Keys
//!   of other programs (NIXL's own settings) are left alone. A telering variable
//!   inside a table (`[NIXL]` then `NIXL_TELEMETRY_DIR = …`) is an error
//!   ([`ConfigFileError::Nested`]) rather than silently ignored: the keys are read
//!   only at the top level.
//! - **Precedence.** A variable set in the environment wins over the file (a debug
//!   message says the file's entry is ignored); a variable that is blank in the
//!   environment counts as unset ([`crate::parse`], rule 2), so the file's value
//!   applies.
//! - **Errors.** NIXL's rule: when something does not exist and there is a
//!   fallback, use the fallback; when something exists and using it fails, that is
//!   an error. A named file that is missing, a file that cannot be read, is not a
//!   regular file (a FIFO would block the read forever) or is not TOML, and a key whose value is a table or a date are [`ConfigFileError`]s
//!   naming the file (and the key); a value that the variable does not accept is
//!   the variable's own error, naming the file and the key as well
//!   ([`ConfigError::FileValue`](crate::ConfigError::FileValue)).
//!
//! ```
//! use telering_std::config::{ConfigFile, Source};
//! use telering_std::{EnvSource, Telemetry};
//! let file = ConfigFile::parse("/etc/nixl.cfg", "NIXL_TELEMETRY_BUFFER_SIZE = 8192\nUCX_TLS = \"rc\"").unwrap();
//! assert_eq!(file.get("NIXL_TELEMETRY_BUFFER_SIZE"), Some("8192"));
//! assert_eq!(file.get("UCX_TLS"), None); // not telering's
//! let env = EnvSource::empty().with_file(&file);
//! let config = Telemetry::builder("agent").apply_env(&env).unwrap().resolve().unwrap();
//! assert_eq!(config.buffer_size, 8192);
//! assert_eq!(env.source("NIXL_TELEMETRY_BUFFER_SIZE"), Some(Source::File("/etc/nixl.cfg".into())));
//! ```

pub use super::vars::is_telering_variable;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The variable naming the configuration file (NIXL's).
pub const CONFIG_FILE_VAR: &str = super::vars::CONFIG_FILE;
/// The file read when `NIXL_CONFIG_FILE` is unset, below `$HOME`.
pub const HOME_FILE_NAME: &str = ".nixl.cfg";
/// The system-wide file, read when neither of the others is there.
pub const SYSTEM_FILE: &str = "/etc/nixl.cfg";

/// Where a variable's value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The process environment, or the pairs a program gave
    /// ([`EnvSource::from_pairs`](crate::EnvSource::from_pairs)).
    Environment,
    /// The configuration file at this path.
    File(PathBuf),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Environment => f.write_str("environment"),
            Source::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

/// The configuration file that cannot be used, and why. The text names the file,
/// and the key where one is at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigFileError {
    /// `NIXL_CONFIG_FILE` names a file that does not exist.
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The file exists but cannot be read.
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        reason: String,
    },
    /// The file is not TOML (or not UTF-8).
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, with the line and column.
        reason: String,
    },
    /// A key holds a value that stands for no variable text (a table, a date, a
    /// nested array).
    Value {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// The TOML type found (`table`, `datetime`, `array of arrays`, …).
        found: &'static str,
    },
    /// A telering variable is a key inside a table (`[NIXL]`), where it is not
    /// read: telering's keys are top-level, before any table header.
    Nested {
        /// The file.
        path: PathBuf,
        /// The key's dotted path (`NIXL.NIXL_TELEMETRY_DIR`).
        key: String,
    },
    /// `NIXL_CONFIG_FILE` is not valid UTF-8.
    NotUnicode,
}

impl fmt::Display for ConfigFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigFileError::Missing { path } => write!(
                f,
                "{CONFIG_FILE_VAR}={}: no such file; create it or unset {CONFIG_FILE_VAR}",
                path.display()
            ),
            ConfigFileError::Unreadable { path, reason } => write!(
                f,
                "configuration file {} cannot be read: {reason}",
                path.display()
            ),
            ConfigFileError::Syntax { path, reason } => write!(
                f,
                "configuration file {} is not valid TOML: {}",
                path.display(),
                reason.trim_end()
            ),
            ConfigFileError::Value { path, key, found } => write!(
                f,
                "configuration file {}, key {key}: a {found} is not a value; use a string, an integer, a boolean or an array of them",
                path.display()
            ),
            ConfigFileError::Nested { path, key } => {
                let (_, name) = key.rsplit_once('.').unwrap_or(("", key));
                write!(
                    f,
                    "configuration file {}, key {key}: telering reads its variables only as top-level keys; move `{name} = …` above the first [table] header",
                    path.display()
                )
            }
            ConfigFileError::NotUnicode => {
                write!(
                    f,
                    "{CONFIG_FILE_VAR} is not valid UTF-8; set it to plain text"
                )
            }
        }
    }
}

impl std::error::Error for ConfigFileError {}

/// A configuration file's telering variables, as the text each one's value spells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigFile {
    path: PathBuf,
    values: BTreeMap<String, String>,
}

impl ConfigFile {
    /// Reads and parses the file at `path`.
    ///
    /// ```
    /// use telering_std::config::{ConfigFile, ConfigFileError};
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("nixl.cfg");
    /// std::fs::write(&path, "NIXL_TELEMETRY_ENABLE = true\n").unwrap();
    /// assert_eq!(ConfigFile::read(&path).unwrap().get("NIXL_TELEMETRY_ENABLE"), Some("true"));
    /// std::fs::write(&path, "NIXL_TELEMETRY_ENABLE = \n").unwrap();
    /// assert!(matches!(ConfigFile::read(&path), Err(ConfigFileError::Syntax { .. })));
    /// // A directory (or a FIFO, which would block the read) is refused at once.
    /// assert!(matches!(ConfigFile::read(dir.path()), Err(ConfigFileError::Unreadable { .. })));
    /// ```
    pub fn read(path: impl AsRef<Path>) -> Result<ConfigFile, ConfigFileError> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let path = path.as_ref();
        let unreadable = |reason: String| ConfigFileError::Unreadable {
            path: path.to_path_buf(),
            reason,
        };
        // `O_NONBLOCK` so that a FIFO at the path cannot hang the open; then only a
        // regular file is read (a FIFO's or a device's read could block forever).
        // Checking the opened file, not the path, leaves no window for a swap.
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(path)
            .map_err(|e| unreadable(e.to_string()))?;
        let meta = file.metadata().map_err(|e| unreadable(e.to_string()))?;
        if !meta.is_file() {
            return Err(unreadable(
                "it is not a regular file (a FIFO, socket, device or directory); name a regular file"
                    .into(),
            ));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| unreadable(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|e| ConfigFileError::Syntax {
            path: path.to_path_buf(),
            reason: format!("not UTF-8 ({e})"),
        })?;
        ConfigFile::parse(path, &text)
    }

    /// Parses `text` as the file at `path` (named in errors and sources).
    ///
    /// ```
    /// use telering_std::config::ConfigFile;
    /// let file = ConfigFile::parse("a.cfg", "TELERING_CLOCK = 'realtime'\nNIXL_TELEMETRY_ENABLED_METRICS = ['a*', 'b']").unwrap();
    /// assert_eq!(file.get("NIXL_TELEMETRY_ENABLED_METRICS"), Some("a*,b"));
    /// let e = ConfigFile::parse("a.cfg", "[NIXL_TELEMETRY_DIR]\nx = 1").unwrap_err();
    /// assert_eq!(e.to_string(), "configuration file a.cfg, key NIXL_TELEMETRY_DIR: a table is not a value; use a string, an integer, a boolean or an array of them");
    /// // A telering key inside a table would be ignored: it is refused instead.
    /// let e = ConfigFile::parse("a.cfg", "[NIXL]\nNIXL_TELEMETRY_DIR = '/x'").unwrap_err();
    /// assert!(e.to_string().starts_with("configuration file a.cfg, key NIXL.NIXL_TELEMETRY_DIR: telering reads its variables only as top-level keys"));
    /// assert!(ConfigFile::parse("a.cfg", "[NIXL]\nUCX_TLS = 'rc'").is_ok()); // other keys stay others'
    /// ```
    pub fn parse(path: impl AsRef<Path>, text: &str) -> Result<ConfigFile, ConfigFileError> {
        let path = path.as_ref().to_path_buf();
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            // One line: where, then what (the parser's own text quotes the source).
            let at = e.span().map_or(0, |s| s.start).min(text.len());
            let before = text.get(..at).unwrap_or("");
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            ConfigFileError::Syntax {
                path: path.clone(),
                reason: format!(
                    "line {line}, column {column}: {}",
                    e.message().trim().replace('\n', " ")
                ),
            }
        })?;
        let mut values = BTreeMap::new();
        for (key, value) in table {
            if !is_telering_variable(&key) {
                // Other programs' keys are left alone, but a telering variable
                // inside a table would be silently ignored: it is an error.
                if let Some(key) = nested_variable(&key, &value) {
                    return Err(ConfigFileError::Nested { path, key });
                }
                continue;
            }
            match text_of(&value) {
                Ok(text) => {
                    values.insert(key, text);
                }
                Err(found) => return Err(ConfigFileError::Value { path, key, found }),
            }
        }
        Ok(ConfigFile { path, values })
    }

    /// The file's path.
    ///
    /// ```
    /// let file = telering_std::config::ConfigFile::parse("/etc/nixl.cfg", "").unwrap();
    /// assert_eq!(file.path(), std::path::Path::new("/etc/nixl.cfg"));
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The text of variable `name`, if the file sets it.
    ///
    /// ```
    /// let file = telering_std::config::ConfigFile::parse("f", "NIXL_TELEMETRY_RUN_INTERVAL = 50").unwrap();
    /// assert_eq!(file.get("NIXL_TELEMETRY_RUN_INTERVAL"), Some("50"));
    /// ```
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Every telering variable the file sets, with its text, sorted by name.
    ///
    /// ```
    /// let file = telering_std::config::ConfigFile::parse("f", "TELERING_CLOCK = 'tsc'\nNIXL_TELEMETRY_ENABLE = 1").unwrap();
    /// assert_eq!(file.values().collect::<Vec<_>>(), [("NIXL_TELEMETRY_ENABLE", "1"), ("TELERING_CLOCK", "tsc")]);
    /// ```
    pub fn values(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

/// The dotted path of the first telering variable below the table `value` named
/// `name`, if there is one.
fn nested_variable(name: &str, value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::Table(table) => table.iter().find_map(|(key, inner)| {
            let path = format!("{name}.{key}");
            if is_telering_variable(key) {
                Some(path)
            } else {
                nested_variable(&path, inner)
            }
        }),
        toml::Value::Array(items) => items.iter().find_map(|item| nested_variable(name, item)),
        _ => None,
    }
}

/// The text a TOML value stands for, or the name of its type when it stands for none.
fn text_of(value: &toml::Value) -> Result<String, &'static str> {
    use toml::Value;
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Integer(i) => Ok(i.to_string()),
        // `{:?}` keeps the fraction (`1024.0`), so an integer variable rejects it.
        Value::Float(x) => Ok(format!("{x:?}")),
        Value::Boolean(b) => Ok(b.to_string()),
        Value::Datetime(_) => Err("datetime"),
        Value::Table(_) => Err("table"),
        Value::Array(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Value::Array(_) => return Err("array of arrays"),
                    Value::Table(_) => return Err("array of tables"),
                    other => parts.push(text_of(other)?),
                }
            }
            Ok(parts.join(","))
        }
    }
}

/// Where the configuration file is looked for: NIXL's order, with the places given
/// so that programs and tests can choose them.
///
/// ```
/// use telering_std::config::FileSearch;
/// let dir = tempfile::tempdir().unwrap();
/// let search = FileSearch { explicit: None, home: Some(dir.path().into()), system: dir.path().join("etc.cfg") };
/// assert_eq!(search.locate().unwrap(), None); // nothing there: no file
/// std::fs::write(dir.path().join("etc.cfg"), "").unwrap();
/// assert_eq!(search.locate().unwrap(), Some(dir.path().join("etc.cfg")));
/// std::fs::write(dir.path().join(".nixl.cfg"), "").unwrap();
/// assert_eq!(search.locate().unwrap(), Some(dir.path().join(".nixl.cfg")));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSearch {
    /// `NIXL_CONFIG_FILE`'s value: the file, which must exist.
    pub explicit: Option<OsString>,
    /// `HOME`: its `.nixl.cfg` is read if it exists.
    pub home: Option<PathBuf>,
    /// The system file (`/etc/nixl.cfg`), read if it exists.
    pub system: PathBuf,
}

impl FileSearch {
    /// The process's `NIXL_CONFIG_FILE` and `HOME`, and `/etc/nixl.cfg`.
    ///
    /// ```
    /// let search = telering_std::config::FileSearch::from_process();
    /// assert_eq!(search.system, std::path::Path::new("/etc/nixl.cfg"));
    /// ```
    pub fn from_process() -> FileSearch {
        FileSearch {
            explicit: std::env::var_os(CONFIG_FILE_VAR),
            home: std::env::var_os("HOME").map(PathBuf::from),
            system: PathBuf::from(SYSTEM_FILE),
        }
    }

    /// The file to read, or `None` when there is none. A blank `NIXL_CONFIG_FILE` is
    /// unset ([`crate::parse`], rule 2), as is a blank `HOME`.
    ///
    /// ```
    /// use telering_std::config::{ConfigFileError, FileSearch};
    /// let search = FileSearch { explicit: Some("/no/such.cfg".into()), home: None, system: "/etc/nixl.cfg".into() };
    /// assert_eq!(search.locate(), Err(ConfigFileError::Missing { path: "/no/such.cfg".into() }));
    /// ```
    pub fn locate(&self) -> Result<Option<PathBuf>, ConfigFileError> {
        if let Some(raw) = &self.explicit {
            let text = raw.to_str().ok_or(ConfigFileError::NotUnicode)?;
            if let Some(name) = crate::parse::value(text) {
                let path = PathBuf::from(name);
                return match std::fs::metadata(&path) {
                    Ok(_) => Ok(Some(path)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        Err(ConfigFileError::Missing { path })
                    }
                    Err(e) => Err(ConfigFileError::Unreadable {
                        path,
                        reason: e.to_string(),
                    }),
                };
            }
        }
        let home = self
            .home
            .as_ref()
            .filter(|h| !h.as_os_str().is_empty())
            .map(|h| h.join(HOME_FILE_NAME));
        for candidate in home.into_iter().chain([self.system.clone()]) {
            // `exists` follows links: a dangling one is "does not exist", so the
            // fallback applies; anything that exists is used, and fails loudly.
            if candidate.exists() {
                return Ok(Some(candidate));
            }
        }
        Ok(None)
    }

    /// The file [`locate`](Self::locate) finds, read and parsed.
    ///
    /// ```
    /// use telering_std::config::FileSearch;
    /// let dir = tempfile::tempdir().unwrap();
    /// let cfg = dir.path().join("t.cfg");
    /// std::fs::write(&cfg, "NIXL_TELEMETRY_DIR = '/tmp/t'").unwrap();
    /// let search = FileSearch { explicit: Some(cfg.into()), home: None, system: "/nonexistent".into() };
    /// assert_eq!(search.load().unwrap().unwrap().get("NIXL_TELEMETRY_DIR"), Some("/tmp/t"));
    /// ```
    pub fn load(&self) -> Result<Option<ConfigFile>, ConfigFileError> {
        self.locate()?.map(ConfigFile::read).transpose()
    }
}
