//! The Rust reader's drain rate over one ring file, as the reference for the Python
//! package's `read_numpy` (python/benches/bench_python.py runs both on copies of the
//! same file): opens `PATH` as its draining reader, takes every waiting event into a
//! `Vec` in one `read_batch`, and prints `EVENTS NANOSECONDS` (open included).
//!
//! `cargo run --release -p telering-benches --example drain_file -- PATH`

use std::hint::black_box;
use std::time::Instant;
use telering_shm::DrainingReader;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os().nth(1).ok_or("usage: drain_file PATH")?;
    let start = Instant::now();
    let mut reader = DrainingReader::open(path.as_ref())?;
    let mut events = Vec::with_capacity(reader.info().fill as usize);
    let mut corrupt = 0u64;
    reader.read_batch(usize::MAX, |r| match r {
        Ok(e) => events.push(e),
        Err(_) => corrupt += 1,
    })?;
    let elapsed = start.elapsed();
    // Use every event's value so nothing of the read is optimised away.
    black_box(
        events
            .iter()
            .map(|e| e.value())
            .fold(0u64, u64::wrapping_add),
    );
    let good = events.len();
    if corrupt > 0 {
        eprintln!("{corrupt} corrupt slots skipped");
    }
    println!("{good} {}", elapsed.as_nanos());
    Ok(())
}
