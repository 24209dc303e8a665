//! telering-std (being built).
