//! Running a document's blocks as a newcomer would: one shell session in a folder
//! holding the repository's files, with the `telering` binary on `PATH`.

use super::markdown::Block;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files of the repository as a clone has them (tracked and new, not ignored),
/// from the working tree, copied under `to`.
pub fn copy_repository(to: &Path) {
    let listed = Command::new("git")
        .arg("-C")
        .arg(repo())
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .expect("run git ls-files");
    assert!(listed.status.success(), "git ls-files failed: {listed:?}");
    for name in listed.stdout.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let name = std::str::from_utf8(name).expect("a UTF-8 file name");
        let from = repo().join(name);
        if !from.is_file() {
            continue; // deleted in the working tree
        }
        let dest = to.join(name);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&from, &dest).unwrap_or_else(|e| panic!("copy {name}: {e}"));
    }
}

/// A shell session: blocks of one document, in order, in `folder`.
#[derive(Debug)]
pub struct Session {
    folder: PathBuf,
    script: String,
    blocks: usize,
}

impl Session {
    /// An empty session run in `folder` (a copy of the repository or a clone).
    pub fn new(folder: &Path) -> Session {
        Session {
            folder: folder.to_owned(),
            script: "set -eo pipefail\n".to_owned(),
            blocks: 0,
        }
    }

    /// Adds `block`: its commands, or, with a `file:` marker, its text written to
    /// that file.
    pub fn push(&mut self, block: &Block) {
        self.script.push_str(&format!("echo '>>> {block}' >&2\n"));
        match &block.file {
            Some(name) => {
                assert!(!block.text.contains("\nDOCS_RUN_EOF\n"), "{block}");
                let text = &block.text;
                self.script.push_str(&format!(
                    "cat > {name} <<'DOCS_RUN_EOF'\n{text}DOCS_RUN_EOF\n"
                ));
            }
            None => {
                assert!(
                    block.is_shell(),
                    "{block} is neither a shell block nor a file"
                );
                self.script.push_str(&block.commands());
            }
        }
        self.blocks += 1;
    }

    /// How many blocks it runs.
    pub fn len(&self) -> usize {
        self.blocks
    }

    /// Runs the session with bash, `HOME` a fresh folder, `telering` on `PATH` and
    /// no `NIXL_*`, `TELERING_*` or `OTEL_*` variable, within `limit`; panics with the
    /// block that failed and the end of its output.
    pub fn run(&self, limit: Duration) {
        let home = self.folder.join(".docs-run-home");
        let bin = self.folder.join(".docs-run-bin");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        let telering = bin.join("telering");
        if !telering.exists() {
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_telering"), &telering).unwrap();
        }
        let real_home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set"));
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| real_home.join(".cargo"));
        let rustup_home = std::env::var_os("RUSTUP_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| real_home.join(".rustup"));
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let stdout = self.folder.join(".docs-run-stdout");
        let stderr = self.folder.join(".docs-run-stderr");
        let mut cmd = Command::new("bash");
        cmd.arg("-c")
            .arg(&self.script)
            .current_dir(&self.folder)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .env("HOME", &home)
            .env("CARGO_HOME", cargo_home)
            .env("RUSTUP_HOME", rustup_home)
            .env("PATH", path)
            .env_remove("CARGO_TARGET_DIR")
            .process_group(0);
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy().into_owned();
            if [
                "NIXL_",
                "TELERING_",
                "OTEL_",
                "PKG_CONFIG_PATH",
                "LD_LIBRARY_PATH",
            ]
            .iter()
            .any(|p| name.starts_with(p))
            {
                cmd.env_remove(name);
            }
        }
        let mut child = cmd.spawn().expect("run bash");
        let deadline = Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // Whatever a block left running in the background goes with the session.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = child.wait();
        if status.is_some_and(|s| s.success()) {
            return;
        }
        let out = std::fs::read_to_string(&stdout).unwrap_or_default();
        let err = std::fs::read_to_string(&stderr).unwrap_or_default();
        let block = err
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix(">>> "))
            .unwrap_or("before the first block");
        let what = match status {
            Some(status) => format!("exited with {status}"),
            None => format!("did not end within {limit:?}"),
        };
        panic!(
            "the block {block} {what}\n--- stdout (end) ---\n{}\n--- stderr (end) ---\n{}",
            tail(&out, 40),
            tail(&err, 40)
        );
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Whether `tool` is installed: a command on `PATH`, or `python:MODULE` importable
/// by `python3`.
pub fn installed(tool: &str) -> bool {
    let (program, args): (&str, Vec<String>) = match tool.strip_prefix("python:") {
        Some(module) => ("python3", vec!["-c".into(), format!("import {module}")]),
        None => ("sh", vec!["-c".into(), format!("command -v '{tool}'")]),
    };
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
