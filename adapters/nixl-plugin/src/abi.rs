//! The plug-in's entry points: the two NIXL's loader finds with `dlsym`, and the
//! `telering_nixl_*` functions the C++ shim (`src/shim.cpp`) calls.
//!
//! A handle is a `Box<PluginExporter>` turned into a pointer by
//! `telering_nixl_create`, owned by the shim's exporter object, and turned back into
//! the box by `telering_nixl_destroy` in that object's destructor. NIXL calls an
//! exporter's functions from its flush thread, one call at a time, and destroys it
//! after that thread stopped; so a handle is never used by two threads at once.

use crate::degraded::{STRICT_VAR, strict_from, strict_setting};
use crate::exporter::{CreateError, PluginExporter};
use std::ffi::{c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use telering_core::text::Escaped;

unsafe extern "C" {
    /// The shim's plug-in object (a static in `src/shim.cpp`).
    fn telering_nixl_plugin() -> *mut c_void;
}

/// NIXL's entry point: the plug-in object (API version 2, name `telering`, the
/// crate's version, the exporter factory).
#[unsafe(no_mangle)]
pub extern "C" fn nixl_telemetry_plugin_init() -> *mut c_void {
    crate::logging::install();
    // SAFETY: the shim's function takes nothing and returns a pointer to its static
    // plug-in object, valid for the life of the library.
    unsafe { telering_nixl_plugin() }
}

/// NIXL's entry point before `dlclose`: nothing to release (the plug-in object is
/// static; each exporter released itself when NIXL destroyed it).
#[unsafe(no_mangle)]
pub extern "C" fn nixl_telemetry_plugin_fini() {}

/// Creates the exporter of agent `agent_name[..len]`. On a bad telering setting it
/// logs why (NIXL's error level) and returns a degraded exporter that counts every
/// event as undelivered ([`crate::degraded`]), so NIXL's agent still starts; with
/// `TELERING_PLUGIN_STRICT=1` it returns NULL instead.
///
/// # Safety
///
/// `agent_name` is valid for reading `len` bytes (a `std::string`'s data).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_nixl_create(
    agent_name: *const c_char,
    len: usize,
    max_events_buffered: usize,
) -> *mut c_void {
    crate::logging::install();
    let bytes: &[u8] = if len == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract: `len` readable bytes at `agent_name`.
        unsafe { std::slice::from_raw_parts(agent_name.cast::<u8>(), len) }
    };
    let attempt = catch_unwind(|| {
        let env = telering_std::EnvSource::from_process();
        let strict = strict_setting(&env);
        let created = std::str::from_utf8(bytes)
            .map_err(|_| CreateError::AgentNameNotUtf8)
            .and_then(|name| {
                strict.clone().map_err(CreateError::Strict)?;
                PluginExporter::create(name, max_events_buffered, &env)
            });
        (strict, created)
    });
    let (strict, created) = attempt.unwrap_or_else(|_| {
        let strict = strict_from(std::env::var_os(STRICT_VAR).as_deref());
        (strict, Err(CreateError::Panicked))
    });
    let error = match created {
        Ok(exporter) => return Box::into_raw(Box::new(exporter)).cast(),
        Err(e) => e,
    };
    let agent = Escaped::bytes(bytes);
    if strict == Ok(true) {
        log::error!(
            "cannot create the exporter of NIXL agent `{agent}`: {error}; {STRICT_VAR}=1, so create_exporter answers null"
        );
        return std::ptr::null_mut();
    }
    log::error!(
        "cannot create the exporter of NIXL agent `{agent}`: {error}; the agent runs with telering not exporting, its events counted as undelivered ({STRICT_VAR}=1 refuses the exporter instead)"
    );
    let degraded = catch_unwind(AssertUnwindSafe(|| PluginExporter::degraded(bytes, &error)));
    match degraded {
        Ok(exporter) => Box::into_raw(Box::new(exporter)).cast(),
        Err(_) => std::ptr::null_mut(),
    }
}

/// Records one event; returns NIXL's status ([`PluginExporter::export`]).
///
/// # Safety
///
/// `handle` came from `telering_nixl_create` and was not destroyed; no other call
/// on it runs at the same time (module docs).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_nixl_export(
    handle: *mut c_void,
    event_type: u32,
    value: u64,
) -> i32 {
    // SAFETY: the caller's contract: a live handle, used by this thread alone now.
    let exporter = unsafe { &mut *handle.cast::<PluginExporter>() };
    // A panic must not unwind into NIXL's flush (it would abort the agent): the event
    // is answered as an error instead. The guard costs 3 instructions per event
    // (186 → 189, BENCHMARKS.md).
    catch_unwind(AssertUnwindSafe(|| exporter.export(event_type, value))).unwrap_or_else(|_| {
        log::error!("telering panicked recording a NIXL event; the event is lost");
        -8 // NIXL_ERR_UNKNOWN
    })
}

/// The end of one of NIXL's batches.
///
/// # Safety
///
/// As for `telering_nixl_export`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_nixl_batch_end(handle: *mut c_void) {
    // SAFETY: the caller's contract: a live handle, used by this thread alone now.
    let exporter = unsafe { &mut *handle.cast::<PluginExporter>() };
    if catch_unwind(AssertUnwindSafe(|| exporter.batch_end())).is_err() {
        log::error!("telering panicked at the end of a NIXL batch");
    }
}

/// Flushes, shuts down and frees the exporter; logs what it could not deliver.
///
/// # Safety
///
/// `handle` came from `telering_nixl_create`, is destroyed once, and no other call
/// on it runs now or later.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn telering_nixl_destroy(handle: *mut c_void) {
    if handle.is_null() {
        return;
    }
    // SAFETY: the caller's contract: the box `telering_nixl_create` made, given back
    // once, with no other use of it left.
    let exporter = unsafe { Box::from_raw(handle.cast::<PluginExporter>()) };
    if catch_unwind(AssertUnwindSafe(|| exporter.close())).is_err() {
        log::error!("telering panicked while shutting a NIXL agent's exporter down");
    }
}
