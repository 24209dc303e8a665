//! The command's one error type and its exit codes.

use crate::output::shown_path;
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

/// Writes `telering: MESSAGE` as one line on stderr: a message holding a control
/// character (a file name with a newline, quoted by a library) is escaped
/// ([`crate::output::message_line`]), and a stderr that cannot be written (`2>/dev/full`,
/// a closed pipe) loses the line instead of panicking, so the exit code stays the
/// documented one.
pub fn error_line(message: &str) {
    use std::io::Write;
    let line = format!("telering: {}\n", crate::output::message_line(message));
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Reports a command line clap refused and returns the exit code: `--help` and
/// `--version` are printed on stdout (code 0); a usage error is one line on stderr,
/// `telering: ` and clap's message, then its tip if it has one and where the flags
/// are listed (code [`EXIT_USAGE`]).
///
/// ```
/// use clap::Parser;
/// let e = telering_cli::Cli::try_parse_from(["telering", "stat", "--bogus", "x"]).unwrap_err();
/// assert_eq!(telering_cli::usage_line(&e).lines().count(), 1);
/// assert_eq!(telering_cli::usage_error(&e), telering_cli::EXIT_USAGE);
/// ```
pub fn usage_error(e: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // A closed stdout loses the text; it is not an error.
            let _ = e.print();
            EXIT_OK
        }
        _ => {
            let line = usage_line(e);
            error_line(&line);
            EXIT_USAGE
        }
    }
}

/// The one line (without `telering: `) [`usage_error`] prints for a usage error:
/// clap's message, its tip, and the `--help` to run.
///
/// ```
/// use clap::Parser;
/// let e = telering_cli::Cli::try_parse_from(["telering", "read"]).unwrap_err();
/// assert_eq!(
///     telering_cli::usage_line(&e),
///     "the following required arguments were not provided: <PATH> (`telering read --help` lists the flags)"
/// );
/// ```
pub fn usage_line(e: &clap::Error) -> String {
    use clap::CommandFactory;
    use clap::error::ErrorKind;
    let subcommands: Vec<String> = crate::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand | ErrorKind::MissingSubcommand
    ) {
        return format!(
            "name a subcommand: {} (`telering --help` says what each does)",
            subcommands.join(", ")
        );
    }
    // Clap's block is paragraphs: the message (which may go on over indented lines),
    // `tip: …`, `Usage: …`, `For more information, try '--help'.`. The message and
    // the tip stay; the rest is said by the pointer to `--help`.
    let text = e.render().to_string();
    let mut paragraphs = text.split("\n\n").map(str::trim).filter(|p| !p.is_empty());
    let message = paragraphs
        .next()
        .unwrap_or("the command line is not valid")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut line = message
        .strip_prefix("error: ")
        .unwrap_or(&message)
        .to_string();
    let mut usage = None;
    for paragraph in paragraphs {
        if let Some(tip) = paragraph.strip_prefix("tip: ") {
            line.push_str("; ");
            line.push_str(&tip.split_whitespace().collect::<Vec<_>>().join(" "));
        } else if let Some(u) = paragraph.strip_prefix("Usage: ") {
            let words: Vec<&str> = u
                .split_whitespace()
                .take_while(|w| !w.starts_with(['[', '<', '-']))
                .collect();
            usage = Some(words.join(" "));
        }
    }
    // Without a usage paragraph (a bad flag value), the subcommand named on the
    // command line.
    let usage = usage.unwrap_or_else(|| {
        let named = std::env::args().skip(1).find(|a| subcommands.contains(a));
        match named {
            Some(sub) => format!("telering {sub}"),
            None => "telering".into(),
        }
    });
    line.push_str(&format!(" (`{usage} --help` lists the flags)"));
    line
}

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
                write!(f, "{}: cannot read: {source}", shown_path(path))
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
                    shown_path(path)
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
                shown_path(path)
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
                    shown_path(path),
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
                shown_path(path)
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
