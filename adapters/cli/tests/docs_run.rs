//! The docs run: every shell block of README.md and docs/*.md runs as written, in a
//! folder holding the repository's files with the `telering` binary on `PATH`, and
//! every Rust block builds and runs as a crate of its own from the `[dependencies]`
//! shown before it. A documented flag, variable, file or command that changes makes
//! its block fail here.
//!
//! How each block runs is said by a marker before it (`docs_run/markdown.rs`):
//! nothing (here, by `cargo test`), `needs: TOOL` (the `--ignored` test below that
//! `.ci/run` runs with the tools installed), `fresh clone` (the "first five minutes",
//! from a `git clone`, also run by `.ci/run`) or `not run: REASON` (illustrative).

#[path = "docs_run/markdown.rs"]
mod markdown;
#[path = "docs_run/rust_crate.rs"]
mod rust_crate;
#[path = "docs_run/session.rs"]
mod session;

use markdown::{Block, Class};
use session::{Session, repo};
use std::process::Command;
use std::time::Duration;

/// README.md, then docs/*.md in name order.
fn documents() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    docs.insert(0, "README.md".into());
    docs
}

/// Every block of every document, each document's in order.
fn all_blocks() -> Vec<Block> {
    let mut all = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(repo().join(&doc)).unwrap();
        all.extend(markdown::blocks(&doc, &text).unwrap_or_else(|e| panic!("{e}")));
    }
    all
}

/// Runs, document by document, the shell and file blocks `select` picks, each
/// document in its own folder made by `prepare`, each of its sections (`## `) in a
/// shell of its own: files persist from section to section, variables and the
/// working directory do not (as a reader who opens a new terminal for a new task).
fn run_sessions(
    select: impl Fn(&Block) -> bool,
    prepare: impl Fn(&std::path::Path),
    limit: Duration,
) -> usize {
    let blocks = all_blocks();
    let mut ran = 0;
    for doc in documents() {
        let chosen: Vec<&Block> = blocks
            .iter()
            .filter(|b| b.doc == doc && (b.is_shell() || b.file.is_some()) && select(b))
            .collect();
        if chosen.is_empty() {
            continue;
        }
        let folder = tempfile::tempdir().unwrap();
        prepare(folder.path());
        let mut sections: Vec<Vec<&Block>> = Vec::new();
        for block in chosen {
            match sections.last_mut() {
                Some(last) if last[0].section == block.section => last.push(block),
                _ => sections.push(vec![block]),
            }
        }
        for section in sections {
            let mut session = Session::new(folder.path());
            for block in section {
                session.push(block);
            }
            session.run(limit);
            ran += session.len();
        }
    }
    ran
}

#[test]
fn every_marker_is_known_and_sits_on_a_block_the_docs_run_runs() {
    let blocks = all_blocks();
    let shell = blocks.iter().filter(|b| b.is_shell()).count();
    assert!(
        shell >= 8,
        "only {shell} shell blocks found: is the parser lost?"
    );
    for block in &blocks {
        if block.file.is_some() || block.is_shell() || block.lang == "rust" {
            continue;
        }
        // Other blocks (output, configuration) are read, not run: a run marker on one
        // would promise a check that never happens.
        assert!(
            block.class == Class::Default,
            "{block}: a marker on a block the docs run does not run"
        );
    }
    for block in blocks.iter().filter(|b| b.lang == "rust") {
        assert!(
            matches!(block.class, Class::Default | Class::NotRun(_)),
            "{block}: Rust blocks are built by cargo test, or marked `not run: REASON`"
        );
        if block.class == Class::Default {
            assert!(
                rust_crate::dependencies_of(&blocks, block).is_some(),
                "{block}: no ```toml block with [dependencies] before it"
            );
        }
    }
}

#[test]
fn shell_blocks_run_as_written() {
    let ran = run_sessions(
        |b| b.class == Class::Default,
        session::copy_repository,
        Duration::from_secs(300),
    );
    assert!(ran > 0, "no shell block ran");
}

#[test]
fn rust_blocks_build_from_their_own_dependencies_and_run() {
    let blocks = all_blocks();
    let mut built = 0;
    for rust in blocks
        .iter()
        .filter(|b| b.lang == "rust" && b.class == Class::Default)
    {
        let toml = rust_crate::dependencies_of(&blocks, rust).expect("checked above");
        let folder = tempfile::tempdir().unwrap();
        rust_crate::build_and_run(rust, toml, folder.path());
        built += 1;
    }
    assert!(built > 0, "no Rust block was built");
}

#[test]
#[ignore = "needs the tools each block's `needs:` marker names (oteltest, qemu-system-arm, …)"]
fn blocks_needing_installed_tools_run() {
    let blocks = all_blocks();
    let missing: Vec<String> = blocks
        .iter()
        .filter_map(|b| match &b.class {
            Class::Needs(tools) => Some(tools.iter().map(move |t| (b, t))),
            _ => None,
        })
        .flatten()
        .filter(|(_, tool)| !session::installed(tool))
        .map(|(b, tool)| format!("{tool} (for {b})"))
        .collect();
    assert!(missing.is_empty(), "not installed: {}", missing.join(", "));
    let ran = run_sessions(
        |b| matches!(b.class, Class::Needs(_)),
        session::copy_repository,
        Duration::from_secs(900),
    );
    assert!(
        ran > 0,
        "no block needs a tool: remove this test or the markers"
    );
}

/// The first five minutes of a newcomer, from a `git clone` of the committed
/// repository: the Quick start's two commands, the C library installed and a C
/// program built with pkg-config run with no variable set, the Python package
/// installed and its example run.
#[test]
#[ignore = "needs a network, cargo-c, pkg-config and pip; clones and builds the repository (.ci/run runs it)"]
fn first_five_minutes_from_a_fresh_clone() {
    let ran = run_sessions(
        |b| b.class == Class::FreshClone,
        |folder| {
            let clone = Command::new("git")
                .args(["clone", "--quiet"])
                .arg(repo())
                .arg(folder)
                .status()
                .expect("run git clone");
            assert!(clone.success(), "git clone failed");
            // CI points the clone's `target` at its own target directory, so the
            // dependencies it compiled once are not compiled again; the clone's own
            // crates are still compiled from the clone's sources.
            if let Some(shared) = std::env::var_os("TELERING_FRESH_CLONE_TARGET") {
                std::os::unix::fs::symlink(shared, folder.join("target"))
                    .expect("link the clone's target directory");
            }
        },
        Duration::from_secs(5400),
    );
    assert!(ran > 0, "no block is marked `fresh clone`");
}

/// The newest cargo-c that builds with the toolchain CI uses (Rust 1.95); later ones
/// need a newer Rust, so an unpinned `cargo install cargo-c` fails.
const CARGO_C: &str = "--version 0.10.24";

#[test]
fn cargo_c_is_installed_at_one_pinned_version_everywhere() {
    for file in [
        "README.md",
        "adapters/ffi/README.md",
        "adapters/ffi/install.sh",
        ".ci/run",
    ] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        let installs: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("cargo install cargo-c"))
            .collect();
        assert!(
            !installs.is_empty(),
            "{file} no longer says how to install cargo-c"
        );
        for line in installs {
            assert!(
                line.contains(CARGO_C),
                "{file}: not pinned ({CARGO_C}): {line}"
            );
        }
    }
}
