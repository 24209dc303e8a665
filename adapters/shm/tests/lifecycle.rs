//! The ring file's lifecycle: racing creators, names, leftovers, reuse in place and
//! a full file system.

mod common;

use common::{TempDir, check_event, seq_event};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use telering_shm::{DrainingReader, ShmError, ShmWriter, WriterOptions, stat};

fn options(dir: &Path, name: &str, capacity: u32) -> WriterOptions {
    let mut o = WriterOptions::new(dir, name);
    o.capacity = capacity;
    o
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn of_writers_racing_at_creation_exactly_one_wins_every_time() {
    const ROUNDS: usize = 27;
    const WRITERS: usize = 8;
    for round in 0..ROUNDS {
        let dir = TempDir::new("race");
        // Nothing there, a dead writer's ring of the same shape (reused in place), or
        // of another shape (replaced): the race is won once in every case.
        match round % 3 {
            0 => {}
            1 => drop(ShmWriter::create(options(dir.path(), "agent", 64)).unwrap()),
            _ => drop(ShmWriter::create(options(dir.path(), "agent", 32)).unwrap()),
        }
        let barrier = Arc::new(Barrier::new(WRITERS));
        let threads: Vec<_> = (0..WRITERS)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                let dir = dir.path().to_path_buf();
                std::thread::spawn(move || {
                    barrier.wait();
                    ShmWriter::create(options(&dir, "agent", 64))
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let mut winners = Vec::new();
        for result in results {
            match result {
                Ok(w) => winners.push(w),
                Err(ShmError::WriterAlreadyRunning { .. }) => {}
                Err(e) => panic!("round {round}: unexpected {e}"),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one writer");
        // The winner's file is the one at the path, and it receives every event.
        let mut w = winners.pop().unwrap();
        assert_eq!(
            w.write_batch(&(0..10).map(seq_event).collect::<Vec<_>>()),
            10
        );
        let mut r = DrainingReader::open(w.path()).unwrap();
        let mut got = 0;
        while let Some(e) = r.pop().unwrap() {
            assert_eq!(check_event(&e).unwrap(), got);
            got += 1;
        }
        assert_eq!(got, 10, "round {round}");
        assert_eq!(names_in(dir.path()), ["agent"], "no temporary files left");
    }
}

#[test]
fn agent_names_are_measured_in_bytes_including_the_temporary_name() {
    let dir = TempDir::new("namelen");
    // 80 three-byte characters: 240 bytes, which once failed on the temporary name.
    let long = "€".repeat(80);
    let w = ShmWriter::create(options(dir.path(), &long, 16)).unwrap();
    assert_eq!(w.path().file_name().unwrap().len(), 240);
    w.close().unwrap();
    // 85 of them are 255 bytes: still a valid file name.
    let longest = "€".repeat(85);
    ShmWriter::create(options(dir.path(), &longest, 16))
        .unwrap()
        .close()
        .unwrap();
    // 86 are 258 bytes: refused before anything is created.
    let err = ShmWriter::create(options(dir.path(), &"€".repeat(86), 16)).unwrap_err();
    assert!(matches!(err, ShmError::InvalidAgentName { .. }), "{err}");
    assert!(err.to_string().contains("bytes"), "{err}");
    assert_eq!(names_in(dir.path()), [long, longest]);
}

#[test]
fn hidden_agent_names_are_refused_with_the_reason() {
    let dir = TempDir::new("hidden");
    for name in [".hidden", ".agent.0123456789abcdef.tmp"] {
        let err = ShmWriter::create(options(dir.path(), name, 16)).unwrap_err();
        assert!(matches!(err, ShmError::InvalidAgentName { .. }), "{err}");
        assert!(err.to_string().contains("starts with `.`"), "{err}");
    }
    assert!(names_in(dir.path()).is_empty());
}

/// A valid 40-byte version-1 header of a ring of `capacity` slots.
fn header(capacity: u64) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend(0u64.to_le_bytes());
    h.extend(0u64.to_le_bytes());
    h.extend(1i32.to_le_bytes());
    h.extend(1i32.to_le_bytes());
    h.extend(capacity.to_le_bytes());
    h.extend((capacity - 1).to_le_bytes());
    h
}

#[test]
fn a_ring_header_followed_by_other_data_is_left_untouched() {
    let dir = TempDir::new("userdata");
    let path = dir.path().join("agent");
    let mut bytes = header(16);
    bytes.extend(b"a user's data that merely starts like a ring, and is longer");
    bytes.resize(40 + 16 * 56 + 1000, b'x');
    std::fs::write(&path, &bytes).unwrap();
    let ino = std::fs::metadata(&path).unwrap().ino();
    for capacity in [16, 32] {
        let err = ShmWriter::create(options(dir.path(), "agent", capacity)).unwrap_err();
        assert!(matches!(err, ShmError::NotALeftoverRing { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("left untouched") && text.contains("bytes"),
            "{text}"
        );
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino);
    assert_eq!(names_in(dir.path()), ["agent"]);

    // Exactly a ring and a trailer long, but with other bytes where the trailer goes.
    bytes.truncate(40 + 16 * 56 + 64);
    std::fs::write(&path, &bytes).unwrap();
    let err = ShmWriter::create(options(dir.path(), "agent", 16)).unwrap_err();
    assert!(err.to_string().contains("not a telering trailer"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

/// A python3 process holding `path` open read-write until its stdin closes.
fn hold_open_for_writing(path: &Path) -> std::process::Child {
    hold(
        path,
        "import os,sys; fd=os.open(sys.argv[1], os.O_RDWR); print('open', flush=True); sys.stdin.read()",
    )
}

/// A python3 process that maps `path` shared and writable, then closes the file (as a
/// writer may), holding only the mapping until its stdin closes.
fn hold_mapped_writable(path: &Path) -> std::process::Child {
    hold(
        path,
        "import mmap,os,sys; fd=os.open(sys.argv[1], os.O_RDWR); m=mmap.mmap(fd, 0); os.close(fd); print('open', flush=True); sys.stdin.read()",
    )
}

fn hold(path: &Path, script: &str) -> std::process::Child {
    let mut child = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "open");
    child
}

#[test]
fn a_trailerless_ring_open_for_writing_elsewhere_is_left_untouched_until_closed() {
    let dir = TempDir::new("nixl-live");
    let path = dir.path().join("agent");
    // A NIXL-written ring: exactly header plus slots, no trailer, no lock.
    let mut bytes = header(16);
    bytes.resize(40 + 16 * 56, 0);
    std::fs::write(&path, &bytes).unwrap();
    let ino = std::fs::metadata(&path).unwrap().ino();

    let mut holder = hold_open_for_writing(&path);
    let err = ShmWriter::create(options(dir.path(), "agent", 16)).unwrap_err();
    assert!(matches!(err, ShmError::NotALeftoverRing { .. }), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("process {} has it open for writing", holder.id())),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    drop(holder.stdin.take());
    holder.wait().unwrap();

    // Once nobody writes it, it is a dead ring of the same shape: reused in place,
    // with telering's trailer appended.
    let mut w = ShmWriter::create(options(dir.path(), "agent", 16)).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino);
    assert_eq!(w.write_batch(&[seq_event(3)]), 1);
    let info = stat(&path).unwrap();
    assert_eq!(info.trailer.unwrap().writer_pid, std::process::id());
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 40 + 16 * 56 + 64);
    assert_eq!(info.fill, 1);
}

#[test]
fn a_trailerless_ring_mapped_writable_by_a_live_process_is_left_untouched() {
    let dir = TempDir::new("nixl-mapped");
    let path = dir.path().join("agent");
    let mut bytes = header(16);
    bytes.resize(40 + 16 * 56, 0);
    std::fs::write(&path, &bytes).unwrap();
    let mut holder = hold_mapped_writable(&path);
    let err = ShmWriter::create(options(dir.path(), "agent", 16)).unwrap_err();
    assert!(matches!(err, ShmError::NotALeftoverRing { .. }), "{err}");
    assert!(
        err.to_string()
            .contains(&format!("process {} has it open for writing", holder.id())),
        "{err}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    drop(holder.stdin.take());
    holder.wait().unwrap();
    ShmWriter::create(options(dir.path(), "agent", 16)).unwrap();
}

#[test]
fn a_trailer_naming_a_live_process_that_has_the_file_open_is_left_untouched() {
    let dir = TempDir::new("live-pid");
    let path = dir.path().join("agent");
    ShmWriter::create(options(dir.path(), "agent", 16))
        .unwrap()
        .close()
        .unwrap();
    // Forge what a writer that lost its lock would look like: a live pid that has
    // the file open, and no clean close.
    let mut holder = hold_open_for_writing(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    let trailer = 40 + 16 * 56;
    bytes[trailer + 16..trailer + 20].copy_from_slice(&holder.id().to_le_bytes());
    bytes[trailer + 24..trailer + 28].copy_from_slice(&0u32.to_le_bytes());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .write_all(&bytes)
        .unwrap();
    let err = ShmWriter::create(options(dir.path(), "agent", 16)).unwrap_err();
    assert!(matches!(err, ShmError::NotALeftoverRing { .. }), "{err}");
    assert!(err.to_string().contains("alive"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    drop(holder.stdin.take());
    holder.wait().unwrap();
    // The process is gone: the ring is a leftover now.
    ShmWriter::create(options(dir.path(), "agent", 16)).unwrap();
}

#[test]
fn a_restart_with_the_same_shape_keeps_the_file_and_its_unread_events() {
    let dir = TempDir::new("reuse");
    let mut w = ShmWriter::create(options(dir.path(), "agent", 16)).unwrap();
    let path = w.path().to_path_buf();
    let ino = std::fs::metadata(&path).unwrap().ino();
    assert_eq!(w.write_batch(&(0..5).map(seq_event).collect::<Vec<_>>()), 5);
    let mut reader = DrainingReader::open(&path).unwrap();
    assert_eq!(reader.pop().unwrap().unwrap().value(), 0);
    drop(w);

    let mut w = ShmWriter::create(options(dir.path(), "agent", 16)).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), ino, "same inode");
    assert!(stat(&path).unwrap().writer_alive);
    assert_eq!(w.write_batch(&(5..9).map(seq_event).collect::<Vec<_>>()), 4);
    let mut got = Vec::new();
    while let Some(e) = reader.pop().unwrap() {
        got.push(check_event(&e).unwrap());
    }
    assert_eq!(got, (1..9).collect::<Vec<_>>());
    // Another capacity is another shape: the file is replaced.
    drop(w);
    let _w = ShmWriter::create(options(dir.path(), "agent", 32)).unwrap();
    assert_ne!(std::fs::metadata(&path).unwrap().ino(), ino);
    assert_eq!(stat(&path).unwrap().capacity, 32);
    assert_eq!(names_in(dir.path()), ["agent"]);
}

/// Mounts a tmpfs of `size` at `at`; false where this process may not mount.
fn mount_tmpfs(at: &Path, size: &str) -> bool {
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(at)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What the full-disk check expects of a writer that cannot get its blocks.
fn assert_no_space(err: ShmError, dir: &Path) {
    let ShmError::NoSpace {
        dir: at, needed, ..
    } = &err
    else {
        panic!("expected NoSpace, got {err}");
    };
    assert_eq!(at, dir);
    assert_eq!(*needed, 40 + 65536 * 56 + 64);
    let text = err.to_string();
    assert!(text.contains(&dir.display().to_string()), "{text}");
    assert!(text.contains("3670120 bytes"), "{text}");
    assert!(
        names_in(dir).is_empty(),
        "no file left: {:?}",
        names_in(dir)
    );
}

#[test]
fn a_full_file_system_is_a_typed_error_at_start_and_leaves_no_file() {
    let top = TempDir::new("full");
    let mnt = top.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    if mount_tmpfs(&mnt, "64k") {
        let result = ShmWriter::create(options(&mnt, "f1", 65536));
        let listing = names_in(&mnt);
        let _ = Command::new("umount").arg(&mnt).status();
        assert_no_space(result.unwrap_err(), &mnt);
        assert!(listing.is_empty(), "{listing:?}");
    } else {
        eprintln!("cannot mount a tmpfs here: only the file-size limit case runs");
    }
    // Wherever it runs, a file-size limit makes the same reservation fail (EFBIG), in
    // a child process since the limit is process-wide. Its output goes to pipes, never
    // to an inherited file: the limit also refuses writes to a log file already longer
    // than it, and the child's test harness would fail printing its result.
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["size_limited_child", "--exact", "--nocapture", "--ignored"])
        .env("TELERING_SHM_LIMITED_DIR", &mnt)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the size-limited child failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("size_limited_child ... ok"),
        "the child ran the check: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The child of the full-disk test where mounting is not possible.
#[test]
#[ignore = "run by a_full_file_system_is_a_typed_error_at_start_and_leaves_no_file"]
fn size_limited_child() {
    let Ok(dir) = std::env::var("TELERING_SHM_LIMITED_DIR") else {
        return;
    };
    let dir = Path::new(&dir);
    // SAFETY: ignoring SIGXFSZ makes an oversized write fail with EFBIG instead of
    // killing the process; no handler runs.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    let mut limit = rustix::process::getrlimit(rustix::process::Resource::Fsize);
    limit.current = Some(64 * 1024);
    rustix::process::setrlimit(rustix::process::Resource::Fsize, limit).unwrap();
    assert_no_space(
        ShmWriter::create(options(dir, "f1", 65536)).unwrap_err(),
        dir,
    );
}

/// A writer process of the creation race: waits for `GO` to appear, tries to become
/// the writer, prints the outcome, and (if it won) holds the ring until its stdin
/// closes. A no-op in a normal test run.
#[test]
fn racing_writer_process() {
    let Ok(dir) = std::env::var("TELERING_SHM_RACE_DIR") else {
        return;
    };
    let dir = Path::new(&dir);
    while !dir.join("GO").exists() {
        std::hint::spin_loop();
    }
    let outcome = match ShmWriter::create(options(&dir.join("ring"), "agent", 64)) {
        Ok(w) => {
            println!("outcome won");
            std::io::stdout().flush().unwrap();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut Vec::new());
            drop(w);
            return;
        }
        Err(ShmError::WriterAlreadyRunning { .. }) => "refused".to_string(),
        Err(e) => format!("error {e}"),
    };
    println!("outcome {outcome}");
}

#[test]
fn of_writer_processes_racing_at_creation_exactly_one_wins_every_time() {
    const ROUNDS: usize = 8;
    const WRITERS: usize = 6;
    for round in 0..ROUNDS {
        let dir = TempDir::new("race-proc");
        let children: Vec<_> = (0..WRITERS)
            .map(|_| {
                Command::new(std::env::current_exe().unwrap())
                    .args(["racing_writer_process", "--exact", "--nocapture"])
                    .env("TELERING_SHM_RACE_DIR", dir.path())
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        std::fs::write(dir.path().join("GO"), b"").unwrap();
        let mut outcomes = Vec::new();
        let mut winner = None;
        for mut child in children {
            let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
            let mut line = String::new();
            let outcome = loop {
                line.clear();
                assert!(std::io::BufRead::read_line(&mut out, &mut line).unwrap() > 0);
                if let Some(at) = line.find("outcome ") {
                    break line[at + 8..].trim().to_string();
                }
            };
            if outcome == "won" {
                winner = Some((child, out));
            } else {
                assert!(child.wait().unwrap().success());
            }
            outcomes.push(outcome);
        }
        let won = outcomes.iter().filter(|o| *o == "won").count();
        let refused = outcomes.iter().filter(|o| *o == "refused").count();
        assert_eq!(
            (won, refused),
            (1, WRITERS - 1),
            "round {round}: {outcomes:?}"
        );
        let ring = dir.path().join("ring");
        assert!(stat(&ring.join("agent")).unwrap().writer_alive);
        assert_eq!(names_in(&ring), ["agent"], "no temporary files left");
        let (mut winner, mut out) = winner.unwrap();
        drop(winner.stdin.take());
        std::io::Read::read_to_end(&mut out, &mut Vec::new()).unwrap();
        assert!(winner.wait().unwrap().success());
    }
}
