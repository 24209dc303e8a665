//! Making `NIXL_TELEMETRY_DIR` ready before an exporter writes into it: an existing
//! directory (or a symbolic link to one) is used, a missing one is created with its
//! parents, and anything else is a [`ConfigError::DirNotADirectory`] that says what
//! the variable's value names instead — a regular file, a dangling symbolic link —
//! rather than the operating system's bare "File exists".

use crate::config::ConfigError;
use std::io::ErrorKind;
use std::path::Path;

/// What a path names, in words, for a path that is not a directory.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if file_type.is_file() {
        "a regular file"
    } else if file_type.is_fifo() {
        "a named pipe"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() || file_type.is_char_device() {
        "a device"
    } else {
        "something other than a directory"
    }
}

/// Names the ancestor of `dir` that exists but is not a directory.
fn below_a_file(dir: &Path) -> String {
    let blocker = dir
        .ancestors()
        .skip(1)
        .find(|a| std::fs::metadata(a).is_ok_and(|m| !m.is_dir()));
    match blocker {
        Some(file) => format!("is below {}, which is not a directory", file.display()),
        None => "is below something that is not a directory".into(),
    }
}

/// Uses `dir` as the telemetry directory, creating it (and its parents) if missing.
pub(crate) fn prepare(dir: &Path) -> Result<(), ConfigError> {
    inspect(dir, true)
}

/// Checks `dir` as the telemetry directory the way an agent does when it starts,
/// creating nothing: a directory (or a link to one) and a path that does not exist
/// yet (the agent creates it) pass; anything else is the agent's error.
///
/// ```
/// use telering_std::config::check_dir;
/// assert!(check_dir("/no/such/dir/yet".as_ref()).is_ok());
/// let e = check_dir("/etc/passwd".as_ref()).unwrap_err();
/// assert!(e.to_string().contains("is a regular file, not a directory"), "{e}");
/// ```
pub fn check(dir: &Path) -> Result<(), ConfigError> {
    inspect(dir, false)
}

fn inspect(dir: &Path, create: bool) -> Result<(), ConfigError> {
    let not_a_dir = |what: String| ConfigError::DirNotADirectory {
        path: dir.to_path_buf(),
        what,
    };
    let unusable = |source| ConfigError::DirUnusable {
        path: dir.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(meta) if meta.file_type().is_symlink() => {
            let target = std::fs::read_link(dir)
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".into());
            match std::fs::metadata(dir) {
                Ok(to) if to.is_dir() => Ok(()),
                Ok(to) => Err(not_a_dir(format!(
                    "is a symbolic link to {target}, which is {}, not a directory",
                    kind_of(to.file_type())
                ))),
                Err(e) if e.kind() == ErrorKind::NotFound => Err(not_a_dir(format!(
                    "is a symbolic link to {target}, which does not exist (a dangling link)"
                ))),
                Err(e) => Err(unusable(e)),
            }
        }
        Ok(meta) => Err(not_a_dir(format!(
            "is {}, not a directory",
            kind_of(meta.file_type())
        ))),
        Err(e) if e.kind() == ErrorKind::NotFound && !create => {
            // Creating it would fail if an ancestor is not a directory.
            let blocked = dir
                .ancestors()
                .skip(1)
                .any(|a| std::fs::metadata(a).is_ok_and(|m| !m.is_dir()));
            match blocked {
                true => Err(not_a_dir(below_a_file(dir))),
                false => Ok(()),
            }
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| match e.kind() {
                ErrorKind::NotADirectory => not_a_dir(below_a_file(dir)),
                _ => unusable(e),
            })
        }
        Err(e) if e.kind() == ErrorKind::NotADirectory => Err(not_a_dir(below_a_file(dir))),
        Err(e) => Err(unusable(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_or_a_link_to_one_is_used_and_a_missing_one_created() {
        let tmp = tempfile::tempdir().unwrap();
        prepare(tmp.path()).unwrap();
        let nested = tmp.path().join("a/b/c");
        prepare(&nested).unwrap();
        assert!(nested.is_dir());
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&nested, &link).unwrap();
        prepare(&link).unwrap();
    }

    #[test]
    fn anything_else_says_what_the_value_names() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let dangling = tmp.path().join("dangling");
        std::os::unix::fs::symlink(tmp.path().join("gone"), &dangling).unwrap();
        let to_file = tmp.path().join("to-file");
        std::os::unix::fs::symlink(&file, &to_file).unwrap();
        for (path, needle) in [
            (&file, "is a regular file, not a directory"),
            (&dangling, "which does not exist (a dangling link)"),
            (&to_file, "which is a regular file"),
            (&file.join("sub/deeper"), "is below "),
        ] {
            let e = prepare(path).unwrap_err();
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("NIXL_TELEMETRY_DIR={} ", path.display())),
                "{text}"
            );
            assert!(text.contains(needle), "{text}");
            assert!(!text.contains("os error"), "{text}");
        }
        // Nothing was created or changed.
        assert_eq!(std::fs::read(&file).unwrap(), b"x");
        assert!(!tmp.path().join("gone").exists());
    }
}
