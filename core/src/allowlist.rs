//! The metric allowlist: which event names are recorded.
//!
//! The list is NIXL's `NIXL_TELEMETRY_ENABLED_METRICS`: comma-separated patterns with
//! POSIX `fnmatch(3)` semantics and no flags — `*` matches any run of characters
//! (including `/` and a leading `.`), `?` one character, `[abc]`, `[a-z]` and
//! `[!abc]` (or `[^abc]`) a set, and a backslash makes the next character literal
//! (inside brackets too). An unclosed `[` is a literal `[`. Tokens are trimmed of
//! surrounding whitespace and empty tokens are ignored; a list with no tokens allows
//! everything. Matching works on characters, so `?` matches one UTF-8 character.
//!
//! The list borrows its text and allocates nothing; a match costs a walk over the
//! patterns, which for the short lists agents use is tens of nanoseconds.

/// How many patterns are classified up front; further ones are matched from the text.
const PREPARSED: usize = 8;

/// One pattern, classified once so that the common shapes match with a plain
/// comparison instead of the wildcard machinery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pattern<'a> {
    /// No wildcard: the name must equal it.
    Literal(&'a str),
    /// `prefix*` with no other wildcard.
    Prefix(&'a str),
    /// Anything else, matched by [`fnmatch`].
    Glob(&'a str),
}

impl<'a> Pattern<'a> {
    fn classify(token: &'a str) -> Pattern<'a> {
        let special = |c: &u8| matches!(c, b'*' | b'?' | b'[' | b'\\');
        match token.as_bytes().iter().position(special) {
            None => Pattern::Literal(token),
            Some(at) if at + 1 == token.len() && token.as_bytes()[at] == b'*' => {
                Pattern::Prefix(&token[..at])
            }
            _ => Pattern::Glob(token),
        }
    }

    #[inline]
    fn matches(&self, name: &str) -> bool {
        match *self {
            Pattern::Literal(p) => p == name,
            Pattern::Prefix(p) => name.as_bytes().starts_with(p.as_bytes()),
            Pattern::Glob(p) => fnmatch(p, name),
        }
    }
}

/// A parsed view of a comma-separated pattern list.
///
/// The first eight patterns are classified when the list is made (literal,
/// `prefix*`, or general glob), so a check against them costs a few comparisons;
/// any further patterns are read from the text on every check.
///
/// ```
/// use telering_core::Allowlist;
/// let list = Allowlist::new(" agent_tx_*, NIXL_ERR_[!U]* ,agent_xfer_time");
/// assert!(list.allows("agent_tx_bytes"));
/// assert!(list.allows("NIXL_ERR_BACKEND"));
/// assert!(!list.allows("NIXL_ERR_UNKNOWN"));
/// assert!(!list.allows("agent_rx_bytes"));
/// assert!(Allowlist::new("").allows("anything"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Allowlist<'a> {
    patterns: &'a str,
    preparsed: [Pattern<'a>; PREPARSED],
    preparsed_len: u8,
    /// The text after the preparsed patterns (empty if they were all preparsed).
    rest: &'a str,
    allow_all: bool,
}

impl<'a> Allowlist<'a> {
    /// Wraps a comma-separated pattern list.
    ///
    /// ```
    /// use telering_core::Allowlist;
    /// let list = Allowlist::new("agent_tx_*,NIXL_ERR_BACKEND");
    /// assert!(list.allows("agent_tx_bytes") && list.allows("NIXL_ERR_BACKEND"));
    /// assert!(!list.allows("agent_rx_bytes"));
    /// ```
    pub fn new(patterns: &'a str) -> Allowlist<'a> {
        let mut preparsed = [Pattern::Literal(""); PREPARSED];
        let mut preparsed_len = 0;
        let mut rest = patterns;
        while preparsed_len < PREPARSED && !rest.is_empty() {
            let (token, tail) = rest.split_once(',').unwrap_or((rest, ""));
            rest = tail;
            let token = token.trim();
            if !token.is_empty() {
                preparsed[preparsed_len] = Pattern::classify(token);
                preparsed_len += 1;
            }
        }
        Allowlist {
            patterns,
            preparsed,
            preparsed_len: preparsed_len as u8,
            rest,
            allow_all: patterns.split(',').all(|t| t.trim().is_empty()),
        }
    }

    /// A list that allows every name.
    ///
    /// ```
    /// use telering_core::Allowlist;
    /// let list = Allowlist::all();
    /// assert!(list.allows_everything() && list.allows("any_name"));
    /// assert_eq!(list.patterns().count(), 0);
    /// ```
    pub const fn all() -> Allowlist<'static> {
        Allowlist {
            patterns: "",
            preparsed: [Pattern::Literal(""); PREPARSED],
            preparsed_len: 0,
            rest: "",
            allow_all: true,
        }
    }

    /// Whether every name is allowed (the list has no patterns).
    ///
    /// ```
    /// use telering_core::Allowlist;
    /// assert!(Allowlist::new(" , ").allows_everything());
    /// assert!(!Allowlist::new("agent_*").allows_everything());
    /// ```
    #[inline]
    pub const fn allows_everything(&self) -> bool {
        self.allow_all
    }

    /// The trimmed, non-empty patterns.
    ///
    /// ```
    /// use telering_core::Allowlist;
    /// let list = Allowlist::new(" agent_tx_*, ,NIXL_ERR_* ");
    /// assert_eq!(list.patterns().collect::<Vec<_>>(), ["agent_tx_*", "NIXL_ERR_*"]);
    /// ```
    pub fn patterns(&self) -> impl Iterator<Item = &'a str> + 'a {
        self.patterns
            .split(',')
            .map(str::trim)
            .filter(|t| !t.is_empty())
    }

    /// Whether `name` matches any pattern (or the list is empty).
    ///
    /// ```
    /// use telering_core::Allowlist;
    /// let list = Allowlist::new("agent_xfer_time, NIXL_ERR_[!U]*, *_bytes");
    /// assert!(list.allows("agent_xfer_time"));
    /// assert!(list.allows("NIXL_ERR_BACKEND") && !list.allows("NIXL_ERR_UNKNOWN"));
    /// assert!(list.allows("agent_rx_bytes") && !list.allows("agent_rx_requests_num"));
    /// ```
    #[inline]
    pub fn allows(&self, name: &str) -> bool {
        self.allow_all
            || self.preparsed[..self.preparsed_len as usize]
                .iter()
                .any(|p| p.matches(name))
            || self
                .rest
                .split(',')
                .map(str::trim)
                .any(|p| !p.is_empty() && fnmatch(p, name))
    }
}

impl Default for Allowlist<'_> {
    fn default() -> Self {
        Allowlist::all()
    }
}

/// POSIX `fnmatch(pattern, name, 0)`.
///
/// ```
/// use telering_core::allowlist::fnmatch;
/// assert!(fnmatch("agent_*_bytes", "agent_tx_bytes"));
/// assert!(fnmatch("a\\*", "a*"));
/// assert!(!fnmatch("a\\*", "ab"));
/// ```
pub fn fnmatch(pattern: &str, name: &str) -> bool {
    let mut p = pattern.chars();
    let mut n = name.chars();
    // Backtracking point: the pattern after the last `*`, and the name position it
    // was tried at. One point suffices for `*`-only wildcards (the classic greedy
    // algorithm), which keeps this O(len(pattern) × len(name)) without recursion.
    let mut star: Option<(core::str::Chars<'_>, core::str::Chars<'_>)> = None;
    loop {
        let saved_p = p.clone();
        let saved_n = n.clone();
        let step = match p.next() {
            None => {
                if n.next().is_none() {
                    return true;
                }
                false
            }
            Some('*') => {
                // Collapse runs of stars.
                let mut rest = p.clone();
                while rest.clone().next() == Some('*') {
                    rest.next();
                }
                p = rest.clone();
                star = Some((rest, n.clone()));
                continue;
            }
            Some('?') => n.next().is_some(),
            Some('[') => match n.next() {
                None => false,
                Some(c) => match bracket(&mut p, c) {
                    Some(matched) => matched,
                    None => {
                        // Unclosed bracket: a literal '['.
                        p = saved_p.clone();
                        p.next();
                        c == '['
                    }
                },
            },
            Some('\\') => {
                let lit = p.next().unwrap_or('\\');
                n.next() == Some(lit)
            }
            Some(lit) => n.next() == Some(lit),
        };
        if step {
            continue;
        }
        // Mismatch: let the last star swallow one more character, if it can.
        match star.as_mut() {
            Some((star_p, star_n)) => {
                if star_n.next().is_none() {
                    return false;
                }
                p = star_p.clone();
                n = star_n.clone();
            }
            None => {
                let _ = (saved_p, saved_n);
                return false;
            }
        }
    }
}

/// Matches `c` against a bracket expression whose opening `[` was consumed; on
/// success `p` is left after the closing `]`. `None` if the bracket never closes.
fn bracket(p: &mut core::str::Chars<'_>, c: char) -> Option<bool> {
    let mut it = p.clone();
    let negate = matches!(it.clone().next(), Some('!') | Some('^'));
    if negate {
        it.next();
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let mut lo = it.next()?;
        if lo == ']' && !first {
            break;
        }
        first = false;
        if lo == '\\' {
            lo = it.next()?;
        }
        // A range `lo-hi`, unless the '-' is last before ']'.
        let mut look = it.clone();
        if look.next() == Some('-') {
            match look.clone().next() {
                Some(']') | None => {}
                Some(_) => {
                    let mut hi = look.next()?;
                    if hi == '\\' {
                        hi = look.next()?;
                    }
                    it = look;
                    if lo <= c && c <= hi {
                        matched = true;
                    }
                    continue;
                }
            }
        }
        if lo == c {
            matched = true;
        }
    }
    *p = it;
    Some(matched != negate)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (pattern, name, expected) — each case agrees with glibc's `fnmatch(p, n, 0)`.
    const CASES: &[(&str, &str, bool)] = &[
        ("", "", true),
        ("", "a", false),
        ("a", "a", true),
        ("a", "b", false),
        ("*", "", true),
        ("*", "anything/with/slashes", true),
        ("*", ".hidden", true),
        ("a*", "a", true),
        ("a*", "abc", true),
        ("*c", "abc", true),
        ("*c", "abd", false),
        ("a*b*c", "aXXbYYc", true),
        ("a*b*c", "aXXbYY", false),
        ("**a", "bba", true),
        ("*a*", "bab", true),
        ("?", "a", true),
        ("?", "", false),
        ("?", "é", true),
        ("??", "é", false),
        ("a?c", "abc", true),
        ("[abc]", "b", true),
        ("[abc]", "d", false),
        ("[a-c]x", "bx", true),
        ("[a-c]x", "dx", false),
        ("[!a-c]", "d", true),
        ("[!a-c]", "b", false),
        ("[^a-c]", "d", true),
        ("[]]", "]", true),
        ("[]a]", "a", true),
        ("[!]]", "a", true),
        ("[!]]", "]", false),
        ("[a-]", "-", true),
        ("[a-]", "a", true),
        ("[\\]]", "]", true),
        ("[", "[", true),
        ("[ab", "[ab", true),
        ("[ab", "a", false),
        ("\\*", "*", true),
        ("\\*", "a", false),
        ("\\?", "?", true),
        ("\\a", "a", true),
        ("agent_*_bytes", "agent_tx_bytes", true),
        ("agent_*_bytes", "agent_tx_requests_num", false),
        ("NIXL_ERR_*", "NIXL_ERR_BACKEND", true),
        ("agent_?x_bytes", "agent_rx_bytes", true),
        ("*_time", "agent_xfer_post_time", true),
        ("agent_xfer_time", "agent_xfer_time_us", false),
    ];

    #[test]
    fn fnmatch_agrees_with_posix_on_the_table() {
        for &(pattern, name, expected) in CASES {
            assert_eq!(
                fnmatch(pattern, name),
                expected,
                "fnmatch({pattern:?}, {name:?})"
            );
        }
    }

    #[test]
    fn tokens_are_trimmed_and_empty_ones_ignored() {
        let list = Allowlist::new(" , agent_tx_bytes ,, ");
        assert!(!list.allows_everything());
        assert!(list.allows("agent_tx_bytes"));
        assert!(!list.allows("agent_rx_bytes"));
        assert_eq!(list.patterns().count(), 1);
        assert!(Allowlist::new(" , ,").allows_everything());
    }

    #[test]
    fn patterns_beyond_the_preparsed_ones_still_match() {
        let text = "a0,a1,a2,a3,a4,a5,a6,a7, late_* ,x?z";
        let list = Allowlist::new(text);
        for i in 0..8 {
            assert!(list.allows(&std::format!("a{i}")));
        }
        assert!(list.allows("late_event"));
        assert!(list.allows("xyz"));
        assert!(!list.allows("a8"));
    }

    #[test]
    fn classified_patterns_agree_with_fnmatch() {
        for &(pattern, name, expected) in CASES {
            if pattern.is_empty() || pattern.contains(',') {
                continue;
            }
            assert_eq!(
                Pattern::classify(pattern).matches(name),
                expected,
                "{pattern:?} {name:?}"
            );
        }
    }
}
