//! A route file the collector cannot open for want of a file descriptor is not the
//! file's fault: it is not counted as refused, and it is read once a descriptor is
//! free. (Its own test binary: it lowers the process's open-file limit.)

use std::time::Duration;

use telering_prometheus::Format;
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_std::TelemetryBuilder;
use telering_std::route::{MemoryType, Operation, Route};

/// The lowest descriptor number free now: the one the next `open` would get.
fn lowest_free_descriptor() -> u64 {
    use std::os::fd::AsRawFd;
    std::fs::File::open("/dev/null").unwrap().as_raw_fd() as u64
}

#[test]
fn a_route_file_unread_for_want_of_descriptors_is_read_later_not_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = TelemetryBuilder::new("a")
        .enabled(true)
        .exporter("buffer")
        .dir(dir.path())
        .run_interval(Duration::from_secs(3600))
        .build()
        .unwrap();
    let id = t
        .route(&Route::new(
            Operation::Read,
            "GDS",
            MemoryType::Vram,
            MemoryType::File,
            "",
        ))
        .unwrap();
    t.add_route_xfer_stats_us(id, 10, 100, 1, 1);
    t.flush().unwrap();
    let mut o = CollectorOptions::new(dir.path());
    o.rescan_interval = Duration::from_secs(3600);
    o.hostname = "h".into();
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    let bytes = r#"telering_route_bytes_total{agent_name="a",hostname="h",operation="READ",backend="GDS",local_mem="VRAM",remote_mem="FILE",peer=""} "#;
    let value = |c: &NodeCollector| {
        let page = c.model().render(Format::PrometheusText);
        assert!(
            !page.contains("telering_route_files_rejected_total"),
            "{page}"
        );
        page.lines()
            .find_map(|l| l.strip_prefix(bytes).map(str::to_owned))
            .unwrap_or_else(|| panic!("{page}"))
    };
    assert_eq!(value(&c), "100");
    t.add_route_xfer_stats_us(id, 10, 100, 1, 1);
    t.flush().unwrap();

    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let set = |current: Option<u64>| {
        rustix::process::setrlimit(
            rustix::process::Resource::Nofile,
            rustix::process::Rlimit {
                current,
                maximum: limit.maximum,
            },
        )
        .unwrap()
    };
    // No descriptor left: the next one would be at the limit.
    set(Some(lowest_free_descriptor()));
    c.poll();
    set(limit.current);
    assert_eq!(value(&c), "100", "not read yet, and not refused");
    c.poll();
    assert_eq!(value(&c), "200");
    drop(t);
}
