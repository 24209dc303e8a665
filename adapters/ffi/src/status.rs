//! Status codes, the thread-local last-error message, and the guard every entry
//! point runs its body in.
//!
//! Every function of the C API returns a [`telering_status_t`]. Zero and the positive
//! codes are outcomes a caller expects (recorded, filtered, dropped, no event yet);
//! negative codes are errors, and each error also leaves a message in
//! [`telering_last_error`] naming the argument, variable, file or field at fault.
//!
//! `guard` wraps each entry point's body in `catch_unwind`: a Rust panic never
//! unwinds into C; it becomes [`telering_status_t::TELERING_ERR_INTERNAL`] with the
//! panic's message.

use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// What a call did. Zero and positive: the call worked (see each code); negative: it
/// failed, and `telering_last_error()` says why.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum telering_status_t {
    /// Done; for recording, the event was written.
    TELERING_OK = 0,
    /// Recording: nothing was recorded because telemetry is disabled or the
    /// `NIXL_TELEMETRY_ENABLED_METRICS` allowlist excludes the name. Not an error.
    TELERING_FILTERED = 1,
    /// Recording: the recording thread's lane (or the backend buffer) was full; the
    /// event is counted as dropped and reported in `agent_telemetry_events_dropped`.
    TELERING_DROPPED = 2,
    /// Reading: no event is waiting now. Not an error; try again later.
    TELERING_EMPTY = 3,
    /// Recording through a `telering_recorder_t` whose `telering_t` was destroyed:
    /// nothing will ever export the event, so it was not written; it is counted as
    /// dropped. Destroy recorders before their telemetry.
    TELERING_CLOSED = 4,
    /// A pointer argument that must not be NULL was NULL.
    TELERING_ERR_NULL_POINTER = -1,
    /// The handle is not of the type the function takes, or it was destroyed.
    TELERING_ERR_INVALID_HANDLE = -2,
    /// An event name is empty, longer than 31 bytes, not UTF-8, or contains a NUL or a
    /// control character (a newline, an `ESC`…).
    TELERING_ERR_INVALID_NAME = -3,
    /// Another argument is out of range (a category, a mode, a struct size).
    TELERING_ERR_INVALID_ARGUMENT = -4,
    /// A `NIXL_TELEMETRY_*` variable or an option is unusable, or the exporter could not start.
    TELERING_ERR_CONFIG = -5,
    /// Per-transfer or backend telemetry was asked for while capture is off
    /// (`NIXL_ERR_NO_TELEMETRY` in NIXL).
    TELERING_ERR_NO_TELEMETRY = -6,
    /// A file does not exist.
    TELERING_ERR_NOT_FOUND = -7,
    /// A system call on a file failed (permission, not a regular file, mapping).
    TELERING_ERR_IO = -8,
    /// A ring file's header, trailer or slot stamps are invalid, or it was truncated
    /// while being read. The file is left as it was.
    TELERING_ERR_CORRUPT_FILE = -9,
    /// An event could not be decoded. The ring readers do not return it: they deliver
    /// an event that does not validate as found, with `TELERING_EVENT_LENIENT`.
    TELERING_ERR_CORRUPT_EVENT = -10,
    /// An observer cannot follow this ring (its writer does not stamp slots); open
    /// it as the draining reader instead.
    TELERING_ERR_UNSUPPORTED = -11,
    /// Exporting failed during a flush; the events are counted as dropped.
    TELERING_ERR_EXPORT = -12,
    /// Another writer holds the ring file.
    TELERING_ERR_BUSY = -13,
    /// A bug in telering: a panic was caught at the boundary. The message says where.
    TELERING_ERR_INTERNAL = -100,
}

pub(crate) use telering_status_t as Status;

/// A failed call: its status and the message for `telering_last_error()`.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) status: Status,
    pub(crate) message: String,
}

impl Failure {
    pub(crate) fn new(status: Status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn null(function: &str, argument: &str) -> Failure {
        Failure::new(
            Status::TELERING_ERR_NULL_POINTER,
            format!("{function}: argument `{argument}` is NULL"),
        )
    }
}

pub(crate) type Outcome = Result<Status, Failure>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    // An interior NUL cannot be represented; cut the message there.
    let end = message.find('\0').unwrap_or(message.len());
    let text = CString::new(&message[..end]).unwrap_or_default();
    // `try_with`: during thread teardown the slot may be gone; the status still says it.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = text);
}

/// Runs an entry point's body: a panic becomes `TELERING_ERR_INTERNAL`, a failure
/// sets the thread's last error. `function` names the entry point in messages.
#[inline]
pub(crate) fn guard(function: &str, body: impl FnOnce() -> Outcome) -> telering_status_t {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(status)) => status,
        Ok(Err(failure)) => {
            set_last_error(&failure.message);
            failure.status
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!(
                "{function}: internal error (a bug in telering): {what}"
            ));
            Status::TELERING_ERR_INTERNAL
        }
    }
}

/// The message of the most recent failed call on this thread, naming the argument,
/// variable, file or field at fault; an empty string if no call has failed on this
/// thread. Successful calls leave it unchanged (like `errno`).
///
/// The pointer stays valid until the next failing telering call on the same thread;
/// copy the text to keep it. Never returns NULL.
///
/// Thread safety: thread-local; callable from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn telering_last_error() -> *const c_char {
    const EMPTY: &CStr = c"";
    catch_unwind(|| {
        LAST_ERROR
            .try_with(|slot| slot.borrow().as_ptr())
            .unwrap_or(EMPTY.as_ptr())
    })
    .unwrap_or(EMPTY.as_ptr())
}

/// A short, constant description of `status` (`"TELERING_ERR_INVALID_NAME"`), or
/// `"unknown status"`. The string is static; never NULL.
///
/// Thread safety: callable from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn telering_status_name(status: i32) -> *const c_char {
    use Status::*;
    let all = [
        (TELERING_OK, c"TELERING_OK"),
        (TELERING_FILTERED, c"TELERING_FILTERED"),
        (TELERING_DROPPED, c"TELERING_DROPPED"),
        (TELERING_EMPTY, c"TELERING_EMPTY"),
        (TELERING_CLOSED, c"TELERING_CLOSED"),
        (TELERING_ERR_NULL_POINTER, c"TELERING_ERR_NULL_POINTER"),
        (TELERING_ERR_INVALID_HANDLE, c"TELERING_ERR_INVALID_HANDLE"),
        (TELERING_ERR_INVALID_NAME, c"TELERING_ERR_INVALID_NAME"),
        (
            TELERING_ERR_INVALID_ARGUMENT,
            c"TELERING_ERR_INVALID_ARGUMENT",
        ),
        (TELERING_ERR_CONFIG, c"TELERING_ERR_CONFIG"),
        (TELERING_ERR_NO_TELEMETRY, c"TELERING_ERR_NO_TELEMETRY"),
        (TELERING_ERR_NOT_FOUND, c"TELERING_ERR_NOT_FOUND"),
        (TELERING_ERR_IO, c"TELERING_ERR_IO"),
        (TELERING_ERR_CORRUPT_FILE, c"TELERING_ERR_CORRUPT_FILE"),
        (TELERING_ERR_CORRUPT_EVENT, c"TELERING_ERR_CORRUPT_EVENT"),
        (TELERING_ERR_UNSUPPORTED, c"TELERING_ERR_UNSUPPORTED"),
        (TELERING_ERR_EXPORT, c"TELERING_ERR_EXPORT"),
        (TELERING_ERR_BUSY, c"TELERING_ERR_BUSY"),
        (TELERING_ERR_INTERNAL, c"TELERING_ERR_INTERNAL"),
    ];
    all.iter()
        .find(|(s, _)| *s as i32 == status)
        .map_or(c"unknown status".as_ptr(), |(_, name)| name.as_ptr())
}

/// Reads a C string argument as UTF-8.
///
/// # Safety
///
/// `ptr` is NULL or points to a NUL-terminated string valid for the call.
pub(crate) unsafe fn text<'a>(
    ptr: *const c_char,
    function: &str,
    argument: &str,
) -> Result<&'a str, Failure> {
    if ptr.is_null() {
        return Err(Failure::null(function, argument));
    }
    // SAFETY: non-NULL and NUL-terminated (the caller's promise, stated in the header).
    let bytes = unsafe { CStr::from_ptr(ptr) };
    bytes.to_str().map_err(|e| {
        Failure::new(
            Status::TELERING_ERR_INVALID_ARGUMENT,
            format!(
                "{function}: argument `{argument}` is not valid UTF-8 (from byte {})",
                e.valid_up_to()
            ),
        )
    })
}

/// Reads an optional C string argument: NULL is `None`.
///
/// # Safety
///
/// As for [`text`].
pub(crate) unsafe fn optional_text<'a>(
    ptr: *const c_char,
    function: &str,
    argument: &str,
) -> Result<Option<&'a str>, Failure> {
    if ptr.is_null() {
        Ok(None)
    } else {
        // SAFETY: forwarded.
        unsafe { text(ptr, function, argument) }.map(Some)
    }
}

/// Writes `value` through an out-pointer, refusing NULL.
///
/// # Safety
///
/// `out` is NULL or valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(
    out: *mut T,
    value: T,
    function: &str,
    argument: &str,
) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::null(function, argument));
    }
    // SAFETY: non-NULL and valid for writes (the caller's promise); `write` does not
    // drop whatever bytes were there.
    unsafe { out.write(value) };
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        // SAFETY: `telering_last_error` never returns NULL and the text stays valid
        // until the next failing call on this thread.
        unsafe { CStr::from_ptr(telering_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_an_internal_error_naming_the_entry_point() {
        let status = guard("telering_example", || panic!("index out of range"));
        assert_eq!(status, Status::TELERING_ERR_INTERNAL);
        assert_eq!(
            last(),
            "telering_example: internal error (a bug in telering): index out of range"
        );
    }

    #[test]
    fn a_failure_sets_the_last_error_and_success_leaves_it() {
        let status = guard("f", || Err(Failure::null("f", "name")));
        assert_eq!(status, Status::TELERING_ERR_NULL_POINTER);
        assert_eq!(guard("g", || Ok(Status::TELERING_OK)), Status::TELERING_OK);
        assert_eq!(last(), "f: argument `name` is NULL");
    }

    #[test]
    fn the_last_error_is_per_thread() {
        guard("f", || Err(Failure::null("f", "x")));
        let other = std::thread::spawn(last).join().unwrap();
        assert_eq!(other, "");
        assert_eq!(last(), "f: argument `x` is NULL");
    }

    #[test]
    fn every_status_has_its_name() {
        let name = |s: i32| {
            // SAFETY: static NUL-terminated strings.
            unsafe { CStr::from_ptr(telering_status_name(s)) }
                .to_str()
                .unwrap()
        };
        assert_eq!(name(0), "TELERING_OK");
        assert_eq!(name(-6), "TELERING_ERR_NO_TELEMETRY");
        assert_eq!(name(-100), "TELERING_ERR_INTERNAL");
        assert_eq!(name(42), "unknown status");
    }
}
