//! Configuration warnings reach the program through the `log` crate (the library
//! never prints). One test per binary: the logger is process-wide.

use std::sync::Mutex;
use telering_std::{EnvSource, TelemetryBuilder};

struct Capture(Mutex<Vec<(log::Level, String)>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        self.0
            .lock()
            .unwrap()
            .push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

static LOGGER: Capture = Capture(Mutex::new(Vec::new()));

#[test]
fn unrecognized_enable_and_unmatched_metric_patterns_are_logged_as_warnings() {
    log::set_logger(&LOGGER).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    let env = EnvSource::from_pairs([
        ("NIXL_TELEMETRY_ENABLE", "ture"),
        (
            "NIXL_TELEMETRY_ENABLED_METRICS",
            "agent_tx_bytes,agent_tx_byts",
        ),
    ]);
    let telemetry = TelemetryBuilder::from_env("agent", &env)
        .unwrap()
        .build()
        .unwrap();
    assert!(!telemetry.exports());
    let warnings: Vec<String> = LOGGER
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|(level, _)| *level == log::Level::Warn)
        .map(|(_, text)| text.clone())
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].starts_with("NIXL_TELEMETRY_ENABLE=ture is not recognized"));
    assert!(
        warnings[1].contains("pattern `agent_tx_byts` (NIXL_TELEMETRY_ENABLED_METRICS or the enabled_metrics option) matches no built-in event"),
        "{warnings:?}"
    );
}
