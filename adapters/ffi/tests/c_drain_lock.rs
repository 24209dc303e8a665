//! C's draining reader (`TELERING_READ_DRAIN`) takes the same one-per-ring lock as
//! telering's other draining readers: a second one is refused with
//! `TELERING_ERR_BUSY` naming the first one's pid, observers are not, and the ring
//! can be drained again once the first one is gone.

mod common;

use common::{compile, program};
use telering_core::{Category, Event, EventName};
use telering_shm::{DrainingReader, ShmWriter, WriterOptions};

#[test]
fn a_second_c_draining_reader_is_refused_with_busy_naming_the_first() {
    let scratch = tempfile::tempdir().unwrap();
    let exe = compile("reader.c", scratch.path());
    let mut writer =
        ShmWriter::create(WriterOptions::new(scratch.path().join("rings"), "a")).unwrap();
    let name = EventName::new("alpha").unwrap();
    writer.write_batch(&[Event::new(1, Category::Custom, name, 7)]);
    let path = writer.path().to_path_buf();
    let read = |mode: &str| {
        program(&exe)
            .arg(&path)
            .arg("1")
            .arg(mode)
            .output()
            .unwrap()
    };

    // This process drains the ring first.
    let first = DrainingReader::open(&path).unwrap();
    let refused = read("drain");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("TELERING_ERR_BUSY"), "{err}");
    assert!(
        err.contains(&format!("pid {}", std::process::id())),
        "{err}"
    );
    // Observers are never refused.
    let observed = read("observe");
    assert!(
        observed.status.success(),
        "{}",
        String::from_utf8_lossy(&observed.stderr)
    );
    // Once the first draining reader is gone, C drains the event.
    drop(first);
    let drained = read("drain");
    assert!(
        drained.status.success(),
        "{}",
        String::from_utf8_lossy(&drained.stderr)
    );
    assert!(
        String::from_utf8_lossy(&drained.stdout).contains("alpha 1 7"),
        "{}",
        String::from_utf8_lossy(&drained.stdout)
    );
}
