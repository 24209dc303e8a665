//! The one rule by which every telering variable's value is read — the
//! `NIXL_TELEMETRY_*` variables here and in telering-prometheus, and the `telering`
//! command's `TELERING_LOG` — so that a value means the same everywhere:
//!
//! 0. **Text.** A value that is not valid UTF-8 is an error naming the variable
//!    ([`EnvSource::get`](crate::EnvSource::get)).
//! 1. **Trimmed.** Leading and trailing whitespace (spaces, tabs, newlines) is
//!    removed first, from every value (a `NIXL_TELEMETRY_DIR` too), so that
//!    `"1024\n"` from a file or `" y"` from a YAML list is what it looks like.
//! 2. **Empty means unset.** A value that is empty after trimming is the same as the
//!    variable not being set, for every variable: its default applies.
//! 3. **Integers are plain decimal digits**: no sign (`+1024` and `-1` are errors),
//!    no fraction or exponent (`0.5`, `1e3`), no separators or prefixes (`1_000`,
//!    `0x10`), and a value too large for the variable's type (`2^64`) is an error
//!    rather than wrapped or clamped. Each variable then checks its own range.
//! 4. **Booleans** are one of the words `y`, `yes`, `on`, `true`, `enable`, `1` or
//!    `n`, `no`, `off`, `false`, `disable`, `0`, in any case.
//! 5. **Lists** are split at commas; each item is trimmed, and empty items (`a,,b`,
//!    a trailing comma) are skipped (`NIXL_TELEMETRY_ENABLED_METRICS`); lists of
//!    names follow rule 7 instead.
//! 6. **Names** (an exporter, a log level) are matched ignoring ASCII case.
//! 7. **Lists of names** (`NIXL_TELEMETRY_EXPORTER`) are stricter than rule 5: an
//!    empty item (`buffer,,prometheus`, a trailing comma) is an error naming its
//!    position, since it is almost always a typo, and so is a name listed twice,
//!    compared by rule 6 (`Buffer,buffer` lists `buffer` twice) ([`names`]).
//!
//! A value that breaks the rule is an error naming the variable and what to use
//! instead, except where a variable documents a softer consequence
//! (`NIXL_TELEMETRY_ENABLE`: an unrecognized word disables telemetry and warns, as
//! NIXL does; `TELERING_LOG`: an unknown level warns and keeps the default).
//!
//! ```
//! use telering_std::parse::{self, IntegerError};
//! assert_eq!(parse::value(" 1024\n"), Some("1024"));
//! assert_eq!(parse::value(" \t"), None);
//! assert_eq!(parse::unsigned("1024"), Ok(1024));
//! assert_eq!(parse::unsigned("+1024"), Err(IntegerError::NotDecimal));
//! assert_eq!(parse::unsigned("18446744073709551616"), Err(IntegerError::TooLarge));
//! assert_eq!(parse::boolean("ON"), Some(true));
//! assert_eq!(parse::list(" 10, 100,,1000,").collect::<Vec<_>>(), ["10", "100", "1000"]);
//! assert_eq!(parse::names("buffer, CSV"), Ok(vec!["buffer", "CSV"]));
//! assert_eq!(parse::names("buffer,,csv"), Err(parse::NameListError::EmptyItem { position: 2 }));
//! ```

/// The words that mean `true`, in lower case (any case is accepted).
pub const TRUE_WORDS: [&str; 6] = ["y", "yes", "on", "true", "enable", "1"];
/// The words that mean `false`, in lower case (any case is accepted).
pub const FALSE_WORDS: [&str; 6] = ["n", "no", "off", "false", "disable", "0"];

/// Rules 1 and 2: the trimmed value, or `None` when it is empty (unset).
///
/// ```
/// assert_eq!(telering_std::parse::value("  y\n"), Some("y"));
/// assert_eq!(telering_std::parse::value("\t "), None);
/// ```
pub fn value(raw: &str) -> Option<&str> {
    let v = raw.trim();
    (!v.is_empty()).then_some(v)
}

/// Why a value is not an unsigned integer (rule 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IntegerError {
    /// Not only ASCII digits: a sign, a fraction, an exponent, a letter, or nothing.
    NotDecimal,
    /// Only digits, but more than a `u64` holds.
    TooLarge,
}

impl std::fmt::Display for IntegerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IntegerError::NotDecimal => "is not a plain decimal integer",
            IntegerError::TooLarge => "is too large",
        })
    }
}

impl std::error::Error for IntegerError {}

/// Rule 3: a trimmed value as an unsigned integer of plain decimal digits.
///
/// ```
/// use telering_std::parse::{unsigned, IntegerError};
/// assert_eq!(unsigned("0100"), Ok(100));
/// assert_eq!(unsigned("1e3"), Err(IntegerError::NotDecimal));
/// ```
pub fn unsigned(text: &str) -> Result<u64, IntegerError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(IntegerError::NotDecimal);
    }
    // Only digits: the one way left to fail is overflow.
    text.parse().map_err(|_| IntegerError::TooLarge)
}

/// Rule 4: a boolean word, in any case; `None` for anything else.
///
/// ```
/// use telering_std::parse::boolean;
/// assert_eq!((boolean("Yes"), boolean("OFF"), boolean("maybe")), (Some(true), Some(false), None));
/// ```
pub fn boolean(text: &str) -> Option<bool> {
    let v = text.trim();
    if TRUE_WORDS.iter().any(|w| w.eq_ignore_ascii_case(v)) {
        Some(true)
    } else if FALSE_WORDS.iter().any(|w| w.eq_ignore_ascii_case(v)) {
        Some(false)
    } else {
        None
    }
}

/// Rule 5: the items of a comma-separated list, each trimmed, empty ones skipped.
///
/// ```
/// let items: Vec<_> = telering_std::parse::list("a, ,b,").collect();
/// assert_eq!(items, ["a", "b"]);
/// ```
pub fn list(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|i| !i.is_empty())
}

/// Why a list of names is refused (rule 7, [`names`]). Positions count items from 1.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameListError {
    /// The item at `position` is empty or blank (`a,,b`, `a, ,b`, a trailing comma).
    EmptyItem {
        /// Which item, from 1.
        position: usize,
    },
    /// A name is listed again, ignoring ASCII case.
    Repeated {
        /// The name, in lower case.
        name: String,
        /// Where it is listed first.
        first: usize,
        /// Where it is listed again.
        again: usize,
    },
}

impl std::fmt::Display for NameListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NameListError::EmptyItem { position } => write!(f, "item {position} is empty"),
            NameListError::Repeated { name, first, again } => {
                write!(f, "{name} is listed twice (items {first} and {again})")
            }
        }
    }
}

impl std::error::Error for NameListError {}

/// Rule 7: the items of a comma-separated list of names, each trimmed; an empty item
/// or a name listed twice (ignoring ASCII case, rule 6) is an error naming where.
///
/// ```
/// use telering_std::parse::{names, NameListError};
/// assert_eq!(names(" buffer ,prometheus"), Ok(vec!["buffer", "prometheus"]));
/// assert_eq!(names("buffer,"), Err(NameListError::EmptyItem { position: 2 }));
/// assert_eq!(
///     names("Buffer,csv,buffer"),
///     Err(NameListError::Repeated { name: "buffer".into(), first: 1, again: 3 })
/// );
/// ```
pub fn names(text: &str) -> Result<Vec<&str>, NameListError> {
    let mut items: Vec<&str> = Vec::new();
    for (i, item) in text.split(',').map(str::trim).enumerate() {
        let position = i + 1;
        if item.is_empty() {
            return Err(NameListError::EmptyItem { position });
        }
        if let Some(first) = items.iter().position(|n| n.eq_ignore_ascii_case(item)) {
            return Err(NameListError::Repeated {
                name: item.to_ascii_lowercase(),
                first: first + 1,
                again: position,
            });
        }
        items.push(item);
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_integers_are_plain_digits_only() {
        let cases: [(&str, Result<u64, IntegerError>); 16] = [
            ("0", Ok(0)),
            ("1024", Ok(1024)),
            ("007", Ok(7)),
            ("18446744073709551615", Ok(u64::MAX)),
            ("18446744073709551616", Err(IntegerError::TooLarge)),
            ("99999999999999999999999", Err(IntegerError::TooLarge)),
            ("+1024", Err(IntegerError::NotDecimal)),
            ("-1", Err(IntegerError::NotDecimal)),
            ("0.5", Err(IntegerError::NotDecimal)),
            ("1e3", Err(IntegerError::NotDecimal)),
            ("1_000", Err(IntegerError::NotDecimal)),
            ("0x10", Err(IntegerError::NotDecimal)),
            ("1 024", Err(IntegerError::NotDecimal)),
            ("١٢", Err(IntegerError::NotDecimal)), // non-ASCII digits
            ("", Err(IntegerError::NotDecimal)),
            ("ten", Err(IntegerError::NotDecimal)),
        ];
        for (text, want) in cases {
            assert_eq!(unsigned(text), want, "{text:?}");
        }
    }

    #[test]
    fn values_are_trimmed_and_blank_is_unset() {
        for (raw, want) in [
            ("1024", Some("1024")),
            (" 1024", Some("1024")),
            ("1024\n", Some("1024")),
            ("\t y \r\n", Some("y")),
            ("", None),
            ("   ", None),
            ("\n", None),
        ] {
            assert_eq!(value(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn booleans_are_the_same_words_in_any_case() {
        for w in TRUE_WORDS {
            assert_eq!(boolean(w), Some(true));
            assert_eq!(boolean(&w.to_ascii_uppercase()), Some(true));
        }
        for w in FALSE_WORDS {
            assert_eq!(boolean(w), Some(false));
            assert_eq!(boolean(&format!(" {w} ")), Some(false));
        }
        for w in ["ture", "2", "", "yess", "t"] {
            assert_eq!(boolean(w), None, "{w:?}");
        }
    }

    #[test]
    fn name_lists_refuse_empty_items_and_repeats_in_any_case() {
        assert_eq!(names("a"), Ok(vec!["a"]));
        assert_eq!(names(" a , b "), Ok(vec!["a", "b"]));
        for (text, position) in [("a,,b", 2), (",a", 1), ("a,", 2), ("a, ,b", 2), ("", 1)] {
            assert_eq!(
                names(text),
                Err(NameListError::EmptyItem { position }),
                "{text:?}"
            );
        }
        for (text, first, again) in [("a,a", 1, 2), ("A,b,a", 1, 3), ("b,a, A ", 2, 3)] {
            let want = NameListError::Repeated {
                name: "a".into(),
                first,
                again,
            };
            assert_eq!(names(text), Err(want), "{text:?}");
        }
        // The first fault by position wins.
        assert_eq!(
            names("a,a,,"),
            Err(NameListError::Repeated {
                name: "a".into(),
                first: 1,
                again: 2
            })
        );
    }

    #[test]
    fn lists_skip_empty_items() {
        assert_eq!(list("a, b ,,c,").collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(list(" , ").count(), 0);
    }
}
