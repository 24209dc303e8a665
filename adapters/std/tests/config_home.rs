//! Configuration has one home that imports nothing else of the crate: the code of
//! `config/vars.rs`, `config/env.rs` and `config/file.rs` names no `crate::` module
//! but `parse` (doc comments may link anywhere), and the exporters and the plug-in
//! loader read from it, never from the builder.

use std::path::Path;

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// The crate modules named by `crate::…` paths in the code (not the comments) of
/// `file`.
fn crate_modules(file: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(SRC).join(file)).unwrap();
    let mut found = Vec::new();
    for line in text.lines() {
        let code = line.split("//").next().unwrap();
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            found.push(name);
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn the_configuration_home_imports_nothing_of_the_crate_but_parse() {
    for file in ["config/vars.rs", "config/env.rs", "config/file.rs"] {
        let modules = crate_modules(file);
        assert!(
            modules.iter().all(|m| m == "parse"),
            "{file} uses crate::{modules:?}"
        );
    }
    // config/mod.rs only re-exports the builder's items under their public path.
    assert_eq!(crate_modules("config/mod.rs"), ["builder"]);
}

#[test]
fn exporters_and_the_plugin_loader_read_configuration_only_from_its_home() {
    for file in ["export/mod.rs", "export/registry.rs", "plugin.rs"] {
        let modules = crate_modules(file);
        assert!(
            !modules.iter().any(|m| m == "builder" || m == "env"),
            "{file} uses crate::{modules:?}"
        );
    }
    assert!(crate_modules("plugin.rs").contains(&"config".to_string()));
}
