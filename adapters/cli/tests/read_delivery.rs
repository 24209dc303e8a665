//! What `telering read` takes from a ring and what reaches its output: `--max`, a
//! pipe closed early, and readers killed mid-stream.

mod common;

use common::*;
use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use telering_cli::read::READ_BATCH;
use telering_core::{Category, Event, EventName};
use telering_shm::{ShmWriter, WriterOptions};

fn seq(value: u64) -> Event {
    Event::new(
        1_700_000_000_000_000 + value,
        Category::Custom,
        EventName::new("seq").unwrap(),
        value,
    )
}

fn values(json: &str) -> Vec<u64> {
    parse_json_lines(json)
        .iter()
        .map(|l| l["value"].as_u64().unwrap())
        .collect()
}

fn fill(path: &std::path::Path) -> u64 {
    telering_shm::stat(path).unwrap().fill
}

#[test]
fn read_max_takes_exactly_n_events_and_leaves_the_rest() {
    let dir = scratch();
    let mut writer = ShmWriter::create(WriterOptions::new(dir.path(), "agent")).unwrap();
    let events: Vec<Event> = (0..50).map(seq).collect();
    writer.write_batch(&events);
    let path = writer.path().to_path_buf();

    let o = run_in(
        dir.path(),
        telering().args(["read", "--json", "--max", "5"]).arg(&path),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert_eq!(values(&stdout(&o)), [0, 1, 2, 3, 4]);
    assert_eq!(fill(&path), 45);

    // More than the ring holds: takes what is there and stops.
    let o = run_in(
        dir.path(),
        telering()
            .args(["read", "--json", "--max", "1000"])
            .arg(&path),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert_eq!(values(&stdout(&o)), (5..50).collect::<Vec<_>>());
    assert_eq!(fill(&path), 0);

    // With --follow it waits for the rest, then stops by itself.
    let mut child = Running::spawn(
        telering()
            .args([
                "read",
                "--json",
                "--follow",
                "--interval",
                "5",
                "--max",
                "3",
            ])
            .arg(&path)
            .stdout(Stdio::piped()),
    );
    writer.write_batch(&[seq(50), seq(51)]);
    writer.write_batch(&[seq(52), seq(53)]);
    let out = child.child.stdout.take().unwrap();
    let text = std::io::read_to_string(out).unwrap();
    assert_eq!(child.wait(), Some(0));
    assert_eq!(values(&text), [50, 51, 52]);
    assert_eq!(fill(&path), 1);

    // `tail --max` prints that many and takes nothing.
    let o = run_in(
        dir.path(),
        telering().args(["tail", "--json", "--max", "2"]).arg(&path),
    );
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    assert_eq!(values(&stdout(&o)).len(), 2);
    assert_eq!(fill(&path), 1);
    writer.close().unwrap();
}

#[test]
fn a_head_pipeline_reports_exactly_what_read_took() {
    let dir = scratch();
    let mut options = WriterOptions::new(dir.path(), "agent");
    options.capacity = 65536;
    let mut writer = ShmWriter::create(options).unwrap();
    const N: u64 = 50_000;
    let events: Vec<Event> = (0..N).map(seq).collect();
    assert_eq!(writer.write_batch(&events), N as usize);
    let path = writer.path().to_path_buf();

    let mut read = Running::spawn(
        telering()
            .args(["read", "--json"])
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let head = std::process::Command::new("head")
        .arg("-5")
        .stdin(Stdio::from(read.child.stdout.take().unwrap()))
        .output()
        .expect("run head");
    assert_eq!(
        values(&String::from_utf8_lossy(&head.stdout)),
        [0, 1, 2, 3, 4]
    );
    let err = std::io::read_to_string(read.child.stderr.take().unwrap()).unwrap();
    assert_eq!(read.wait(), Some(1), "stderr: {err}");

    // One line: how many were taken, and at most how many never reached `head`.
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    let number_after = |text: &str, marker: &str| -> u64 {
        let at = text
            .find(marker)
            .unwrap_or_else(|| panic!("`{marker}` in {text}"));
        text[at + marker.len()..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let taken = number_after(lines[0], "closed after ");
    let unreached = number_after(lines[0], "up to ");
    assert!(lines[0].contains("telering read --max N"), "{err}");
    assert!(lines[0].contains("telering tail"), "{err}");
    assert!(taken > 5 && taken < N, "{err}");
    assert!(unreached <= taken - 5, "{err}");
    // Exactly what it said it took is gone from the ring, and the rest is intact.
    assert_eq!(fill(&path), N - taken);
    let o = run_in(dir.path(), telering().args(["read", "--json"]).arg(&path));
    assert_eq!(values(&stdout(&o)), (taken..N).collect::<Vec<_>>());
    writer.close().unwrap();
}

/// The values a killed reader wrote: every complete line (a kill can cut the last).
fn complete_values(file: &std::path::Path) -> Vec<u64> {
    let text = std::fs::read_to_string(file).unwrap();
    let complete = match text.rfind('\n') {
        Some(end) => &text[..=end],
        None => "",
    };
    values(complete)
}

#[test]
fn readers_killed_mid_stream_lose_nothing_and_repeat_at_most_one_batch_each() {
    const N: u64 = 150_000;
    const KILLS: usize = 4;
    let dir = scratch();
    let mut options = WriterOptions::new(dir.path(), "agent");
    options.capacity = 1024;
    let mut writer = ShmWriter::create(options).unwrap();
    let path = writer.path().to_path_buf();
    let done = AtomicBool::new(false);

    let outputs = std::thread::scope(|scope| {
        // The writer publishes N numbered events as fast as the readers free slots:
        // the ring stays nearly full, and the writer never drops an event.
        let producer = scope.spawn(|| {
            let mut next = 0;
            while next < N {
                let room = u64::from(writer.free_slots()).min(N - next).min(64);
                if room > 0 {
                    let batch: Vec<Event> = (next..next + room).map(seq).collect();
                    assert_eq!(writer.write_batch(&batch), batch.len());
                    next += room;
                } else {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            done.store(true, Ordering::SeqCst);
        });

        let follow = |file: &std::path::Path| {
            Running::spawn(
                telering()
                    .args(["read", "--json", "--follow", "--interval", "1"])
                    .arg(&path)
                    .stdout(std::fs::File::create(file).unwrap()),
            )
        };
        let mut outputs = Vec::new();
        for i in 0..KILLS {
            let file = dir.path().join(format!("reader-{i}.jsonl"));
            let mut reader = follow(&file);
            // Kill it mid-stream, once it has printed about a thousand events.
            let deadline = Instant::now() + Duration::from_secs(60);
            while std::fs::metadata(&file).unwrap().len() < 100_000 {
                assert!(Instant::now() < deadline, "reader {i} printed too little");
                std::thread::sleep(Duration::from_millis(1));
            }
            reader.child.kill().unwrap();
            reader.wait();
            outputs.push(file);
        }
        assert!(
            !done.load(Ordering::SeqCst),
            "the writer finished before the last kill"
        );
        // A last reader takes the rest, and stops on Ctrl-C once the ring is empty.
        let file = dir.path().join("reader-last.jsonl");
        let mut last = follow(&file);
        producer.join().unwrap();
        let drained = eventually(Duration::from_secs(60), || (fill(&path) == 0).then_some(()));
        assert!(drained.is_some(), "the last reader did not drain the ring");
        signal(&last.child, "-INT");
        assert_eq!(last.wait(), Some(0));
        outputs.push(file);
        outputs
    });
    let published = writer.events_published();
    assert_eq!((published, writer.events_dropped()), (N, 0));

    let mut seen: BTreeMap<u64, u64> = BTreeMap::new();
    let mut per_reader = Vec::new();
    for file in &outputs {
        let got = complete_values(file);
        per_reader.push(got.len());
        for v in got {
            *seen.entry(v).or_default() += 1;
        }
    }
    // Nothing lost: the readers together printed every event published.
    let missing: Vec<u64> = (0..N).filter(|v| !seen.contains_key(v)).collect();
    assert!(
        missing.is_empty(),
        "lost {} events, first {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    assert_eq!(seen.len() as u64, published);
    // Repeated: at most one batch per killed reader.
    let repeated: u64 = seen.values().map(|n| n - 1).sum();
    assert!(
        repeated <= KILLS as u64 * READ_BATCH,
        "{repeated} events printed twice after {KILLS} kills (outputs {per_reader:?})"
    );
    writer.close().unwrap();
}

#[test]
fn read_refuses_positions_the_trailer_contradicts_and_leaves_the_file_untouched() {
    use std::os::unix::fs::FileExt;
    let dir = scratch();
    let mut options = WriterOptions::new(dir.path(), "agent");
    options.capacity = 64;
    let mut writer = ShmWriter::create(options).unwrap();
    writer.write_batch(&(0..5).map(seq).collect::<Vec<_>>());
    let path = writer.path().to_path_buf();
    writer.close().unwrap();
    // `read_pos` 10, past `write_pos` 5: 59 slots that were never written look unread.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&10u64.to_le_bytes(), 8).unwrap();
    let before = std::fs::read(&path).unwrap();
    for follow in [false, true] {
        let mut cmd = telering();
        cmd.args(["read", "--json"]).arg(&path);
        if follow {
            cmd.arg("--follow");
        }
        let o = run_in(dir.path(), &mut cmd);
        assert_fails(&o, 1, &[path_str(&path), "`read_pos`", "left untouched"]);
        assert_eq!(stdout(&o), "", "no phantom events");
        assert_eq!(std::fs::read(&path).unwrap(), before, "the file changed");
    }
}
