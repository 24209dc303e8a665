//! `EventName::new` on run-time names, for counting instructions with callgrind:
//!
//! ```text
//! cargo build --release -p telering-benches --example name_instructions
//! valgrind --tool=callgrind --toggle-collect='name_instructions::measure_*' \
//!     target/release/examples/name_instructions
//! ```
//!
//! [`CALLS`] calls over names of 11 to 24 bytes (ASCII, as event names almost always
//! are); divide the collected count by [`CALLS`]. Each name and each result passes
//! through `black_box`, so nothing is computed at build time.

use std::hint::black_box;
use telering_core::EventName;

/// Calls per measured function.
pub const CALLS: usize = 30_000;

/// Names of 11 to 24 bytes.
const NAMES: [&str; 6] = [
    "ucx_retries",
    "agent_tx_bytes",
    "queue_depth_peak",
    "agent_xfer_post_time",
    "rdma_completions_ok",
    "backend_reconnect_total_",
];

#[inline(never)]
fn measure_new(names: &[&str]) -> usize {
    let mut ok = 0;
    for i in 0..CALLS {
        let name = black_box(names[i % names.len()]);
        ok += black_box(EventName::new(name)).is_ok() as usize;
    }
    ok
}

fn main() {
    let names = black_box(NAMES);
    assert!(names.iter().all(|n| (11..=24).contains(&n.len())));
    assert_eq!(measure_new(&names), CALLS);
}
