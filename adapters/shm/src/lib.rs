//! telering-shm (being built).
