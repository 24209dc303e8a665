//! What a writer is asked to make: [`WriterOptions`], and the rule for agent names
//! ([`validate_agent_name`]).

use crate::error::ShmError;
use crate::layout::ClockId;
use crate::ring_layout::RingLayout;
use std::path::PathBuf;
use telering_core::OverflowPolicy;

/// Longest agent name in bytes: a file name on Linux holds at most 255 bytes (a file
/// system may allow fewer; the writer checks the directory's own limit too).
pub const MAX_AGENT_NAME_LEN: usize = 255;

/// The file mode asked for when none is configured; the process umask applies to it,
/// as it does to the file NIXL's writer creates.
pub const DEFAULT_MODE: u32 = 0o644;

/// How to create a ring file. Build with [`WriterOptions::new`] and change fields.
///
/// ```
/// use telering_shm::{ClockId, WriterOptions};
/// use telering_core::OverflowPolicy;
/// let mut options = WriterOptions::new("/tmp/telemetry", "agent-0");
/// assert_eq!(options.capacity, 4096);
/// assert_eq!(options.policy, OverflowPolicy::DropNewest);
/// assert_eq!(options.mode, None); // 0o644 & !umask
/// options.policy = OverflowPolicy::OverwriteOldest; // flight recorder
/// options.mode = Some(0o666); // let other users' draining readers advance `read_pos`
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriterOptions {
    /// The directory (`NIXL_TELEMETRY_DIR`); created if missing.
    pub dir: PathBuf,
    /// The agent's name, which is the file's name.
    pub agent_name: String,
    /// Slots in the ring, a power of two from 2 to 2²⁸ (it holds `capacity − 1`
    /// events). Default 4096.
    pub capacity: u32,
    /// What happens when the ring is full. Default [`OverflowPolicy::DropNewest`],
    /// which NIXL's readers expect. [`OverflowPolicy::OverwriteOldest`] makes a
    /// flight recorder that only telering's readers (which check slot stamps) can read
    /// safely while the writer runs.
    pub policy: OverflowPolicy,
    /// Permission bits of a file the writer creates. `None` (the default) asks for
    /// [`DEFAULT_MODE`] (`0o644`) and lets the process umask remove bits, as NIXL's
    /// writer does; `Some(mode)` sets exactly `mode` whatever the umask, also on a
    /// file reused in place (which otherwise keeps its mode). A draining reader writes
    /// `read_pos`, so it needs write permission: with `0o644` only the writer's user
    /// can drain; observers only need read permission.
    pub mode: Option<u32>,
    /// Remove the file when the writer closes. Default `false`: the file stays for
    /// post-mortem readers.
    pub unlink_on_close: bool,
    /// The clock the event timestamps come from, recorded in the trailer.
    pub clock: ClockId,
    /// The file's layout: NIXL's version 1 (the default: timestamps, categories and
    /// names) or version 4 (what NIXL 1.3.1 and later read; see [`RingLayout`]).
    pub layout: RingLayout,
}

impl WriterOptions {
    /// Defaults for `agent_name` in `dir`.
    pub fn new(dir: impl Into<PathBuf>, agent_name: impl Into<String>) -> Self {
        WriterOptions {
            dir: dir.into(),
            agent_name: agent_name.into(),
            capacity: 4096,
            policy: OverflowPolicy::DropNewest,
            mode: None,
            unlink_on_close: false,
            clock: ClockId::Realtime,
            layout: RingLayout::V1,
        }
    }
}

/// Checks that `name` can be a file name of its own in the telemetry directory.
///
/// ```
/// use telering_shm::validate_agent_name;
/// assert!(validate_agent_name("agent-0").is_ok());
/// for bad in ["", ".", "..", "a/b", "a\0b", "a\nb", "tab\there", "\u{1b}[31m"] {
///     assert!(validate_agent_name(bad).is_err());
/// }
/// assert!(validate_agent_name(&"x".repeat(256)).is_err());
/// // Counted in bytes: 86 three-byte characters are 258 bytes.
/// assert!(validate_agent_name(&"€".repeat(86)).is_err());
/// // Hidden names would be skipped by directory listings.
/// assert!(validate_agent_name(".hidden").is_err());
/// ```
pub fn validate_agent_name(name: &str) -> Result<(), ShmError> {
    let reason = if name.is_empty() {
        Some("it is empty")
    } else if name == "." || name == ".." {
        Some("`.` and `..` name directories")
    } else if name.starts_with('.') {
        Some(
            "it starts with `.`: directory listings (`telering stat DIR`, `telering serve`) skip such hidden files, and `.` names are kept for the writer's temporary files",
        )
    } else if name.contains('/') {
        Some("it contains `/`; use a plain file name")
    } else if name.contains('\0') {
        Some("it contains a NUL byte")
    } else if name.chars().any(char::is_control) {
        Some(
            "it contains a control character (a newline, a tab, an escape…), which would split or garble `telering stat` and every listing that shows it",
        )
    } else if name.len() > MAX_AGENT_NAME_LEN {
        Some("it is longer than 255 bytes, the most a file name holds (counted in bytes of UTF-8)")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(ShmError::InvalidAgentName {
            name: name.to_string(),
            reason,
        }),
        None => Ok(()),
    }
}
