//! Puts `memory.x` where cortex-m-rt's `link.x` finds it, and adds defmt's linker
//! script when the defmt exporter is built in.

use std::{env, fs, path::PathBuf};

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    fs::write(out.join("memory.x"), include_bytes!("memory.x")).expect("write memory.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_DEFMT_LOG").is_some() {
        println!("cargo:rustc-link-arg=-Tdefmt.x");
    }
}
