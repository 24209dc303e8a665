//! Compiles the C loops of the `ffi_recording` benchmark (`c/ffi_record_loop.c`) with
//! the system C compiler, against libtelering's header.

fn main() {
    println!("cargo:rerun-if-changed=c/ffi_record_loop.c");
    println!("cargo:rerun-if-changed=../adapters/ffi/include/telering.h");
    cc::Build::new()
        .file("c/ffi_record_loop.c")
        .include("../adapters/ffi/include")
        .opt_level(2)
        .warnings_into_errors(true)
        .compile("ffi_record_loop");
}
