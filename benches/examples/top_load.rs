//! Load for measuring `telering top`: `RINGS` ring files in `DIR`, each written at
//! `RATE` events/s (a realistic mix: tx/rx bytes, requests, transfer and post times,
//! an error now and then) for `SECONDS`.
//!
//! `cargo run --release -p telering-benches --example top_load -- DIR [RINGS] [RATE] [SECONDS]`

use std::time::{Duration, Instant};
use telering_core::{Category, Event, OverflowPolicy, event_name};
use telering_shm::{ShmWriter, WriterOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = args
        .first()
        .ok_or("usage: top_load DIR [RINGS] [RATE] [SECONDS]")?;
    let rings: usize = args.get(1).map_or(Ok(64), |a| a.parse())?;
    let rate: u64 = args.get(2).map_or(Ok(10_000), |a| a.parse())?;
    let seconds: u64 = args.get(3).map_or(Ok(60), |a| a.parse())?;
    let mut writers = (0..rings)
        .map(|i| {
            // Nobody drains these rings: overwrite, so the writers keep publishing
            // and the view sees the full rate.
            let mut options = WriterOptions::new(dir, format!("rank-{i:02}"));
            options.policy = OverflowPolicy::OverwriteOldest;
            ShmWriter::create(options)
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Every 5 ms each ring gets rate/200 events.
    let tick = Duration::from_millis(5);
    let per_tick = (rate / 200) as usize;
    let mix = [
        (Category::Transfer, event_name!("agent_tx_bytes"), 65_536),
        (Category::Transfer, event_name!("agent_rx_bytes"), 65_536),
        (Category::Transfer, event_name!("agent_tx_requests_num"), 1),
        (Category::Performance, event_name!("agent_xfer_time"), 120),
        (
            Category::Performance,
            event_name!("agent_xfer_post_time"),
            4,
        ),
    ];
    let start = Instant::now();
    let mut next = start;
    let mut n: u64 = 0;
    let mut batch = Vec::with_capacity(per_tick);
    let mut written: u64 = 0;
    while start.elapsed() < Duration::from_secs(seconds) {
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_micros() as u64;
        for w in &mut writers {
            batch.clear();
            for _ in 0..per_tick {
                n += 1;
                let (c, name, v) = if n % 997 == 0 {
                    (Category::Error, event_name!("NIXL_ERR_BACKEND"), 1)
                } else {
                    mix[(n % 5) as usize]
                };
                batch.push(Event::new(ts, c, name, v + n % 64));
            }
            written += w.write_batch(&batch) as u64;
        }
        next += tick;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    let dropped: u64 = writers.iter().map(|w| w.events_dropped()).sum();
    for w in writers {
        w.close()?;
    }
    println!(
        "wrote {written} events into {rings} rings in {:.1} s ({:.0}/s per ring), dropped {dropped}",
        start.elapsed().as_secs_f64(),
        written as f64 / start.elapsed().as_secs_f64() / rings as f64
    );
    Ok(())
}
