//! telering-prometheus (being built).
