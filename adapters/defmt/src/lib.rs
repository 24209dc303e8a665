//! telering-defmt (being built).
