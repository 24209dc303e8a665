//! A flush that panics outside the exporter's own calls (here: an exporter whose loss
//! counter panics, read by the flush after `export`) counts the events it had taken
//! as lost, says the exporter is failing, and the next flush works: recorded =
//! delivered + lost holds throughout, and the panic reaches no caller.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use telering_core::Event;
use telering_std::export::{ExportError, Exporter, ExporterContext};
use telering_std::{Recorded, Telemetry};

/// Delivers every batch; its loss counter panics while `panics` is set.
struct PanickyCounter {
    panics: Arc<AtomicBool>,
    seen: Arc<AtomicU64>,
}

impl Exporter for PanickyCounter {
    fn name(&self) -> &str {
        "panicky"
    }
    fn export(&mut self, batch: &[Event]) -> Result<(), ExportError> {
        self.seen.fetch_add(batch.len() as u64, Ordering::SeqCst);
        Ok(())
    }
    fn dropped_from_last_export(&self) -> usize {
        assert!(!self.panics.load(Ordering::SeqCst), "loss counter broke");
        0
    }
    fn flush(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
    fn shutdown(&mut self) -> Result<(), ExportError> {
        Ok(())
    }
}

#[test]
fn a_panic_in_the_flush_counts_its_events_as_lost_and_the_next_flush_delivers() {
    let panics = Arc::new(AtomicBool::new(true));
    let seen = Arc::new(AtomicU64::new(0));
    let (p, s) = (Arc::clone(&panics), Arc::clone(&seen));
    let mut builder = Telemetry::builder("p")
        .enabled(true)
        .exporter("panicky")
        .run_interval(std::time::Duration::from_secs(3600));
    builder
        .registry_mut()
        .register("panicky", move |_: &ExporterContext| {
            Ok(Box::new(PanickyCounter {
                panics: Arc::clone(&p),
                seen: Arc::clone(&s),
            }) as Box<dyn Exporter>)
        });
    let t = builder.build().unwrap();
    for i in 0..10 {
        assert_eq!(t.update_tx_bytes(i), Recorded::Written);
    }
    let e = t.flush().expect_err("the flush says it panicked");
    assert!(
        e.to_string()
            .contains("the 10 events it had taken are counted as lost"),
        "{e}"
    );
    let stats = t.stats();
    assert_eq!(stats.events_recorded, 10);
    assert_eq!(
        (stats.events_exported, stats.exporter_dropped),
        (0, 10),
        "{stats:?}"
    );
    assert!(stats.exporter_failing);
    assert_eq!(t.dropped_by_name().values().sum::<u64>(), 10);

    panics.store(false, Ordering::SeqCst);
    for i in 0..5 {
        t.update_rx_bytes(i);
    }
    t.flush().expect("the next flush works");
    let stats = t.close();
    assert_eq!(stats.events_recorded, 15);
    assert_eq!(
        stats.events_exported + stats.exporter_dropped,
        15,
        "{stats:?}"
    );
    assert_eq!(stats.events_exported, 5);
    assert!(!stats.exporter_failing);
}
