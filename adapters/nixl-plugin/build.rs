//! Compiles the C++ half of the plug-in (`src/shim.cpp`, the classes NIXL's loader
//! sees) with the system's C++ compiler and the default libstdc++ string ABI, as NIXL
//! is built.

fn main() {
    println!("cargo:rerun-if-changed=src/shim.cpp");
    println!("cargo:rerun-if-changed=include/nixl_telemetry_abi.h");
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file("src/shim.cpp")
        .include("include")
        .define(
            "TELERING_VERSION",
            Some(format!("\"{}\"", std::env::var("CARGO_PKG_VERSION").unwrap()).as_str()),
        )
        .flag_if_supported("-fvisibility=hidden")
        .warnings(true)
        .extra_warnings(true)
        .compile("telering_nixl_shim");
}
