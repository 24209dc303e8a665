//! `telering bridge` link specifications: `[NAME=]SOURCE`.
//!
//! | SOURCE | link |
//! |---|---|
//! | `serial:PATH[@BAUD]` | a serial device in raw mode, 115200 baud unless given |
//! | `tcp:HOST:PORT` | a TCP connection the bridge opens (QEMU's `-serial tcp:…,server`) |
//! | `unix:PATH` | a Unix stream socket the bridge connects to |
//! | `file:PATH` | a file (or FIFO) read to its end |
//! | `-` | standard input, read to its end |
//! | `mem:PATH[@OFFSET]` | a ring laid out by telering-core in shared memory (a regular file such as a PCIe BAR's sysfs `resourceN`, or a character device such as `/dev/mem` or `/dev/uioN`, from byte `OFFSET`, decimal or `0x` hex, 8-aligned; default 0), only mapped, never read, followed read-only without a trailer (telering-shm's `window` module) |
//!
//! `NAME` is the agent name the link's events are filed under; without it, the name
//! the device gives in its hello, and until then (version-1 streams and memory windows
//! have none) a name derived from the source.

use crate::CliError;
use std::path::PathBuf;

/// Baud rate of a serial link when the specification gives none.
pub const DEFAULT_BAUD: u32 = 115_200;

/// Where a link's bytes come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A serial device.
    Serial {
        /// Device path.
        path: PathBuf,
        /// Baud rate.
        baud: u32,
    },
    /// A TCP address to connect to.
    Tcp(String),
    /// A Unix stream socket to connect to.
    Unix(PathBuf),
    /// A file read to its end.
    File(PathBuf),
    /// Standard input.
    Stdin,
    /// A core ring window in shared memory.
    Memory {
        /// File or device holding the window.
        path: PathBuf,
        /// Byte offset of the window.
        offset: u64,
    },
}

impl Source {
    /// Whether the link is opened again when it ends (a device that goes away may
    /// come back); files and standard input end the link at their end.
    pub fn reconnects(&self) -> bool {
        matches!(
            self,
            Source::Serial { .. } | Source::Tcp(_) | Source::Unix(_)
        )
    }
}

/// One `--link` argument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkSpec {
    /// The agent name: always, when given as `NAME=`; otherwise until a hello names
    /// the device.
    pub name: String,
    /// Whether `NAME=` was given: it then wins over the device's own name (two
    /// devices running one firmware image say the same name in their hellos).
    pub name_given: bool,
    /// The source.
    pub source: Source,
    /// The argument as given, for messages.
    pub text: String,
}

fn usage(text: &str, why: &str) -> CliError {
    CliError::Usage(format!(
        "link `{}`: {why}; give [NAME=]serial:PATH[@BAUD], tcp:HOST:PORT, unix:PATH, file:PATH, mem:PATH[@OFFSET] or -",
        telering_core::text::Escaped::new(text)
    ))
}

/// A name made of the source's last path component or address, with characters an
/// agent name may not hold replaced by `_`.
fn default_name(source: &Source) -> String {
    let raw = match source {
        Source::Serial { path, .. }
        | Source::Unix(path)
        | Source::File(path)
        | Source::Memory { path, .. } => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        Source::Tcp(addr) => format!("tcp-{addr}"),
        Source::Stdin => "stdin".to_owned(),
    };
    let name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let name = name.trim_start_matches('.');
    if name.is_empty() {
        "link".to_owned()
    } else {
        format!("link-{name}")
    }
}

/// Parses one link specification.
///
/// ```
/// use telering_cli::bridge::spec::{parse_link, Source};
/// let link = parse_link("uart0=serial:/dev/ttyUSB0@921600").unwrap();
/// assert_eq!(link.name, "uart0");
/// assert_eq!(link.source, Source::Serial { path: "/dev/ttyUSB0".into(), baud: 921_600 });
/// assert_eq!(parse_link("tcp:127.0.0.1:4000").unwrap().name, "link-tcp-127.0.0.1_4000");
/// assert!(parse_link("carrier-pigeon:coo").is_err());
/// ```
pub fn parse_link(text: &str) -> Result<LinkSpec, CliError> {
    let (name, rest) = match text.split_once('=') {
        Some((name, rest)) if !name.contains(':') && !name.contains('/') => (Some(name), rest),
        _ => (None, text),
    };
    let source = if rest == "-" {
        Source::Stdin
    } else {
        let (kind, arg) = rest
            .split_once(':')
            .ok_or_else(|| usage(text, "no source kind"))?;
        if arg.is_empty() {
            return Err(usage(text, "the source is empty"));
        }
        match kind {
            "serial" => {
                let (path, baud) = match arg.rsplit_once('@') {
                    Some((path, baud)) => {
                        let baud =
                            baud.parse::<u32>().ok().filter(|&b| b > 0).ok_or_else(|| {
                                usage(text, "the baud rate after @ is not a positive number")
                            })?;
                        (path, baud)
                    }
                    None => (arg, DEFAULT_BAUD),
                };
                Source::Serial {
                    path: path.into(),
                    baud,
                }
            }
            "tcp" => {
                if !arg.contains(':') {
                    return Err(usage(text, "a TCP address is HOST:PORT"));
                }
                Source::Tcp(arg.to_owned())
            }
            "unix" => Source::Unix(arg.into()),
            "file" => Source::File(arg.into()),
            "mem" => {
                let (path, offset) = match arg.rsplit_once('@') {
                    Some((path, offset)) => {
                        let offset = parse_offset(offset).ok_or_else(|| {
                            usage(
                                text,
                                "the offset after @ is not a number (decimal or 0x hex)",
                            )
                        })?;
                        (path, offset)
                    }
                    None => (arg, 0),
                };
                if offset % 8 != 0 {
                    return Err(usage(
                        text,
                        &format!(
                            "the offset after @ ({offset}) is not a multiple of 8, which the ring's atomics need"
                        ),
                    ));
                }
                Source::Memory {
                    path: path.into(),
                    offset,
                }
            }
            _ => return Err(usage(text, "unknown source kind")),
        }
    };
    let name_given = name.is_some();
    let name = match name {
        Some(name) => {
            telering_shm::validate_agent_name(name)
                .map_err(|e| usage(text, &format!("NAME is not a usable agent name: {e}")))?;
            name.to_owned()
        }
        None => default_name(&source),
    };
    Ok(LinkSpec {
        name,
        name_given,
        source,
        text: text.to_owned(),
    })
}

fn parse_offset(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_source_kind_parses() {
        assert_eq!(parse_link("-").unwrap().source, Source::Stdin);
        assert_eq!(
            parse_link("file:/tmp/x").unwrap().source,
            Source::File("/tmp/x".into())
        );
        assert_eq!(
            parse_link("unix:/run/fw.sock").unwrap().source,
            Source::Unix("/run/fw.sock".into())
        );
        assert_eq!(
            parse_link("mem:/dev/shm/win@0x0").unwrap().source,
            Source::Memory {
                path: "/dev/shm/win".into(),
                offset: 0
            }
        );
        assert_eq!(
            parse_link("mem:/dev/shm/win@4120").unwrap().source,
            Source::Memory {
                path: "/dev/shm/win".into(),
                offset: 4120
            }
        );
        assert_eq!(
            parse_link("mem:/dev/shm/win@0x1018").unwrap().source,
            parse_link("mem:/dev/shm/win@4120").unwrap().source
        );
        assert_eq!(
            parse_link("serial:/dev/ttyACM0").unwrap().source,
            Source::Serial {
                path: "/dev/ttyACM0".into(),
                baud: DEFAULT_BAUD
            }
        );
        assert_eq!(
            parse_link("serial:/dev/ttyACM0").unwrap().name,
            "link-ttyACM0"
        );
    }

    #[test]
    fn bad_specifications_are_usage_errors_naming_the_argument() {
        for bad in [
            "serial:/dev/x@fast",
            "serial:/dev/x@0",
            "tcp:nohost",
            "file:",
            "mem:/x@zz",
            "mem:/x@4097",
            "mem:/x@-8",
            "x",
            "../a=file:/y",
        ] {
            let e = parse_link(bad).unwrap_err();
            assert!(matches!(e, CliError::Usage(_)), "{bad}: {e}");
        }
        let e = parse_link("bad\u{1b}[31m:x").unwrap_err().to_string();
        assert!(!e.contains('\u{1b}'), "{e}");
    }
}
