//! telering-embedded-io (being built).
