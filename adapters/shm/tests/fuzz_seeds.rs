//! The seed corpus of the `shm_file` fuzz target: valid ring files, so that the
//! fuzzer starts from inputs that pass validation and reaches the reading code
//! instead of spending its time on headers (see `fuzz/README.md`).
//!
//! The seeds live in `fuzz/seeds/shm_file/<generation>/`, one directory per ring-file
//! generation the readers support; each generation has one function below that
//! returns its `(file name, bytes)` pairs. The test checks that the committed files
//! are exactly what the generator produces; to (re)write them after a change:
//!
//! ```sh
//! TELERING_WRITE_FUZZ_SEEDS=1 cargo test -p telering-shm --test fuzz_seeds
//! ```
//!
//! Adding a generation is one function that returns its seeds and one line in
//! [`generations`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use telering_core::{Category, Event, EventName, OverflowPolicy};
use telering_shm::{DrainingReader, ShmWriter, WriterOptions};

/// Capacities of the seed rings: 2 to 32 slots, so that files stay small (at most
/// 1.9 KiB) and mutations reach every slot.
const CAPACITIES: [u32; 5] = [2, 4, 8, 16, 32];

/// Seeds of one generation: file name and bytes.
type Seeds = Vec<(String, Vec<u8>)>;

/// Every generation and its seeds.
fn generations() -> Vec<(&'static str, Seeds)> {
    vec![("v1", v1_seeds())]
}

/// An event of every category in turn, with names of several lengths (up to the
/// 31-byte maximum).
fn event(i: u64) -> Event {
    const NAMES: [&str; 4] = [
        "agent_tx_bytes",
        "n",
        "NIXL_ERR_REMOTE_DISCONNECT",
        "a_name_of_exactly_31_bytes_long",
    ];
    let category = Category::ALL[i as usize % Category::ALL.len()];
    let name = EventName::new(NAMES[i as usize % NAMES.len()]).unwrap();
    Event::new(1_700_000_000_000_000 + i, category, name, i * 4096)
}

/// A version-1 ring as NIXL's own writer lays it out: header and slots, no trailer,
/// no slot stamps. `written` and `read` count events since the start: event `i`
/// sits in slot `i % capacity`, and the header holds both positions modulo the
/// capacity, as version 1 does.
fn nixl_v1(capacity: u32, written: u64, read: u64) -> Vec<u8> {
    let cap = u64::from(capacity);
    let write_pos = written;
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&(written % cap).to_le_bytes());
    bytes.extend_from_slice(&(read % cap).to_le_bytes());
    bytes.extend_from_slice(&1i32.to_le_bytes()); // version
    bytes.extend_from_slice(&1i32.to_le_bytes()); // expected_version
    bytes.extend_from_slice(&cap.to_le_bytes());
    bytes.extend_from_slice(&(cap - 1).to_le_bytes()); // mask
    let mut slots = vec![[0u8; 56]; capacity as usize];
    // The slots hold the newest `capacity` events up to write_pos.
    for i in write_pos.saturating_sub(cap)..write_pos {
        slots[(i % cap) as usize] = event(i).to_wire_bytes();
    }
    for slot in &slots {
        bytes.extend_from_slice(slot);
    }
    bytes
}

/// A ring written by telering's writer (header, stamped slots, trailer), after
/// `written` events of which a reader took `taken`, with `dropped` losses reported
/// upstream; `close` says whether the writer closed it cleanly. The trailer's pid and
/// heartbeat are fixed so that the seed is the same on every run.
fn telering_v1(
    capacity: u32,
    policy: OverflowPolicy,
    written: u64,
    taken: u64,
    dropped: u64,
    close: bool,
) -> Vec<u8> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "telering-fuzz-seed-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let mut options = WriterOptions::new(&dir, "seed");
    options.capacity = capacity;
    options.policy = policy;
    let mut writer = ShmWriter::create(options).unwrap();
    let path = writer.path().to_path_buf();
    let mut reader = DrainingReader::open(&path).unwrap();
    // In rounds of half the ring, so that it wraps and `read_pos` moves; a ring
    // nobody reads fills up and counts what it refuses.
    let chunk = u64::from(capacity / 2).max(1);
    let (mut next, mut took) = (0, 0);
    while next < written {
        let n = chunk.min(written - next);
        let batch: Vec<Event> = (next..next + n).map(event).collect();
        writer.write_batch(&batch);
        next += n;
        let want = chunk.min(taken - took) as usize;
        took += reader.read_batch(want, |_| {}).unwrap() as u64;
    }
    while took < taken {
        let got = reader.read_batch((taken - took) as usize, |_| {}).unwrap() as u64;
        if got == 0 {
            break;
        }
        took += got;
    }
    if dropped > 0 {
        writer.add_dropped(dropped);
        // With an event, so that the in-band report takes its timestamp rather than
        // the clock's.
        writer.write_batch(&[event(written)]);
    }
    drop(reader);
    let mut bytes = if close {
        writer.close().unwrap();
        std::fs::read(&path).unwrap()
    } else {
        let bytes = std::fs::read(&path).unwrap();
        writer.close().unwrap();
        bytes
    };
    std::fs::remove_dir_all(&dir).unwrap();
    let trailer = 40 + capacity as usize * 56;
    bytes[trailer + 16..trailer + 20].copy_from_slice(&4242u32.to_le_bytes()); // writer_pid
    bytes[trailer + 56..trailer + 64].copy_from_slice(&1_700_000_000_000_000u64.to_le_bytes()); // heartbeat_us
    bytes
}

fn v1_seeds() -> Seeds {
    let mut seeds = Vec::new();
    for cap in CAPACITIES {
        let c = u64::from(cap);
        // No trailer: empty, partly filled, full, and wrapped several times.
        for (label, w, r) in [
            ("empty", 0, 0),
            ("partial", c / 2, 0),
            ("full", c - 1, 0),
            ("wrapped", 3 * c + 1, 3 * c - 1),
            ("wrapped-full", 5 * c - 1, 4 * c),
        ] {
            seeds.push((format!("nixl-{cap}-slots-{label}.ring"), nixl_v1(cap, w, r)));
        }
        // telering's writer: both policies, lapped, with losses, closed or not.
        let drop_newest = OverflowPolicy::DropNewest;
        let overwrite = OverflowPolicy::OverwriteOldest;
        for (label, policy, written, taken, dropped, close) in [
            ("empty", drop_newest, 0, 0, 0, true),
            ("partial", drop_newest, c / 2, 0, 0, true),
            ("full-with-drops", drop_newest, 2 * c, 0, 3, false),
            ("wrapped", drop_newest, 3 * c, 3 * c - 1, 0, true),
            ("overwrite-lapped", overwrite, 3 * c + 1, 0, 0, true),
            ("overwrite-drained", overwrite, 2 * c, c, 2, false),
        ] {
            seeds.push((
                format!("telering-{cap}-slots-{label}.ring"),
                telering_v1(cap, policy, written, taken, dropped, close),
            ));
        }
    }
    seeds
}

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/shm_file")
}

#[test]
fn every_seed_is_a_valid_ring_and_the_committed_corpus_matches_the_generator() {
    let write = std::env::var_os("TELERING_WRITE_FUZZ_SEEDS").is_some();
    for (generation, seeds) in generations() {
        let dir = seeds_dir().join(generation);
        if write {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
        }
        for (name, bytes) in &seeds {
            let path = dir.join(name);
            if write {
                std::fs::write(&path, bytes).unwrap();
            }
            // A seed the readers refuse would teach the fuzzer nothing.
            let info = telering_shm::stat(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                info.trailer.is_some(),
                name.starts_with("telering-"),
                "{name}"
            );
            let committed = std::fs::read(&path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e}; regenerate with TELERING_WRITE_FUZZ_SEEDS=1",
                    path.display()
                )
            });
            assert!(
                committed == *bytes,
                "{} differs from the generator; regenerate with TELERING_WRITE_FUZZ_SEEDS=1",
                path.display()
            );
        }
        let on_disk = std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(on_disk, seeds.len(), "stale files in {}", dir.display());
    }
}
