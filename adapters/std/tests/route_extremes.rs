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

#[test]
fn a_route_labelled_as_the_fold_route_is_it_and_a_report_never_repeats_labels() {
    let t = Telemetry::builder("o")
        .enabled(true)
        .exporter("nop")
        .routes_max(1)
        .build()
        .unwrap();
    let user_other = t.route(&Route::other(Operation::Write)).unwrap();
    assert!(user_other.is_other());
    let p1 = t.route(&ucx("p1")).unwrap();
    assert!(
        !p1.is_other(),
        "the fold route takes no place under the bound"
    );
    let folded = t.route(&ucx("p2")).unwrap();
    assert_eq!(folded, user_other);
    assert_eq!(t.routes_folded(), 1);
    // Ids of another telemetry: index 16 (none here) and index 0's read twin.
    let u = Telemetry::builder("u")
        .enabled(true)
        .exporter("nop")
        .build()
        .unwrap();
    let foreign: Vec<_> = (0..17)
        .map(|i| u.route(&ucx(&format!("q{i}"))).unwrap())
        .collect();
    let twin = u
        .route(&Route::new(
            Operation::Write,
            "GDS",
            MemoryType::Dram,
            MemoryType::File,
            "",
        ))
        .unwrap();
    for id in [user_other, folded, foreign[16], twin] {
        assert_eq!(
            t.add_route_xfer_stats_us(id, 5, 10, 1, 1),
            Recorded::Written
        );
    }
    t.add_route_xfer_stats_us(p1, 5, 1, 1, 1);
    t.flush().unwrap();
    let report = t.route_report();
    let mut labels: Vec<_> = report.routes.iter().map(|(r, _)| r.clone()).collect();
    labels.sort();
    labels.dedup();
    assert_eq!(labels.len(), report.routes.len(), "{:?}", report.routes);
    assert_eq!(report.routes.len(), 2);
    let other = &report.routes[1];
    assert_eq!(other.0, Route::other(Operation::Write));
    assert_eq!((other.1.transfers, other.1.bytes), (4, 40));
    assert_eq!(t.route_totals(folded).unwrap().transfers, 4);
    // The slow transfers of the interval name the same merged route.
    assert!(report.slow.iter().all(|(r, _)| labels.contains(r)));
}

#[test]
fn route_id_answers_only_the_ids_this_telemetrys_route_calls_returned() {
    let t = Telemetry::builder("ids")
        .enabled(true)
        .exporter("nop")
        .routes_max(1)
        .build()
        .unwrap();
    assert_eq!(t.route_id(0xE000), None, "nothing interned yet");
    let w = t.route(&ucx("p1")).unwrap();
    assert_eq!(t.route_id(w.raw()), Some(w));
    let folded = t.route(&ucx("p2")).unwrap();
    assert_eq!(t.route_id(folded.raw()), Some(folded));
    for stale in [0xE108, w.raw() - 8, w.raw() + 1, 0xFFF0, 0xFFFF, 7] {
        assert_eq!(t.route_id(stale), None, "{stale:#x}");
    }
}
