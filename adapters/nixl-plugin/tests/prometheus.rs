//! The plug-in in the NIXL-shaped host, exporting to telering's Prometheus endpoint:
//! a scrape while the agent runs shows every counter at the exact sum of the values
//! NIXL handed over, NIXL's own loss reports included.

mod common;

use common::{Holding, Setup, expected};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};
use telering_core::builtin::{ErrorStatus, NIXL_TYPE_NAMES};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The metrics page, or `None` while nothing answers.
fn scrape(port: u16) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut page = String::new();
    stream.read_to_string(&mut page).ok()?;
    Some(page)
}

/// The value of the series `name{…extra}` of agent `nixl-agent`.
fn series(page: &str, name: &str, extra: &str) -> Option<u64> {
    page.lines().find_map(|l| {
        let rest = l
            .strip_prefix(name)?
            .strip_prefix("{agent_name=\"nixl-agent\"")?;
        let (labels, value) = rest.rsplit_once(' ')?;
        (labels.contains(extra) && labels.ends_with('}')).then(|| value.parse().ok())?
    })
}

/// The series a NIXL type number is counted in, and its extra label.
fn series_of(t: u32) -> (String, String) {
    match t {
        8..=19 => (
            "agent_errors_total".into(),
            format!("status=\"{}\"", ErrorStatus::ALL[t as usize - 8].label()),
        ),
        _ => (
            format!("{}_total", NIXL_TYPE_NAMES[t as usize]),
            String::new(),
        ),
    }
}

#[test]
fn a_scrape_shows_the_exact_sums_of_what_nixl_handed_over() {
    let setup = Setup::new();
    let port = free_port();
    let host = Holding::start(
        setup
            .host(&[
                "--batches",
                "4",
                "--events",
                "500",
                "--dropped",
                "9",
                "--hold",
            ])
            .env("TELERING_EXPORTERS", "prometheus")
            .env("NIXL_TELEMETRY_PROMETHEUS_PORT", port.to_string())
            .env("NIXL_TELEMETRY_PROMETHEUS_LOCAL", "y"),
    );
    let want = expected(4, 500, 9);
    let deadline = Instant::now() + Duration::from_secs(20);
    let page = loop {
        let page = scrape(port).unwrap_or_default();
        let done = want.iter().all(|(&t, &(_, sum))| {
            let (name, extra) = series_of(t);
            series(&page, &name, &extra) == Some(sum)
        });
        if done {
            break page;
        }
        assert!(Instant::now() < deadline, "the sums never arrived:\n{page}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        series(&page, "agent_telemetry_events_dropped_total", ""),
        Some(36)
    );
    host.release();
}
