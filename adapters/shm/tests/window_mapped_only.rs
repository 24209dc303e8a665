//! A memory window is opened and followed without any read system call: its header is
//! read through a mapping, as a PCI memory BAR's sysfs file (`resourceN`: `mmap`, no
//! `read`) requires. Proven for real: the window is opened on a thread whose
//! `read`, `pread64`, `readv`, `preadv` and `preadv2` the kernel refuses with `EPERM`
//! (a seccomp filter, which binds that thread alone), at offsets on and off a page,
//! one whose header straddles two pages included.

#![cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]

mod common;

use common::TempDir;
use memmap2::MmapRaw;
use std::path::Path;
use telering_core::ring::{HeaderInfo, RingRegion};
use telering_core::{Category, Event, ObserverStart, OverflowPolicy, Producer, event_name};
use telering_shm::ObserverReader;

const CAPACITY: u32 = 64;

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64

/// Refuses, on the calling thread only, every system call that reads a file into
/// memory (`EPERM`); everything else is allowed.
fn forbid_reads_on_this_thread() {
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k: i64, jt: u8| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt,
        jf: 0,
        k: k as u32,
    };
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    let ret = libc::BPF_RET | libc::BPF_K;
    let denied = [
        libc::SYS_read,
        libc::SYS_pread64,
        libc::SYS_readv,
        libc::SYS_preadv,
        libc::SYS_preadv2,
    ];
    // seccomp_data: `nr` at byte 0, `arch` at byte 4.
    let mut filter = vec![
        stmt(load, 4),
        jeq(i64::from(AUDIT_ARCH), 1),
        stmt(ret, libc::SECCOMP_RET_KILL_PROCESS),
        stmt(load, 0),
    ];
    for (i, nr) in denied.iter().enumerate() {
        // Past the remaining comparisons and the `allow` to the `deny`.
        filter.push(jeq(*nr, (denied.len() - i) as u8));
    }
    filter.push(stmt(ret, libc::SECCOMP_RET_ALLOW));
    filter.push(stmt(
        ret,
        libc::SECCOMP_RET_ERRNO | (libc::EPERM as u32 & libc::SECCOMP_RET_DATA),
    ));
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: PR_SET_NO_NEW_PRIVS takes plain integers; it lets an unprivileged thread
    // install a filter.
    let no_new_privs = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    assert_eq!(no_new_privs, 0);
    // SAFETY: `prog` points at `filter`, alive for the call, of `len` instructions; the
    // kernel copies the program. Without SECCOMP_FILTER_FLAG_TSYNC it binds only
    // this thread (and threads it would start).
    let installed = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &prog as *const libc::sock_fprog,
            0,
            0,
        )
    };
    assert_eq!(installed, 0, "{}", std::io::Error::last_os_error());
}

/// A file of other bytes with a ring laid out at `offset`, `events` pushed into it.
fn window(path: &Path, offset: u64, events: u64) -> RingRegion<MmapRaw> {
    let ring_bytes = HeaderInfo::ring_bytes(u64::from(CAPACITY));
    std::fs::write(path, vec![0x5Au8; (offset + ring_bytes + 100) as usize]).unwrap();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let map = MmapRaw::map_raw(&file).unwrap();
    // SAFETY: `offset + ring_bytes` lies inside the mapping.
    let ptr = unsafe { map.as_mut_ptr().add(offset as usize) };
    // SAFETY: `ptr` is 8-aligned (page-aligned mapping, `offset` a multiple of 8) and
    // valid for `ring_bytes` bytes of the mapping the region owns; nothing else uses
    // the file while `init` runs, and afterwards every access is atomic.
    let region = unsafe { RingRegion::init(map, ptr, ring_bytes as usize, CAPACITY) }.unwrap();
    let mut producer = Producer::from_region(&region, OverflowPolicy::DropNewest).unwrap();
    for seq in 0..events {
        let event = Event::new(seq, Category::Custom, event_name!("win_seq"), seq);
        producer.push(&event).unwrap();
    }
    region
}

#[test]
fn a_window_is_opened_with_read_and_pread_forbidden() {
    let dir = TempDir::new("window-mapped-only");
    // On a page, off one, and a header straddling two pages (40 bytes from 8 before
    // the second page's start).
    let offsets = [0u64, 8, 4096, 4096 + 24, 2 * 4096 - 8];
    let paths: Vec<_> = offsets
        .iter()
        .map(|offset| {
            let path = dir.path().join(format!("ram-{offset}.bin"));
            (path.clone(), *offset, window(&path, *offset, 10))
        })
        .collect();
    let jobs: Vec<_> = paths.iter().map(|(p, o, _)| (p.clone(), *o)).collect();
    let got = std::thread::spawn(move || {
        forbid_reads_on_this_thread();
        // The filter is in force: reading the file the ordinary way is refused.
        let refused = std::fs::read(&jobs[0].0).unwrap_err();
        assert_eq!(refused.raw_os_error(), Some(libc::EPERM), "{refused}");
        jobs.iter()
            .map(|(path, offset)| {
                let mut reader =
                    ObserverReader::open_core_window_at(path, *offset, ObserverStart::Oldest)
                        .unwrap_or_else(|e| panic!("offset {offset}: {e}"));
                let mut values = Vec::new();
                while let Some(e) = reader.poll().unwrap() {
                    values.push(e.value());
                }
                (*offset, values)
            })
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    for (offset, values) in got {
        assert_eq!(values, (0..10).collect::<Vec<_>>(), "offset {offset}");
    }
    drop(paths);
}
