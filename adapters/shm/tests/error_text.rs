//! Error texts name what they found where they found it: the stamp's offset in the
//! ring's own layout, and the bytes present when a file ends inside the trailer.

mod common;

use common::TempDir;
use std::path::{Path, PathBuf};
use telering_core::builtin;
use telering_core::{Category, Event, ObserverStart};
use telering_shm::{ObserverReader, RingLayout, ShmWriter, WriterOptions, stat};

fn v4_ring(dir: &Path) -> PathBuf {
    let mut o = WriterOptions::new(dir, "a");
    o.capacity = 8;
    o.layout = RingLayout::V4;
    let mut w = ShmWriter::create(o).unwrap();
    let tx = Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, 1);
    w.write_batch(&[tx; 3]);
    let path = w.path().to_path_buf();
    w.close().unwrap();
    path
}

#[test]
fn a_bad_stamp_in_a_version_4_ring_names_offset_4() {
    let dir = TempDir::new("error-text-stamp");
    let path = v4_ring(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    // Slot 0 claims event 5, which belongs in slot 5.
    bytes[40 + 4..40 + 8].copy_from_slice(&(5u32 << 2 | 0b10).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let err = ObserverReader::open(&path, ObserverStart::Oldest).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("slot 0") && text.contains("(offset 4)"),
        "{text}"
    );
}

#[test]
fn a_file_ending_inside_the_trailer_says_how_many_bytes_are_there() {
    let dir = TempDir::new("error-text-trailer");
    let path = v4_ring(dir.path());
    let ring_bytes = 40 + 8 * 16;
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(ring_bytes + 16).unwrap();
    let text = stat(&path).unwrap_err().to_string();
    assert!(
        text.contains("ends 16 bytes after the last slot") && text.contains("72 bytes long"),
        "{text}"
    );
    assert!(!text.contains("`trailer_size` is 16"), "{text}");
}

#[test]
fn a_foreign_trailer_of_the_right_size_is_named_as_not_telerings() {
    let dir = TempDir::new("error-text-foreign-trailer");
    let path = v4_ring(dir.path());
    let ring_bytes = 40 + 8 * 16;
    let mut bytes = std::fs::read(&path).unwrap();
    let trailer = bytes.len() - ring_bytes;
    // Random bytes where the trailer is: the size still fits ring + trailer.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for b in &mut bytes[ring_bytes..] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    std::fs::write(&path, &bytes).unwrap();
    let text = ObserverReader::open(&path, ObserverStart::Oldest)
        .unwrap_err()
        .to_string();
    assert!(
        text.contains(&format!(
            "the file's last {trailer} bytes are where telering's trailer goes, but they do not begin with its magic `TLRNGTRL`"
        )),
        "{text}"
    );
    // It no longer offers the file's own size as the size it should have.
    let size = bytes.len();
    assert!(!text.contains(&format!("or {size} with")), "{text}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the file is untouched"
    );
}
