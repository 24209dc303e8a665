//! The `buffer` exporter's route file: exact totals beside an unchanged ring, the
//! folded count, hostile names, and a new run's start from zero.

use std::time::Duration;
use telering_core::builtin::ErrorStatus;
use telering_std::route::file;
use telering_std::route::{MemoryType, Operation, Route};
use telering_std::{Telemetry, TelemetryBuilder};

fn buffer(dir: &std::path::Path, agent: &str) -> TelemetryBuilder {
    TelemetryBuilder::new(agent)
        .enabled(true)
        .exporter("buffer")
        .dir(dir)
        .run_interval(Duration::from_secs(3600))
}

fn drain(path: &std::path::Path) -> Vec<(String, u64)> {
    let mut reader = telering_shm::DrainingReader::open(path).unwrap();
    let mut out = Vec::new();
    while let Some(e) = reader.pop().unwrap() {
        out.push((e.name().unwrap().to_string(), e.value()));
    }
    out.sort();
    out
}

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
fn the_route_file_holds_exact_totals_and_the_ring_holds_what_it_holds_without_routes() {
    let dir = tempfile::tempdir().unwrap();
    let with = buffer(dir.path(), "with").build().unwrap();
    let without = buffer(dir.path(), "without").build().unwrap();
    let hostile = "<b>\u{1b}[31m\n\"x\"";
    let w = with.route(&ucx(hostile)).unwrap();
    let r = with
        .route(&Route::new(
            Operation::Read,
            "GDS",
            MemoryType::Vram,
            MemoryType::File,
            "",
        ))
        .unwrap();
    for i in 0..100u64 {
        with.add_route_xfer_stats_us(w, 10 + i, 1000 + i, 2, 3);
        without.add_xfer_stats_us(10 + i, true, 1000 + i, 2);
    }
    with.add_route_xfer_stats_us(r, 5000, 1 << 20, 7, 1);
    without.add_xfer_stats_us(5000, false, 1 << 20, 7);
    with.update_route_error_count(w, ErrorStatus::RemoteDisconnect);
    without.update_error_count(ErrorStatus::RemoteDisconnect);
    with.flush().unwrap();
    without.flush().unwrap();
    drop((with, without));

    let f = file::read(&file::path_of(dir.path(), "with"))
        .unwrap()
        .expect("a route file");
    assert_eq!(f.writer_pid, std::process::id());
    assert_eq!(f.routes.len(), 2);
    let e = f.routes.iter().find(|e| e.route.peer == hostile).unwrap();
    assert_eq!(e.stats.bytes, (0..100).map(|i| 1000 + i).sum::<u64>());
    assert_eq!((e.stats.transfers, e.stats.descriptors), (100, 300));
    assert_eq!(e.stats.xfer_time.count(), 100);
    assert_eq!(e.stats.post_time.sum_us, 200);
    assert_eq!(e.slowest_xfer_us, 109);
    let status = ErrorStatus::ALL
        .iter()
        .position(|s| *s == ErrorStatus::RemoteDisconnect)
        .unwrap();
    assert_eq!(e.stats.errors[status], 1);
    assert!(
        file::read(&file::path_of(dir.path(), "without"))
            .unwrap()
            .is_none()
    );
    // The rings hold the same events; the route folder is no ring and no agent.
    assert_eq!(
        drain(&dir.path().join("with")),
        drain(&dir.path().join("without"))
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // No temporary file is left.
    let left: Vec<_> = std::fs::read_dir(dir.path().join(file::FOLDER))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["with"]);
}

#[test]
fn the_folded_count_reaches_the_route_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = buffer(dir.path(), "f").routes_max(2).build().unwrap();
    for i in 0..5 {
        let id = t.route(&ucx(&format!("p{i}"))).unwrap();
        t.add_route_xfer_stats_us(id, 10, 100, 1, 1);
    }
    t.flush().unwrap();
    let f = file::read(&file::path_of(dir.path(), "f"))
        .unwrap()
        .unwrap();
    assert_eq!(f.folded, 3);
    let other = f.routes.iter().find(|e| e.route.peer == "other").unwrap();
    assert_eq!((other.stats.transfers, other.stats.bytes), (3, 300));
    assert_eq!(f.routes.len(), 3);
}

#[test]
fn a_new_run_removes_the_previous_runs_route_file() {
    let dir = tempfile::tempdir().unwrap();
    let t = buffer(dir.path(), "r").build().unwrap();
    let id = t.route(&ucx("p")).unwrap();
    t.add_route_xfer_stats_us(id, 10, 100, 1, 1);
    drop(t);
    let path = file::path_of(dir.path(), "r");
    assert!(
        file::read(&path).unwrap().is_some(),
        "kept after the end, as the ring"
    );
    let again: Telemetry = buffer(dir.path(), "r").build().unwrap();
    assert!(file::read(&path).unwrap().is_none());
    drop(again);
}

#[test]
fn an_unwritable_route_folder_fails_the_route_export_not_the_ring() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file::FOLDER), b"not a folder").unwrap();
    let t = buffer(dir.path(), "u").build().unwrap();
    let id = t.route(&ucx("p")).unwrap();
    t.add_route_xfer_stats_us(id, 10, 100, 1, 1);
    t.flush().unwrap();
    drop(t);
    assert_eq!(drain(&dir.path().join("u")).len(), 4);
    assert_eq!(
        std::fs::read(dir.path().join(file::FOLDER)).unwrap(),
        b"not a folder"
    );
}
