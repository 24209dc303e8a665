//! Responses as bytes ready for the socket: the fixed answers to refused requests, and
//! a rendered metrics page, gzip-compressed when the scraper accepts it.
//!
//! Every response carries `Date`, `Connection: close` and a `Content-Length`: the server
//! answers one request per connection (a scraper reconnects each scrape, which costs
//! nothing measurable at scrape intervals), so there is no keep-alive state to bound.

use std::io::Write;
use std::sync::Arc;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::format::Format;

use super::request::Refusal;

/// The gzip level for metrics pages. On a 1024-agent page level 1 is 20× smaller than
/// the text and adds about 4 ms to the 14 ms render; the default level 6 would be 30×
/// smaller but add about 40 ms, holding a render worker three times as long (measured in
/// `BENCHMARKS.md`).
pub(crate) const GZIP_LEVEL: u32 = 1;

/// The `Content-Security-Policy` of every HTML page: everything from this server only
/// (`'self'`), scripts never inline, no plug-ins, no `<base>`, no framing, no form
/// posts. Styles may be inline: the dashboard's page has a `<style>` block and its
/// charting library sets element styles; a style cannot run code.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
    style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
    object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

/// The body of the page at `/`.
const INDEX_PAGE: &str = "<!DOCTYPE html>
<html lang=\"en\">
<head><meta charset=\"utf-8\"><title>telering metrics</title></head>
<body>
<h1>telering metrics</h1>
<p>Telemetry of NIXL agents in the Prometheus exposition format:
<a href=\"/metrics\">/metrics</a>.</p>
</body>
</html>
";

/// A complete response: status line, headers and body in one shared buffer, so that a
/// page rendered once can be written to every connection of its batch.
#[derive(Clone, Debug)]
pub(crate) struct Response {
    bytes: Arc<[u8]>,
    head_len: usize,
}

impl Response {
    /// The bytes to send: the head only for a `HEAD` request.
    pub(crate) fn bytes(&self, head_only: bool) -> &[u8] {
        if head_only {
            &self.bytes[..self.head_len]
        } else {
            &self.bytes
        }
    }

    /// Size of the shared buffer.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether `self` and `other` share one buffer.
    pub(crate) fn same_page(&self, other: &Response) -> bool {
        Arc::ptr_eq(&self.bytes, &other.bytes)
    }

    fn new(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
        // RFC 9110 §6.6.1: an origin server with a clock sends `Date`.
        let date = httpdate::fmt_http_date(std::time::SystemTime::now());
        let mut head = format!("HTTP/1.1 {status}\r\nDate: {date}\r\n");
        let html = headers.iter().any(|(name, value)| {
            name.eq_ignore_ascii_case("content-type") && value.starts_with("text/html")
        });
        let security: &[(&str, &str)] = if html {
            &[
                ("X-Content-Type-Options", "nosniff"),
                ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
            ]
        } else {
            &[("X-Content-Type-Options", "nosniff")]
        };
        for (name, value) in headers.iter().chain(security) {
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
        }
        head.push_str(&format!(
            "Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        ));
        let mut bytes = Vec::with_capacity(head.len() + body.len());
        bytes.extend_from_slice(head.as_bytes());
        bytes.extend_from_slice(body);
        Response {
            bytes: bytes.into(),
            head_len: head.len(),
        }
    }

    /// The answer to a refused request.
    pub(crate) fn refusal(refusal: Refusal) -> Response {
        let text = "text/plain; charset=utf-8";
        let (status, body, allow) = match refusal {
            Refusal::Malformed => ("400 Bad Request", "not an HTTP/1.1 request\n", false),
            Refusal::NotFound => (
                "404 Not Found",
                "not found; metrics are served at /metrics\n",
                false,
            ),
            Refusal::MethodNotAllowed => (
                "405 Method Not Allowed",
                "method not allowed; use GET\n",
                true,
            ),
            Refusal::Timeout => ("408 Request Timeout", "request head took too long\n", false),
            Refusal::HasBody => ("413 Content Too Large", "requests take no body\n", false),
            Refusal::HeadTooLarge => (
                "431 Request Header Fields Too Large",
                "request head too large\n",
                false,
            ),
            Refusal::Busy => (
                "503 Service Unavailable",
                "too many connections; retry later\n",
                false,
            ),
            Refusal::VersionNotSupported => (
                "505 HTTP Version Not Supported",
                "only HTTP/1.0 and HTTP/1.1 are served\n",
                false,
            ),
        };
        let mut headers = vec![("Content-Type", text)];
        if allow {
            headers.push(("Allow", "GET, HEAD"));
        }
        if refusal == Refusal::Busy {
            headers.push(("Retry-After", "1"));
        }
        Response::new(status, &headers, body.as_bytes())
    }

    /// The page at `/`: what this server is and a link to `/metrics`, for a person
    /// who opens the address in a browser.
    pub(crate) fn index() -> Response {
        Response::new(
            "200 OK",
            &[("Content-Type", "text/html; charset=utf-8")],
            INDEX_PAGE.as_bytes(),
        )
    }

    /// The answer to a page request: the source's page, else the index at `/`, else `404`.
    pub(crate) fn for_page(page: Option<super::Page>, target: &str) -> Response {
        let path = target.split_once('?').map_or(target, |(path, _query)| path);
        match page {
            Some(page) => Response::new(
                page.status,
                &[
                    ("Content-Type", page.content_type),
                    ("Cache-Control", "no-store"),
                ],
                &page.body,
            ),
            None if path == "/" => Response::index(),
            None => Response::refusal(Refusal::NotFound),
        }
    }

    /// `500`, when rendering failed.
    pub(crate) fn render_failed() -> Response {
        Response::new(
            "500 Internal Server Error",
            &[("Content-Type", "text/plain; charset=utf-8")],
            b"rendering the metrics failed; see the server log\n",
        )
    }

    /// A metrics page in `format`, gzip-compressed when `gzip`.
    pub(crate) fn page(format: Format, gzip: bool, body: String) -> Response {
        let content_type = ("Content-Type", format.content_type());
        if !gzip {
            return Response::new("200 OK", &[content_type], body.as_bytes());
        }
        let compressed = gzip_bytes(body.as_bytes());
        drop(body);
        Response::new(
            "200 OK",
            &[
                content_type,
                ("Content-Encoding", "gzip"),
                ("Vary", "Accept-Encoding"),
            ],
            &compressed,
        )
    }
}

/// Compresses `body` as one gzip member, as the endpoint does for a scraper that sends
/// `Accept-Encoding: gzip`, at level 1 (a 1024-agent page becomes 20× smaller for about
/// 4 ms; see `BENCHMARKS.md`).
///
/// ```
/// use std::io::Read;
/// let page = "agent_tx_bytes_total{agent_name=\"a\"} 1\n".repeat(100);
/// let gzip = telering_prometheus::http::gzip_bytes(page.as_bytes());
/// assert!(gzip.len() < page.len() / 10);
/// let mut back = String::new();
/// flate2::read::GzDecoder::new(&gzip[..]).read_to_string(&mut back).unwrap();
/// assert_eq!(back, page);
/// ```
pub fn gzip_bytes(body: &[u8]) -> Vec<u8> {
    // Metrics text compresses to well under a tenth; start there to avoid regrowing.
    let mut encoder = GzEncoder::new(
        Vec::with_capacity(body.len() / 8 + 64),
        Compression::new(GZIP_LEVEL),
    );
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(body);
    encoder.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn a_gzip_page_decompresses_to_the_rendered_text_and_says_so() {
        let text = "agent_tx_bytes_total{agent_name=\"a\"} 1\n".repeat(1000);
        let page = Response::page(Format::PrometheusText, true, text.clone());
        let bytes = page.bytes(false);
        let head_end = bytes.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let head = std::str::from_utf8(&bytes[..head_end]).unwrap();
        assert!(head.contains("Content-Encoding: gzip\r\n"), "{head}");
        let body = &bytes[head_end..];
        assert!(head.contains(&format!("Content-Length: {}\r\n", body.len())));
        assert!(body.len() < text.len() / 10);
        let mut plain = String::new();
        flate2::read::GzDecoder::new(body)
            .read_to_string(&mut plain)
            .unwrap();
        assert_eq!(plain, text);
        assert_eq!(page.bytes(true), &bytes[..head_end]);
    }

    #[test]
    fn refusals_carry_their_status_and_no_keep_alive() {
        let r = Response::refusal(Refusal::MethodNotAllowed);
        let text = String::from_utf8_lossy(r.bytes(false)).into_owned();
        assert!(text.starts_with("HTTP/1.1 405 "), "{text}");
        assert!(text.contains("Allow: GET, HEAD\r\n"), "{text}");
        assert!(text.contains("Connection: close\r\n"), "{text}");
        assert!(
            text.contains("X-Content-Type-Options: nosniff\r\n"),
            "{text}"
        );
        assert!(!text.contains("Content-Security-Policy"), "{text}");
        assert!(
            text.contains("\r\nDate: ") && text.contains(" GMT\r\n"),
            "{text}"
        );
    }
}
