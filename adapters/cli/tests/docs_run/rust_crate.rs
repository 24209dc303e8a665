//! A Rust block of the docs as a crate of its own: the `[dependencies]` of the
//! closest `toml` block before it, with the telering crates replaced by their paths
//! in this workspace, built offline (from the registry cache the workspace's own
//! build filled) with the workspace's `Cargo.lock`, and run.

use super::markdown::Block;
use super::session::repo;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `[dependencies]` block a Rust block is built with: the closest `toml` block
/// before it in the same document that has that table.
pub fn dependencies_of<'a>(blocks: &'a [Block], rust: &Block) -> Option<&'a Block> {
    blocks
        .iter()
        .filter(|b| b.doc == rust.doc && b.line < rust.line && b.lang == "toml")
        .rfind(|b| b.text.lines().any(|l| l.trim() == "[dependencies]"))
}

/// Each workspace crate's name and folder.
fn workspace_crates() -> Vec<(String, PathBuf)> {
    let mut dirs = vec![repo().join("core")];
    for entry in std::fs::read_dir(repo().join("adapters")).unwrap() {
        dirs.push(entry.unwrap().path());
    }
    dirs.into_iter()
        .filter_map(|dir| {
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
            let name = manifest.lines().find_map(|l| {
                let value = l.trim().strip_prefix("name")?.trim().strip_prefix('=')?;
                Some(value.trim().trim_matches('"').to_owned())
            })?;
            Some((name, dir.canonicalize().unwrap()))
        })
        .collect()
}

/// The `[dependencies]` table of `toml`, each `telering-*` entry replaced by the
/// crate's path here (its `features` kept); panics on a telering crate this
/// workspace does not have.
pub fn rewrite_dependencies(toml: &Block) -> String {
    let crates = workspace_crates();
    let mut out = String::from("[dependencies]\n");
    let mut inside = false;
    for line in toml.text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            inside = trimmed == "[dependencies]";
            continue;
        }
        if !inside || trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (name, value) = trimmed
            .split_once('=')
            .unwrap_or_else(|| panic!("{toml}: not a dependency: {line}"));
        let name = name.trim();
        if !name.starts_with("telering") {
            out.push_str(trimmed);
            out.push('\n');
            continue;
        }
        let (_, dir) = crates
            .iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("{toml}: {name} is not a crate of this workspace"));
        let features = value
            .find("features")
            .and_then(|at| Some(&value[at..at + value[at..].find(']')? + 1]));
        match features {
            Some(features) => out.push_str(&format!(
                "{name} = {{ path = {:?}, {features} }}\n",
                dir.display()
            )),
            None => out.push_str(&format!("{name} = {{ path = {:?} }}\n", dir.display())),
        }
    }
    out
}

/// Builds `rust` with `toml`'s dependencies in `folder` (offline) and runs it;
/// panics with cargo's or the program's output when either fails.
pub fn build_and_run(rust: &Block, toml: &Block, folder: &Path) {
    let name = format!(
        "docs-{}-{}",
        rust.doc.to_lowercase().replace(['/', '.'], "-"),
        rust.line
    );
    let main = if rust.text.contains("fn main") {
        rust.text.clone()
    } else {
        format!("fn main() {{\n{}}}\n", rust.text)
    };
    std::fs::create_dir_all(folder.join("src")).unwrap();
    std::fs::write(folder.join("src/main.rs"), main).unwrap();
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [workspace]\n\n{}",
        rewrite_dependencies(toml)
    );
    std::fs::write(folder.join("Cargo.toml"), manifest).unwrap();
    std::fs::copy(repo().join("Cargo.lock"), folder.join("Cargo.lock")).unwrap();
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("docs-run-target");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["run", "--offline", "--quiet"])
        .current_dir(folder)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTFLAGS")
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "{rust}, built with the dependencies of {toml}, failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
