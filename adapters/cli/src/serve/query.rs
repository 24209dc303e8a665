//! The query of `/api/agents` (`?offset=N&limit=N&filter=TEXT`) and its percent
//! decoding: plain `std`, no dependency, so the fuzz target `agents_query` builds it
//! alone.

/// Agents per page when the request does not say.
pub const DEFAULT_LIMIT: usize = 50;
/// Most agents one request may ask for.
pub const MAX_LIMIT: usize = 1000;

/// A page of `/api/agents`: `?offset=N&limit=N&filter=TEXT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentsQuery {
    /// Agents skipped (of those matching the filter).
    pub offset: usize,
    /// Agents returned at most, 1 to [`MAX_LIMIT`].
    pub limit: usize,
    /// Only agents whose name contains this text.
    pub filter: String,
}

impl Default for AgentsQuery {
    fn default() -> Self {
        AgentsQuery {
            offset: 0,
            limit: DEFAULT_LIMIT,
            filter: String::new(),
        }
    }
}

impl AgentsQuery {
    /// Reads the query string of a request target (`/api/agents?limit=5`).
    ///
    /// ```
    /// use telering_cli::serve::query::AgentsQuery;
    /// let q = AgentsQuery::parse("/api/agents?offset=50&limit=25&filter=rank%2D1").unwrap();
    /// assert_eq!((q.offset, q.limit, q.filter.as_str()), (50, 25, "rank-1"));
    /// let e = AgentsQuery::parse("/api/agents?limit=0").unwrap_err();
    /// assert!(e.contains("limit=0"), "{e}");
    /// ```
    pub fn parse(target: &str) -> Result<AgentsQuery, String> {
        let mut query = AgentsQuery::default();
        let Some((_, params)) = target.split_once('?') else {
            return Ok(query);
        };
        for pair in params.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(value)
                .ok_or_else(|| format!("{name}={value} is not valid percent-encoded UTF-8"))?;
            let number = || {
                value
                    .parse::<usize>()
                    .map_err(|_| format!("{name}={value} is not a whole number"))
            };
            match name {
                "offset" => query.offset = number()?,
                "limit" => {
                    query.limit = number()?;
                    if !(1..=MAX_LIMIT).contains(&query.limit) {
                        return Err(format!(
                            "limit={value} is out of range; ask for 1 to {MAX_LIMIT} agents per page"
                        ));
                    }
                }
                "filter" => query.filter = value,
                other => {
                    return Err(format!(
                        "unknown parameter {other:?}; use offset, limit and filter"
                    ));
                }
            }
        }
        Ok(query)
    }
}

/// Decodes `%XX` escapes and `+` (a space in a form's query); `None` when an escape is
/// malformed or the bytes are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                // Two hex digits exactly: `from_str_radix` alone would take `%+1`.
                let hex = bytes.get(i + 1..i + 3)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}
