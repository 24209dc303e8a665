//! The command's one error type and its exit codes.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Exit code of a successful run.
pub const EXIT_OK: i32 = 0;
/// Exit code of a runtime failure: a file that cannot be read, a port in use, data
/// that could not all be decoded.
pub const EXIT_RUNTIME: i32 = 1;
/// Exit code of a usage or configuration error: a bad flag (clap reports those), a
/// malformed `NIXL_TELEMETRY_*` variable.
pub const EXIT_USAGE: i32 = 2;

/// Why a subcommand failed. `Display` is the one line printed on stderr: it names the
/// file, field or variable at fault and, where there is one, what to do.
#[derive(Debug)]
#[non_exhaustive]
pub enum CliError {
    /// A flag or a `NIXL_TELEMETRY_*` variable holds an unusable value; the text
    /// names it (exit code 2).
    Config(String),
    /// The subcommand cannot be used this way, such as `tail` on a ring whose writer
    /// does not stamp its slots; the text says what to use instead (exit code 2).
    Usage(String),
    /// A ring file could not be opened or read.
    Ring(telering_shm::ShmError),
    /// The metrics endpoint or its ring directory failed.
    Collector(telering_prometheus::collector::CollectorError),
    /// An input file could not be read.
    Input {
        /// The file (`-` for standard input).
        path: PathBuf,
        /// What the operating system said.
        source: io::Error,
    },
    /// Writing the output failed (a closed pipe is not reported: the reader went away).
    Output(io::Error),
    /// `read` took events from the ring, then its output closed (`telering read f |
    /// head`): the events taken that never reached the output's reader are gone.
    OutputClosed {
        /// The ring file.
        path: PathBuf,
        /// Events taken from the ring (their slots released).
        taken: u64,
        /// At most how many of them never reached the output's reader; `None` when
        /// that cannot be known (the output is not a pipe).
        unreached: Option<u64>,
    },
    /// The run finished, but some records could not be decoded; each was reported on
    /// stderr as it was met.
    Incomplete {
        /// The file or stream.
        path: PathBuf,
        /// How many records or stream problems were reported.
        count: u64,
        /// What they were (`"corrupt slots"`, `"frame stream problems"`).
        what: &'static str,
    },
    /// `stat DIR` reported every ring it could, but some files could not be read;
    /// each problem was reported on stderr as it was met.
    StatProblems {
        /// The directory.
        path: PathBuf,
        /// Files that could not be read or whose trailer is damaged.
        unreadable: u64,
        /// Files skipped because they are not rings.
        not_rings: u64,
    },
    /// No directory was named (no flag, no `NIXL_TELEMETRY_DIR`) and the default one,
    /// `./telemetry`, does not exist.
    NoDefaultDir {
        /// The default directory.
        path: PathBuf,
        /// How to name another one (`telering serve --dir DIR`).
        how: &'static str,
    },
    /// `top --prometheus --once`: the Prometheus server gave no rows (down, refusing,
    /// or answering a query with an error).
    Prometheus(crate::top::prometheus::PromError),
    /// Telemetry could not start (the text names the variable or the cause).
    Telemetry {
        /// The message.
        message: String,
        /// Whether it is a configuration error (exit 2) rather than a runtime one.
        config: bool,
    },
}

impl CliError {
    /// The process exit code for this error: [`EXIT_USAGE`] for configuration errors,
    /// [`EXIT_RUNTIME`] otherwise.
    ///
    /// ```
    /// use telering_cli::{CliError, EXIT_RUNTIME, EXIT_USAGE};
    /// assert_eq!(CliError::Config("bad".into()).exit_code(), EXIT_USAGE);
    /// let e = CliError::Output(std::io::Error::other("disk full"));
    /// assert_eq!(e.exit_code(), EXIT_RUNTIME);
    /// ```
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Config(_) | CliError::Usage(_) => EXIT_USAGE,
            CliError::Telemetry { config: true, .. } => EXIT_USAGE,
            _ => EXIT_RUNTIME,
        }
    }

    /// Whether this is a write to a closed pipe (`telering read f | head`): the reader
    /// of the output has gone, which is a normal way for the run to end.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Output(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Config(message) | CliError::Usage(message) => f.write_str(message),
            CliError::Ring(e) => e.fmt(f),
            CliError::Collector(e) => e.fmt(f),
            CliError::Input { path, source } => {
                write!(f, "{}: cannot read: {source}", path.display())
            }
            CliError::Output(e) => write!(f, "cannot write the output: {e}"),
            CliError::OutputClosed {
                path,
                taken,
                unreached,
            } => {
                write!(
                    f,
                    "{}: the output was closed after {taken} events were taken from the ring; ",
                    path.display()
                )?;
                match unreached {
                    Some(n) => write!(f, "up to {n} of them never reached its reader"),
                    None => write!(f, "some of them may not have reached its reader"),
                }?;
                f.write_str(
                    " and are gone; use `telering read --max N` to take exactly N events, or `telering tail` to look without taking any",
                )
            }
            CliError::Incomplete { path, count, what } => write!(
                f,
                "{}: {count} {what} were reported above and skipped; every other record was printed",
                path.display()
            ),
            CliError::StatProblems {
                path,
                unreadable,
                not_rings,
            } => {
                let files = |n: u64| if n == 1 { "file" } else { "files" };
                write!(
                    f,
                    "{}: {} problems were reported above: {unreadable} {} could not be reported",
                    path.display(),
                    unreadable + not_rings,
                    files(*unreadable)
                )?;
                if *not_rings > 0 {
                    write!(
                        f,
                        ", {not_rings} {} not a ring",
                        if *not_rings == 1 { "is" } else { "are" }
                    )?;
                }
                f.write_str("; every other ring was reported")
            }
            CliError::NoDefaultDir { path, how } => write!(
                f,
                "no ring directory {}: it is the default when NIXL_TELEMETRY_DIR is unset; \
                 run the agents (or `telering demo`) there, or name the agents' directory: \
                 `{how}` or NIXL_TELEMETRY_DIR=DIR",
                path.display()
            ),
            CliError::Prometheus(e) => e.fmt(f),
            CliError::Telemetry { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CliError::Ring(e) => Some(e),
            CliError::Collector(e) => Some(e),
            CliError::Input { source, .. } => Some(source),
            CliError::Output(e) => Some(e),
            _ => None,
        }
    }
}

impl From<telering_shm::ShmError> for CliError {
    fn from(e: telering_shm::ShmError) -> Self {
        CliError::Ring(e)
    }
}

impl From<telering_prometheus::collector::CollectorError> for CliError {
    fn from(e: telering_prometheus::collector::CollectorError) -> Self {
        CliError::Collector(e)
    }
}

impl From<telering_prometheus::ConfigError> for CliError {
    fn from(e: telering_prometheus::ConfigError) -> Self {
        CliError::Config(e.to_string())
    }
}
