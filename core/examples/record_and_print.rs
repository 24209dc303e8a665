//! Records a few events into a ring and prints them: the core on its own, with no
//! operating system services but a clock.
//!
//! Run with `cargo run -p telering-core --example record_and_print`.

use std::time::{SystemTime, UNIX_EPOCH};
use telering_core::builtin::{self, ErrorStatus};
use telering_core::{
    Allowlist, Category, ObserverStart, OverflowPolicy, Recorder, Ring, event_name,
};

fn realtime_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

static RING: Ring<16> = Ring::new();

fn main() {
    let (producer, mut consumer) = RING
        .split(OverflowPolicy::DropNewest)
        .expect("the ring is split once");
    let mut observer = RING
        .observer(ObserverStart::Oldest)
        .expect("the ring is observed");
    let mut recorder = Recorder::new(producer, realtime_us, Allowlist::all());

    recorder.record_builtin(builtin::AGENT_MEMORY_REGISTERED, 64 << 20);
    for i in 1..=4 {
        recorder.record_builtin(builtin::AGENT_TX_BYTES, i << 20);
        recorder.record_builtin(builtin::AGENT_XFER_TIME, 120 + i * 7);
    }
    recorder.record_builtin(ErrorStatus::RemoteDisconnect.event(), 1);
    recorder.record(Category::Custom, &event_name!("queue_depth"), 17);

    while let Some(event) = consumer.pop() {
        let category = event.category().map_or("?", |c| c.short_name());
        let name = event.name().unwrap_or("<invalid name>");
        println!(
            "{:>16} µs  {:<11} {:<28} {}",
            event.timestamp_us(),
            category,
            name,
            event.value()
        );
    }
    let mut seen = 0;
    while observer.poll().is_some() {
        seen += 1;
    }
    println!(
        "observer saw {seen} events, missed {}; producer dropped {}",
        observer.events_missed(),
        recorder.producer().events_dropped()
    );
}
