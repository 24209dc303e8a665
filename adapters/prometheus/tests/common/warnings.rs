//! The warnings a test process logs, kept for its assertions. The logger is
//! process-wide: a test file that uses this holds one test, which calls [`record`]
//! first.

use std::sync::Mutex;

static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Recorder;

impl log::Log for Recorder {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            WARNINGS.lock().unwrap().push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

/// Makes this process's logger keep every warning (and error) from now on.
pub fn record() {
    log::set_logger(&Recorder).unwrap();
    log::set_max_level(log::LevelFilter::Warn);
}

/// The warnings logged so far, in order.
pub fn logged() -> Vec<String> {
    WARNINGS.lock().unwrap().clone()
}
