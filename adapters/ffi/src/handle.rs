//! Handles: how a C pointer is turned back into the Rust object it names, with its
//! type checked.
//!
//! Every handle the library returns points to a [`Tagged`] box: a 64-bit tag naming
//! the handle's type, then the object. Each call checks the tag before it uses the
//! object, so a reader passed where a telemetry is expected gives
//! `TELERING_ERR_INVALID_HANDLE` rather than a crash.
//!
//! Destroying is checked more strictly, without reading through the pointer at all:
//! every live handle's address is kept in a set (taken at create and destroy only,
//! never on a recording path), so destroying a handle twice, or destroying a pointer
//! the library never returned, is detected and answered with
//! `TELERING_ERR_INVALID_HANDLE`. (If the allocator has meanwhile given the same
//! address to a new handle of the same type, the second destroy destroys that one;
//! using a handle after destroy is undefined, as the header says.)

use crate::status::{Failure, Status};
use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};

/// The tag of each handle type: eight ASCII bytes, so a memory dump shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kind {
    pub(crate) tag: u64,
    /// The C type's name, for messages.
    pub(crate) name: &'static str,
}

const fn tag(bytes: &[u8; 8]) -> u64 {
    u64::from_le_bytes(*bytes)
}

pub(crate) const TELEMETRY: Kind = Kind {
    tag: tag(b"TLRtelem"),
    name: "telering_t",
};
pub(crate) const EVENT_HANDLE: Kind = Kind {
    tag: tag(b"TLRevhdl"),
    name: "telering_event_handle_t",
};
pub(crate) const XFER: Kind = Kind {
    tag: tag(b"TLRxfer_"),
    name: "telering_xfer_t",
};
pub(crate) const BACKEND: Kind = Kind {
    tag: tag(b"TLRbcknd"),
    name: "telering_backend_t",
};
pub(crate) const READER: Kind = Kind {
    tag: tag(b"TLRreadr"),
    name: "telering_reader_t",
};

pub(crate) const RECORDER: Kind = Kind {
    tag: tag(b"TLRrcrdr"),
    name: "telering_recorder_t",
};

const ALL: [Kind; 6] = [TELEMETRY, EVENT_HANDLE, XFER, BACKEND, READER, RECORDER];

/// Written over the tag when a handle is destroyed.
const DEAD: u64 = tag(b"TLRdead_");

/// A handle's memory: the tag first (`repr(C)`), so it can be read whatever the type.
#[repr(C)]
pub(crate) struct Tagged<T> {
    tag: u64,
    value: T,
}

/// The addresses of the live handles. A B-tree rather than a hash set: its nodes are
/// reached through pointers to their start, so memory checkers count them as
/// reachable, not "possibly lost", at exit.
static LIVE: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

fn live<R>(f: impl FnOnce(&mut BTreeSet<usize>) -> R) -> R {
    f(&mut LIVE.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Whether `ptr` is a live handle's address (of any kind), without reading it.
pub(crate) fn is_live<O>(ptr: *const O) -> bool {
    live(|set| set.contains(&(ptr as usize)))
}

/// Boxes `value` as a handle of `kind`; the C side sees it as `*mut O`.
pub(crate) fn into_handle<T, O>(kind: Kind, value: T) -> *mut O {
    let ptr = Box::into_raw(Box::new(Tagged {
        tag: kind.tag,
        value,
    }));
    live(|set| set.insert(ptr as usize));
    ptr.cast()
}

/// Checks that `ptr` is a live handle of `kind`. The test is one load and one
/// compare, inlined into every entry point; building the message is out of line.
#[inline(always)]
fn check<O>(ptr: *const O, kind: Kind, function: &str, argument: &str) -> Result<(), Failure> {
    // SAFETY: `ptr` is non-NULL and, by the API's contract, a handle this library
    // returned and has not destroyed: a `Tagged<_>` of some type, whose first field is
    // the 8-aligned `u64` tag, so reading it is valid whatever the handle's type.
    if !ptr.is_null() && unsafe { ptr.cast::<u64>().read() } == kind.tag {
        return Ok(());
    }
    Err(wrong_handle(ptr.cast(), kind.tag, function, argument))
}

#[cold]
#[inline(never)]
fn wrong_handle(ptr: *const u64, wanted: u64, function: &str, argument: &str) -> Failure {
    let kind = ALL
        .into_iter()
        .find(|k| k.tag == wanted)
        .unwrap_or(TELEMETRY);
    if ptr.is_null() {
        return Failure::null(function, argument);
    }
    // SAFETY: as in `check`.
    let found = unsafe { ptr.read() };
    let what = if found == DEAD {
        "a destroyed handle".to_string()
    } else {
        match ALL.into_iter().find(|k| k.tag == found) {
            Some(other) => format!("a {}", other.name),
            None => "not a telering handle".to_string(),
        }
    };
    Failure::new(
        Status::TELERING_ERR_INVALID_HANDLE,
        format!(
            "{function}: argument `{argument}` is {what}, not a {}",
            kind.name
        ),
    )
}

/// The object behind a handle of `kind`, shared.
///
/// # Safety
///
/// `ptr` is NULL or a handle this library returned and has not destroyed, and no
/// call holds it mutably (see each function's thread-safety note).
#[inline(always)]
pub(crate) unsafe fn get<'a, T, O>(
    ptr: *const O,
    kind: Kind,
    function: &str,
    argument: &str,
) -> Result<&'a T, Failure> {
    check(ptr, kind, function, argument)?;
    // SAFETY: the tag says this is a live `Tagged<T>` of `kind` (each kind has one
    // `T`); shared access is what the thread-safety contract allows.
    Ok(unsafe { &(*ptr.cast::<Tagged<T>>()).value })
}

/// The object behind a handle of `kind`, exclusively.
///
/// # Safety
///
/// As for [`get`], and no other call uses the handle at the same time.
#[inline(always)]
pub(crate) unsafe fn get_mut<'a, T, O>(
    ptr: *mut O,
    kind: Kind,
    function: &str,
    argument: &str,
) -> Result<&'a mut T, Failure> {
    check(ptr, kind, function, argument)?;
    // SAFETY: as in `get`; exclusivity is the caller's contract for this function.
    Ok(unsafe { &mut (*ptr.cast::<Tagged<T>>()).value })
}

/// Destroys a handle of `kind`: NULL is accepted and does nothing (as `free(NULL)`);
/// a pointer that is not a live handle is refused without being read.
///
/// # Safety
///
/// `ptr` is NULL, a live handle, or a pointer this library returned and destroyed
/// (detected); no other call uses the handle at the same time.
pub(crate) unsafe fn destroy<T, O>(
    ptr: *mut O,
    kind: Kind,
    function: &str,
) -> Result<Option<T>, Failure> {
    if ptr.is_null() {
        return Ok(None);
    }
    if !live(|set| set.contains(&(ptr as usize))) {
        return Err(Failure::new(
            Status::TELERING_ERR_INVALID_HANDLE,
            format!(
                "{function}: the {} was already destroyed, or was never returned by telering",
                kind.name
            ),
        ));
    }
    check(ptr, kind, function, "handle")?;
    live(|set| set.remove(&(ptr as usize)));
    // SAFETY: the address is in the live set, so it came from `into_handle` and has not
    // been freed; the tag proved the type. Marking it dead first lets a stale copy in
    // another structure be recognised until the memory is reused.
    let boxed = unsafe {
        let tagged = ptr.cast::<Tagged<T>>();
        (*tagged).tag = DEAD;
        Box::from_raw(tagged)
    };
    Ok(Some(boxed.value))
}
