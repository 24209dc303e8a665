//! The ring in a raw memory window shared by two sides, as between DPU firmware and
//! a host process across a PCIe BAR.
//!
//! The device side uses `telering-core` alone: it lays the ring out in the window with
//! `RingRegion::init` (NIXL's 40-byte header, then the slots, no trailer) and writes
//! through the region's `Producer`. The host side reads the same bytes with
//! `telering-shm`'s `DrainingReader` and `ObserverReader`, which accept a ring without
//! a telering trailer. Here the window is a memfd mapped twice — once by the writer,
//! once by each reader — so the two sides share nothing but the bytes, exactly as
//! across a BAR.
//!
//! # A 32-bit writer and the 64-bit positions
//!
//! The header's `write_pos` and `read_pos` are 64-bit little-endian fields that
//! 64-bit readers load as one `u64`. A 32-bit core (a Cortex-M, an i686 process)
//! cannot store 64 bits atomically, and does not need to: positions are masked slot
//! indices, below the capacity (at most 2²⁸), so the high half is always zero.
//! `RingRegion::init` writes both halves once, zero, before anyone reads; after that
//! every position update is a single 32-bit atomic store of the low half (bytes 0..4
//! of `write_pos`, 8..12 of `read_pos`), with release ordering. A 64-bit reader's
//! `u64` load then sees the high half (still zero) and the low half as one value:
//! there is no moment at which the two halves disagree. telering-core does this on
//! every target (`telering_core::ring::AtomicLeU64`), so the 64-bit writer and the 32-bit
//! writer produce the same stores.
//!
//! Two tests prove it with real 32-bit writers:
//! - `window_written_by_a_32_bit_process_is_read_by_64_bit_readers`: this test file
//!   built for `i686-unknown-linux-gnu` (linking it needs `gcc-multilib`), run as a
//!   separate process that writes 10⁷ events into a shared file while this process
//!   drains and observes it;
//! - `window_written_by_cortex_m_firmware_is_read_by_host_readers`: the firmware in
//!   `firmware/` (Cortex-M3, no 64-bit atomics at all) lays a ring out in a static
//!   window under QEMU and hands the window's bytes to the host, where the readers
//!   read them.

use memmap2::MmapRaw;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use telering_core::ring::{HEADER_SIZE, HeaderInfo, RingRegion};
use telering_core::{Category, Event, EventName, ObserverStart, OverflowPolicy, Producer};
use telering_shm::{DrainingReader, ObserverReader};

const STRESS_EVENTS: u64 = 10_000_000;
const CAPACITY: u32 = 1024;
const ROLE: &str = "TELERING_WINDOW_ROLE";

fn window_len() -> u64 {
    HeaderInfo::ring_bytes(u64::from(CAPACITY))
}

fn event(seq: u64) -> Event {
    const NAME: EventName = EventName::from_static("dpu_window_seq");
    Event::new(seq, Category::Custom, NAME, seq)
}

/// An anonymous shared-memory file of exactly one ring: header and slots, no trailer.
fn memfd_window() -> File {
    let fd = rustix::fs::memfd_create(c"telering-window", rustix::fs::MemfdFlags::CLOEXEC)
        .expect("memfd_create");
    let file = File::from(fd);
    file.set_len(window_len()).unwrap();
    file
}

/// The device side's mapping with a fresh ring laid out in it.
struct DeviceSide {
    region: RingRegion<MmapRaw>,
}

impl DeviceSide {
    fn init(file: &File) -> DeviceSide {
        let map = MmapRaw::map_raw(file).expect("map the window");
        let (ptr, len) = (map.as_mut_ptr(), map.len());
        // SAFETY: the mapping is page-aligned, `window_len()` bytes long and owned by
        // the region (it stays at its address when `MmapRaw` moves); no reader has
        // opened the window yet, so `init` has it to itself, and afterwards every side
        // accesses it only through atomics.
        let region = unsafe { RingRegion::init(map, ptr, len, CAPACITY) }.expect("init");
        DeviceSide { region }
    }

    /// Writes events `0..count` once each; a push into a full ring is counted as
    /// dropped by the producer, and the writer yields to let the host catch up.
    /// Returns (published, dropped).
    fn write(&self, count: u64) -> (u64, u64) {
        // This is the window's only producer.
        let mut producer = Producer::from_region(&self.region, OverflowPolicy::DropNewest)
            .expect("a writable region");
        for seq in 0..count {
            if producer.push(&event(seq)).is_err() {
                thread::yield_now();
            }
        }
        (producer.events_published(), producer.events_dropped())
    }
}

/// What a reader saw: events in strictly increasing order, nothing invalid.
#[derive(Debug, Default)]
struct Seen {
    events: u64,
    last: Option<u64>,
    /// Sequence numbers skipped between consecutive events.
    gaps: u64,
}

impl Seen {
    fn take(&mut self, result: Result<Event, telering_shm::ShmError>) {
        let e = result.unwrap_or_else(|err| panic!("corrupt slot: {err}"));
        assert_eq!(e, event(e.value()), "event bytes intact");
        let seq = e.value();
        let expected = self.last.map_or(0, |l| l + 1);
        assert!(
            seq >= expected,
            "event {seq} after {:?}: out of order",
            self.last
        );
        self.gaps += seq - expected;
        self.last = Some(seq);
        self.events += 1;
    }
}

/// Drains and observes the window until `writer_done` is set and nothing is left.
fn read_until_done(
    drain: &mut DrainingReader,
    observer: &mut ObserverReader,
    writer_done: &AtomicBool,
) -> (Seen, Seen) {
    let mut drained = Seen::default();
    let mut observed = Seen::default();
    loop {
        let done = writer_done.load(Ordering::Acquire);
        let n = drain
            .read_batch(256, |r| drained.take(r))
            .expect("drain the window");
        let m = observer
            .read_batch(256, |r| observed.take(r))
            .expect("observe the window");
        if n == 0 && m == 0 {
            if done {
                return (drained, observed);
            }
            thread::yield_now();
        }
    }
}

#[test]
fn window_stress_every_event_is_delivered_or_counted() {
    let file = memfd_window();
    let device = DeviceSide::init(&file);
    let mut drain =
        DrainingReader::from_file(file.try_clone().unwrap(), "memfd window").expect("drainer");
    let mut observer = ObserverReader::from_core_window(
        file.try_clone().unwrap(),
        "memfd window",
        ObserverStart::Oldest,
    )
    .expect("observer");
    assert_eq!(drain.info().trailer, None);
    assert_eq!(drain.info().capacity, u64::from(CAPACITY));

    let writer_done = AtomicBool::new(false);
    let published = AtomicU64::new(0);
    let (drained, observed, dropped) = thread::scope(|s| {
        let writer = s.spawn(|| {
            let (p, d) = device.write(STRESS_EVENTS);
            published.store(p, Ordering::Relaxed);
            writer_done.store(true, Ordering::Release);
            d
        });
        let (drained, observed) = read_until_done(&mut drain, &mut observer, &writer_done);
        (drained, observed, writer.join().unwrap())
    });
    let published = published.load(Ordering::Relaxed);

    // Every event recorded is either drained or counted as dropped by the writer,
    // and the gaps the drainer saw are exactly those drops.
    assert_eq!(published + dropped, STRESS_EVENTS);
    assert_eq!(drained.events, published);
    assert_eq!(
        drained.gaps + (STRESS_EVENTS - 1 - drained.last.unwrap()),
        dropped
    );
    // The observer saw or counted every published event, exactly: it is never
    // anywhere near 2²⁹ events behind, so no loss may go uncounted.
    assert_observer_accounted(&observed, &observer, published);
    assert_eq!(drain.info().fill, 0);
    eprintln!(
        "window: {published} delivered, {dropped} dropped; observer saw {} and missed {}",
        observed.events,
        observer.events_missed()
    );
}

/// The observer delivered or counted every one of the `published` events (it saw each
/// at most once: `Seen` checks the order) and never lost count of how many it missed.
fn assert_observer_accounted(observed: &Seen, observer: &ObserverReader, published: u64) {
    let missed = observer.events_missed();
    let accounted = observed.events + missed;
    let state = format!(
        "observer saw {} (last {:?}, gaps {}), counted {missed} missed, lost count {} times; \
         {published} published",
        observed.events,
        observed.last,
        observed.gaps,
        observer.lag_unknown(),
    );
    assert_eq!(
        observer.lag_unknown(),
        0,
        "an observer never 2^29 behind lost count of what it missed: {state}"
    );
    assert_eq!(
        accounted,
        published,
        "seen + missed differs from published by {}: {state}",
        accounted as i128 - published as i128
    );
}

#[test]
fn positions_in_the_window_are_low_halves_with_zero_high_words() {
    let file = memfd_window();
    let device = DeviceSide::init(&file);
    let count = u64::from(CAPACITY) * 3 + 5;
    let mut drain = DrainingReader::from_file(file.try_clone().unwrap(), "memfd window").unwrap();
    let mut drained = Seen::default();
    // Write in steps so that the positions wrap around the ring several times.
    let mut sent = 0;
    while sent < count {
        let step = (count - sent).min(u64::from(CAPACITY) / 2);
        // One producer at a time, each continuing from the header and the stamps.
        let mut producer =
            Producer::from_region(&device.region, OverflowPolicy::DropNewest).unwrap();
        for seq in sent..sent + step {
            producer.push(&event(seq)).unwrap();
        }
        sent += step;
        drain.read_batch(usize::MAX, |r| drained.take(r)).unwrap();
        let header = read_header(&file);
        let expected = sent % u64::from(CAPACITY);
        assert_eq!(header[4..8], [0; 4], "write_pos high half");
        assert_eq!(header[12..16], [0; 4], "read_pos high half");
        let info = HeaderInfo::parse(&header, window_len() as usize).unwrap();
        assert_eq!((info.write_pos, info.read_pos), (expected, expected));
    }
    assert_eq!((drained.events, drained.gaps), (count, 0));
}

fn read_header(file: &File) -> [u8; HEADER_SIZE] {
    let mut header = [0u8; HEADER_SIZE];
    file.read_exact_at(&mut header, 0).unwrap();
    header
}

// ---------------------------------------------------------------------------------
// The 32-bit writer: this file built for i686, run as a child process.

/// Runs a child role when this binary is started as one; a no-op in a normal run.
#[test]
fn child_process_entry() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    assert_eq!(role, "writer", "unknown role");
    let path = PathBuf::from(std::env::var("TELERING_WINDOW_PATH").unwrap());
    let count: u64 = std::env::var("TELERING_WINDOW_EVENTS")
        .unwrap()
        .parse()
        .unwrap();
    let file = File::options().read(true).write(true).open(&path).unwrap();
    let device = DeviceSide::init(&file);
    println!("ready pointer_bits={}", usize::BITS);
    let (published, dropped) = device.write(count);
    println!("done published={published} dropped={dropped}");
}

/// Builds this test for i686 in its own target directory; returns the executable.
fn build_i686_writer() -> PathBuf {
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("i686-window-writer");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "test",
            "--package",
            "telering-shm",
            "--test",
            "memory_window",
            "--target",
            "i686-unknown-linux-gnu",
            "--no-run",
            "--message-format=json",
        ])
        .env("CARGO_TARGET_DIR", &target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stderr(Stdio::inherit())
        .output()
        .expect("run cargo");
    assert!(
        output.status.success(),
        "building the i686 writer failed (needs `rustup target add i686-unknown-linux-gnu` and `apt-get install gcc-multilib`)"
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"reason\":\"compiler-artifact\"") && l.contains("memory_window"))
        .find_map(|l| {
            let start = l.find("\"executable\":\"")? + "\"executable\":\"".len();
            let end = start + l[start..].find('"')?;
            Some(PathBuf::from(&l[start..end]))
        })
        .expect("the i686 test executable")
}

#[test]
#[ignore = "needs the i686-unknown-linux-gnu target and gcc-multilib"]
fn window_written_by_a_32_bit_process_is_read_by_64_bit_readers() {
    const EVENTS: u64 = STRESS_EVENTS;
    let writer_exe = build_i686_writer();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("window");
    let file = File::create_new(&path).unwrap();
    file.set_len(window_len()).unwrap();

    let mut child = Command::new(writer_exe)
        .args([
            "child_process_entry",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, "writer")
        .env("TELERING_WINDOW_PATH", &path)
        .env("TELERING_WINDOW_EVENTS", EVENTS.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the i686 writer");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let ready = expect_line(&mut out, "ready");
    assert_eq!(
        ready, "ready pointer_bits=32",
        "the writer is a 32-bit process"
    );

    let mut drain = DrainingReader::open(&path).expect("drainer");
    let mut observer =
        ObserverReader::open_core_window(&path, ObserverStart::Oldest).expect("observer");
    assert_eq!(drain.info().trailer, None);
    let writer_done = AtomicBool::new(false);
    let (drained, observed, done) = thread::scope(|s| {
        let waiter = s.spawn(|| {
            let line = expect_line(&mut out, "done");
            writer_done.store(true, Ordering::Release);
            line
        });
        let (d, o) = read_until_done(&mut drain, &mut observer, &writer_done);
        (d, o, waiter.join().unwrap())
    });
    assert!(child.wait().unwrap().success());
    let field = |name: &str| -> u64 {
        let start = done.find(&format!("{name}=")).unwrap() + name.len() + 1;
        done[start..].split(' ').next().unwrap().parse().unwrap()
    };
    let (published, dropped) = (field("published"), field("dropped"));

    assert_eq!(published + dropped, EVENTS);
    assert_eq!(drained.events, published);
    assert_eq!(drained.gaps + (EVENTS - 1 - drained.last.unwrap()), dropped);
    assert_observer_accounted(&observed, &observer, published);
    let header = read_header(&file);
    assert_eq!(header[4..8], [0; 4], "write_pos high half");
    assert_eq!(header[12..16], [0; 4], "read_pos high half");
    eprintln!(
        "32-bit writer: {published} delivered, {dropped} dropped; observer saw {} and missed {}",
        observed.events,
        observer.events_missed()
    );
    drop((drain, observer));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------
// The Cortex-M writer: the firmware under QEMU.

#[test]
#[ignore = "needs qemu-system-arm and the thumbv7m-none-eabi Rust target"]
fn window_written_by_cortex_m_firmware_is_read_by_host_readers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("firmware-window");
    std::fs::create_dir_all(&out).unwrap();
    let window = out.join("window.bin");
    let _ = std::fs::remove_file(&window);
    let status = Command::new("bash")
        .arg(root.join("firmware/run-qemu.sh"))
        .arg(out.join("uart.bin"))
        .arg(out.join("defmt.bin"))
        .arg(&window)
        .status()
        .expect("run firmware/run-qemu.sh");
    assert!(status.success(), "firmware run failed: {status}");

    // What the firmware wrote (firmware/src/window.rs): 10 events, values 100..=109,
    // into a 16-slot ring, with 32-bit stores only.
    const SLOTS: u64 = 16;
    let values: Vec<u64> = (100..110).collect();
    let header = read_header(&File::open(&window).unwrap());
    assert_eq!(header[4..8], [0; 4], "write_pos high half");
    assert_eq!(header[12..16], [0; 4], "read_pos high half");
    let len = std::fs::metadata(&window).unwrap().len();
    assert_eq!(
        len,
        HeaderInfo::ring_bytes(SLOTS),
        "header and slots, no trailer"
    );
    let info = HeaderInfo::parse(&header, len as usize).unwrap();
    assert_eq!(
        (info.write_pos, info.read_pos, info.capacity),
        (10, 0, SLOTS)
    );

    let check = |events: &[Event]| {
        assert_eq!(events.iter().map(Event::value).collect::<Vec<_>>(), values);
        for e in events {
            assert_eq!(e.name(), Ok("dpu_window_tx_bytes"));
            assert_eq!(e.category(), Ok(Category::Transfer));
        }
        assert!(
            events
                .windows(2)
                .all(|w| w[0].timestamp_us() <= w[1].timestamp_us())
        );
    };
    let mut observer = ObserverReader::open_core_window(&window, ObserverStart::Oldest).unwrap();
    let mut observed = Vec::new();
    observer
        .read_batch(usize::MAX, |r| observed.push(r.unwrap()))
        .unwrap();
    check(&observed);
    assert_eq!(observer.events_missed(), 0);

    let mut drain = DrainingReader::open(&window).unwrap();
    assert_eq!(drain.info().trailer, None);
    assert_eq!(drain.info().fill, 10);
    let mut drained = Vec::new();
    drain
        .read_batch(usize::MAX, |r| drained.push(r.unwrap()))
        .unwrap();
    check(&drained);
    assert_eq!(drain.info().fill, 0);
    let after = read_header(&File::open(&window).unwrap());
    assert_eq!(
        after[8..16],
        10u64.to_le_bytes(),
        "read_pos advanced by the host"
    );
}

fn expect_line(out: &mut impl BufRead, prefix: &str) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "the writer exited before printing {prefix:?}"
        );
        // libtest prints "test child_process_entry ... " before the child's output.
        if let Some(at) = line.find(prefix) {
            return line[at..].trim_end().to_owned();
        }
    }
}
