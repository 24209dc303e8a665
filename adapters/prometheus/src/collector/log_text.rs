//! Text the collector's log lines quote but did not make: agent names (file names),
//! paths, and the messages of errors that quote them. Every such line goes through
//! [`Escaped`], so a ring file named with a newline or an `ESC` cannot forge a log line
//! or drive the terminal that shows the log.

use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use telering_core::text::{Escaped, first_unsafe_char};

/// A path as the log shows it (a non-UTF-8 byte as `\xNN`).
pub(super) fn path(path: &Path) -> Escaped<'_> {
    Escaped::bytes(path.as_os_str().as_bytes())
}

/// An agent name (the ring file's name) as the log shows it.
pub(super) fn name(name: &str) -> Escaped<'_> {
    Escaped::new(name)
}

/// An error's message, which may quote a file name: escaped when it holds a character
/// a terminal or log acts on, as it is otherwise (so a message that is escaped
/// already is not escaped twice).
pub(super) struct ErrorText(String);

impl ErrorText {
    pub(super) fn of(error: &dyn fmt::Display) -> ErrorText {
        ErrorText(error.to_string())
    }
}

impl fmt::Display for ErrorText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if first_unsafe_char(&self.0).is_some() {
            Escaped::new(&self.0).fmt(f)
        } else {
            f.write_str(&self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_quoting_a_hostile_name_is_escaped_and_a_clean_one_is_not() {
        let hostile = "/run/x\u{1b}]0;pwned\u{7}\n: not a ring";
        assert_eq!(
            ErrorText::of(&hostile).to_string(),
            "/run/x\\u{1b}]0;pwned\\u{7}\\n: not a ring"
        );
        let clean = "/run/a\\b: not a ring";
        assert_eq!(ErrorText::of(&clean).to_string(), clean);
    }
}
