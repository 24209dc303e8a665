//! One draining reader per ring: a second is refused, naming the first one's pid;
//! observers are never refused; closing the first lets another drain.

mod common;

use common::TempDir;
use telering_core::builtin;
use telering_core::{Category, Event, ObserverStart};
use telering_shm::{DrainingReader, ObserverReader, ShmError, ShmWriter, WriterOptions};

fn tx(value: u64) -> Event {
    Event::new(1, Category::Transfer, builtin::AGENT_TX_BYTES.name, value)
}

#[test]
fn a_second_draining_reader_is_refused_naming_the_first() {
    let dir = TempDir::new("drain-lock");
    let mut writer = ShmWriter::create(WriterOptions::new(dir.path(), "a")).unwrap();
    let path = writer.path().to_path_buf();
    writer.write_batch(&[tx(1), tx(2)]);
    let mut first = DrainingReader::open(&path).unwrap();
    let err = DrainingReader::open(&path).unwrap_err();
    match &err {
        ShmError::DrainerRunning { path: p, pid } => {
            assert_eq!(p, &path);
            assert_eq!(*pid, Some(std::process::id()));
        }
        other => panic!("{other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains(&format!("pid {}", std::process::id())),
        "{text}"
    );
    assert!(text.contains("telering tail"), "{text}");
    // Observers are not affected.
    let mut observer = ObserverReader::open(&path, ObserverStart::Oldest).unwrap();
    assert_eq!(observer.poll().unwrap().unwrap().value(), 1);
    assert_eq!(first.pop().unwrap().unwrap().value(), 1);
    drop(first);
    let mut second = DrainingReader::open(&path).unwrap();
    assert_eq!(second.pop().unwrap().unwrap().value(), 2);
    // The writer's lock and the drain lock do not disturb each other.
    assert!(second.info().writer_alive);
    writer.write_batch(&[tx(3)]);
    assert_eq!(second.pop().unwrap().unwrap().value(), 3);
}
