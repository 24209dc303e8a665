//! The NIXL-shaped host (`host/nixl_host.cpp`) compiled with g++, the plug-in cargo
//! built for this test run copied into a plug-in directory under the name NIXL's
//! loader opens, and what the host's events should add up to.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::AtomicBool;

const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// The plug-in cargo built for this test run (`target/<profile>/`, next to `deps/`).
pub fn plugin_library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("target deps directory");
    let name = "libtelemetry_exporter_telering.so";
    [deps.join(name), deps.parent().unwrap().join(name)]
        .into_iter()
        .filter(|p| p.is_file())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .unwrap_or_else(|| panic!("no {name} next to {}", deps.display()))
}

/// Compiles a C++ source of this crate (`host/…` or `tests/cpp/…`) with g++ and
/// strict warnings into `out`, as an executable or (`shared`) a shared library.
pub fn compile_cpp(source: &str, out: &Path, shared: bool) {
    let mut cmd = Command::new("g++");
    cmd.args([
        "-std=c++17",
        "-O1",
        "-g",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-I",
    ])
    .arg(format!("{CRATE}/include"));
    if shared {
        cmd.args(["-shared", "-fPIC"]);
    }
    let output = cmd
        .arg("-o")
        .arg(out)
        .arg(format!("{CRATE}/{source}"))
        .arg("-ldl")
        .output()
        .expect("run g++");
    assert!(
        output.status.success(),
        "compiling {source} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A scratch directory with the host (`nixl_host`) and a plug-in directory
/// (`plugins/libtelemetry_exporter_telering.so`).
pub struct Setup {
    pub scratch: tempfile::TempDir,
}

impl Setup {
    pub fn new() -> Setup {
        let scratch = tempfile::tempdir().unwrap();
        std::fs::create_dir(scratch.path().join("plugins")).unwrap();
        std::fs::copy(
            plugin_library(),
            scratch
                .path()
                .join("plugins/libtelemetry_exporter_telering.so"),
        )
        .unwrap();
        compile_cpp(
            "host/nixl_host.cpp",
            &scratch.path().join("nixl_host"),
            false,
        );
        Setup { scratch }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.scratch.path().join(name)
    }

    /// The host, with the environment NIXL's agent would have
    /// (`NIXL_TELEMETRY_EXPORTER=telering`, `NIXL_PLUGIN_DIR`) and nothing else of
    /// NIXL's, telering's or OpenTelemetry's from the test's own environment.
    pub fn host(&self, args: &[&str]) -> Command {
        self.host_under(None, args)
    }

    /// As [`host`](Self::host), run by `tool` (valgrind) with its arguments.
    pub fn host_under(&self, tool: Option<&[&str]>, args: &[&str]) -> Command {
        let exe = self.path("nixl_host");
        let mut cmd = match tool {
            Some([tool, tool_args @ ..]) => {
                let mut cmd = Command::new(tool);
                cmd.args(tool_args).arg(exe);
                cmd
            }
            _ => Command::new(exe),
        };
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            if ["NIXL_", "TELERING_", "OTEL_"]
                .iter()
                .any(|p| name.starts_with(p))
            {
                cmd.env_remove(name);
            }
        }
        cmd.args(args)
            .env("NIXL_TELEMETRY_ENABLE", "y")
            .env("NIXL_TELEMETRY_EXPORTER", "telering")
            .env("NIXL_PLUGIN_DIR", self.path("plugins"));
        cmd
    }
}

/// The host `cmd` (run with `--hold`) once it has exported everything and holds its
/// exporter, waiting for [`Holding::release`].
pub struct Holding {
    child: Child,
}

impl Holding {
    /// Spawns `cmd` and waits for its `holding` line.
    pub fn start(cmd: &mut Command) -> Holding {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.starts_with("holding") {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "the host ended early"
            );
        }
        Holding { child }
    }

    /// Lets the host destroy its exporter and end; asserts it succeeded.
    pub fn release(mut self) {
        self.child.stdin.take().unwrap().write_all(b"\n").unwrap();
        assert!(self.child.wait().unwrap().success());
    }
}

/// Runs `cmd`, panics with its output unless it exits with `code`.
pub fn run_expecting(cmd: &mut Command, code: i32) -> (String, String) {
    let output: Output = cmd.output().expect("run the host");
    let (out, err) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    );
    assert_eq!(
        output.status.code(),
        Some(code),
        "host exited with {:?}\nstdout:\n{out}\nstderr:\n{err}",
        output.status
    );
    (out, err)
}

/// `(count, sum)` per NIXL type number.
pub type Expected = BTreeMap<u32, (u64, u64)>;

/// What the host exports: `batches` × `events` (event k: type k % 20, value
/// k % 7 + 1), and with `dropped` > 0 one type-20 report of `dropped` a batch.
pub fn expected(batches: u64, events: u64, dropped: u64) -> Expected {
    let mut e = Expected::new();
    for k in 0..batches * events {
        let entry = e.entry((k % 20) as u32).or_default();
        entry.0 += 1;
        entry.1 += k % 7 + 1;
    }
    if dropped > 0 {
        e.insert(20, (batches, batches * dropped));
    }
    e
}

/// `(count, sum)` per NIXL type number of the ring at `path`, drained with
/// `telering read --json`'s code (names mapped back by telering-core's table).
pub fn read_ring(path: &Path) -> Expected {
    let options = telering_cli::read::ReadOptions {
        path: path.to_path_buf(),
        format: telering_cli::output::EventFormat::Json,
        follow: false,
        interval: std::time::Duration::from_millis(100),
        max: None,
        unread_output: None,
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    telering_cli::read::read(&options, &AtomicBool::new(false), &mut out, &mut err)
        .unwrap_or_else(|e| panic!("telering read {}: {e}", path.display()));
    assert!(
        err.is_empty(),
        "telering read: {}",
        String::from_utf8_lossy(&err)
    );
    let mut tally = Expected::new();
    for line in String::from_utf8(out).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
        let name = v["event"].as_str().expect("event");
        let t = telering_core::builtin::nixl_type_of(name)
            .unwrap_or_else(|| panic!("{name} is not one of NIXL's types"));
        let entry = tally.entry(t).or_default();
        entry.0 += 1;
        entry.1 += v["value"].as_u64().expect("value");
    }
    tally
}

/// The events of `e` but its loss reports (type 20), and the sum of those.
pub fn split_reports(e: &Expected) -> (Expected, u64) {
    let mut e = e.clone();
    let reports = e.remove(&20).map_or(0, |(_, sum)| sum);
    (e, reports)
}

/// NIXL's loss reports reach the ring as telering's own in-band reports, which may
/// merge the reports of batches flushed together: the other events are as NIXL handed
/// them over, and the reports' sum is what NIXL reported.
pub fn assert_same_events(got: &Expected, want: &Expected) {
    assert_eq!(split_reports(got), split_reports(want));
}
