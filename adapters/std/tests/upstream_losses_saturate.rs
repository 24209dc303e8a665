//! Losses a feeding program reports (NIXL's loss reports) may be absurd: the counts
//! saturate at `u64::MAX`, never wrap to a small number, and never panic.

use telering_core::Category;

#[test]
fn upstream_losses_of_u64_max_saturate_in_the_stats_and_the_trailer() {
    let dir = tempfile::tempdir().unwrap();
    let t = telering_std::Telemetry::builder("a")
        .enabled(true)
        .dir(dir.path())
        .build()
        .unwrap();
    t.add_dropped_upstream(u64::MAX);
    t.add_dropped_upstream(7);
    t.record(Category::Transfer, "agent_tx_bytes", 9).unwrap();
    t.flush().unwrap();
    t.add_dropped_upstream(u64::MAX);
    t.flush().unwrap();
    assert_eq!(t.dropped_upstream(), u64::MAX);
    let stats = t.stats();
    assert_eq!(
        (stats.events_recorded, stats.events_dropped),
        (u64::MAX, u64::MAX),
        "{stats:?}"
    );
    let trailer = telering_shm::stat(&dir.path().join("a"))
        .unwrap()
        .trailer
        .unwrap();
    assert_eq!(trailer.dropped_staging, u64::MAX, "{trailer:?}");
}
