//! Event names and categories from C: checking a NUL-terminated or counted string as
//! an event name, and a raw integer as a category, with messages that quote the
//! culprit.

use crate::status::{Failure, Status};
use std::ffi::{CStr, c_char};
use telering_core::{Category, EventName};

/// The eight event categories, numbered as NIXL numbers them.
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum telering_category_t {
    /// Memory registration and deregistration.
    TELERING_CATEGORY_MEMORY = 0,
    /// Bytes and requests moved.
    TELERING_CATEGORY_TRANSFER = 1,
    /// Connections made and lost.
    TELERING_CATEGORY_CONNECTION = 2,
    /// Events a transfer backend reports about itself.
    TELERING_CATEGORY_BACKEND = 3,
    /// Error counts, one event per status.
    TELERING_CATEGORY_ERROR = 4,
    /// Latencies and other performance figures.
    TELERING_CATEGORY_PERFORMANCE = 5,
    /// The telemetry system itself and its host.
    TELERING_CATEGORY_SYSTEM = 6,
    /// Anything the program defines.
    TELERING_CATEGORY_CUSTOM = 7,
}

pub(crate) fn category(raw: i32, function: &str) -> Result<Category, Failure> {
    Category::try_from(raw).map_err(|_| {
        Failure::new(
            Status::TELERING_ERR_INVALID_ARGUMENT,
            format!("{function}: argument `category` is {raw}; categories are 0 (TELERING_CATEGORY_MEMORY) to 7 (TELERING_CATEGORY_CUSTOM)"),
        )
    })
}

/// Checks a C string as an event name: 1 to 31 bytes of UTF-8. One pass over at most
/// 32 bytes (never past the terminating NUL); the message for a bad name is built
/// out of line.
///
/// # Safety
///
/// `name` is NULL or NUL-terminated.
#[inline]
pub(crate) unsafe fn event_name(name: *const c_char, function: &str) -> Result<EventName, Failure> {
    if name.is_null() {
        return Err(Failure::null(function, "name"));
    }
    let mut field = [0u8; 32];
    let mut len = 0;
    let mut high_bits = 0u8;
    while len < field.len() {
        // SAFETY: bytes up to and including the NUL are readable (the contract), and
        // the loop stops at the first NUL.
        let byte = unsafe { name.add(len).read() } as u8;
        if byte == 0 {
            break;
        }
        field[len] = byte;
        high_bits |= byte;
        len += 1;
    }
    let bytes = &field[..len];
    // Names are almost always ASCII, which is valid UTF-8 without a decoder pass.
    let text = if high_bits < 0x80 {
        // SAFETY: every byte is below 0x80: ASCII, hence UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    };
    let valid = text.and_then(|text| EventName::new(text).ok());
    match valid {
        Some(checked) => Ok(checked),
        // SAFETY: as above; the cold path reads the whole string for the message.
        None => Err(unsafe { bad_c_name(name, function) }),
    }
}

/// # Safety
///
/// `name` is non-NULL and NUL-terminated.
#[cold]
#[inline(never)]
unsafe fn bad_c_name(name: *const c_char, function: &str) -> Failure {
    // SAFETY: the caller's contract.
    let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
    match name_from_bytes(bytes, function) {
        Err(failure) => failure,
        Ok(_) => Failure::new(
            Status::TELERING_ERR_INTERNAL,
            format!("{function}: a name was refused and then accepted"),
        ),
    }
}

/// Checks `len` bytes at `name` as an event name (they may hold a NUL, which is
/// refused).
///
/// # Safety
///
/// `name` is NULL or valid for reading `len` bytes.
pub(crate) unsafe fn event_name_len(
    name: *const c_char,
    len: usize,
    function: &str,
) -> Result<EventName, Failure> {
    if name.is_null() {
        return Err(Failure::null(function, "name"));
    }
    // SAFETY: non-NULL and valid for `len` bytes (the contract).
    name_from_bytes(
        unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) },
        function,
    )
}

fn name_from_bytes(bytes: &[u8], function: &str) -> Result<EventName, Failure> {
    let invalid = |why: String| {
        Failure::new(
            Status::TELERING_ERR_INVALID_NAME,
            format!("{function}: argument `name` {why}"),
        )
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        invalid(format!(
            "is not valid UTF-8 (from byte {})",
            e.valid_up_to()
        ))
    })?;
    EventName::new(text).map_err(|e| {
        let shown: String = text.chars().take(40).collect();
        invalid(format!(
            "\"{}\" is invalid: {}",
            telering_core::text::Escaped::new(&shown),
            c_wording(&e)
        ))
    })
}

/// A name error in a C programmer's terms (the core's message suggests a Rust
/// constructor).
pub(crate) fn c_wording(e: &telering_core::NameError) -> String {
    match e {
        telering_core::NameError::TooLong { len } => format!(
            "event name is {len} bytes long; at most {} bytes fit (shorten it, e.g. with snprintf into a 32-byte buffer)",
            telering_core::event::NAME_MAX_LEN
        ),
        other => other.to_string(),
    }
}
