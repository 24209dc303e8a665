//! The `telering` command (being built).
fn main() {}
