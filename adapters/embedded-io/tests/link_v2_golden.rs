//! The version-2 encoder's exact bytes: streams recorded from the encoder as first
//! released (`tests/golden/*.bin`) must come out byte for byte the same, whatever is
//! changed inside it (its size on a microcontroller, say). Each stream mixes what
//! decides the bytes: batch boundaries, the name table filling up and names going
//! inline, timestamps going back, clock frames, definitions sent again, and writes that
//! fail part-way through a frame.
//!
//! `TELERING_BLESS=1 cargo test -p telering-embedded-io --test link_v2_golden` writes
//! the files again (only ever on purpose: a change of the wire format).

mod common;

use common::{HELLO, Rng};
use std::path::PathBuf;
use telering_core::{Category, Event, EventName};
use telering_embedded_io::link::LinkEncoder;

/// Names of 1 to 31 bytes: short, long, and the longest a field holds.
fn name(i: u64) -> EventName {
    let text = format!("n{i:02}_{}", "x".repeat((i * 7 % 27) as usize));
    EventName::new(&text).unwrap()
}

fn random_events(rng: &mut Rng, n: usize, names: u64) -> Vec<Event> {
    let mut ts = 1_000u64;
    (0..n)
        .map(|_| {
            ts = match rng.below(12) {
                0 => ts.saturating_sub(rng.below(1 << 20)), // timestamps may go back
                1 => ts.wrapping_add(rng.next()),           // or jump anywhere
                2 => ts + rng.below(1 << 40),
                _ => ts + rng.below(300),
            };
            let value = match rng.below(4) {
                0 => rng.next(),
                1 => rng.below(128),
                _ => rng.below(70_000),
            };
            let category = Category::ALL[rng.below(8) as usize];
            Event::new(ts, category, name(rng.below(names)), value)
        })
        .collect()
}

/// A line that accepts bytes up to each of `fail_at` (in order), then fails the
/// next write once: where a frame is cut depends on the bytes, not on how the encoder
/// splits them into writes.
struct CuttingLine {
    bytes: Vec<u8>,
    fail_at: Vec<usize>,
    cut: bool,
}

impl embedded_io::ErrorType for CuttingLine {
    type Error = embedded_io::ErrorKind;
}

impl embedded_io::Write for CuttingLine {
    fn write(&mut self, buf: &[u8]) -> Result<usize, embedded_io::ErrorKind> {
        if self.cut {
            self.cut = false;
            self.fail_at.remove(0);
            return Err(embedded_io::ErrorKind::BrokenPipe);
        }
        let room = match self.fail_at.first() {
            Some(&at) => at - self.bytes.len(),
            None => buf.len(),
        };
        let n = buf.len().min(room);
        self.bytes.extend_from_slice(&buf[..n]);
        if n < buf.len() {
            self.cut = true;
            if n == 0 {
                return self.write(buf);
            }
        }
        Ok(n)
    }
    fn flush(&mut self) -> Result<(), embedded_io::ErrorKind> {
        Ok(())
    }
}

/// Pushes `events` through an encoder with a `NAMES`-entry table, with flushes,
/// clock frames and definitions sent again now and then; errors are ignored (they
/// are in the stream). Returns the line followed by the encoder's counters.
fn run<const NAMES: usize>(events: &[Event], mut line: CuttingLine, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let mut encoder: LinkEncoder<_, NAMES> = LinkEncoder::new(&mut line, HELLO);
    for e in events {
        let _ = encoder.push(e);
        match rng.below(40) {
            0 | 1 => {
                let _ = encoder.flush();
            }
            2 => {
                let _ = encoder.clock(e.timestamp_us().wrapping_add(rng.below(1 << 30)));
            }
            3 => {
                let _ = encoder.resend_definitions();
            }
            _ => {}
        }
    }
    let _ = encoder.flush();
    let counters = [
        encoder.frames_written(),
        encoder.frames_failed(),
        encoder.events_failed(),
        encoder.events_taken(),
        encoder.names() as u64,
    ];
    drop(encoder);
    // The counters close the recording: they must not change either.
    for c in counters {
        line.bytes.extend_from_slice(&c.to_le_bytes());
    }
    line.bytes
}

fn line(fail_at: &[usize]) -> CuttingLine {
    CuttingLine {
        bytes: Vec::new(),
        fail_at: fail_at.to_vec(),
        cut: false,
    }
}

fn check(file: &str, stream: Vec<u8>) {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests", "golden", file]
        .iter()
        .collect();
    if std::env::var_os("TELERING_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &stream).unwrap();
        return;
    }
    let recorded = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if let Some(at) = recorded.iter().zip(&stream).position(|(a, b)| a != b) {
        panic!(
            "{file}: byte {at} differs (recorded {:#04x}, written {:#04x})",
            recorded[at], stream[at]
        );
    }
    assert_eq!(recorded.len(), stream.len(), "{file}: length");
}

#[test]
fn a_table_of_sixteen_with_names_overflowing_it_writes_the_recorded_bytes() {
    let events = random_events(&mut Rng(11), 700, 40);
    check("table16.bin", run::<16>(&events, line(&[]), 5));
}

#[test]
fn a_small_table_and_many_names_mostly_inline_writes_the_recorded_bytes() {
    let events = random_events(&mut Rng(12), 600, 300);
    check("table4.bin", run::<4>(&events, line(&[]), 6));
}

#[test]
fn no_name_table_at_all_writes_the_recorded_bytes() {
    let events = random_events(&mut Rng(13), 300, 20);
    check("table0.bin", run::<0>(&events, line(&[]), 7));
}

#[test]
fn writes_failing_part_way_through_frames_write_the_recorded_bytes() {
    let events = random_events(&mut Rng(14), 800, 12);
    let cuts: Vec<usize> = (1..40).map(|i| i * 257 + (i * i) % 61).collect();
    let stream = run::<8>(&events, line(&cuts), 8);
    // The counters at the end: frames written, frames failed (every cut), ...
    let failed = u64::from_le_bytes(stream[stream.len() - 32..][..8].try_into().unwrap());
    assert_eq!(failed, cuts.len() as u64);
    check("cut8.bin", stream);
}

#[test]
fn a_name_field_with_bytes_after_its_nul_is_sent_as_the_name_alone() {
    // A record read from a ring another program wrote may carry bytes after the NUL.
    let mut record = Event::new(5, Category::Custom, name(3), 9).to_wire_bytes();
    let nul = record[12..44].iter().position(|&b| b == 0).unwrap();
    for b in &mut record[12 + nul + 1..44] {
        *b = b'#';
    }
    let dirty = Event::from_wire_bytes(&record).unwrap();
    assert_ne!(dirty.name_field(), name(3).field());
    let clean = Event::new(5, Category::Custom, name(3), 9);
    let (dirty_events, clean_events) = (vec![dirty, clean, dirty], vec![clean; 3]);
    let in_table = run::<2>(&clean_events, line(&[]), 9);
    assert_eq!(run::<2>(&dirty_events, line(&[]), 9), in_table);
    check("dirty_name.bin", in_table);
    let inline = run::<0>(&clean_events, line(&[]), 9);
    assert_eq!(run::<0>(&dirty_events, line(&[]), 9), inline);
    check("dirty_name_inline.bin", inline);
}
