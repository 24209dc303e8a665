//! [`ExportError`]: why an exporter could not start or could not export, with a
//! message that names the exporter and what to do.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;

/// Why an exporter could not start or could not export.
#[derive(Debug)]
#[non_exhaustive]
pub enum ExportError {
    /// The exporter writes files but no directory was configured.
    MissingDir {
        /// The exporter's name.
        exporter: String,
    },
    /// A file operation failed.
    Io {
        /// The exporter's name.
        exporter: String,
        /// The file or directory at fault.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// An existing file is not one this exporter wrote; it is left untouched.
    ForeignFile {
        /// The exporter's name.
        exporter: String,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An exporter-specific variable holds a value the exporter cannot use.
    Config {
        /// The exporter's name.
        exporter: String,
        /// The variable, such as `NIXL_TELEMETRY_PROMETHEUS_PORT`.
        variable: String,
        /// Its value.
        value: String,
        /// What is wrong and what to use instead.
        message: String,
    },
    /// The file this exporter would write cannot be named after the agent (too long
    /// once the exporter's suffix is added, or not one file name).
    TargetName {
        /// The exporter's name.
        exporter: String,
        /// The file name it would write.
        name: String,
        /// Why it cannot.
        reason: &'static str,
    },
    /// No exporter is registered under the name asked for.
    UnknownExporter {
        /// The name asked for.
        name: String,
        /// The registered names.
        available: Vec<String>,
    },
    /// Anything else, with the underlying error.
    Failed {
        /// The exporter's name.
        exporter: String,
        /// The cause.
        source: Box<dyn Error + Send + Sync>,
    },
}

impl ExportError {
    /// A failed file operation on `path`.
    ///
    /// ```
    /// use telering_std::ExportError;
    /// let e = ExportError::io("csv", "/tmp/x.csv", std::io::ErrorKind::PermissionDenied.into());
    /// assert!(e.to_string().starts_with("exporter `csv`: /tmp/x.csv: "));
    /// ```
    pub fn io(exporter: &str, path: impl Into<PathBuf>, source: std::io::Error) -> ExportError {
        ExportError::Io {
            exporter: exporter.to_string(),
            path: path.into(),
            source,
        }
    }

    /// Any other failure.
    ///
    /// ```
    /// use telering_std::ExportError;
    /// let e = ExportError::failed("otlp", "connection refused");
    /// assert_eq!(e.to_string(), "exporter `otlp`: connection refused");
    /// ```
    pub fn failed(exporter: &str, source: impl Into<Box<dyn Error + Send + Sync>>) -> ExportError {
        ExportError::Failed {
            exporter: exporter.to_string(),
            source: source.into(),
        }
    }

    /// The exporter the error comes from.
    ///
    /// ```
    /// use telering_std::ExportError;
    /// assert_eq!(ExportError::failed("otlp", "x").exporter(), "otlp");
    /// ```
    pub fn exporter(&self) -> &str {
        match self {
            ExportError::MissingDir { exporter }
            | ExportError::Io { exporter, .. }
            | ExportError::ForeignFile { exporter, .. }
            | ExportError::Config { exporter, .. }
            | ExportError::TargetName { exporter, .. }
            | ExportError::Failed { exporter, .. } => exporter,
            ExportError::UnknownExporter { name, .. } => name,
        }
    }
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::MissingDir { exporter } => write!(
                f,
                "exporter `{exporter}` writes files but NIXL_TELEMETRY_DIR is not set; set it to a writable directory"
            ),
            ExportError::Io {
                exporter,
                path,
                source,
            } => write!(f, "exporter `{exporter}`: {}: {source}", path.display()),
            ExportError::ForeignFile {
                exporter,
                path,
                reason,
            } => write!(
                f,
                "exporter `{exporter}`: {} {reason}; it was left untouched (move it away or choose another NIXL_TELEMETRY_DIR)",
                path.display()
            ),
            ExportError::Config {
                exporter,
                variable,
                value,
                message,
            } => write!(f, "{variable}={value}: {message} (exporter `{exporter}`)"),
            ExportError::TargetName {
                exporter,
                name,
                reason,
            } => write!(
                f,
                "exporter `{exporter}` cannot write the file {name:?}: {reason}; choose a shorter agent name"
            ),
            ExportError::UnknownExporter { name, available } => write!(
                f,
                "`{name}` is not a known exporter; use one of: {}",
                available.join(", ")
            ),
            ExportError::Failed { exporter, source } => {
                write!(f, "exporter `{exporter}`: {source}")
            }
        }
    }
}

impl Error for ExportError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            ExportError::Io { source, .. } => Some(source),
            ExportError::Failed { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
}
