//! A memory window on something other than a regular file
//! (`ObserverReader::open_core_window_at`): a character device is opened and mapped,
//! its extent taken from the header alone, so `/dev/zero` is refused for what lies
//! there (no ring header), naming the path and the offset; a device the kernel cannot
//! map (`/dev/null`) is a window error naming the path, the offset and the reason; a
//! FIFO and a directory are still refused as not regular files, without blocking.

mod common;

use common::TempDir;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;
use telering_core::ObserverStart;
use telering_shm::{ObserverReader, ShmError};

/// Opens the window in another thread, so that an open that blocks fails the test
/// instead of hanging it.
fn open_window(path: &Path, offset: u64) -> Result<ObserverReader, ShmError> {
    let (tx, rx) = mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(ObserverReader::open_core_window_at(
            &owned,
            offset,
            ObserverStart::Oldest,
        ));
    });
    rx.recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("opening {} at {offset} blocked", path.display()))
}

#[test]
fn dev_zero_is_mapped_as_a_device_and_refused_for_holding_no_ring_header() {
    for offset in [0, 8, 4096, 4096 + 24, 3 * 4096 - 8] {
        let e = open_window(Path::new("/dev/zero"), offset).unwrap_err();
        let ShmError::Window {
            path,
            offset: at,
            reason,
        } = &e
        else {
            panic!("offset {offset}: {e:?}");
        };
        assert_eq!((path.as_path(), *at), (Path::new("/dev/zero"), offset));
        // The all-zero bytes there are read and found to be no version-1 header,
        // not refused for the kind of file.
        assert!(reason.contains("version 0"), "{e}");
        let text = e.to_string();
        assert!(
            text.starts_with(&format!("/dev/zero: no ring window at offset {offset}:")),
            "{text}"
        );
        assert!(
            !text.contains("not a regular file") && !text.contains("character device"),
            "{text}"
        );
    }
}

#[test]
fn a_device_that_cannot_be_mapped_is_a_window_error_naming_path_offset_and_reason() {
    // /dev/null supports no mmap: the kernel says ENODEV.
    let e = open_window(Path::new("/dev/null"), 4096).unwrap_err();
    assert!(matches!(e, ShmError::Window { offset: 4096, .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with("/dev/null: no ring window at offset 4096:")
            && text.contains("cannot be mapped"),
        "{text}"
    );
}

#[test]
fn a_fifo_and_a_directory_are_still_refused_as_not_regular_files_without_blocking() {
    let dir = TempDir::new("window-devices-fifo");
    let fifo = dir.path().join("fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    for (path, kind) in [(fifo.as_path(), "FIFO"), (dir.path(), "directory")] {
        for offset in [0, 8] {
            match open_window(path, offset) {
                Err(ShmError::NotRegularFile { kind: k, .. }) => assert_eq!(k, kind),
                other => panic!("{}: {other:?}", path.display()),
            }
        }
    }
}
