//! The node collector over real ring files written by telering-shm.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use telering_core::{Category, Event, OverflowPolicy, builtin};
use telering_prometheus::Format;
use telering_prometheus::collector::{CollectorOptions, Liveness, NodeCollector, ReadMode};
use telering_shm::{ShmWriter, WriterOptions};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "telering-prom-collector-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tx(bytes: u64) -> Event {
    Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, bytes)
}

fn request() -> Event {
    Event::new(
        1,
        Category::Transfer,
        builtin::AGENT_TX_REQUESTS_NUM.name,
        1,
    )
}

fn writer(dir: &Path, name: &str, capacity: u32, policy: OverflowPolicy) -> ShmWriter {
    let mut options = WriterOptions::new(dir, name);
    options.capacity = capacity;
    options.policy = policy;
    ShmWriter::create(options).unwrap()
}

fn options(dir: &Path) -> CollectorOptions {
    let mut o = CollectorOptions::new(dir);
    o.rescan_interval = Duration::ZERO;
    o.hostname = "node".into();
    o
}

/// Polls `c` until `done` holds (30 s at most, so a slow machine only makes the test
/// slower, never wrong); returns how long that took.
fn poll_until(
    c: &mut NodeCollector,
    what: &str,
    mut done: impl FnMut(&NodeCollector) -> bool,
) -> Duration {
    let start = Instant::now();
    loop {
        c.poll();
        if done(c) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn is_dead(c: &NodeCollector) -> bool {
    matches!(c.agents()[0].liveness, Liveness::Dead { .. })
}

fn counter(c: &NodeCollector, agent: &str, family: &str) -> Option<u64> {
    c.model().lock().counter(agent, family)
}

fn failing(c: &NodeCollector, agent: &str) -> Option<bool> {
    c.model().lock().exporter_failing(agent)
}

#[test]
fn delivered_counts_every_event_the_collector_read() {
    let dir = TempDir::new("delivered");
    let mut w = writer(&dir.0, "busy", 256, OverflowPolicy::DropNewest);
    let mut c = NodeCollector::new(options(&dir.0)).unwrap();
    c.poll();
    assert_eq!(
        counter(&c, "busy", "agent_telemetry_events_delivered"),
        Some(0)
    );
    assert_eq!(failing(&c, "busy"), Some(false));
    for round in 1..=3u64 {
        w.write_batch(&vec![request(); 50]);
        w.write_batch(&[tx(round)]);
        c.poll();
        let read = c.agents()[0].events_read;
        assert_eq!(read, 51 * round);
        assert_eq!(
            counter(&c, "busy", "agent_telemetry_events_delivered"),
            Some(read)
        );
    }
    let page = c.model().render(Format::OpenMetrics);
    assert!(
        page.contains(
            r#"agent_telemetry_events_delivered_total{agent_name="busy",hostname="node"} 153"#
        ),
        "{page}"
    );
    assert!(
        page.contains(r#"agent_telemetry_exporter_failing{agent_name="busy",hostname="node"} 0"#)
    );
    w.close().unwrap();
}

#[test]
fn collector_follows_every_ring_in_the_directory() {
    let dir = TempDir::new("every");
    let mut writers: Vec<ShmWriter> = (0..3)
        .map(|i| {
            writer(
                &dir.0,
                &format!("agent-{i}"),
                256,
                OverflowPolicy::DropNewest,
            )
        })
        .collect();
    for (i, w) in writers.iter_mut().enumerate() {
        let events: Vec<Event> = (0..=i as u64).map(|k| tx(100 + k)).collect();
        assert_eq!(w.write_batch(&events), events.len());
    }
    // Not rings: ignored, and left exactly as they were.
    std::fs::write(dir.0.join("notes.txt"), b"not a ring").unwrap();
    std::fs::create_dir(dir.0.join("subdir")).unwrap();
    let mut c = NodeCollector::new(options(&dir.0)).unwrap();
    c.poll();
    assert_eq!(counter(&c, "agent-0", "agent_tx_bytes"), Some(100));
    assert_eq!(counter(&c, "agent-1", "agent_tx_bytes"), Some(201));
    assert_eq!(counter(&c, "agent-2", "agent_tx_bytes"), Some(303));
    assert_eq!(c.agents().len(), 3);
    assert_eq!(
        std::fs::read(dir.0.join("notes.txt")).unwrap(),
        b"not a ring"
    );
    let page = c.model().render(Format::PrometheusText);
    for i in 0..3 {
        assert!(page.contains(&format!("agent_name=\"agent-{i}\",hostname=\"node\"")));
    }
    // An agent that appears later is picked up.
    let mut late = writer(&dir.0, "late", 256, OverflowPolicy::DropNewest);
    late.write_batch(&[tx(5)]);
    c.poll();
    assert_eq!(counter(&c, "late", "agent_tx_bytes"), Some(5));
}

#[test]
fn observer_counts_every_event_as_read_or_missed_and_counters_never_go_backwards() {
    let dir = TempDir::new("observe");
    let mut w = writer(&dir.0, "busy", 64, OverflowPolicy::OverwriteOldest);
    let mut c = NodeCollector::new(options(&dir.0)).unwrap();
    // Start following before the first write: events overwritten before an observer
    // exists are history it never saw, not events it missed.
    c.poll();
    let mut written = 0u64;
    let mut last = 0u64;
    for round in 0..200u64 {
        // Bursts larger than the ring now and then, so the observer is lapped.
        let burst = if round % 10 == 0 { 150 } else { 20 };
        let events = vec![request(); burst];
        written += w.write_batch(&events) as u64;
        c.poll();
        let now = counter(&c, "busy", "agent_tx_requests_num").unwrap();
        assert!(now >= last, "counter went backwards: {last} -> {now}");
        last = now;
    }
    let read = counter(&c, "busy", "agent_tx_requests_num").unwrap();
    let missed = counter(&c, "busy", "agent_telemetry_events_missed").unwrap();
    assert!(missed > 0, "the test should lap the observer");
    assert_eq!(read + missed, written, "read {read} + missed {missed}");
}

#[test]
fn drain_mode_empties_the_ring_and_counts_writer_losses() {
    let dir = TempDir::new("drain");
    let mut w = writer(&dir.0, "drained", 64, OverflowPolicy::DropNewest);
    let mut o = options(&dir.0);
    o.mode = ReadMode::Drain;
    let mut c = NodeCollector::new(o).unwrap();
    let mut written = 0u64;
    for round in 0..50 {
        let burst = if round % 7 == 0 { 100 } else { 30 };
        written += w.write_batch(&vec![request(); burst]) as u64;
        c.poll();
    }
    w.heartbeat(); // delivers the last drop report if one is pending
    c.poll();
    let delivered = counter(&c, "drained", "agent_tx_requests_num").unwrap();
    let dropped_reported = counter(&c, "drained", "agent_telemetry_events_dropped").unwrap();
    assert_eq!(delivered, written);
    assert!(w.events_dropped() > 0, "the test should overflow the ring");
    assert_eq!(dropped_reported, w.events_dropped());
    let status = &c.agents()[0];
    assert_eq!(status.info.as_ref().unwrap().fill, 0);
}

#[test]
fn a_cleanly_closed_writer_is_dead_and_its_series_go_after_the_ttl() {
    let dir = TempDir::new("ttl");
    let mut w = writer(&dir.0, "short-lived", 64, OverflowPolicy::DropNewest);
    w.write_batch(&[tx(42)]);
    let mut o = options(&dir.0);
    o.ttl = Duration::from_millis(300);
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    assert_eq!(c.agents()[0].liveness, Liveness::Alive);
    assert_eq!(failing(&c, "short-lived"), Some(false));
    w.close().unwrap();
    c.poll();
    assert!(matches!(c.agents()[0].liveness, Liveness::Dead { .. }));
    // A clean close is not a failing exporter.
    assert_eq!(failing(&c, "short-lived"), Some(false));
    // Final values stay visible until the TTL.
    assert_eq!(counter(&c, "short-lived", "agent_tx_bytes"), Some(42));
    let waited = poll_until(&mut c, "the dead agent expires", |c| {
        c.agents().is_empty() || {
            assert_eq!(counter(c, "short-lived", "agent_tx_bytes"), Some(42));
            false
        }
    });
    assert!(
        waited >= Duration::from_millis(300),
        "expired after {waited:?}, before the TTL"
    );
    assert_eq!(counter(&c, "short-lived", "agent_tx_bytes"), None);
    // The leftover file is not picked up again …
    c.poll();
    assert!(c.agents().is_empty());
    // … but a new writer under the name is a new agent.
    let mut again = writer(&dir.0, "short-lived", 64, OverflowPolicy::DropNewest);
    again.write_batch(&[tx(7)]);
    c.poll();
    assert_eq!(counter(&c, "short-lived", "agent_tx_bytes"), Some(7));
}

#[test]
fn a_stale_heartbeat_marks_the_writer_dead_until_it_beats_again() {
    let dir = TempDir::new("stale");
    let mut w = writer(&dir.0, "quiet", 64, OverflowPolicy::DropNewest);
    let mut o = options(&dir.0);
    o.stale_after = Duration::from_millis(100);
    let mut c = NodeCollector::new(o).unwrap();
    // A fresh beat reads as alive; beating again each poll tolerates a poll that
    // came late because this thread was descheduled.
    poll_until(&mut c, "alive after a beat", |c| {
        w.heartbeat();
        c.agents()
            .first()
            .is_some_and(|a| a.liveness == Liveness::Alive)
    });
    let beat = Instant::now();
    w.heartbeat();
    let waited = poll_until(&mut c, "dead once the beat is stale", is_dead);
    assert!(
        beat.elapsed() >= Duration::from_millis(100),
        "dead after {waited:?}, before going stale"
    );
    assert_eq!(failing(&c, "quiet"), Some(true));
    poll_until(&mut c, "alive again after a beat", |c| {
        w.heartbeat();
        c.agents()[0].liveness == Liveness::Alive
    });
    assert_eq!(failing(&c, "quiet"), Some(false));
}

#[test]
fn a_restart_into_the_same_file_or_a_replacing_one_continues_the_series() {
    let dir = TempDir::new("restart");
    let mut w = writer(&dir.0, "phoenix", 64, OverflowPolicy::DropNewest);
    w.write_batch(&[tx(1000)]);
    let mut c = NodeCollector::new(options(&dir.0)).unwrap();
    c.poll();
    assert_eq!(counter(&c, "phoenix", "agent_tx_bytes"), Some(1000));
    drop(w);
    // Same shape: the ring is reused in place and the collector's reader follows it
    // on, counting every event once.
    let mut w2 = writer(&dir.0, "phoenix", 64, OverflowPolicy::DropNewest);
    w2.write_batch(&[tx(3)]);
    c.poll();
    assert_eq!(counter(&c, "phoenix", "agent_tx_bytes"), Some(1003));
    assert_eq!(c.agents()[0].liveness, Liveness::Alive);
    drop(w2);
    // Another capacity: a new file, which starts with the 2 events carried from the
    // old one; the reader reads on past them (it read them there), so the series
    // goes on, counting every event once.
    let mut w3 = writer(&dir.0, "phoenix", 128, OverflowPolicy::DropNewest);
    w3.write_batch(&[tx(5)]);
    c.poll();
    assert_eq!(counter(&c, "phoenix", "agent_tx_bytes"), Some(1008));
    assert_eq!(c.agents()[0].liveness, Liveness::Alive);
}

/// When run as the child of the next test, writes one event and waits to be killed.
#[test]
#[ignore = "helper: the body of a writer process the next test kills"]
fn child_writer_process() {
    let Ok(dir) = std::env::var("TELERING_PROM_TEST_CHILD_DIR") else {
        return;
    };
    let mut w = writer(Path::new(&dir), "doomed", 64, OverflowPolicy::DropNewest);
    w.write_batch(&[tx(99)]);
    std::fs::write(Path::new(&dir).join(".ready"), b"").unwrap();
    std::thread::sleep(Duration::from_secs(60));
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_killed_writer_process_is_noticed_by_its_released_lock() {
    let dir = TempDir::new("killed");
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_writer_process",
            "--ignored",
            "--nocapture",
        ])
        .env("TELERING_PROM_TEST_CHILD_DIR", &dir.0)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut child = KillOnDrop(child);
    let start = Instant::now();
    while !dir.0.join(".ready").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "child did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut c = NodeCollector::new(options(&dir.0)).unwrap();
    c.poll();
    assert_eq!(counter(&c, "doomed", "agent_tx_bytes"), Some(99));
    assert_eq!(c.agents()[0].liveness, Liveness::Alive);
    assert_eq!(failing(&c, "doomed"), Some(false));
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    c.poll();
    assert!(matches!(c.agents()[0].liveness, Liveness::Dead { .. }));
    assert_eq!(counter(&c, "doomed", "agent_tx_bytes"), Some(99));
    // Gone without a clean close: the exporter is failing, and the page says so.
    assert_eq!(failing(&c, "doomed"), Some(true));
    let page = c.model().render(Format::PrometheusText);
    assert!(
        page.contains(r#"agent_telemetry_exporter_failing{agent_name="doomed",hostname="node"} 1"#),
        "{page}"
    );
}

#[test]
fn a_missing_directory_is_a_typed_error_naming_it() {
    let err = NodeCollector::new(CollectorOptions::new("/nonexistent/telering-dir")).unwrap_err();
    assert!(
        err.to_string().contains("/nonexistent/telering-dir"),
        "{err}"
    );
}

#[test]
fn an_expired_agent_whose_writer_beats_again_is_followed_again() {
    let dir = TempDir::new("revive");
    let mut w = writer(&dir.0, "sleepy", 64, OverflowPolicy::DropNewest);
    w.write_batch(&[tx(10)]);
    let mut o = options(&dir.0);
    o.stale_after = Duration::from_millis(100);
    o.ttl = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    assert_eq!(counter(&c, "sleepy", "agent_tx_bytes"), Some(10));
    // Dead once stale, then expired at once (no TTL).
    poll_until(&mut c, "the silent agent expires", |c| {
        c.agents().is_empty()
    });
    c.poll();
    assert!(
        c.agents().is_empty(),
        "a silent expired file is not followed again"
    );
    w.write_batch(&[tx(5)]);
    c.poll();
    assert_eq!(c.agents().len(), 1);
    // A new series starts where the collector stopped reading: what it had read
    // before the series expired is not counted again.
    assert_eq!(counter(&c, "sleepy", "agent_tx_bytes"), Some(5));
}

#[test]
fn files_past_max_agents_are_not_followed() {
    let dir = TempDir::new("max");
    let _writers: Vec<ShmWriter> = (0..3)
        .map(|i| writer(&dir.0, &format!("a{i}"), 64, OverflowPolicy::DropNewest))
        .collect();
    let mut o = options(&dir.0);
    o.max_agents = 2;
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    assert_eq!(c.agents().len(), 2);
}

/// A ring file as NIXL ≥ 1.3.1 writes it (version 4, 16-byte slots: type u32 @0,
/// 4 bytes never initialised @4, value u64 @8; no trailer), built byte by byte.
fn nixl_v4_ring(path: &Path, slots: &[(u32, u64)]) {
    let capacity = 16u64;
    let mut b = vec![0xEEu8; 40 + capacity as usize * 16];
    b[0..8].copy_from_slice(&(slots.len() as u64).to_le_bytes());
    b[8..16].copy_from_slice(&0u64.to_le_bytes());
    b[16..20].copy_from_slice(&4i32.to_le_bytes());
    b[20..24].copy_from_slice(&4i32.to_le_bytes());
    b[24..32].copy_from_slice(&capacity.to_le_bytes());
    b[32..40].copy_from_slice(&(capacity - 1).to_le_bytes());
    for (i, (type_number, value)) in slots.iter().enumerate() {
        let at = 40 + i * 16;
        b[at..at + 4].copy_from_slice(&type_number.to_le_bytes());
        b[at + 8..at + 16].copy_from_slice(&value.to_le_bytes());
    }
    std::fs::write(path, b).unwrap();
}

#[test]
fn drain_mode_reads_a_nixl_version_4_ring_and_counts_its_error_types_by_status() {
    let dir = TempDir::new("nixl-v4");
    // agent_tx_bytes ×2, agent_err_backend, agent_err_canceled ×2, an unknown type.
    let slots = [(0, 100), (0, 28), (10, 1), (18, 1), (18, 1), (42, 5)];
    nixl_v4_ring(&dir.0.join("nixl-agent"), &slots);
    let mut o = options(&dir.0);
    o.mode = ReadMode::Drain;
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    assert_eq!(counter(&c, "nixl-agent", "agent_tx_bytes"), Some(128));
    let model = c.model();
    let model = model.lock();
    assert_eq!(
        model.errors("nixl-agent", builtin::ErrorStatus::Backend),
        Some(1)
    );
    assert_eq!(
        model.errors("nixl-agent", builtin::ErrorStatus::Canceled),
        Some(2)
    );
    drop(model);
    let status = &c.agents()[0];
    let info = status.info.as_ref().unwrap();
    assert_eq!(
        (info.fill, info.generation),
        (0, telering_shm::Generation::V4)
    );
    assert_eq!(status.events_read, slots.len() as u64);
}

#[test]
fn observe_mode_leaves_a_stampless_ring_alone() {
    let dir = TempDir::new("nixl-v4-observe");
    let path = dir.0.join("nixl-agent");
    nixl_v4_ring(&path, &[(0, 100)]);
    let before = std::fs::read(&path).unwrap();
    let mut c = NodeCollector::new(options(&dir.0)).unwrap();
    c.poll();
    c.poll();
    assert!(c.agents().is_empty());
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn observe_mode_follows_a_version_4_ring_telering_wrote() {
    let dir = TempDir::new("telering-v4");
    let mut writer_options = WriterOptions::new(&dir.0, "v4-agent");
    writer_options.layout = telering_shm::RingLayout::V4;
    let mut w = ShmWriter::create(writer_options).unwrap();
    let err = builtin::ErrorStatus::NotFound.event();
    w.write_batch(&[tx(100), tx(28), Event::new(1, err.category, err.name, 1)]);
    let mut c = NodeCollector::new(options(&dir.0)).unwrap();
    c.poll();
    assert_eq!(counter(&c, "v4-agent", "agent_tx_bytes"), Some(128));
    assert_eq!(
        c.model()
            .lock()
            .errors("v4-agent", builtin::ErrorStatus::NotFound),
        Some(1)
    );
    // Observed, not drained.
    assert_eq!(telering_shm::stat(w.path()).unwrap().fill, 3);
    w.close().unwrap();
}
