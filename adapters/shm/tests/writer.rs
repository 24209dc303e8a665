//! The writer: safe creation, locking, naming, modes, drop accounting, closing.

mod common;

use common::{TempDir, is_drop_report, seq_event};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use telering_core::{ObserverStart, OverflowPolicy};
use telering_shm::{
    ClockId, DrainingReader, ObserverReader, ShmError, ShmWriter, WriterOptions, stat,
};

fn options(dir: &TempDir, name: &str, capacity: u32) -> WriterOptions {
    let mut o = WriterOptions::new(dir.path(), name);
    o.capacity = capacity;
    o
}

#[test]
fn invalid_agent_names_are_rejected_with_the_reason() {
    let dir = TempDir::new("names");
    let long = "n".repeat(256);
    for (name, reason) in [
        ("", "empty"),
        (".", "directories"),
        ("..", "directories"),
        ("a/b", "`/`"),
        ("a\0b", "NUL"),
        (long.as_str(), "255 bytes"),
    ] {
        let err = ShmWriter::create(WriterOptions::new(dir.path(), name)).unwrap_err();
        assert!(
            matches!(err, ShmError::InvalidAgentName { .. }),
            "{name:?}: {err}"
        );
        assert!(err.to_string().contains(reason), "{name:?}: {err}");
    }
    // 255 bytes is allowed.
    let ok = "n".repeat(255);
    ShmWriter::create(WriterOptions::new(dir.path(), ok.as_str()))
        .unwrap()
        .close()
        .unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_capacity_that_is_not_a_power_of_two_is_rejected_with_alternatives() {
    let dir = TempDir::new("cap");
    let err = ShmWriter::create(options(&dir, "a", 1000)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "writer option `capacity`: 1000 is not a power of two from 2 to 268435456; use 512 or 1024"
    );
    for (capacity, suggestion) in [
        (0, "use 2"),
        (1, "use 2"),
        (3, "use 2 or 4"),
        (u32::MAX, "use 268435456"),
        (1 << 31, "use 268435456"),
    ] {
        let err = ShmWriter::create(options(&dir, "a", capacity)).unwrap_err();
        assert!(err.to_string().ends_with(suggestion), "{capacity}: {err}");
    }
}

#[test]
fn a_second_writer_for_the_same_agent_fails_clearly() {
    let dir = TempDir::new("second");
    let first = ShmWriter::create(options(&dir, "agent", 16)).unwrap();
    let err = ShmWriter::create(options(&dir, "agent", 16)).unwrap_err();
    match &err {
        ShmError::WriterAlreadyRunning { pid, .. } => assert_eq!(*pid, Some(std::process::id())),
        other => panic!("unexpected {other}"),
    }
    assert!(err.to_string().contains("another writer is running"));
    // The first writer's file is intact and still its own.
    assert!(stat(first.path()).unwrap().writer_alive);
    first.close().unwrap();
    // Once closed, the lock is free and a new writer replaces the leftover.
    ShmWriter::create(options(&dir, "agent", 16)).unwrap();
}

#[test]
fn a_leftover_file_whose_writer_is_gone_is_replaced() {
    let dir = TempDir::new("leftover");
    let mut w = ShmWriter::create(options(&dir, "agent", 16)).unwrap();
    w.write_batch(&[seq_event(1), seq_event(2)]);
    let path = w.path().to_path_buf();
    let old_ino = std::fs::metadata(&path).unwrap().ino();
    w.close().unwrap();
    assert_eq!(stat(&path).unwrap().fill, 2);

    let w2 = ShmWriter::create(options(&dir, "agent", 32)).unwrap();
    let info = stat(&path).unwrap();
    assert_ne!(std::fs::metadata(&path).unwrap().ino(), old_ino);
    // The 2 unread events were carried into the new ring.
    assert_eq!((info.capacity, info.fill), (32, 2));
    assert!(!info.trailer.unwrap().clean_close);
    drop(w2);
    // No temporary files are left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_leftover_that_is_not_a_ring_is_never_replaced() {
    let dir = TempDir::new("notring");
    let path = dir.path().join("agent");
    std::fs::write(&path, b"someone's notes").unwrap();
    let err = ShmWriter::create(options(&dir, "agent", 16)).unwrap_err();
    assert!(matches!(err, ShmError::NotALeftoverRing { .. }), "{err}");
    assert!(err.to_string().contains("left untouched"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"someone's notes");
}

#[test]
fn a_symlink_at_the_agent_path_is_refused() {
    let dir = TempDir::new("symlink");
    let target = dir.path().join("target");
    std::fs::write(&target, b"precious").unwrap();
    std::os::unix::fs::symlink(&target, dir.path().join("agent")).unwrap();
    let err = ShmWriter::create(options(&dir, "agent", 16)).unwrap_err();
    assert!(matches!(err, ShmError::SymlinkRefused { .. }), "{err}");
    assert!(err.to_string().contains("symbolic link"));
    assert_eq!(std::fs::read(&target).unwrap(), b"precious");
    assert!(
        std::fs::symlink_metadata(dir.path().join("agent"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_directory_at_the_agent_path_is_refused() {
    let dir = TempDir::new("dirpath");
    std::fs::create_dir(dir.path().join("agent")).unwrap();
    let err = ShmWriter::create(options(&dir, "agent", 16)).unwrap_err();
    assert!(
        matches!(
            err,
            ShmError::NotRegularFile {
                kind: "directory",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_configured_file_mode_is_set_exactly() {
    let dir = TempDir::new("mode");
    let mut o = options(&dir, "shared", 16);
    o.mode = Some(0o666);
    let w = ShmWriter::create(o).unwrap();
    let mode = std::fs::metadata(w.path()).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o666, "the umask must not change the configured mode");
}

#[test]
fn the_file_is_created_with_its_full_size_and_trailer() {
    let dir = TempDir::new("size");
    let mut o = options(&dir, "agent", 64);
    o.clock = ClockId::Tsc;
    let w = ShmWriter::create(o).unwrap();
    assert_eq!(
        std::fs::metadata(w.path()).unwrap().len(),
        40 + 64 * 56 + 64
    );
    let t = stat(w.path()).unwrap().trailer.unwrap();
    assert_eq!(t.clock, ClockId::Tsc);
    assert_eq!(t.writer_pid, std::process::id());
    assert_eq!(t.policy, OverflowPolicy::DropNewest);
    assert!(!t.clean_close);
}

#[test]
fn full_ring_counts_every_dropped_event_and_reports_it_in_band() {
    let dir = TempDir::new("drops");
    let mut w = ShmWriter::create(options(&dir, "agent", 8)).unwrap();
    let events: Vec<_> = (0..10).map(seq_event).collect();
    // Capacity 8 holds 7: 6 events, then the report of the 4 refused in the last slot.
    assert_eq!(w.write_batch(&events), 6);
    assert_eq!(w.events_dropped(), 4);
    assert_eq!(w.unreported_drops(), 0);
    let t = stat(w.path()).unwrap().trailer.unwrap();
    assert_eq!((t.published, t.dropped_ring_full), (7, 4));
    // Full: refused, counted, reported once room frees up.
    assert_eq!(w.write_batch(&[seq_event(10), seq_event(11)]), 0);
    assert_eq!((w.events_dropped(), w.unreported_drops()), (6, 2));

    let mut r = DrainingReader::open(w.path()).unwrap();
    let mut got = Vec::new();
    r.read_batch(usize::MAX, |e| {
        let e = e.unwrap();
        got.push((is_drop_report(&e), e.value()))
    })
    .unwrap();
    let mut expected: Vec<_> = (0..6).map(|v| (false, v)).collect();
    expected.push((true, 4));
    assert_eq!(got, expected);

    // The next batch starts with the report of the 2 later losses.
    assert_eq!(w.write_batch(&[seq_event(12)]), 1);
    let report = r.pop().unwrap().unwrap();
    assert!(is_drop_report(&report));
    assert_eq!(report.value(), 2);
    assert_eq!(r.pop().unwrap().unwrap().value(), 12);
    assert_eq!(w.unreported_drops(), 0);
    let t = stat(w.path()).unwrap().trailer.unwrap();
    assert_eq!((t.published, t.dropped_ring_full), (9, 6));
}

#[test]
fn a_ring_nobody_drains_ends_with_the_report_of_what_it_refused() {
    for capacity in [2, 8] {
        let dir = TempDir::new("drops-undrained");
        let mut w = ShmWriter::create(options(&dir, "agent", capacity)).unwrap();
        let path = w.path().to_path_buf();
        for round in 0..5u64 {
            w.write_batch(
                &(round * 10..round * 10 + 10)
                    .map(seq_event)
                    .collect::<Vec<_>>(),
            );
        }
        w.close().unwrap();
        let t = stat(&path).unwrap().trailer.unwrap();
        let kept = u64::from(capacity) - 2;
        assert_eq!((t.published, t.dropped_ring_full), (kept + 1, 50 - kept));
        let mut r = DrainingReader::open(&path).unwrap();
        let mut got = Vec::new();
        r.read_batch(usize::MAX, |e| got.push(e.unwrap())).unwrap();
        let last = got.pop().unwrap();
        assert!(is_drop_report(&last), "capacity {capacity}: {last:?}");
        // Reported in-band: every loss up to the moment the ring filled; the trailer
        // counts the later ones too.
        assert_eq!(last.value(), 10 - kept, "capacity {capacity}");
        assert_eq!(got.len() as u64, kept);
        assert!(got.iter().all(|e| !is_drop_report(e)));
    }
}

#[test]
fn staging_losses_are_counted_in_the_trailer_and_reported() {
    let dir = TempDir::new("staging");
    let mut w = ShmWriter::create(options(&dir, "agent", 16)).unwrap();
    w.add_dropped(5);
    let t = stat(w.path()).unwrap().trailer.unwrap();
    assert_eq!((t.dropped_staging, t.dropped_ring_full), (5, 0));
    assert_eq!(t.events_dropped(), 5);
    w.heartbeat(); // an idle writer still reports
    let mut r = DrainingReader::open(w.path()).unwrap();
    let report = r.pop().unwrap().unwrap();
    assert!(is_drop_report(&report));
    assert_eq!(report.value(), 5);
    assert_eq!(w.events_dropped(), 5);
}

#[test]
fn heartbeat_advances_while_idle() {
    let dir = TempDir::new("heartbeat");
    let mut w = ShmWriter::create(options(&dir, "agent", 16)).unwrap();
    let before = stat(w.path()).unwrap().trailer.unwrap().heartbeat_us;
    // Beat until the stamp moves on: no fixed sleep, and no comparison with this
    // process's own wall-clock reads, which a clock step would break.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        w.heartbeat();
        let after = stat(w.path()).unwrap().trailer.unwrap().heartbeat_us;
        if after > before {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "heartbeat still {before} → {after} after 30 s of beats"
        );
        std::thread::yield_now();
    }
}

#[test]
fn clean_close_sets_the_flag_and_keeps_the_file() {
    let dir = TempDir::new("close");
    let mut w = ShmWriter::create(options(&dir, "agent", 16)).unwrap();
    w.write_batch(&[seq_event(1)]);
    let path = w.path().to_path_buf();
    w.flush().unwrap();
    assert!(!stat(&path).unwrap().trailer.unwrap().clean_close);
    w.close().unwrap();
    let info = stat(&path).unwrap();
    assert!(info.trailer.unwrap().clean_close);
    assert!(!info.writer_alive);
    assert_eq!(info.fill, 1);
}

#[test]
fn dropping_the_writer_closes_it_cleanly() {
    let dir = TempDir::new("dropclose");
    let w = ShmWriter::create(options(&dir, "agent", 16)).unwrap();
    let path = w.path().to_path_buf();
    drop(w);
    assert!(stat(&path).unwrap().trailer.unwrap().clean_close);
}

#[test]
fn unlink_on_close_removes_only_its_own_file() {
    let dir = TempDir::new("unlink");
    let mut o = options(&dir, "agent", 16);
    o.unlink_on_close = true;
    let w = ShmWriter::create(o.clone()).unwrap();
    let path = w.path().to_path_buf();
    w.close().unwrap();
    assert!(!path.exists());

    // If the path was replaced meanwhile, the writer leaves the new file alone.
    let w = ShmWriter::create(o).unwrap();
    std::fs::rename(&path, dir.path().join("moved")).unwrap();
    std::fs::write(&path, b"new").unwrap();
    w.close().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
}

#[test]
fn the_directory_is_created_if_missing() {
    let dir = TempDir::new("mkdir");
    let nested = dir.path().join("a").join("b");
    let w = ShmWriter::create(WriterOptions::new(&nested, "agent")).unwrap();
    assert!(nested.join("agent").is_file());
    drop(w);
}

#[test]
fn overwrite_oldest_is_recorded_and_followed_by_observers_exactly() {
    let dir = TempDir::new("overwrite");
    let mut o = options(&dir, "recorder", 16);
    o.policy = OverflowPolicy::OverwriteOldest;
    let mut w = ShmWriter::create(o).unwrap();
    assert_eq!(
        stat(w.path()).unwrap().trailer.unwrap().policy,
        OverflowPolicy::OverwriteOldest
    );
    let mut obs = ObserverReader::open(w.path(), ObserverStart::Oldest).unwrap();
    let mut drain = DrainingReader::open(w.path()).unwrap();
    let events: Vec<_> = (0..100).map(seq_event).collect();
    assert_eq!(w.write_batch(&events), 100, "the writer never refuses");
    assert_eq!(w.events_dropped(), 0);

    let mut seen = Vec::new();
    while let Some(e) = obs.poll().unwrap() {
        seen.push(e.value());
    }
    // Every event is seen or counted as missed, in order.
    assert_eq!(seen.len() as u64 + obs.events_missed(), 100);
    assert!(seen.windows(2).all(|p| p[1] == p[0] + 1));
    assert_eq!(*seen.last().unwrap(), 99);

    let mut drained = Vec::new();
    drain
        .read_batch(usize::MAX, |e| drained.push(e.unwrap().value()))
        .unwrap();
    assert_eq!(drained.len() as u64 + drain.events_lost(), 100);
    assert_eq!(*drained.last().unwrap(), 99);
}

#[test]
fn writer_and_readers_can_move_to_another_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<ShmWriter>();
    assert_send::<DrainingReader>();
    assert_send::<ObserverReader>();
    assert_send::<ShmError>();
}
