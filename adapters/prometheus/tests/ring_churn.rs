//! Rings that come and go by the thousand: an expired ring whose file is then removed
//! holds no descriptor (nor, through its mapping, the removed file's memory), and the
//! readers kept for expired rings never keep a new ring from being followed.
//! One test per file: it lowers the process's open-file limit.

use std::path::Path;
use std::time::{Duration, Instant};

use telering_core::{Category, Event, builtin};
use telering_prometheus::collector::{CollectorOptions, NodeCollector};
use telering_shm::{ShmWriter, WriterOptions};

fn closed_ring(dir: &Path, name: &str) {
    let mut o = WriterOptions::new(dir, name);
    o.capacity = 16;
    let mut w = ShmWriter::create(o).unwrap();
    w.write_batch(&[Event::new(
        1,
        Category::Transfer,
        builtin::AGENT_TX_BYTES.name,
        1,
    )]);
    w.close().unwrap();
}

/// Descriptors of this process open on files under `dir` (removed ones included).
fn open_under(dir: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter(|target| target.starts_with(dir))
        .count()
}

fn poll_until(c: &mut NodeCollector, what: &str, mut done: impl FnMut(&NodeCollector) -> bool) {
    let start = Instant::now();
    while !done(c) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} within 30 s"
        );
        c.poll();
    }
}

#[test]
fn expired_rings_that_are_removed_or_crowded_out_give_their_descriptors_back() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().canonicalize().unwrap();
    let mut o = CollectorOptions::new(&dir);
    o.rescan_interval = Duration::ZERO;
    o.ttl = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();

    // Rings that ran, closed, expired (their readers kept), then were removed.
    for i in 0..40 {
        closed_ring(&dir, &format!("gone-{i}"));
    }
    c.poll();
    assert_eq!(c.agents().len(), 40);
    poll_until(&mut c, "every closed ring expires", |c| {
        c.agents().is_empty()
    });
    for i in 0..40 {
        std::fs::remove_file(dir.join(format!("gone-{i}"))).unwrap();
    }
    c.poll();
    c.poll();
    assert_eq!(open_under(&dir), 0, "no descriptor on a removed ring");

    // Under a low open-file limit, expired rings' kept readers make room for new rings.
    let soft = 128u64;
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    if limit.maximum.is_some_and(|hard| hard < soft) {
        return;
    }
    rustix::process::setrlimit(
        rustix::process::Resource::Nofile,
        rustix::process::Rlimit {
            current: Some(soft),
            maximum: limit.maximum,
        },
    )
    .unwrap();
    let budget = 40;
    for i in 0..budget {
        closed_ring(&dir, &format!("old-{i}"));
    }
    poll_until(&mut c, "the old rings are followed", |c| {
        c.agents().len() == budget
    });
    poll_until(&mut c, "the old rings expire", |c| c.agents().is_empty());
    for i in 0..budget {
        closed_ring(&dir, &format!("new-{i}"));
    }
    c.poll();
    assert_eq!(c.rings_not_followed(), 0, "{:?}", c.agents().len());
    assert_eq!(c.agents().len(), budget);
}
