//! A real Prometheus server (Debian's `prometheus`) scraping given targets every
//! second, for the tests that check telering's pages through its query API.

#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};

/// A Prometheus server with its own configuration and data directory; killed on drop.
pub struct Prometheus {
    child: Child,
    /// The query API's address.
    pub api: SocketAddr,
    _dir: tempfile::TempDir,
}

/// Scrape interval of the test servers, in seconds.
pub const SCRAPE_INTERVAL_S: u64 = 1;

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Prometheus {
    /// Scrapes each `(job, target)` every [`SCRAPE_INTERVAL_S`].
    pub fn scraping(targets: &[(&str, SocketAddr)]) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let mut config = format!(
            "global:\n  scrape_interval: {SCRAPE_INTERVAL_S}s\n  scrape_timeout: {SCRAPE_INTERVAL_S}s\nscrape_configs:\n"
        );
        for (job, target) in targets {
            config.push_str(&format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n"
            ));
        }
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let api: SocketAddr = ([127, 0, 0, 1], free_port()).into();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={api}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus is installed (Debian package `prometheus`)");
        Prometheus {
            child,
            api,
            _dir: dir,
        }
    }

    /// The server's base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.api)
    }

    /// The whole answer of an instant query, or `None` when Prometheus does not answer
    /// (yet).
    pub fn query(&self, promql: &str) -> Option<serde_json::Value> {
        let encoded: String = promql
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let response =
            super::common::try_http_get(self.api, &format!("/api/v1/query?query={encoded}"))
                .ok()?;
        let body = response.split("\r\n\r\n").nth(1)?;
        serde_json::from_str(body.trim()).ok()
    }

    /// The series an instant query returns (empty when it fails).
    pub fn series(&self, promql: &str) -> Vec<serde_json::Value> {
        self.query(promql)
            .and_then(|v| v["data"]["result"].as_array().cloned())
            .unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
