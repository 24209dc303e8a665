//! loom models of the telering ring live in `tests/`; run them with `RUSTFLAGS="--cfg loom" cargo test -p telering-loom-tests --release`.
