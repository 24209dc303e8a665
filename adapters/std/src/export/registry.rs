//! The [`ExporterRegistry`]: exporter factories by name, each with the check of its
//! own settings, and the exporter used when only a directory is configured.
//!
//! Building a telemetry makes its exporters in two phases, so that a configuration
//! mistake never costs data: first every exporter of the list is *checked*
//! ([`ExporterRegistry::check`]: its variables parsed, its target named, nothing
//! created), and only when all pass are they *opened*, the exporters that create or
//! replace files ([`ExporterRegistry::register_file_writer`]: `buffer`, `csv`) after
//! all others. So `NIXL_TELEMETRY_EXPORTER=buffer,otlp` with a malformed `OTEL_*`
//! variable leaves an existing ring file as it was.

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

/// Checks the settings of an exporter before anything is opened: parses its own
/// variables from [`ExporterContext::env`], names its target, and creates, replaces
/// or truncates nothing. A check that passes means the factory will not fail on the
/// configuration (it may still fail on the system: a port in use, a full disk).
///
/// ```
/// use telering_std::export::{ExportError, ExporterContext, ExporterRegistry, NopExporter};
/// let mut registry = ExporterRegistry::empty();
/// registry.register_checked(
///     "picky",
///     |ctx: &ExporterContext| match ctx.env.get_trimmed("PICKY_LEVEL") {
///         Ok(Some(v)) if v != "1" => Err(ExportError::Config {
///             exporter: "picky".into(),
///             variable: "PICKY_LEVEL".into(),
///             value: v,
///             message: "use 1".into(),
///         }),
///         _ => Ok(()),
///     },
///     NopExporter::factory,
/// );
/// let mut ctx = ExporterContext::new("a");
/// ctx.env = telering_std::EnvSource::from_pairs([("PICKY_LEVEL", "2")]);
/// assert!(registry.check("picky", &ctx).unwrap_err().to_string().contains("PICKY_LEVEL"));
/// ```
pub type ExporterCheck = Arc<dyn Fn(&ExporterContext) -> Result<(), ExportError> + Send + Sync>;

/// One registered exporter.
#[derive(Clone)]
struct Entry {
    factory: ExporterFactory,
    check: Option<ExporterCheck>,
    /// Opening it creates or replaces files: it is opened after the others of a list.
    writes_files: bool,
}

/// Exporter factories by name, matched ignoring ASCII case, with the check of each
/// one's settings, and which of them writes `NIXL_TELEMETRY_DIR` when no exporter is
/// named (the `buffer` exporter, by its own [`BufferExporter::register`]).
#[derive(Clone)]
pub struct ExporterRegistry {
    /// Lower-case name and entry, sorted by name.
    entries: Vec<(String, Entry)>,
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
        self.insert(
            name,
            Entry {
                factory,
                check: None,
                writes_files: false,
            },
        );
    }

    /// [`register`](Self::register) with the [`ExporterCheck`] of the exporter's
    /// settings, run for every exporter of the list before any is opened.
    ///
    /// ```
    /// use telering_std::export::{ExporterContext, ExporterRegistry, NopExporter};
    /// let mut registry = ExporterRegistry::empty();
    /// registry.register_checked("quiet", |_: &ExporterContext| Ok(()), NopExporter::factory);
    /// assert!(registry.check("quiet", &ExporterContext::new("a")).is_ok());
    /// ```
    pub fn register_checked<C, F>(&mut self, name: &str, check: C, factory: F)
    where
        C: Fn(&ExporterContext) -> Result<(), ExportError> + Send + Sync + 'static,
        F: Fn(&ExporterContext) -> Result<Box<dyn Exporter>, ExportError> + Send + Sync + 'static,
    {
        self.insert(
            name,
            Entry {
                factory: Arc::new(factory),
                check: Some(Arc::new(check)),
                writes_files: false,
            },
        );
    }

    /// [`register_checked`](Self::register_checked) for an exporter that creates,
    /// replaces or truncates files when it opens (`buffer`, `csv`): in a list it is
    /// opened after every other exporter, so that an exporter failing to start
    /// (a port in use) has not yet cost a file its contents.
    ///
    /// ```
    /// use telering_std::export::{ExporterContext, ExporterRegistry, NopExporter};
    /// let mut registry = ExporterRegistry::empty();
    /// registry.register_file_writer("files", |_: &ExporterContext| Ok(()), NopExporter::factory);
    /// assert!(registry.writes_files("FILES") && !registry.writes_files("other"));
    /// ```
    pub fn register_file_writer<C, F>(&mut self, name: &str, check: C, factory: F)
    where
        C: Fn(&ExporterContext) -> Result<(), ExportError> + Send + Sync + 'static,
        F: Fn(&ExporterContext) -> Result<Box<dyn Exporter>, ExportError> + Send + Sync + 'static,
    {
        self.insert(
            name,
            Entry {
                factory: Arc::new(factory),
                check: Some(Arc::new(check)),
                writes_files: true,
            },
        );
    }

    fn insert(&mut self, name: &str, entry: Entry) {
        let name = name.trim().to_ascii_lowercase();
        match self
            .entries
            .binary_search_by(|(n, _)| n.as_str().cmp(&name))
        {
            Ok(i) => self.entries[i].1 = entry,
            Err(i) => self.entries.insert(i, (name, entry)),
        }
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        let name = name.trim();
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, e)| e)
    }

    /// Whether the exporter registered as `name` creates or replaces files when it
    /// opens ([`register_file_writer`](Self::register_file_writer)).
    ///
    /// ```
    /// let registry = telering_std::ExporterRegistry::with_builtins();
    /// assert!(registry.writes_files("buffer") && registry.writes_files("csv"));
    /// assert!(!registry.writes_files("nop"));
    /// ```
    pub fn writes_files(&self, name: &str) -> bool {
        self.entry(name).is_some_and(|e| e.writes_files)
    }

    /// Checks the settings of the exporter registered as `name` without opening it
    /// (see [`ExporterCheck`]): `Ok` for an exporter registered without a check; an
    /// unknown name is [`ExportError::UnknownExporter`].
    ///
    /// ```
    /// use telering_std::export::{ExportError, ExporterContext, ExporterRegistry};
    /// let registry = ExporterRegistry::with_builtins();
    /// // `csv` needs a directory; nothing is created to find that out.
    /// let e = registry.check("csv", &ExporterContext::new("a")).unwrap_err();
    /// assert!(matches!(e, ExportError::MissingDir { .. }));
    /// assert!(registry.check("nop", &ExporterContext::new("a")).is_ok());
    /// ```
    pub fn check(&self, name: &str, context: &ExporterContext) -> Result<(), ExportError> {
        let entry = self
            .entry(name)
            .ok_or_else(|| ExportError::UnknownExporter {
                name: name.trim().to_string(),
                available: self.names(),
            })?;
        match &entry.check {
            Some(check) => check(context),
            None => Ok(()),
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
        self.entry(name).map(|e| Arc::clone(&e.factory))
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
