//! The atomics the ring is built from, swapped for loom's under `cfg(loom)`.
//!
//! Production code imports atomics only from here, so the code loom model-checks
//! (`loom-tests/`) is the code that ships — never a copy. Outside loom the atomics
//! come from `portable-atomic`, which maps to native instructions where the target
//! has them and, on targets without compare-and-swap (thumbv6m, riscv32imc), to the
//! emulation selected by the `critical-section` feature or the
//! `portable_atomic_unsafe_assume_single_core` cfg. The ring's hot path only ever
//! loads and stores, which every target supports natively; only [`crate::Ring::split`]
//! needs a swap.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, fence};

#[cfg(all(loom, target_has_atomic = "64"))]
pub(crate) use loom::sync::atomic::AtomicU64;

#[cfg(not(loom))]
pub(crate) use portable_atomic::{AtomicBool, AtomicU32, fence};

#[cfg(all(not(loom), target_has_atomic = "64"))]
pub(crate) use portable_atomic::AtomicU64;

pub(crate) use core::sync::atomic::Ordering;
