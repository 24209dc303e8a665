//! The `nop` exporter: events are captured and drained but go nowhere.

use super::{ExportError, Exporter, ExporterContext};
use telering_core::Event;

const NAME: &str = "nop";

/// Accepts every batch and discards it; counts what it was given.
///
/// ```
/// use telering_std::export::{Exporter, NopExporter};
/// let mut nop = NopExporter::default();
/// nop.export(&[]).unwrap();
/// assert_eq!(nop.batches(), 1);
/// ```
#[derive(Debug, Default)]
pub struct NopExporter {
    batches: u64,
    events: u64,
}

impl NopExporter {
    /// Registers this exporter's factory as `nop` in `registry`, as every exporter
    /// crate registers its own (`telering_prometheus::register`, …).
    ///
    /// ```
    /// use telering_std::export::{ExporterRegistry, NopExporter};
    /// let mut registry = ExporterRegistry::empty();
    /// NopExporter::register(&mut registry);
    /// assert_eq!(registry.names(), ["nop"]);
    /// ```
    pub fn register(registry: &mut super::ExporterRegistry) {
        registry.register(NAME, NopExporter::factory);
    }

    /// The [`ExporterFactory`](super::ExporterFactory) registered as `nop`.
    ///
    /// ```
    /// use telering_std::export::{ExporterContext, NopExporter};
    /// assert_eq!(NopExporter::factory(&ExporterContext::new("a")).unwrap().name(), "nop");
    /// ```
    pub fn factory(_context: &ExporterContext) -> Result<Box<dyn Exporter>, ExportError> {
        Ok(Box::new(NopExporter::default()))
    }

    /// Batches received.
    ///
    /// ```
    /// use telering_std::export::{Exporter, NopExporter};
    /// let mut nop = NopExporter::default();
    /// nop.export(&[]).unwrap();
    /// nop.export(&[]).unwrap();
    /// assert_eq!(nop.batches(), 2);
    /// ```
    pub fn batches(&self) -> u64 {
        self.batches
    }

    /// Events received.
    ///
    /// ```
    /// use telering_core::{event_name, Category, Event};
    /// use telering_std::export::{Exporter, NopExporter};
    /// let mut nop = NopExporter::default();
    /// nop.export(&[Event::new(1, Category::Custom, event_name!("x"), 1); 3]).unwrap();
    /// assert_eq!(nop.events(), 3);
    /// ```
    pub fn events(&self) -> u64 {
        self.events
    }
}

impl Exporter for NopExporter {
    fn name(&self) -> &str {
        NAME
    }

    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        self.batches += 1;
        self.events += batch.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }

    fn shutdown(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}
