//! The node collector's loss accounting over real ring files: every event a writer
//! records is delivered or counted as lost, with its cause, as it happens, whether or
//! not anything drains the ring; and an expired agent that writes again is followed
//! again, however briefly it ran.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use telering_core::{Category, Event, OverflowPolicy, builtin};
use telering_prometheus::Format;
use telering_prometheus::collector::{
    CollectorOptions, ExportState, Losses, NodeCollector, ReadMode,
};
use telering_shm::{ShmWriter, WriterOptions, stat};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("telering-prom-losses-{tag}-{}", std::process::id()));
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

fn request() -> Event {
    Event::new(
        1,
        Category::Transfer,
        builtin::AGENT_TX_REQUESTS_NUM.name,
        1,
    )
}

fn tx(bytes: u64) -> Event {
    Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, bytes)
}

fn writer(dir: &Path, name: &str, capacity: u32) -> ShmWriter {
    let mut options = WriterOptions::new(dir, name);
    options.capacity = capacity;
    options.policy = OverflowPolicy::DropNewest;
    ShmWriter::create(options).unwrap()
}

fn options(dir: &Path) -> CollectorOptions {
    let mut o = CollectorOptions::new(dir);
    o.rescan_interval = Duration::ZERO;
    o.hostname = "node".into();
    o
}

fn counter(c: &NodeCollector, agent: &str, family: &str) -> u64 {
    c.model().lock().counter(agent, family).unwrap_or(0)
}

fn poll_until(c: &mut NodeCollector, what: &str, mut done: impl FnMut(&NodeCollector) -> bool) {
    let start = Instant::now();
    loop {
        c.poll();
        if done(c) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_full_ring_nobody_drains_counts_every_refused_event_as_ring_full_at_each_poll() {
    let dir = TempDir::new("full");
    let mut w = writer(&dir.0, "full", 64);
    let mut c = NodeCollector::new(options(&dir.0)).unwrap();
    c.poll();
    assert_eq!(c.agents()[0].loss.state, ExportState::Ok);
    let mut recorded = 0u64;
    for round in 1..=5u64 {
        recorded += 40;
        w.write_batch(&vec![request(); 40]);
        c.poll();
        // Nothing drains the ring: once 62 events and the report of the first
        // refusals fill it, the writer refuses the rest and no further in-band report
        // can be written; the collector still counts each refused event at the poll
        // after it, from the trailer.
        let trailer = stat(w.path()).unwrap().trailer.unwrap();
        let delivered = counter(&c, "full", "agent_telemetry_events_delivered");
        let dropped = counter(&c, "full", "agent_telemetry_events_dropped");
        assert_eq!(dropped, trailer.dropped_ring_full, "round {round}");
        assert_eq!(delivered + dropped, recorded, "round {round}");
        let agent = &c.agents()[0];
        assert_eq!(
            agent.loss.losses,
            Losses {
                ring_full: dropped,
                ..Losses::default()
            }
        );
        if round >= 2 {
            assert_eq!(agent.loss.state, ExportState::Dropping, "round {round}");
            assert_eq!(agent.loss.dropping, ["ring_full"]);
        }
    }
    let page = c.model().render(Format::PrometheusText);
    assert!(
        page.contains(
            r#"agent_telemetry_events_dropped_total{agent_name="full",hostname="node"} 138"#
        ),
        "{page}"
    );
    w.close().unwrap();
}

#[test]
fn in_band_drop_reports_are_read_but_neither_delivered_events_nor_charged_twice() {
    let dir = TempDir::new("report");
    let mut w = writer(&dir.0, "drained", 64);
    let mut o = options(&dir.0);
    o.mode = ReadMode::Drain;
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    // 62 events fit; the ring's last slot takes the report of the 38 refused.
    w.write_batch(&vec![request(); 100]);
    c.poll();
    assert_eq!(counter(&c, "drained", "agent_telemetry_events_dropped"), 38);
    assert_eq!(
        counter(&c, "drained", "agent_telemetry_events_delivered"),
        62
    );
    w.write_batch(&vec![request(); 10]);
    c.poll();
    let trailer = stat(w.path()).unwrap().trailer.unwrap();
    assert_eq!(trailer.published, 73, "62 events, the report, 10 events");
    assert_eq!(counter(&c, "drained", "agent_telemetry_events_dropped"), 38);
    // The report is read but is no recorded event: 72 delivered.
    assert_eq!(
        counter(&c, "drained", "agent_telemetry_events_delivered"),
        72
    );
    assert_eq!(counter(&c, "drained", "agent_tx_requests_num"), 72);
    // recorded = delivered + counted as lost.
    assert_eq!(72 + 38, 110);
    assert_eq!(c.agents()[0].loss.losses.ring_full, 38);
    w.close().unwrap();
}

#[test]
fn an_agent_that_stopped_losing_events_is_ok_again_after_dropping_for() {
    let dir = TempDir::new("recovers");
    let mut w = writer(&dir.0, "bursty", 64);
    let mut o = options(&dir.0);
    o.mode = ReadMode::Drain;
    o.dropping_for = Duration::from_millis(200);
    let mut c = NodeCollector::new(o).unwrap();
    w.write_batch(&vec![request(); 100]);
    c.poll();
    assert_eq!(c.agents()[0].loss.state, ExportState::Dropping);
    let since = Instant::now();
    poll_until(&mut c, "ok again", |c| {
        w.write_batch(&[request()]);
        c.agents()[0].loss.state == ExportState::Ok
    });
    assert!(since.elapsed() >= Duration::from_millis(200));
    // The losses stay counted.
    assert_eq!(c.agents()[0].loss.losses.ring_full, 38);
    w.close().unwrap();
}

#[test]
fn an_expired_agent_that_runs_again_between_two_polls_is_followed_again() {
    let dir = TempDir::new("rerun");
    let mut w = writer(&dir.0, "cron", 64);
    w.write_batch(&[tx(10)]);
    w.close().unwrap();
    let mut o = options(&dir.0);
    o.ttl = Duration::ZERO;
    let mut c = NodeCollector::new(o).unwrap();
    c.poll();
    assert_eq!(counter(&c, "cron", "agent_tx_bytes"), 10);
    poll_until(&mut c, "the closed agent expires", |c| {
        c.agents().is_empty()
    });
    c.poll();
    assert!(c.agents().is_empty(), "a silent expired file stays expired");
    // The agent runs again under its name, writes and exits, all between two polls:
    // no poll ever finds its writer alive.
    for run in 1..=3u64 {
        let mut again = writer(&dir.0, "cron", 64);
        again.write_batch(&[tx(run)]);
        again.close().unwrap();
        c.poll();
        assert_eq!(c.agents().len(), 1, "run {run}");
        assert_eq!(counter(&c, "cron", "agent_tx_bytes"), run, "run {run}");
        poll_until(&mut c, "the run's series expires", |c| {
            c.agents().is_empty()
        });
    }
}

#[test]
fn events_a_version_4_ring_cannot_hold_are_counted_not_in_layout_and_are_no_drops() {
    let dir = TempDir::new("v4");
    let mut writer_options = WriterOptions::new(&dir.0, "v4-agent");
    writer_options.layout = telering_shm::RingLayout::V4;
    let mut w = ShmWriter::create(writer_options).unwrap();
    let mut c = NodeCollector::new(options(&dir.0)).unwrap();
    c.poll();
    let custom = Event::new(1, Category::Custom, telering_core::event_name!("queue"), 3);
    w.write_batch(&[tx(100), custom, custom]);
    c.poll();
    let agent = &c.agents()[0];
    assert_eq!(
        agent.loss.losses,
        Losses {
            not_in_layout: 2,
            ..Losses::default()
        }
    );
    assert_eq!(agent.loss.losses.total(), 0);
    assert_eq!(agent.loss.state, ExportState::Ok);
    assert_eq!(counter(&c, "v4-agent", "agent_telemetry_events_dropped"), 0);
    assert_eq!(
        counter(&c, "v4-agent", "agent_telemetry_events_delivered"),
        1
    );
    w.close().unwrap();
}
