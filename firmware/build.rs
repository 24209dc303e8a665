//! Adds defmt's linker script when the defmt exporter is built in. (cortex-m-rt's
//! `link.x` comes from `.cargo/config.toml`; `memory.x` and `device.x` from the
//! `lm3s6965` device crate.)

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_DEFMT_LOG").is_some() {
        println!("cargo:rustc-link-arg=-Tdefmt.x");
    }
}
