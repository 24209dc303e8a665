//! The metric allowlist: which event names are recorded.
//!
//! The list is NIXL's `NIXL_TELEMETRY_ENABLED_METRICS`: comma-separated patterns with
//! POSIX `fnmatch(3)` semantics and no flags — `*` matches any run of characters
//! (including `/` and a leading `.`), `?` one character, `[abc]`, `[a-z]` and
//! `[!abc]` (or `[^abc]`) a set, and a backslash makes the next character literal
//! (inside brackets too). An unclosed `[` is a literal `[`. Tokens are trimmed of
//! surrounding ASCII whitespace (C's `isspace`: space, tab, line feed, vertical tab,
//! form feed, carriage return) and empty tokens are ignored; a list with no tokens allows
//! everything. Matching works on characters, so `?` matches one UTF-8 character.
//!
//! A list is classified once, when it is made: each of its first patterns is recorded
//! as a shape (literal, `prefix*`, other glob) and the place of its bytes in the text.
//! [`Allowlist`] borrows the text; [`OwningAllowlist`] holds it (a `Box<str>`,
//! `String`, …) next to the classification, for a recorder that outlives the text it
//! was configured from. Neither allocates. A match then costs a walk over the
//! classified patterns, which for the short lists agents use is tens of nanoseconds.

/// How many patterns are classified up front; further ones are matched from the text.
const PREPARSED: usize = 8;

/// What a pattern needs to match a name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// No wildcard: the name must equal it.
    Literal,
    /// `prefix*` with no other wildcard (the pattern's bytes exclude the `*`).
    Prefix,
    /// Anything else, matched by [`fnmatch`].
    Glob,
}

/// One pattern, classified once so that the common shapes match with a plain
/// comparison instead of the wildcard machinery. It holds where its bytes are in the
/// list's text rather than borrowing them, so a list can keep its classification
/// next to a text it owns ([`OwningAllowlist`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pattern {
    shape: Shape,
    start: usize,
    end: usize,
}

impl Pattern {
    /// Classifies `token`, found at byte `start` of the list's text.
    fn classify(token: &str, start: usize) -> Pattern {
        let special = |c: &u8| matches!(c, b'*' | b'?' | b'[' | b'\\');
        let (shape, len) = match token.as_bytes().iter().position(special) {
            None => (Shape::Literal, token.len()),
            Some(at) if at + 1 == token.len() && token.as_bytes()[at] == b'*' => {
                (Shape::Prefix, at)
            }
            _ => (Shape::Glob, token.len()),
        };
        Pattern {
            shape,
            start,
            end: start + len,
        }
    }

    /// Whether `name` matches this pattern of the list whose text is `text`. A text
    /// other than the one it was classified in matches nothing where the pattern's
    /// place is not in it (no panic).
    #[inline]
    fn matches(&self, text: &str, name: &str) -> bool {
        let range = self.start..self.end;
        match self.shape {
            // Bytes suffice to compare, and a byte range costs no boundary checks.
            Shape::Literal => text.as_bytes().get(range) == Some(name.as_bytes()),
            Shape::Prefix => text
                .as_bytes()
                .get(range)
                .is_some_and(|p| name.as_bytes().starts_with(p)),
            Shape::Glob => text.get(range).is_some_and(|p| fnmatch(p, name)),
        }
    }
}

/// A list's classification, made once from its text: the first [`PREPARSED`]
/// patterns classified and where the text after them begins. A list with none
/// classified has no pattern at all (the walk classifying them read all its text),
/// and allows everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Classified {
    preparsed: [Pattern; PREPARSED],
    preparsed_len: u8,
    /// Byte offset of the text after the preparsed patterns (its length if they were
    /// all preparsed).
    rest: usize,
}

impl Classified {
    const ALL: Classified = Classified {
        preparsed: [Pattern {
            shape: Shape::Literal,
            start: 0,
            end: 0,
        }; PREPARSED],
        preparsed_len: 0,
        rest: 0,
    };

    fn new(text: &str) -> Classified {
        let mut classified = Classified::ALL;
        let mut len = 0;
        let mut pos = 0;
        while len < PREPARSED && pos < text.len() {
            let tail = &text[pos..];
            let raw = &tail[..tail.find(',').unwrap_or(tail.len())];
            let (skipped, token) = trim_space(raw);
            if !token.is_empty() {
                let start = pos + skipped;
                classified.preparsed[len] = Pattern::classify(token, start);
                len += 1;
            }
            pos += raw.len() + 1; // past the comma (or the end)
        }
        classified.preparsed_len = len as u8;
        classified.rest = pos.min(text.len());
        classified
    }

    /// Whether the list has no pattern.
    #[inline]
    const fn allows_everything(&self) -> bool {
        self.preparsed_len == 0
    }

    /// Whether `name` matches a pattern of `text` (the text this was made from).
    #[inline]
    fn allows(&self, text: &str, name: &str) -> bool {
        self.allows_everything()
            || self.preparsed[..self.preparsed_len as usize]
                .iter()
                .any(|p| p.matches(text, name))
            || patterns_of(text.get(self.rest..).unwrap_or("")).any(|p| fnmatch(p, name))
    }
}

/// The trimmed, non-empty patterns of a list's text.
fn patterns_of(text: &str) -> impl Iterator<Item = &str> {
    text.split(',')
        .map(|raw| trim_space(raw).1)
        .filter(|t| !t.is_empty())
}

/// `raw` without the whitespace C's `isspace` names at either end (space, `\t`, `\n`,
/// `\v`, `\f`, `\r`), and how many bytes were cut from its start. Bytes, not
/// characters: Unicode's white space table and a UTF-8 decoder would cost a
/// firmware about 400 bytes of flash, and these are ASCII, so both cuts fall on
/// character boundaries.
fn trim_space(raw: &str) -> (usize, &str) {
    let is_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r');
    let bytes = raw.as_bytes();
    let start = bytes.iter().take_while(|b| is_space(b)).count();
    let end = bytes.len()
        - bytes[start..]
            .iter()
            .rev()
            .take_while(|b| is_space(b))
            .count();
    (start, raw.get(start..end).unwrap_or(""))
}

/// A parsed view of a comma-separated pattern list.
///
/// The first eight patterns are classified when the list is made (literal,
/// `prefix*`, or general glob), so a check against them costs a few comparisons;
/// any further patterns are read from the text on every check. Making one classifies
/// the text: a list checked many times is made once (or held as an
/// [`OwningAllowlist`], which keeps its text with it).
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
    classified: Classified,
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
        Allowlist {
            patterns,
            classified: Classified::new(patterns),
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
            classified: Classified::ALL,
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
        self.classified.allows_everything()
    }

    /// The trimmed, non-empty patterns.
    ///
    /// ```
    /// use telering_core::Allowlist;
    /// let list = Allowlist::new(" agent_tx_*, ,NIXL_ERR_* ");
    /// assert_eq!(list.patterns().collect::<Vec<_>>(), ["agent_tx_*", "NIXL_ERR_*"]);
    /// ```
    pub fn patterns(&self) -> impl Iterator<Item = &'a str> + 'a {
        patterns_of(self.patterns)
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
        self.classified.allows(self.patterns, name)
    }
}

impl Default for Allowlist<'_> {
    fn default() -> Self {
        Allowlist::all()
    }
}

/// An allowlist that holds its pattern text (a `Box<str>`, `String`, `Arc<str>`, or
/// a `&str`) with its classification, made once: what a long-lived recorder keeps so
/// that checking a name does not classify the list again.
///
/// The text is read through `AsRef<str>` on every check, so `T` must give the same
/// text each time (every owning string type does); one that does not gets wrong
/// answers, never a panic.
///
/// ```
/// use telering_core::{Allowlist, OwningAllowlist};
/// let text = String::from("agent_*, app_queue_?epth");
/// let list = OwningAllowlist::new(text);
/// assert!(list.allows("app_queue_depth") && !list.allows("app_rate"));
/// assert_eq!(list.text(), "agent_*, app_queue_?epth");
/// // A borrowed view of the same list, classified already.
/// let view: Allowlist<'_> = list.as_allowlist();
/// assert!(view.allows("agent_tx_bytes"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwningAllowlist<T: AsRef<str>> {
    text: T,
    classified: Classified,
}

impl<T: AsRef<str>> OwningAllowlist<T> {
    /// Classifies the comma-separated pattern list `text` and keeps both.
    ///
    /// ```
    /// use telering_core::OwningAllowlist;
    /// let list = OwningAllowlist::new(" , ");
    /// assert!(list.allows_everything() && list.allows("anything"));
    /// ```
    pub fn new(text: T) -> OwningAllowlist<T> {
        let classified = Classified::new(text.as_ref());
        OwningAllowlist { text, classified }
    }

    /// Whether `name` matches any pattern (or the list is empty), as
    /// [`Allowlist::allows`].
    ///
    /// ```
    /// use telering_core::OwningAllowlist;
    /// let list = OwningAllowlist::new("NIXL_ERR_[!U]*");
    /// assert!(list.allows("NIXL_ERR_BACKEND") && !list.allows("NIXL_ERR_UNKNOWN"));
    /// ```
    #[inline]
    pub fn allows(&self, name: &str) -> bool {
        self.classified.allows(self.text.as_ref(), name)
    }

    /// Whether every name is allowed (the list has no patterns).
    ///
    /// ```
    /// use telering_core::OwningAllowlist;
    /// assert!(!OwningAllowlist::new("agent_*").allows_everything());
    /// ```
    #[inline]
    pub fn allows_everything(&self) -> bool {
        self.classified.allows_everything()
    }

    /// The list's text, as given.
    ///
    /// ```
    /// use telering_core::OwningAllowlist;
    /// assert_eq!(OwningAllowlist::new(" a_* ").text(), " a_* ");
    /// ```
    pub fn text(&self) -> &str {
        self.text.as_ref()
    }

    /// The list as a borrowed [`Allowlist`], without classifying it again.
    ///
    /// ```
    /// use telering_core::OwningAllowlist;
    /// let list = OwningAllowlist::new("agent_tx_*, ,agent_rx_*");
    /// assert_eq!(list.as_allowlist().patterns().count(), 2);
    /// ```
    pub fn as_allowlist(&self) -> Allowlist<'_> {
        Allowlist {
            patterns: self.text.as_ref(),
            classified: self.classified,
        }
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
        // C's white space, the vertical tab included; not Unicode's.
        let list = Allowlist::new("\t\x0B\x0C\r\n agent_tx_bytes \x0B,\u{a0}agent_rx_bytes");
        assert!(list.allows("agent_tx_bytes"));
        assert!(!list.allows("agent_rx_bytes"));
        assert!(list.allows("\u{a0}agent_rx_bytes"));
        assert!(Allowlist::new("\x0B,\x0C").allows_everything());
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
                Pattern::classify(pattern, 0).matches(pattern, name),
                expected,
                "{pattern:?} {name:?}"
            );
        }
    }
    /// What a list allows by definition: any trimmed, non-empty pattern matching by
    /// `fnmatch`, or everything when there is none.
    fn reference(text: &str, name: &str) -> bool {
        patterns_of(text).next().is_none() || patterns_of(text).any(|p| fnmatch(p, name))
    }

    #[test]
    fn classified_lists_borrowed_or_owning_agree_with_their_definition() {
        let texts = [
            "",
            " , ,",
            "agent_tx_bytes",
            " agent_* ,, NIXL_ERR_[!U]* ,",
            "\u{3000}app_é?,\tx*y ,z\\*",
            "a0,a1,a2,a3,a4,a5,a6,a7, late_* ,x?z",
            "a0,a1,a2,a3,a4,a5,a6,a7,",
            "p*,l,*s,[ab]c,é*,  ,q?,w,e,r*",
        ];
        let names = [
            "",
            "agent_tx_bytes",
            "agent_rx_bytes",
            "NIXL_ERR_BACKEND",
            "NIXL_ERR_UNKNOWN",
            "app_éx",
            "x--y",
            "z*",
            "zz",
            "a7",
            "a8",
            "late_x",
            "xyz",
            "pa",
            "l",
            "bus",
            "bc",
            "éa",
            "qq",
            "r",
            "w",
        ];
        for text in texts {
            let borrowed = Allowlist::new(text);
            let owning = OwningAllowlist::new(std::string::String::from(text));
            assert_eq!(
                borrowed.allows_everything(),
                patterns_of(text).next().is_none()
            );
            assert_eq!(owning.allows_everything(), borrowed.allows_everything());
            assert_eq!(owning.as_allowlist(), borrowed, "{text:?}");
            for name in names {
                let expected = reference(text, name);
                assert_eq!(borrowed.allows(name), expected, "{text:?} {name:?}");
                assert_eq!(owning.allows(name), expected, "{text:?} {name:?}");
            }
        }
    }

    /// A text whose `AsRef` answers differently after the list was made: wrong
    /// answers are its contract, a panic is not.
    struct Shifting {
        first: core::cell::Cell<bool>,
    }

    impl AsRef<str> for Shifting {
        fn as_ref(&self) -> &str {
            if self.first.replace(false) {
                "agent_tx_*, é, NIXL_ERR_*, a0,a1,a2,a3,a4,a5,late"
            } else {
                // Shorter, and with two-byte characters where the patterns' ends
                // were: some of the old places are not character boundaries here.
                "ééééééééééééab"
            }
        }
    }

    #[test]
    fn an_owning_list_whose_text_changes_does_not_panic() {
        let list = OwningAllowlist::new(Shifting {
            first: core::cell::Cell::new(true),
        });
        for name in ["agent_tx_bytes", "é", "ééab", "late", ""] {
            let _ = list.allows(name);
        }
        assert_eq!(list.text(), "ééééééééééééab");
    }
}
