//! Running the built `telering` binary in a scratch directory with a clean
//! environment.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub fn telering() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_telering"));
    // Nothing from the developer's or CI's environment may leak into a test.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if name.starts_with("NIXL_TELEMETRY_")
            || name == "TELERING_LOG"
            || name == "NIXL_CONFIG_FILE"
        {
            cmd.env_remove(name);
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// A child process that is killed when the test ends, even when it fails.
#[derive(Debug)]
pub struct Running {
    /// The process.
    pub child: Child,
}

impl Running {
    /// Spawns `cmd`.
    pub fn spawn(cmd: &mut Command) -> Running {
        Running {
            child: cmd.spawn().expect("spawn telering"),
        }
    }

    /// Waits for the process to exit; returns its exit code.
    pub fn wait(&mut self) -> Option<i32> {
        self.child.wait().expect("wait for telering").code()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A scratch directory used as the working directory.
pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Runs `cmd` in `dir` and returns its output.
pub fn run_in(dir: &Path, cmd: &mut Command) -> Output {
    cmd.current_dir(dir).output().expect("run telering")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the failure contract: the exit code, exactly one line on stderr, starting
/// with `telering: ` and containing every one of `needles`, and no panic.
pub fn assert_fails(o: &Output, code: i32, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(!err.contains("panicked"), "panic: {err}");
    assert!(!err.contains("RUST_BACKTRACE"), "backtrace hint: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr, got: {err}");
    assert!(lines[0].starts_with("telering: "), "{err}");
    for needle in needles {
        assert!(lines[0].contains(needle), "`{needle}` missing in: {err}");
    }
}

/// Parses `read --json` output into (event, category, value, timestamp) tuples.
pub fn parse_json_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// Sends `signal` (such as `-INT`) to a child with the system's `kill`.
pub fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .arg(signal)
        .arg(child.id().to_string())
        .status()
        .expect("run kill");
    assert!(status.success());
}

/// Reads lines from a child's stdout until one contains `needle`; returns it.
pub fn wait_for_line(out: &mut BufReader<ChildStdout>, needle: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("read child stdout");
        assert!(n > 0, "child closed stdout before printing `{needle}`");
        if line.contains(needle) {
            return line;
        }
    }
}

/// The `host:port` in a line such as `serving http://127.0.0.1:4321/metrics`.
pub fn addr_in(line: &str) -> SocketAddr {
    let start = line.find("http://").expect("URL in line") + "http://".len();
    let rest = &line[start..];
    let end = rest.find('/').expect("path after address");
    rest[..end].parse().expect("socket address")
}

/// GETs `path` with plain HTTP/1.1; returns the whole response.
pub fn http_get(addr: SocketAddr, path: &str) -> String {
    try_http_get(addr, path).unwrap_or_else(|e| panic!("GET http://{addr}{path}: {e}"))
}

/// GETs `path` with plain HTTP/1.1; the whole response, or the error.
pub fn try_http_get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut conn = TcpStream::connect(addr)?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    conn.read_to_string(&mut response)?;
    Ok(response)
}

/// Polls `f` every 100 ms until it returns `Some`, for at most `limit`.
pub fn eventually<T>(limit: Duration, mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let end = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() > end {
            return None;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The value of the sample `series` (name and labels, exactly as rendered) in a
/// Prometheus text exposition.
pub fn sample(exposition: &str, series_prefix: &str) -> Option<f64> {
    exposition
        .lines()
        .find(|l| l.starts_with(series_prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

pub fn join(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// `count` live agents (`fd-00`, `fd-01`, …), each with a 64-slot ring in `dir`
/// holding `events` requests; the rings stay live while the agents are kept.
pub fn live_rings(dir: &Path, count: usize, events: u64) -> Vec<telering_std::Telemetry> {
    (0..count)
        .map(|i| {
            let t = telering_std::Telemetry::builder(format!("fd-{i:02}"))
                .enabled(true)
                .dir(dir)
                .buffer_size(64)
                .run_interval(Duration::from_secs(3600))
                .build()
                .unwrap();
            for _ in 0..events {
                t.update_tx_requests_num(1);
            }
            t.flush().unwrap();
            t
        })
        .collect()
}

/// `telering serve --local --port 0 --dir DIR` under an open-file limit of `limit`
/// it cannot raise (`ulimit -n` in the shell lowers the soft and the hard limit), its
/// standard error piped; returns it and its address.
pub fn serve_under_fd_limit(dir: &Path, limit: u32) -> (Running, SocketAddr) {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &format!("ulimit -n {limit} && exec \"$0\" \"$@\"")])
        .arg(telering().get_program())
        .args(["serve", "--local", "--port", "0", "--dir"])
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut running = Running::spawn(&mut cmd);
    let mut out = BufReader::new(running.child.stdout.take().unwrap());
    let addr = addr_in(&wait_for_line(&mut out, "serving http://"));
    (running, addr)
}
