//! Pages a source serves beside `/metrics`, as a browser or a proxy asks for them: the
//! status of a wrong method, the absolute-form target, and the headers that keep a
//! browser from misreading a response.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use telering_prometheus::{Format, HttpLimits, MetricsServer, MetricsSource, Page};

/// A source with an HTML page at `/`, a script under `/assets/` and JSON at `/api/agents`.
struct Site;

impl MetricsSource for Site {
    fn render(&self, _format: Format) -> String {
        "up 1\n".into()
    }

    fn page(&self, target: &str) -> Option<Page> {
        let path = target.split_once('?').map_or(target, |(path, _)| path);
        let (content_type, body) = match path {
            "/" => ("text/html; charset=utf-8", "<!DOCTYPE html><p>site</p>"),
            "/assets/site.js" => ("text/javascript; charset=utf-8", "1;"),
            "/api/agents" => ("application/json", "{}"),
            _ => return None,
        };
        Some(Page {
            status: "200 OK",
            content_type,
            body: body.as_bytes().to_vec(),
        })
    }
}

fn exchange(addr: SocketAddr, request: &str) -> String {
    let mut conn = TcpStream::connect(addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    conn.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = conn.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn site() -> MetricsServer {
    MetricsServer::start("127.0.0.1:0".parse().unwrap(), Site, HttpLimits::default()).unwrap()
}

/// The response's head, up to the blank line.
fn head(response: &str) -> &str {
    response.split("\r\n\r\n").next().unwrap_or("")
}

#[test]
fn another_method_on_a_served_page_gets_405_with_allow_and_on_nothing_404() {
    let server = site();
    let addr = server.local_addr();
    for path in ["/api/agents", "/api/agents?limit=5", "/assets/site.js"] {
        for method in ["POST", "PUT", "DELETE"] {
            let r = exchange(addr, &format!("{method} {path} HTTP/1.1\r\n\r\n"));
            assert!(r.starts_with("HTTP/1.1 405 "), "{method} {path}: {r}");
            assert!(
                r.contains("\r\nAllow: GET, HEAD\r\n"),
                "{method} {path}: {r}"
            );
            assert!(!r.contains("/metrics"), "{method} {path}: {r}");
        }
    }
    for path in ["/api/other", "/assets/missing.js"] {
        let r = exchange(addr, &format!("POST {path} HTTP/1.1\r\n\r\n"));
        assert!(r.starts_with("HTTP/1.1 404 "), "{path}: {r}");
        assert!(!r.contains("Allow:"), "{path}: {r}");
    }
}

#[test]
fn an_absolute_form_target_is_served_like_its_path() {
    let server = site();
    let addr = server.local_addr();
    let r = exchange(
        addr,
        "GET http://example.com/metrics HTTP/1.1\r\nHost: example.com\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200 "), "{r}");
    assert!(r.ends_with("up 1\n"), "{r}");
    let r = exchange(
        addr,
        "GET HTTP://example.com:9090/api/agents?limit=1 HTTP/1.1\r\n\r\n",
    );
    assert!(r.starts_with("HTTP/1.1 200 ") && r.ends_with("{}"), "{r}");
    let r = exchange(addr, "GET http://example.com HTTP/1.1\r\n\r\n");
    assert!(
        r.starts_with("HTTP/1.1 200 ") && r.contains("<p>site</p>"),
        "{r}"
    );
    let r = exchange(addr, "GET http://example.com/nothing HTTP/1.1\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 404 "), "{r}");
}

#[test]
fn every_response_says_nosniff_and_html_pages_carry_a_strict_policy() {
    let server = site();
    let addr = server.local_addr();
    let requests = [
        "GET /metrics HTTP/1.1\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nAccept-Encoding: gzip\r\n\r\n",
        "GET / HTTP/1.1\r\n\r\n",
        "HEAD / HTTP/1.1\r\n\r\n",
        "GET /assets/site.js HTTP/1.1\r\n\r\n",
        "GET /api/agents HTTP/1.1\r\n\r\n",
        "GET /nothing HTTP/1.1\r\n\r\n",
        "POST /metrics HTTP/1.1\r\n\r\n",
        "GET /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\n",
        "\x01\x02 nonsense\r\n\r\n",
    ];
    for request in requests {
        let r = exchange(addr, request);
        let head = head(&r);
        assert!(head.starts_with("HTTP/1.1 "), "{request:?}: {r}");
        assert!(
            head.contains("\r\nX-Content-Type-Options: nosniff"),
            "{request:?}: {head}"
        );
        let html = head.contains("Content-Type: text/html");
        let csp = head
            .lines()
            .find_map(|l| l.strip_prefix("Content-Security-Policy: "));
        assert_eq!(csp.is_some(), html, "{request:?}: {head}");
        if let Some(csp) = csp {
            assert!(csp.starts_with("default-src 'self'"), "{csp}");
            for directive in [
                "script-src 'self';",
                "object-src 'none'",
                "frame-ancestors 'none'",
            ] {
                assert!(csp.contains(directive), "{directive}: {csp}");
            }
            assert!(!csp.contains("unsafe-eval"), "{csp}");
        }
    }
}
