//! Routes at the edges of their values and ids: totals that reach `u64::MAX` stop
//! there without taking the flush (and the plain events beside them) down, and a
//! route that names the fold route is the fold route.

use telering_std::route::{MemoryType, Operation, Route, file};
use telering_std::{Recorded, Telemetry};

fn ucx(peer: &str) -> Route {
    Route::new(
        Operation::Write,
        "UCX",
        MemoryType::Vram,
        MemoryType::Vram,
        peer,
    )
}

#[test]
fn route_values_of_u64_max_saturate_and_every_plain_event_is_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let t = Telemetry::builder("ovf")
        .enabled(true)
        .exporter("buffer")
        .dir(dir.path())
        .build()
        .unwrap();
    let r = t.route(&ucx("p")).unwrap();
    for _ in 0..10 {
        // Four events each: bytes, requests, transfer time, post time.
        t.add_xfer_stats(
            std::time::Duration::from_micros(5),
            true,
            100,
            std::time::Duration::from_micros(1),
        );
    }
    for _ in 0..2 {
        assert_eq!(
            t.add_route_xfer_stats_us(r, u64::MAX, u64::MAX, u64::MAX, u64::MAX),
            Recorded::Written
        );
    }
    t.flush()
        .expect("a flush with u64::MAX route values succeeds");
    let totals = t.route_totals(r).unwrap();
    assert_eq!(totals.bytes, u64::MAX);
    assert_eq!(totals.descriptors, u64::MAX);
    assert_eq!(totals.transfers, 2);
    assert_eq!(totals.xfer_time.sum_us, u64::MAX);
    assert_eq!(totals.post_time.sum_us, u64::MAX);
    assert_eq!(totals.xfer_time.count(), 2);
    let stats = t.close();
    assert_eq!(stats.events_recorded, 48);
    assert_eq!(stats.events_exported, 48, "{stats:?}");
    assert_eq!(
        (
            stats.events_dropped,
            stats.exporter_dropped,
            stats.exporter_failing
        ),
        (0, 0, false)
    );
    let written = file::read(&file::path_of(dir.path(), "ovf"))
        .unwrap()
        .expect("the route file is written");
    assert_eq!(written.routes[0].stats.bytes, u64::MAX);
}
