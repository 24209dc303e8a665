//! Arbitrary text as the query string of `/api/agents` (the dashboard's data), as the
//! HTTP server hands it over: the parser returns a page query within its bounds or an
//! error naming the parameter — never a panic. A filter percent-encoded byte by byte
//! (and with `+` for spaces) decodes back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
// The parser's own file, so this target does not build the whole CLI.
#[path = "../../adapters/cli/src/serve/query.rs"]
#[allow(dead_code)]
mod query;

use query::{AgentsQuery, MAX_LIMIT};

fuzz_target!(|input: (&str, &str)| {
    let (query, filter) = input;
    for target in [format!("/api/agents?{query}"), query.to_owned()] {
        match AgentsQuery::parse(&target) {
            Ok(q) => assert!((1..=MAX_LIMIT).contains(&q.limit), "{target:?}: {q:?}"),
            Err(e) => assert!(!e.is_empty(), "{target:?}"),
        }
    }
    let mut encoded = String::from("/api/agents?limit=7&filter=");
    for b in filter.bytes() {
        if b == b' ' {
            encoded.push('+');
        } else {
            encoded.push_str(&format!("%{b:02X}"));
        }
    }
    let q = AgentsQuery::parse(&encoded).expect("an encoded filter is valid");
    assert_eq!((q.limit, q.offset, q.filter.as_str()), (7, 0, filter));
    // A `%` not followed by two hex digits is refused, whatever follows it.
    for bad in ["%+1", "%-1", "% 1", "%g0", "%0g"] {
        let target = format!("/api/agents?filter={bad}{query}");
        assert!(AgentsQuery::parse(&target).is_err(), "{target:?} accepted");
    }
});
