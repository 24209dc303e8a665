//! Compiling and running the C and C++ test programs against the library cargo built
//! for this test run, and reading their rings with `telering read`'s code.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::AtomicBool;

/// The static library cargo built for this test run, next to the test executable
/// (`target/debug/deps/libtelering_ffi-<hash>.a`; `cargo cinstall` installs it as
/// `libtelering.a`). Builds with other feature sets leave other hashes; the newest
/// file is the one cargo brought up to date last.
///
/// The tests link the static library; `.ci/run` links C programs against the
/// installed static and shared libraries through pkg-config.
pub fn static_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().expect("target deps directory");
    std::fs::read_dir(dir)
        .expect("read the deps directory")
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name == "libtelering_ffi.a" || name.starts_with("libtelering_ffi-"))
                && name.ends_with(".a")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok())
        .map(|e| e.path())
        .unwrap_or_else(|| panic!("no libtelering_ffi*.a in {}", dir.display()))
}

/// `adapters/ffi/include`.
pub fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("include")
}

/// A test program's source, in `tests/c`.
pub fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name)
}

/// Compiles `source` (C with gcc, C++ with g++, strict warnings) into `out_dir`;
/// panics with the compiler's output on failure.
pub fn compile(source_name: &str, out_dir: &Path) -> PathBuf {
    compile_path(&source(source_name), out_dir)
}

/// As [`compile`], for a source file anywhere.
pub fn compile_path(src: &Path, out_dir: &Path) -> PathBuf {
    let source_name = src.file_name().unwrap().to_string_lossy().into_owned();
    let cpp = source_name.ends_with(".cpp");
    let exe = out_dir.join(source_name.replace('.', "_"));
    let mut cmd = Command::new(if cpp { "g++" } else { "gcc" });
    cmd.arg(if cpp { "-std=c++17" } else { "-std=c11" })
        .args([
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-g",
            "-O1",
            "-pthread",
        ])
        .arg("-I")
        .arg(include_dir())
        .arg(src)
        .arg("-o")
        .arg(&exe);
    if cpp {
        // `__atomic_*` builtins are GNU extensions, not pedantic errors in C++.
        cmd.arg("-Wno-pedantic");
    } else {
        cmd.arg("-D_GNU_SOURCE");
    }
    // The static library and the system libraries Rust's standard library needs.
    cmd.arg(static_lib()).args(["-ldl", "-lm"]);
    let output = cmd.output().expect("run the C compiler");
    assert!(
        output.status.success(),
        "compiling {source_name} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

/// A command for a compiled program with no `NIXL_TELEMETRY_*` from the environment.
pub fn program(exe: &Path) -> Command {
    let mut cmd = Command::new(exe);
    clean_env(&mut cmd);
    cmd
}

/// Removes `NIXL_TELEMETRY_*`, and `LD_LIBRARY_PATH`: cargo points it at
/// `target/debug`, where `cargo build` leaves the shared library, and a stale one
/// there would win over the program's rpath.
pub fn clean_env(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("NIXL_TELEMETRY_") {
            cmd.env_remove(name);
        }
    }
    cmd.env_remove("LD_LIBRARY_PATH");
}

/// Runs `cmd`, panicking with its output unless it exits 0.
pub fn run_ok(cmd: &mut Command) -> Output {
    let output = cmd.output().expect("run the test program");
    assert!(
        output.status.success(),
        "{cmd:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `(category, count, sum)` per event name.
pub type Tally = BTreeMap<String, (String, u64, u64)>;

/// Drains the ring at `path` with `telering read --json`'s code and tallies it.
pub fn telering_read(path: &Path) -> Tally {
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
    let mut tally = Tally::new();
    for line in String::from_utf8(out).expect("UTF-8 output").lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
        let name = v["event"].as_str().expect("event").to_string();
        let category = v["category"].as_str().expect("category").to_string();
        let value = v["value"].as_u64().expect("value");
        let entry = tally.entry(name).or_insert((category.clone(), 0, 0));
        assert_eq!(entry.0, category, "one category per name");
        entry.1 += 1;
        entry.2 += value;
    }
    tally
}

/// The `xfer <start> <post> <xfer> <bytes> <descs>` line a program printed.
pub fn xfer_line(stdout: &str) -> [u64; 5] {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("xfer "))
        .expect("an xfer line");
    let fields: Vec<u64> = line
        .split(' ')
        .map(|f| f.parse().expect("a number"))
        .collect();
    fields.try_into().expect("five fields")
}
