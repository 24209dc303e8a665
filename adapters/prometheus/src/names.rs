//! The mapping from event names to Prometheus metric family names.
//!
//! Built-in events keep the names of NIXL's Prometheus exporter (see the crate docs for
//! the table). Every other event — custom events, backend events, and any event whose
//! name is not a built-in of its category — becomes a **counter** that sums the event
//! values, named
//!
//! ```text
//! agent_<category>_event_<sanitized name>_total
//! ```
//!
//! where `<category>` is the lower-case category (`custom`, `backend`, `memory`,
//! `transfer`, `connection`, `error`, `performance`, `system`) and `<sanitized name>` is
//! the event name with every byte outside `[A-Za-z0-9_]` replaced by `_` and a trailing
//! `_total` removed (the encoder appends it). The `_event_` infix keeps these families
//! apart from the built-in ones (`agent_memory_registered_total` is built in;
//! a custom memory event named `registered` becomes
//! `agent_memory_event_registered_total`). Two names that sanitize to the same text
//! (`a.b` and `a-b`) share one counter, whose value is then the sum of both.
//!
//! Three `SYSTEM` events are states, not amounts, and become gauges of their last
//! value under the same name without `_total`: the clock mapping `telering bridge`
//! writes, `telering_link_clock_offset_us` and `telering_link_clock_drift_ppb` (signed)
//! and `telering_link_clock_bound_us`.

use telering_core::Category;

/// The counter family name (without the `_total` the encoder appends) for a
/// non-built-in event.
///
/// ```
/// use telering_core::Category;
/// use telering_prometheus::names::custom_family_name;
/// assert_eq!(custom_family_name(Category::Custom, "cache.hits-L2"), "agent_custom_event_cache_hits_L2");
/// assert_eq!(custom_family_name(Category::Backend, "ucx_retries_total"), "agent_backend_event_ucx_retries");
/// ```
pub fn custom_family_name(category: Category, event_name: &str) -> String {
    let base = event_name.strip_suffix("_total").unwrap_or(event_name);
    let short = category.short_name();
    let mut out = String::with_capacity(6 + short.len() + 7 + base.len());
    out.push_str("agent_");
    out.extend(short.chars().map(|c| c.to_ascii_lowercase()));
    out.push_str("_event_");
    if base.is_empty() {
        out.push('_');
    }
    out.extend(base.bytes().map(|b| {
        if b.is_ascii_alphanumeric() || b == b'_' {
            b as char
        } else {
            '_'
        }
    }));
    out
}

/// Whether `name` is a valid Prometheus metric name (`[a-zA-Z_:][a-zA-Z0-9_:]*`).
pub fn is_valid_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_' || b == b':')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sanitized_name_is_a_valid_metric_name() {
        for name in [
            "a",
            "9lives",
            "é€😀",
            "with space",
            "x_total",
            "_total",
            "a:b",
        ] {
            for c in Category::ALL {
                let family = custom_family_name(c, name);
                assert!(is_valid_metric_name(&family), "{family}");
                assert!(family.contains("_event_"), "{family}");
            }
        }
    }

    #[test]
    fn custom_families_never_collide_with_builtin_families() {
        let builtin = [
            "agent_tx_bytes",
            "agent_memory_registered",
            "agent_errors",
            "agent_xfer_time",
        ];
        let family = custom_family_name(Category::Memory, "registered");
        assert_eq!(family, "agent_memory_event_registered");
        assert!(!builtin.contains(&family.as_str()));
    }
}
