//! The [`ExporterRegistry`]: exporter factories by name, and the exporter used when
//! only a directory is configured.

use super::{BufferExporter, CsvExporter, ExportError, Exporter, ExporterContext, NopExporter};
use std::fmt;
use std::sync::Arc;

/// Makes an exporter from the configuration. Called once per build, on the thread
/// that builds the [`Telemetry`](crate::Telemetry). A factory may capture state (a
/// channel, a shared counter, settings of its own), so a program or a test hands its
/// exporter what it needs without global variables; plain `fn`s work too.
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicU32, Ordering}};
/// use telering_std::export::{ExporterContext, ExporterRegistry, NopExporter};
/// let made = Arc::new(AtomicU32::new(0));
/// let counter = Arc::clone(&made);
/// let mut registry = ExporterRegistry::with_builtins();
/// registry.register("counted", move |ctx: &ExporterContext| {
///     counter.fetch_add(1, Ordering::Relaxed);
///     NopExporter::factory(ctx)
/// });
/// registry.create("counted", &ExporterContext::new("a")).unwrap();
/// assert_eq!(made.load(Ordering::Relaxed), 1);
/// ```
pub type ExporterFactory =
    Arc<dyn Fn(&ExporterContext) -> Result<Box<dyn Exporter>, ExportError> + Send + Sync>;

/// Exporter factories by name, matched ignoring ASCII case, and which of them writes
/// `NIXL_TELEMETRY_DIR` when no exporter is named (the `buffer` exporter, by its own
/// [`BufferExporter::register`]).
#[derive(Clone)]
pub struct ExporterRegistry {
    /// Lower-case name and factory, sorted by name.
    entries: Vec<(String, ExporterFactory)>,
    /// The exporter used when only a directory is configured.
    dir_default: Option<String>,
}

impl fmt::Debug for ExporterRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExporterRegistry")
            .field("names", &self.names())
            .field("dir_default", &self.dir_default)
            .finish()
    }
}

impl Default for ExporterRegistry {
    fn default() -> Self {
        ExporterRegistry::with_builtins()
    }
}

impl ExporterRegistry {
    /// A registry without any exporter.
    ///
    /// ```
    /// let registry = telering_std::ExporterRegistry::empty();
    /// assert!(registry.names().is_empty() && registry.dir_default().is_none());
    /// ```
    pub fn empty() -> ExporterRegistry {
        ExporterRegistry {
            entries: Vec::new(),
            dir_default: None,
        }
    }

    /// A registry with `buffer` (also the directory's default), `csv` and `nop`, each
    /// registered by its own `register`.
    ///
    /// ```
    /// let registry = telering_std::ExporterRegistry::with_builtins();
    /// assert_eq!(registry.names(), ["buffer", "csv", "nop"]);
    /// assert_eq!(registry.dir_default(), Some("buffer"));
    /// ```
    pub fn with_builtins() -> ExporterRegistry {
        let mut r = ExporterRegistry::empty();
        BufferExporter::register(&mut r);
        CsvExporter::register(&mut r);
        NopExporter::register(&mut r);
        r
    }

    /// Makes the exporter registered as `name` the one used when
    /// `NIXL_TELEMETRY_DIR` is set and no exporter is named (NIXL's rule picks the
    /// ring file, so [`BufferExporter::register`] calls this).
    ///
    /// ```
    /// let mut registry = telering_std::ExporterRegistry::with_builtins();
    /// registry.set_dir_default("CSV");
    /// assert_eq!(registry.dir_default(), Some("csv"));
    /// ```
    pub fn set_dir_default(&mut self, name: &str) {
        self.dir_default = Some(name.trim().to_ascii_lowercase());
    }

    /// The exporter used when only `NIXL_TELEMETRY_DIR` is set, if any.
    ///
    /// ```
    /// assert_eq!(telering_std::ExporterRegistry::with_builtins().dir_default(), Some("buffer"));
    /// ```
    pub fn dir_default(&self) -> Option<&str> {
        self.dir_default.as_deref()
    }

    /// Registers `factory` under `name` (stored in lower case), replacing an earlier
    /// factory of the same name.
    ///
    /// ```
    /// use telering_std::export::{ExporterRegistry, NopExporter};
    /// let mut registry = ExporterRegistry::empty();
    /// registry.register(" Quiet ", NopExporter::factory);
    /// assert_eq!(registry.names(), ["quiet"]);
    /// ```
    pub fn register<F>(&mut self, name: &str, factory: F)
    where
        F: Fn(&ExporterContext) -> Result<Box<dyn Exporter>, ExportError> + Send + Sync + 'static,
    {
        self.register_factory(name, Arc::new(factory));
    }

    /// [`register`](Self::register) for a factory already shared
    /// ([`ExporterFactory`]), for example one taken from another registry.
    ///
    /// ```
    /// use telering_std::ExporterRegistry;
    /// let builtins = ExporterRegistry::with_builtins();
    /// let mut registry = ExporterRegistry::empty();
    /// registry.register_factory("csv", builtins.get("csv").unwrap());
    /// assert!(registry.contains("CSV"));
    /// ```
    pub fn register_factory(&mut self, name: &str, factory: ExporterFactory) {
        let name = name.trim().to_ascii_lowercase();
        match self
            .entries
            .binary_search_by(|(n, _)| n.as_str().cmp(&name))
        {
            Ok(i) => self.entries[i].1 = factory,
            Err(i) => self.entries.insert(i, (name, factory)),
        }
    }

    /// The registered names, sorted.
    ///
    /// ```
    /// assert_eq!(telering_std::ExporterRegistry::with_builtins().names(), ["buffer", "csv", "nop"]);
    /// ```
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The factory registered under `name`, ignoring ASCII case and surrounding
    /// whitespace.
    ///
    /// ```
    /// let registry = telering_std::ExporterRegistry::with_builtins();
    /// assert!(registry.get(" Nop ").is_some() && registry.get("otlp").is_none());
    /// ```
    pub fn get(&self, name: &str) -> Option<ExporterFactory> {
        let name = name.trim();
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, f)| Arc::clone(f))
    }

    /// Whether `name` is registered.
    ///
    /// ```
    /// assert!(telering_std::ExporterRegistry::with_builtins().contains("BUFFER"));
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// Makes the exporter registered under `name`. An unknown name is
    /// [`ExportError::UnknownExporter`], listing the registered names; a factory's
    /// failure is its own error. (Configuration turns these into
    /// [`ConfigError`](crate::ConfigError)s that name the variable.)
    ///
    /// ```
    /// use telering_std::export::{ExportError, ExporterContext, ExporterRegistry};
    /// let registry = ExporterRegistry::with_builtins();
    /// let ctx = ExporterContext::new("a");
    /// assert_eq!(registry.create("NOP", &ctx).unwrap().name(), "nop");
    /// let e = registry.create("otlp", &ctx).unwrap_err();
    /// assert!(matches!(e, ExportError::UnknownExporter { .. }));
    /// assert_eq!(e.to_string(), "`otlp` is not a known exporter; use one of: buffer, csv, nop");
    /// ```
    pub fn create(
        &self,
        name: &str,
        context: &ExporterContext,
    ) -> Result<Box<dyn Exporter>, ExportError> {
        let factory = self.get(name).ok_or_else(|| ExportError::UnknownExporter {
            name: name.trim().to_string(),
            available: self.names(),
        })?;
        factory(context)
    }
}
