//! Surviving another process truncating a mapped ring file.
//!
//! A ring file is a path anyone with write permission can `ftruncate`. A load or store
//! through a shared mapping into a page the file no longer covers raises `SIGBUS`,
//! which kills the process. Checking the size before each access (one `fstat` per
//! batch) catches a file that stays short, but not one shrunk and re-grown between the
//! check and the access. Linux offers no way to stop another process from truncating
//! a file at a path: mandatory locks are gone, leases only announce the truncation,
//! and seals exist only for memfds, which have no path NIXL's readers could open.
//!
//! So telering catches the fault itself, without `sigsetjmp`:
//!
//! - Every ring mapping is registered (address, length, writable) in a table of
//!   atomics while it is mapped ([`Guard`]). The table is a chain of chunks of
//!   [`CHUNK`] entries: the first is static, and when every entry is taken a new
//!   chunk is allocated and linked on with one compare-and-swap. Chunks are never
//!   freed (their entries are reused), so the handler can walk the chain with plain
//!   atomic loads, and every mapping is protected, however many there are.
//! - A process-wide `SIGBUS` handler, installed once with `SA_SIGINFO | SA_ONSTACK`,
//!   looks up the fault address (`si_addr`). If it lies in a registered mapping, the
//!   handler maps anonymous zero pages over the **whole** mapping with
//!   `mmap(MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS)`, marks the mapping as faulted,
//!   and returns: the faulting instruction runs again on memory that is there. The
//!   mapping is now detached from the file, so nothing more can fault in it.
//! - The owner checks the mark after every batch: the writer counts the batch and
//!   every later event as dropped and reports [`crate::ShmError::Truncated`]; a reader
//!   discards the batch it was reading (it may hold zeros) and returns
//!   [`crate::ShmError::Truncated`].
//! - A fault anywhere else is passed on: to the handler that was installed before
//!   (Rust's own stack-overflow handler, or the host program's), or, if there was
//!   none, by restoring the default action and returning, so the fault happens again
//!   and kills the process as it would have without telering.
//!
//! Why this is sound:
//! - A `SIGBUS` from a memory access is delivered synchronously to the thread that
//!   made it, so the handler runs while that thread is inside an access to the
//!   mapping, that is, while it borrows the value owning the mapping. The owner
//!   deregisters before it unmaps and cannot be dropped during that borrow, so the
//!   handler never replaces memory that has been unmapped and reused for something
//!   else.
//! - `MAP_FIXED` replaces the pages atomically and keeps the address range valid, so
//!   every reference into the mapping stays valid; only the bytes change, and every
//!   party accesses those bytes through atomics only, as for any other process
//!   writing them.
//! - The handler is async-signal-safe: it does atomic loads and stores on a static
//!   table and raw system calls (`mmap` through rustix's raw syscall backend, which
//!   does not touch `errno`; `sigaction` only on the pass-on path).
//!
//! A program that installs its own
//! `SIGBUS` handler after telering's must pass faults on to the previous handler, as
//! telering's does.

use std::sync::Once;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

/// Entries per chunk of the table (a node collector follows one mapping per agent;
/// each reader and writer has one). The first chunk is static; more are added as
/// needed.
pub(crate) const CHUNK: usize = 1024;

struct Entry {
    /// Whose slot this is: taken before `start` is set, released after it is cleared.
    claimed: AtomicBool,
    /// Start address, 0 when the slot holds no mapping.
    start: AtomicUsize,
    len: AtomicUsize,
    writable: AtomicBool,
    faulted: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // only used to initialise the table
const EMPTY: Entry = Entry {
    claimed: AtomicBool::new(false),
    start: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    writable: AtomicBool::new(false),
    faulted: AtomicBool::new(false),
};

/// A chunk of the table, and the next one (null until needed).
struct Chunk {
    entries: [Entry; CHUNK],
    next: AtomicPtr<Chunk>,
}

static FIRST: Chunk = Chunk {
    entries: [EMPTY; CHUNK],
    next: AtomicPtr::new(std::ptr::null_mut()),
};

/// The chunks of the table, first to last, as linked now.
fn chunks() -> impl Iterator<Item = &'static Chunk> {
    let mut next: Option<&'static Chunk> = Some(&FIRST);
    std::iter::from_fn(move || {
        let chunk = next?;
        let after = chunk.next.load(Ordering::Acquire);
        // SAFETY: a non-null `next` was published (release) by `grow` from a leaked
        // `Box`, never freed: valid for `'static`, and made of atomics.
        next = (!after.is_null()).then(|| unsafe { &*after });
        Some(chunk)
    })
}

/// Every entry of the table.
fn entries() -> impl Iterator<Item = &'static Entry> {
    chunks().flat_map(|c| c.entries.iter())
}

/// Links a new, empty chunk after the last one (or finds that another thread did).
fn grow() {
    let fresh = Box::into_raw(Box::new(Chunk {
        entries: [EMPTY; CHUNK],
        next: AtomicPtr::new(std::ptr::null_mut()),
    }));
    let last = chunks().last().unwrap_or(&FIRST);
    if last
        .next
        .compare_exchange(
            std::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_err()
    {
        // Another thread linked one first; ours was never shared.
        // SAFETY: `fresh` came from `Box::into_raw` above and was not published.
        drop(unsafe { Box::from_raw(fresh) });
    }
}
static INSTALL: Once = Once::new();
/// The `SIGBUS` action in place before ours, to pass other faults on to.
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// Registers one mapping with the `SIGBUS` handler for as long as it lives.
/// Drop it before unmapping.
#[derive(Debug)]
pub(crate) struct Guard {
    slot: Option<&'static Entry>,
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("start", &self.start.load(Ordering::Relaxed))
            .field("len", &self.len.load(Ordering::Relaxed))
            .finish()
    }
}

impl Guard {
    /// Protects `len` bytes mapped at `start` (a page-aligned mapping address).
    pub(crate) fn register(start: *mut u8, len: usize, writable: bool) -> Guard {
        install();
        if start.is_null() || len == 0 {
            return Guard { slot: None };
        }
        loop {
            for entry in entries() {
                if entry
                    .claimed
                    .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    entry.faulted.store(false, Ordering::Relaxed);
                    entry.writable.store(writable, Ordering::Relaxed);
                    entry.len.store(len, Ordering::Relaxed);
                    entry.start.store(start as usize, Ordering::Release);
                    return Guard { slot: Some(entry) };
                }
            }
            grow();
        }
    }

    /// The flag the handler sets when an access to this mapping faults (`None` if
    /// the mapping is not protected). It stays this mapping's while the guard lives.
    pub(crate) fn flag(&self) -> Option<&'static AtomicBool> {
        self.slot.map(|entry| &entry.faulted)
    }

    /// Whether an access faulted because the file was truncated, so that the mapping
    /// now holds anonymous zero pages instead of the file.
    pub(crate) fn faulted(&self) -> bool {
        self.slot
            .is_some_and(|entry| entry.faulted.load(Ordering::Acquire))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(entry) = self.slot {
            entry.start.store(0, Ordering::Release);
            entry.len.store(0, Ordering::Release);
            entry.claimed.store(false, Ordering::Release);
        }
    }
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: `sigaction` with a null new action only reads the current one into
        // `previous`, a valid, zeroed `sigaction`.
        let mut previous: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut previous) } != 0 {
            log::warn!("cannot read the SIGBUS action; ring mappings are not protected");
            return;
        }
        let _ = PREVIOUS.set(previous);
        // SAFETY: a zeroed `sigaction` is a valid value to fill in.
        let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: `sa_mask` is a valid signal set to empty.
        unsafe { libc::sigemptyset(&mut action.sa_mask) };
        // SAFETY: `action` is fully initialised and names an `extern "C"` handler of
        // the SA_SIGINFO signature that is async-signal-safe (module docs).
        if unsafe { libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) } != 0 {
            log::warn!("cannot install the SIGBUS handler; ring mappings are not protected");
        }
    });
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid `siginfo_t` to an SA_SIGINFO handler; for
    // SIGBUS, `si_addr` is the faulting address.
    let addr = unsafe { (*info).si_addr() } as usize;
    // Walking the chain is async-signal-safe: atomic loads of chunks that are never
    // freed.
    for entry in entries() {
        let start = entry.start.load(Ordering::Acquire);
        if start == 0 || addr < start {
            continue;
        }
        let len = entry.len.load(Ordering::Acquire);
        if addr - start >= len {
            continue;
        }
        let prot = if entry.writable.load(Ordering::Relaxed) {
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE
        } else {
            rustix::mm::ProtFlags::READ
        };
        // SAFETY: `start..start + len` is a live mapping of a ring file owned by the
        // value whose borrow the faulting thread is inside (module docs); replacing
        // it with anonymous pages keeps the range mapped, and the owner unmaps it
        // later as before.
        let replaced = unsafe {
            rustix::mm::mmap_anonymous(
                start as *mut libc::c_void,
                len,
                prot,
                rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::FIXED,
            )
        };
        if replaced.is_ok() {
            entry.faulted.store(true, Ordering::Release);
            return;
        }
        break;
    }
    pass_on(sig, info, context);
}

/// Hands a fault that is not ours to the previous handler, or restores the default
/// action so that the fault, repeated on return, terminates the process.
fn pass_on(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    if let Some(previous) = PREVIOUS.get() {
        let handler = previous.sa_sigaction;
        if handler != libc::SIG_DFL && handler != libc::SIG_IGN {
            if previous.sa_flags & libc::SA_SIGINFO != 0 {
                // SAFETY: the previous action was installed with SA_SIGINFO, so its
                // handler has this signature; we call it as the kernel would.
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    unsafe { std::mem::transmute(handler) };
                f(sig, info, context);
            } else {
                // SAFETY: without SA_SIGINFO the handler takes only the signal number.
                let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
                f(sig);
            }
            return;
        }
    }
    // SAFETY: a zeroed `sigaction` with SIG_DFL is a valid action; `sigaction` is
    // async-signal-safe.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut());
    }
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
