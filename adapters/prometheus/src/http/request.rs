//! Reading one request head: what the server must answer, decided from the bytes
//! received so far.
//!
//! The head is parsed by `httparse` (the parser hyper uses) every time a line is
//! complete, so a request line that cannot be HTTP/1.x is refused as soon as its line
//! ends — an HTTP/2 preface (`PRI * HTTP/2.0`) gets `505` at once rather than waiting
//! for the head time limit — while a client that trickles a valid head costs one parse
//! per line, never one per byte.

use crate::format::Format;

use super::HttpLimits;

/// What a request asks for, once its head is complete and acceptable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Scrape {
    /// The exposition format negotiated from `Accept`.
    pub format: Format,
    /// Whether `Accept-Encoding` allows gzip.
    pub gzip: bool,
    /// `HEAD`: the same headers, no body.
    pub head_only: bool,
}

/// A request the server refuses, with the status it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `400`: not an HTTP/1.x request head.
    Malformed,
    /// `404`: a path that is not served.
    NotFound,
    /// `405`: a method other than `GET` or `HEAD` on a path that is served.
    MethodNotAllowed,
    /// `408`: the head did not arrive within [`HttpLimits::head_timeout`].
    Timeout,
    /// `413`: the request has a body.
    HasBody,
    /// `431`: the head is larger than [`HttpLimits::max_head_bytes`] or has more than
    /// [`HttpLimits::max_headers`] header lines.
    HeadTooLarge,
    /// `503`: the connection cap is reached.
    Busy,
    /// `505`: an HTTP version other than 1.0 or 1.1.
    VersionNotSupported,
}

/// The state of a head after the bytes received so far.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Head {
    /// More bytes are needed.
    Partial,
    /// A complete head for `/metrics`.
    Scrape(Scrape),
    /// A complete `GET` or `HEAD` head for another target (`/`, or a page the
    /// [`MetricsSource`](super::MetricsSource) serves).
    Page {
        /// The request target in origin form: path and query.
        target: String,
        /// `HEAD`: the same headers, no body.
        head_only: bool,
    },
    /// A complete head with a method other than `GET` or `HEAD` for a target other
    /// than `/metrics` and `/`: `405` if the source serves that path, else `404`.
    OtherMethod {
        /// The request's path, without its query.
        path: String,
    },
    /// A head the server refuses.
    Refused(Refusal),
}

/// Decides what to do with `buf`, the bytes received so far, of which the last
/// `new_bytes` arrived just now.
pub(crate) fn examine(buf: &[u8], new_bytes: usize, limits: &HttpLimits) -> Head {
    // RFC 9112 §2.2: at least one empty line before the request line is ignored; a
    // client that sends nothing but empty lines is not sending HTTP.
    let leading = if buf.starts_with(b"\r\n") {
        2
    } else {
        usize::from(buf.starts_with(b"\n"))
    };
    if buf[leading..].starts_with(b"\r\n") || buf[leading..].starts_with(b"\n") {
        return Head::Refused(Refusal::Malformed);
    }
    let fresh = &buf[buf.len() - new_bytes.min(buf.len())..];
    let line_completed = fresh.contains(&b'\n');
    if !line_completed {
        return if buf.len() > limits.max_head_bytes {
            Head::Refused(Refusal::HeadTooLarge)
        } else {
            Head::Partial
        };
    }
    let mut headers = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut request = httparse::Request::new(&mut headers);
    let parsed = request.parse(buf);
    match parsed {
        Ok(httparse::Status::Partial) if buf.len() > limits.max_head_bytes => {
            Head::Refused(Refusal::HeadTooLarge)
        }
        Ok(httparse::Status::Partial) => Head::Partial,
        Ok(httparse::Status::Complete(len)) if len > limits.max_head_bytes => {
            Head::Refused(Refusal::HeadTooLarge)
        }
        Ok(httparse::Status::Complete(_)) => Head::from_request(&request),
        Err(httparse::Error::TooManyHeaders) => Head::Refused(Refusal::HeadTooLarge),
        Err(httparse::Error::Version) => Head::Refused(Refusal::VersionNotSupported),
        Err(_) => Head::Refused(Refusal::Malformed),
    }
}

impl Head {
    fn from_request(request: &httparse::Request<'_, '_>) -> Head {
        let mut accept = None;
        let mut gzip = false;
        for header in request.headers.iter() {
            let name = header.name;
            if name.eq_ignore_ascii_case("transfer-encoding")
                || (name.eq_ignore_ascii_case("content-length")
                    && header.value.trim_ascii() != b"0")
            {
                return Head::Refused(Refusal::HasBody);
            }
            if name.eq_ignore_ascii_case("accept") {
                accept = std::str::from_utf8(header.value).ok();
            } else if name.eq_ignore_ascii_case("accept-encoding") {
                gzip |= std::str::from_utf8(header.value).is_ok_and(accepts_gzip);
            }
        }
        let target = origin_form(request.path.unwrap_or(""));
        let target: &str = &target;
        let path = target.split_once('?').map_or(target, |(path, _query)| path);
        let head_only = match request.method {
            Some("GET") => false,
            Some("HEAD") => true,
            _ if path == "/metrics" || path == "/" => {
                return Head::Refused(Refusal::MethodNotAllowed);
            }
            _ => {
                return Head::OtherMethod {
                    path: path.to_owned(),
                };
            }
        };
        if path != "/metrics" {
            return Head::Page {
                target: target.to_owned(),
                head_only,
            };
        }
        Head::Scrape(Scrape {
            format: Format::from_accept(accept),
            gzip,
            head_only,
        })
    }
}

/// The origin form (path and query) of a request target. RFC 9112 §3.2.2: a server
/// must accept the absolute form (`http://host/metrics`) a client sends to a proxy;
/// its scheme and authority are dropped, and an empty path is `/`. Other forms (the
/// `*` of `OPTIONS`, the authority of `CONNECT`) are returned as they are and found
/// nowhere.
///
/// ```text
/// "/metrics?x" -> "/metrics?x";  "http://h:9/metrics" -> "/metrics";  "HTTP://h?q" -> "/?q"
/// ```
fn origin_form(target: &str) -> std::borrow::Cow<'_, str> {
    let after_scheme = ["http://", "https://"].iter().find_map(|scheme| {
        let head = target.get(..scheme.len())?;
        head.eq_ignore_ascii_case(scheme)
            .then(|| &target[scheme.len()..])
    });
    let Some(rest) = after_scheme else {
        return target.into();
    };
    match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => rest[i..].into(),
        Some(i) => format!("/{}", &rest[i..]).into(),
        None => "/".into(),
    }
}

/// Whether an `Accept-Encoding` value allows gzip: `gzip`, `x-gzip` or `*` with a
/// quality above zero (RFC 9110 §12.5.3).
///
/// ```text
/// "gzip" -> yes;  "deflate, gzip;q=0.5" -> yes;  "gzip;q=0" -> no;  "identity" -> no
/// ```
pub(crate) fn accepts_gzip(value: &str) -> bool {
    let mut star = None;
    for coding in value.split(',') {
        let mut parts = coding.split(';');
        let name = parts.next().unwrap_or("").trim();
        let q = parts
            .filter_map(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .or_else(|| p.trim().strip_prefix("Q="))
            })
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        if name.eq_ignore_ascii_case("gzip") || name.eq_ignore_ascii_case("x-gzip") {
            return q > 0.0;
        }
        if name == "*" {
            star = Some(q > 0.0);
        }
    }
    star.unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(head: &[u8]) -> Head {
        examine(head, head.len(), &HttpLimits::default())
    }

    #[test]
    fn a_get_for_metrics_is_a_scrape_with_its_format_and_encoding() {
        let head = whole(b"GET /metrics?x=1 HTTP/1.1\r\nAccept-Encoding: gzip\r\nAccept: application/openmetrics-text\r\n\r\n");
        assert_eq!(
            head,
            Head::Scrape(Scrape {
                format: Format::OpenMetrics,
                gzip: true,
                head_only: false
            })
        );
        let head = whole(b"HEAD /metrics HTTP/1.0\r\n\r\n");
        assert_eq!(
            head,
            Head::Scrape(Scrape {
                format: Format::PrometheusText,
                gzip: false,
                head_only: true
            })
        );
    }

    #[test]
    fn other_targets_ask_for_a_page() {
        let page = |target: &str, head_only| Head::Page {
            target: target.into(),
            head_only,
        };
        assert_eq!(whole(b"GET /?x HTTP/1.1\r\n\r\n"), page("/?x", false));
        assert_eq!(whole(b"HEAD / HTTP/1.0\r\n\r\n"), page("/", true));
        assert_eq!(
            whole(b"GET /api/agents?limit=5 HTTP/1.1\r\n\r\n"),
            page("/api/agents?limit=5", false)
        );
        assert_eq!(
            whole(b"POST / HTTP/1.1\r\n\r\n"),
            Head::Refused(Refusal::MethodNotAllowed)
        );
    }

    #[test]
    fn each_refusal_is_decided_from_the_head() {
        let cases: [(&[u8], Refusal); 8] = [
            (b"POST /metrics HTTP/1.1\r\n\r\n", Refusal::MethodNotAllowed),
            (
                b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
                Refusal::HasBody,
            ),
            (
                b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                Refusal::HasBody,
            ),
            (
                b"GET /metrics HTTP/2.0\r\n\r\n",
                Refusal::VersionNotSupported,
            ),
            (
                b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                Refusal::VersionNotSupported,
            ),
            (
                b"GET /metrics HTTP/1.1\r\nno colon\r\n\r\n",
                Refusal::Malformed,
            ),
            (b"\xff\xfe /metrics HTTP/1.1\r\n\r\n", Refusal::Malformed),
            (b"\r\n\r\n", Refusal::Malformed),
        ];
        for (head, refusal) in cases {
            assert_eq!(whole(head), Head::Refused(refusal), "{head:?}");
        }
    }

    #[test]
    fn another_method_on_another_path_is_left_to_the_source() {
        assert_eq!(
            whole(b"DELETE /other?x=1 HTTP/1.1\r\n\r\n"),
            Head::OtherMethod {
                path: "/other".into()
            }
        );
    }

    #[test]
    fn an_absolute_form_target_is_served_as_its_path_and_query() {
        assert!(matches!(
            whole(b"GET http://example.com:9090/metrics HTTP/1.1\r\n\r\n"),
            Head::Scrape(_)
        ));
        let page = |target: &str| Head::Page {
            target: target.into(),
            head_only: false,
        };
        let cases = [
            ("HTTP://h/api/agents?limit=5", "/api/agents?limit=5"),
            ("https://h", "/"),
            ("http://h?x=1", "/?x=1"),
            ("http://user@h:1/a/b", "/a/b"),
            ("*", "*"),
            ("h:80", "h:80"),
        ];
        for (target, origin) in cases {
            let head = format!("GET {target} HTTP/1.1\r\n\r\n");
            assert_eq!(whole(head.as_bytes()), page(origin), "{target}");
        }
        assert_eq!(
            whole(b"POST http://h/metrics HTTP/1.1\r\n\r\n"),
            Head::Refused(Refusal::MethodNotAllowed)
        );
    }

    #[test]
    fn a_bad_request_line_is_refused_before_the_head_ends() {
        assert_eq!(
            whole(b"PRI * HTTP/2.0\r\n"),
            Head::Refused(Refusal::VersionNotSupported)
        );
        assert_eq!(whole(b"GET /metrics HTTP/1.1\r\nX-Slow: a"), Head::Partial);
    }

    #[test]
    fn heads_past_the_limits_get_431() {
        let limits = HttpLimits {
            max_headers: 2,
            max_head_bytes: 64,
            ..HttpLimits::default()
        };
        let many = b"GET /metrics HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
        assert_eq!(
            examine(many, many.len(), &limits),
            Head::Refused(Refusal::HeadTooLarge)
        );
        let long = [b'x'; 65];
        assert_eq!(
            examine(&long, 65, &limits),
            Head::Refused(Refusal::HeadTooLarge)
        );
        let exact = b"GET /metrics HTTP/1.1\r\nA: 1\r\n\r\n";
        assert!(matches!(
            examine(exact, exact.len(), &limits),
            Head::Scrape(_)
        ));
    }

    #[test]
    fn gzip_is_accepted_by_name_or_star_unless_its_quality_is_zero() {
        assert!(accepts_gzip("gzip"));
        assert!(accepts_gzip("deflate, GZIP;q=0.5"));
        assert!(accepts_gzip("*"));
        assert!(accepts_gzip("x-gzip"));
        assert!(!accepts_gzip("gzip;q=0"));
        assert!(!accepts_gzip("identity"));
        assert!(!accepts_gzip("*;q=0, br"));
        assert!(!accepts_gzip(""));
    }
}
