//! The ring directory a subcommand reads when it is given none: `NIXL_TELEMETRY_DIR`,
//! else `./telemetry` — where agents (and `telering demo`) write their rings when
//! nothing is configured. `demo`, `serve` and `top` all choose it this way.

use crate::error::CliError;
use std::path::PathBuf;

/// The telemetry directory when neither a flag nor `NIXL_TELEMETRY_DIR` names one.
pub const DEFAULT_DIR: &str = "./telemetry";

/// Where a [`RingDir`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirOrigin {
    /// A flag or argument named it.
    Given,
    /// `NIXL_TELEMETRY_DIR` named it.
    Env,
    /// Nothing named it: [`DEFAULT_DIR`].
    Default,
}

/// A ring directory and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingDir {
    /// The directory.
    pub path: PathBuf,
    /// Who chose it.
    pub origin: DirOrigin,
}

impl RingDir {
    /// The directory `given` on the command line, else `env_dir`
    /// (`NIXL_TELEMETRY_DIR`, blank counting as unset), else [`DEFAULT_DIR`].
    ///
    /// ```
    /// use telering_cli::ring_dir::{DirOrigin, RingDir};
    /// let dir = RingDir::choose(None, Some("  ".into()));
    /// assert_eq!((dir.path.to_str(), dir.origin), (Some("./telemetry"), DirOrigin::Default));
    /// let dir = RingDir::choose(None, Some("/dev/shm/t".into()));
    /// assert_eq!((dir.path.to_str(), dir.origin), (Some("/dev/shm/t"), DirOrigin::Env));
    /// let dir = RingDir::choose(Some("rings".into()), Some("/dev/shm/t".into()));
    /// assert_eq!(dir.origin, DirOrigin::Given);
    /// ```
    pub fn choose(given: Option<PathBuf>, env_dir: Option<String>) -> RingDir {
        if let Some(path) = given {
            return RingDir {
                path,
                origin: DirOrigin::Given,
            };
        }
        match env_dir.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
            Some(dir) => RingDir {
                path: PathBuf::from(dir),
                origin: DirOrigin::Env,
            },
            None => RingDir {
                path: PathBuf::from(DEFAULT_DIR),
                origin: DirOrigin::Default,
            },
        }
    }

    /// Fails with [`CliError::NoDefaultDir`] when the directory is the default one
    /// and does not exist, so the user learns which directory was meant and how to
    /// name another (`how`, such as `telering serve --dir DIR`). A directory that was
    /// named is left to the subcommand, whose error names it.
    ///
    /// ```
    /// use telering_cli::ring_dir::{DirOrigin, RingDir};
    /// let missing = std::env::temp_dir().join(format!("telering-doc-none-{}", std::process::id()));
    /// let default = RingDir { path: missing.clone(), origin: DirOrigin::Default };
    /// let error = default.require("telering top DIR").unwrap_err();
    /// assert!(error.to_string().contains("telering top DIR"), "{error}");
    /// assert_eq!(error.exit_code(), 1);
    /// // A directory the user named is the subcommand's to report.
    /// let named = RingDir { path: missing, origin: DirOrigin::Env };
    /// assert!(named.require("telering top DIR").is_ok());
    /// ```
    pub fn require(&self, how: &'static str) -> Result<(), CliError> {
        if self.origin == DirOrigin::Default && !self.path.exists() {
            return Err(CliError::NoDefaultDir {
                path: self.path.clone(),
                how,
            });
        }
        Ok(())
    }
}
