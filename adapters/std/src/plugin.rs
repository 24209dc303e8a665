//! Exporter plug-ins: shared libraries with a small, versioned C ABI
//! (`include/telering_exporter.h`).
//!
//! NIXL loads telemetry exporters from shared libraries through a C++ ABI that
//! telering cannot load. telering's plug-ins export one symbol,
//! `telering_exporter_entry`, returning a table of `init`, `export_events`,
//! `add_dropped` and `shutdown` with an ABI version. When
//! `NIXL_TELEMETRY_EXPORTER=<name>` names no built-in exporter and `NIXL_PLUGIN_DIR`
//! (NIXL's variable) is set, [`PluginExporter::load`] opens
//! `$NIXL_PLUGIN_DIR/libtelemetry_exporter_<name>.so` (the naming and the variable
//! are configuration's, [`crate::config::vars`]). A library the dynamic loader
//! refuses (with its own words: `file too short`, `invalid ELF header`, …), a missing
//! symbol, another ABI version and a failing `init` are each a [`PluginError`]
//! naming the file. A library that is not there at all is refused earlier, when the
//! configuration is resolved, with the built-in exporters and the folder searched
//! ([`ConfigError::NoSuchPlugin`](crate::ConfigError::NoSuchPlugin)).
#![allow(unsafe_code)]

use crate::config::vars;
pub use crate::config::vars::{is_plugin_name, plugin_library_path as library_path};
use crate::export::{ExportError, Exporter, ExporterContext};
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::fmt;
use std::path::{Path, PathBuf};
use telering_core::{Category, Event};

/// NIXL's variable naming the plug-in directory.
pub const PLUGIN_DIR_VAR: &str = vars::PLUGIN_DIR;
/// The ABI version this telering loads.
pub const ABI_VERSION: u32 = 1;
/// The entry symbol.
pub const ENTRY_SYMBOL: &str = "telering_exporter_entry";

/// The dynamic loader's own words for `error` (`dlerror()`'s text, which libloading
/// keeps as the error's source), without the library's path when it leads them, as
/// the message names the file already.
fn loader_message(error: &libloading::Error, path: &Path) -> String {
    let text = match std::error::Error::source(error) {
        Some(source) => source.to_string(),
        None => error.to_string(),
    };
    let prefix = format!("{}: ", path.display());
    match text.strip_prefix(&prefix) {
        Some(rest) => rest.to_string(),
        None => text,
    }
}

/// A plug-in that cannot be used; each names the library file (or, for a name that
/// cannot be one, the name).
#[derive(Debug)]
#[non_exhaustive]
pub enum PluginError {
    /// The name cannot name a library file: empty, or with a character other than
    /// ASCII letters, digits, `_` and `-` (a `/` would leave `NIXL_PLUGIN_DIR`).
    BadName {
        /// The name as given.
        name: String,
    },
    /// The library cannot be opened (missing, or not a shared library).
    Open {
        /// The file.
        path: PathBuf,
        /// What the dynamic loader said.
        reason: String,
    },
    /// The library has no `telering_exporter_entry`, or it returned nothing (or a
    /// table without every function).
    MissingSymbol {
        /// The file.
        path: PathBuf,
        /// The symbol.
        symbol: &'static str,
        /// What the dynamic loader said, when it was the one that found no symbol.
        reason: Option<String>,
    },
    /// The table is of another ABI version.
    AbiVersion {
        /// The file.
        path: PathBuf,
        /// The version the plug-in declares.
        found: u32,
    },
    /// The plug-in's `init` failed.
    Init {
        /// The file.
        path: PathBuf,
        /// What `init` returned.
        code: i32,
    },
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginError::BadName { name } => write!(
                f,
                "NIXL_TELEMETRY_EXPORTER names {name:?}, which is no exporter and cannot name a plug-in (use ASCII letters, digits, `_` and `-`)"
            ),
            PluginError::Open { path, reason } => write!(
                f,
                "exporter plug-in {} cannot be loaded: {reason}",
                path.display()
            ),
            PluginError::MissingSymbol {
                path,
                symbol,
                reason,
            } => {
                write!(f, "exporter plug-in {} has no `{symbol}`", path.display())?;
                if let Some(reason) = reason {
                    write!(f, " ({reason})")?;
                }
                f.write_str("; build it against telering_exporter.h")
            }
            PluginError::AbiVersion { path, found } => write!(
                f,
                "exporter plug-in {} has ABI version {found}; this telering loads version {ABI_VERSION}",
                path.display()
            ),
            PluginError::Init { path, code } => write!(
                f,
                "exporter plug-in {}: init failed with {code}",
                path.display()
            ),
        }
    }
}

impl std::error::Error for PluginError {}

#[repr(C)]
struct CEvent {
    timestamp_us: u64,
    name: *const c_char,
    category: *const c_char,
    value: u64,
}

type ConfigGet = unsafe extern "C" fn(*mut c_void, *const c_char) -> *const c_char;

#[repr(C)]
struct InitArgs {
    agent_name: *const c_char,
    dir: *const c_char,
    run_interval_ms: u64,
    config: *mut c_void,
    config_get: ConfigGet,
}

#[repr(C)]
struct Table {
    abi_version: u32,
    init: Option<unsafe extern "C" fn(*const InitArgs, *mut *mut c_void) -> c_int>,
    export_events: Option<unsafe extern "C" fn(*mut c_void, *const CEvent, usize) -> c_int>,
    add_dropped: Option<unsafe extern "C" fn(*mut c_void, u64)>,
    shutdown: Option<unsafe extern "C" fn(*mut c_void)>,
}

/// The configuration `init` reads through `config_get`, and the texts it handed out
/// (kept until `init` returns, as the header promises).
struct ConfigReader<'a> {
    context: &'a ExporterContext,
    handed_out: Vec<CString>,
}

unsafe extern "C" fn config_get(config: *mut c_void, name: *const c_char) -> *const c_char {
    if config.is_null() || name.is_null() {
        return std::ptr::null();
    }
    // SAFETY: `config` is the `ConfigReader` that `load` passed in `InitArgs` and that
    // outlives the `init` call, the only time the header allows this call; `name` is a
    // NUL-terminated string of the caller's, checked non-null above.
    let (reader, name) = unsafe {
        (
            &mut *config.cast::<ConfigReader<'_>>(),
            CStr::from_ptr(name),
        )
    };
    let Ok(name) = name.to_str() else {
        return std::ptr::null();
    };
    match reader.context.env.get_trimmed(name) {
        Ok(Some(value)) => match CString::new(value) {
            Ok(text) => {
                let ptr = text.as_ptr();
                reader.handed_out.push(text);
                ptr
            }
            Err(_) => std::ptr::null(),
        },
        _ => std::ptr::null(),
    }
}

/// The library and the plug-in's state: used from one thread at a time.
struct Loaded {
    table: *const Table,
    state: *mut c_void,
    /// Kept last: the table and the functions live in it.
    _library: libloading::Library,
}

// SAFETY: the ABI (telering_exporter.h) lets any thread call the plug-in, one at a
// time; `Loaded` is owned by one exporter, and `&mut self` serialises every call.
unsafe impl Send for Loaded {}

/// An exporter loaded from a plug-in library.
pub struct PluginExporter {
    name: String,
    path: PathBuf,
    loaded: Loaded,
    categories: [CString; 8],
    names: Vec<[u8; 32]>,
    shut_down: bool,
}

impl fmt::Debug for PluginExporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginExporter")
            .field("name", &self.name)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl PluginExporter {
    /// Loads the plug-in `name` from `dir`, checks its ABI version and runs its `init`.
    ///
    /// ```
    /// use telering_std::export::ExporterContext;
    /// use telering_std::plugin::{PluginError, PluginExporter};
    /// let e = PluginExporter::load("/nonexistent".as_ref(), "kafka", &ExporterContext::new("a")).unwrap_err();
    /// assert!(matches!(e, PluginError::Open { .. }));
    /// // The dynamic loader's own words follow.
    /// assert!(e.to_string().starts_with("exporter plug-in /nonexistent/libtelemetry_exporter_kafka.so cannot be loaded: "));
    /// assert!(e.to_string().ends_with("No such file or directory"), "{e}");
    /// let e = PluginExporter::load("/opt".as_ref(), "../kafka", &ExporterContext::new("a")).unwrap_err();
    /// assert!(matches!(e, PluginError::BadName { .. }));
    /// ```
    pub fn load(
        dir: &Path,
        name: &str,
        context: &ExporterContext,
    ) -> Result<PluginExporter, PluginError> {
        if !is_plugin_name(name) {
            return Err(PluginError::BadName {
                name: name.to_string(),
            });
        }
        let path = library_path(dir, name);
        // SAFETY: loading runs the library's initialisers; a plug-in is code the
        // operator installed in NIXL_PLUGIN_DIR to be run by this agent.
        let library =
            unsafe { libloading::Library::new(&path) }.map_err(|e| PluginError::Open {
                reason: loader_message(&e, &path),
                path: path.clone(),
            })?;
        let missing = |reason: Option<String>| PluginError::MissingSymbol {
            path: path.clone(),
            symbol: ENTRY_SYMBOL,
            reason,
        };
        // SAFETY: the header declares the entry as `const telering_exporter *(void)`.
        let entry = unsafe {
            library.get::<unsafe extern "C" fn() -> *const Table>(ENTRY_SYMBOL.as_bytes())
        }
        .map_err(|e| missing(Some(loader_message(&e, &path))))?;
        // SAFETY: a function of the declared type (above), taking nothing.
        let table = unsafe { entry() };
        if table.is_null() {
            return Err(missing(None));
        }
        // SAFETY: a non-null table from the entry lives as long as the library; its
        // first field is the version in every ABI version.
        let version = unsafe { (*table).abi_version };
        if version != ABI_VERSION {
            return Err(PluginError::AbiVersion {
                path,
                found: version,
            });
        }
        // SAFETY: a version-1 table (checked above), alive while `library` is.
        let t = unsafe { &*table };
        let (Some(init), Some(_), Some(_), Some(_)) =
            (t.init, t.export_events, t.add_dropped, t.shutdown)
        else {
            return Err(missing(None));
        };
        let c = |s: &str| CString::new(s).unwrap_or_default();
        let agent = c(&context.agent_name);
        let dir_text = context.dir.as_ref().map(|d| c(&d.to_string_lossy()));
        let mut reader = ConfigReader {
            context,
            handed_out: Vec::new(),
        };
        let args = InitArgs {
            agent_name: agent.as_ptr(),
            dir: dir_text.as_ref().map_or(std::ptr::null(), |d| d.as_ptr()),
            run_interval_ms: context.run_interval.as_millis() as u64,
            config: (&mut reader as *mut ConfigReader<'_>).cast(),
            config_get,
        };
        let mut state = std::ptr::null_mut();
        // SAFETY: `args` and every string it points to outlive the call; `state` is a
        // valid out-pointer.
        let code = unsafe { init(&args, &mut state) };
        drop(reader);
        if code != 0 {
            return Err(PluginError::Init { path, code });
        }
        Ok(PluginExporter {
            name: name.trim().to_ascii_lowercase(),
            path,
            loaded: Loaded {
                table,
                state,
                _library: library,
            },
            categories: Category::ALL.map(|cat| c(cat.short_name())),
            names: Vec::new(),
            shut_down: false,
        })
    }

    /// The library file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn table(&self) -> &Table {
        // SAFETY: checked at load to be a version-1 table; it lives in the library,
        // which `self.loaded` keeps open.
        unsafe { &*self.loaded.table }
    }
}

/// The plug-in `name` from `NIXL_PLUGIN_DIR` in `context`'s configuration, as an
/// exporter; `None` when `NIXL_PLUGIN_DIR` is not set.
pub(crate) fn create(
    name: &str,
    context: &ExporterContext,
) -> Option<Result<Box<dyn Exporter>, ExportError>> {
    let dir = context.env.get_trimmed(PLUGIN_DIR_VAR).ok().flatten()?;
    Some(
        PluginExporter::load(Path::new(&dir), name, context)
            .map(|p| Box::new(p) as Box<dyn Exporter>)
            .map_err(|e| ExportError::failed(name.trim(), e)),
    )
}

impl Exporter for PluginExporter {
    fn name(&self) -> &str {
        &self.name
    }

    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        if self.shut_down {
            return Err(ExportError::failed(&self.name, "the plug-in was shut down"));
        }
        self.names.clear();
        self.names.extend(batch.iter().map(|e| {
            let mut field = [0u8; 32];
            let name = e.name().unwrap_or("");
            field[..name.len().min(31)].copy_from_slice(&name.as_bytes()[..name.len().min(31)]);
            field
        }));
        // Made per call: it points into `names` and `categories`.
        let mut events = Vec::with_capacity(batch.len());
        for (e, name) in batch.iter().zip(&self.names) {
            let category = e.category().map_or(7, |c| c as usize).min(7);
            events.push(CEvent {
                timestamp_us: e.timestamp_us(),
                name: name.as_ptr().cast(),
                category: self.categories[category].as_ptr(),
                value: e.value(),
            });
        }
        let export = self.table().export_events.expect("checked at load");
        // SAFETY: `state` is the plug-in's from `init`, not shut down (export is never
        // called after shutdown); `events` and the names and categories it points to
        // (NUL-terminated: a name has at most 31 bytes) outlive the call.
        let code = unsafe { export(self.loaded.state, events.as_ptr(), events.len()) };
        match code {
            0 => Ok(()),
            code => Err(ExportError::failed(
                &self.name,
                format!("{}: export_events failed with {code}", self.path.display()),
            )),
        }
    }

    fn add_dropped(&mut self, events: u64) {
        if self.shut_down {
            return;
        }
        let add = self.table().add_dropped.expect("checked at load");
        // SAFETY: the plug-in's live state, as in `export`.
        unsafe { add(self.loaded.state, events) };
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        if std::mem::replace(&mut self.shut_down, true) {
            return Ok(());
        }
        let shutdown = self.table().shutdown.expect("checked at load");
        // SAFETY: the plug-in's live state, shut down once (flag above).
        unsafe { shutdown(self.loaded.state) };
        Ok(())
    }
}

impl Drop for PluginExporter {
    fn drop(&mut self) {
        let _ = Exporter::shutdown(self);
    }
}
