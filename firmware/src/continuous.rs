//! Continuous mode (feature `continuous`): the firmware records the demo mix at a set
//! rate, without end, and sends it as link format version 2 (`docs/LINK.md`) on
//! UART0, until the host tells it to stop; then it prints its own totals over
//! semihosting and exits.
//!
//! - Rate: `TELERING_FW_RATE` events per second at build time (default 1000).
//! - Every 10 ms the ring is drained into one batch; every 100 ms a clock frame goes
//!   out (and every 10 s the hello and name table again, for a host that joined
//!   late), and the firmware looks for a byte received on UART0 (from whoever holds
//!   the other end: a terminal, a test) and for the file `telering-stop` in QEMU's
//!   working directory (semihosting `SYS_OPEN`): once either is there, the firmware
//!   drains, prints one `telering total: NAME count=N sum=S` line per name it
//!   recorded into its ring, then `telering totals: recorded=R published=P dropped=D frames=F stack=B`
//!   (events recorded, written into its ring, dropped by its full ring; frames sent;
//!   bytes of stack used at most), and exits with 0.
//! - `TELERING_FW_AGENT` (build time, default `lm3s6965-fw`): the agent name in the
//!   hello, so that two of these firmware can share one bridge.
//! - `TELERING_FW_CLOCK_PPM` (build time, default 0) makes the device clock run fast
//!   (positive) or slow (negative) by that many parts per million: a test build for
//!   the host's clock alignment.
//!
//! The mix is the one `benches/benches/link_throughput.rs` measures: per transfer
//! `agent_tx_bytes`, `agent_tx_requests_num` and `agent_xfer_time`, one in three also
//! `agent_rx_bytes`; `dpu_queue_depth` every third transfer, `dpu_temp_millicelsius`
//! every 30th and a `NIXL_ERR_REMOTE_DISCONNECT` every 150th; besides, an
//! `agent_memory_registered` (a region of 64 KiB to 1 MiB) every 100th transfer, which
//! the benchmark's mix leaves out.

use crate::uart::Uart0;
use core::cell::Cell;
use cortex_m::peripheral::{SYST, syst::SystClkSource};
use telering_core::builtin::{self, ErrorStatus};
use telering_core::{
    Allowlist, Category, Clock, Consumer, EventName, Producer, Recorded, Recorder, Ring, event_name,
};
use telering_embedded_io::link::{Hello, LinkEncoder};

/// Events per second, from `TELERING_FW_RATE` at build time.
const RATE: u64 = parse_u64(option_env!("TELERING_FW_RATE"), 1_000);
/// Device clock error in parts per million, from `TELERING_FW_CLOCK_PPM`.
const CLOCK_PPM: i64 = parse_i64(option_env!("TELERING_FW_CLOCK_PPM"));
/// The agent name in the hello, from `TELERING_FW_AGENT`.
const AGENT: &str = match option_env!("TELERING_FW_AGENT") {
    Some(agent) => agent,
    None => "lm3s6965-fw",
};
const DRAIN_EVERY_US: u64 = 10_000;
const CLOCK_EVERY_US: u64 = 100_000;
/// The hello and name table go out again every 10 s (every 100th clock frame).
const RESEND_EVERY_CLOCKS: u32 = 100;

const fn parse_u64(text: Option<&str>, default: u64) -> u64 {
    let Some(text) = text else { return default };
    let bytes = text.as_bytes();
    let mut value = 0u64;
    let mut i = 0;
    while i < bytes.len() {
        assert!(
            bytes[i].is_ascii_digit(),
            "TELERING_FW_RATE must be a number"
        );
        value = value * 10 + (bytes[i] - b'0') as u64;
        i += 1;
    }
    assert!(value > 0, "TELERING_FW_RATE must be at least 1");
    value
}

const fn parse_i64(text: Option<&str>) -> i64 {
    let Some(text) = text else { return 0 };
    let (negative, digits) = match text.as_bytes() {
        [b'-', ..] => (true, text.split_at(1).1),
        _ => (false, text),
    };
    let value = parse_u64(Some(digits), 0) as i64;
    if negative { -value } else { value }
}

/// The device clock: SysTick as a free-running 24-bit down-counter at the core clock,
/// without its interrupt, extended to 64 bits at each reading; made fast or slow by
/// `CLOCK_PPM`.
///
/// Unlike the interrupt-counted clock of the fixed sequence, it cannot lose a
/// millisecond when the core is held off: it only needs a reading every 335 ms (2²⁴
/// ticks at 50 MHz), and the main loop reads it continuously. Under QEMU even that
/// can fail: the emulator's CPU thread may be descheduled on a busy host for longer,
/// while the host's time runs on, and the counter does not show the time it missed
/// (QEMU stopped for 1.5 s, `telering bridge` then measured the clock 17.6 % slow:
/// `adapters/cli/tests/firmware_qemu.rs`). Silicon has no such pause. So every 100 ms [`FreeRunningClock::repair_pause`] compares the ticks counted
/// with the host's elapsed time (semihosting `SYS_ELAPSED`, nanoseconds, and
/// `SYS_TICKFREQ`), and when the device counted more than 50 ms less, adds what it
/// missed. A clock error of `CLOCK_PPM` (at most parts per thousand: 0.1 ms in 100 ms)
/// never comes near that threshold, so the clock's rate stays the device's own.
#[derive(Debug)]
pub struct FreeRunningClock {
    last: Cell<u32>,
    ticks: Cell<u64>,
    /// (ticks, host ticks of `SYS_ELAPSED`) at the previous check.
    anchor: Cell<Option<(u64, u64)>>,
}

/// A difference from the host's elapsed time beyond this (in core ticks: 50 ms) is a
/// pause of the emulator, not a clock error.
const PAUSE_TICKS: u64 = crate::sysctl::CORE_HZ as u64 / 20;

impl FreeRunningClock {
    fn start(mut syst: SYST) -> FreeRunningClock {
        syst.disable_interrupt();
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(0x00FF_FFFF);
        syst.clear_current();
        syst.enable_counter();
        FreeRunningClock {
            last: Cell::new(SYST::get_current()),
            ticks: Cell::new(0),
            anchor: Cell::new(None),
        }
    }

    /// Adds the time an emulator pause hid from the counter since the previous call
    /// (see the type's docs); without semihosting's clock, does nothing.
    fn repair_pause(&self) {
        use semihosting::sys::arm_compat::{sys_elapsed, sys_tickfreq};
        let (Ok(host), Ok(freq)) = (sys_elapsed(), sys_tickfreq()) else {
            return;
        };
        let freq = freq.max(1) as u64;
        self.now_us();
        let ticks = self.ticks.get();
        if let Some((then_ticks, then_host)) = self.anchor.get() {
            // In µs first: no 128-bit division linked in, no overflow before a pause of
            // five hours.
            let host_us = host.wrapping_sub(then_host).saturating_mul(1_000_000) / freq;
            let host_ticks = host_us * u64::from(crate::sysctl::CORE_HZ / 1_000_000);
            let counted = ticks - then_ticks;
            if host_ticks > counted + PAUSE_TICKS {
                self.ticks.set(ticks + (host_ticks - counted));
            }
        }
        self.anchor.set(Some((self.ticks.get(), host)));
    }
}

impl Clock for FreeRunningClock {
    fn now_us(&self) -> u64 {
        let current = SYST::get_current();
        let elapsed = self.last.get().wrapping_sub(current) & 0x00FF_FFFF;
        self.last.set(current);
        let ticks = self.ticks.get() + u64::from(elapsed);
        self.ticks.set(ticks);
        let t = ticks / u64::from(crate::sysctl::CORE_HZ / 1_000_000);
        t.wrapping_add_signed((t as i64 / 1_000) * CLOCK_PPM / 1_000)
    }
}

const NAMES: [(Category, EventName); 8] = [
    (Category::Transfer, builtin::AGENT_TX_BYTES.name),
    (Category::Transfer, builtin::AGENT_TX_REQUESTS_NUM.name),
    (Category::Performance, builtin::AGENT_XFER_TIME.name),
    (Category::Transfer, builtin::AGENT_RX_BYTES.name),
    (Category::Custom, event_name!("dpu_queue_depth")),
    (Category::System, event_name!("dpu_temp_millicelsius")),
    (Category::Error, ErrorStatus::RemoteDisconnect.event().name),
    (Category::Memory, builtin::AGENT_MEMORY_REGISTERED.name),
];

/// The mix as a sequence: which name comes next, and its value.
struct Mix {
    state: u32,
    transfer: u32,
    step: u8,
}

impl Mix {
    fn below(&mut self, n: u32) -> u32 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 17;
        self.state ^= self.state << 5;
        self.state % n
    }

    /// The next (name index, value).
    fn next(&mut self) -> (usize, u64) {
        loop {
            let step = self.step;
            self.step += 1;
            let t = self.transfer;
            let event = match step {
                0 => Some((0, 4096 * u64::from(1 + self.below(16)))),
                1 => Some((1, 1)),
                2 => Some((2, u64::from(20 + self.below(1980)))),
                3 => (t % 3 == 0).then(|| (3, 4096 * u64::from(1 + self.below(16)))),
                4 => (t % 3 == 2).then(|| (4, u64::from(self.below(64)))),
                5 => (t % 30 == 29).then(|| (5, u64::from(40_000 + self.below(6_000)))),
                6 => (t % 100 == 99).then(|| (7, 65_536 * u64::from(1 + self.below(16)))),
                _ => {
                    self.step = 0;
                    self.transfer += 1;
                    (t % 150 == 149).then_some((6, 1))
                }
            };
            if let Some(event) = event {
                return event;
            }
        }
    }
}

/// Runs continuous mode; never returns.
pub fn run(
    producer: Producer<&'static Ring<64>>,
    mut consumer: Consumer<&'static Ring<64>>,
    syst: SYST,
) -> ! {
    let mut recorder = Recorder::new(producer, FreeRunningClock::start(syst), Allowlist::all());
    let hello = Hello {
        agent: AGENT,
        firmware_version: env!("CARGO_PKG_VERSION"),
        ticks_per_second: 1_000_000,
        ring_capacity: 64,
    };
    let mut uart = Uart0::init();
    uart.enable_receiver();
    let mut encoder: LinkEncoder<'_, Uart0, 8> = LinkEncoder::new(uart, hello);
    let mut mix = Mix {
        state: 0x2545_F491,
        transfer: 0,
        step: 0,
    };
    let mut totals = [(0u64, 0u64); NAMES.len()];
    let (mut recorded, mut dropped) = (0u64, 0u64);
    let period_us = 1_000_000 / RATE;
    let start = recorder.clock().now_us();
    let (mut next_event, mut next_drain, mut next_clock) = (start, start, start);
    let mut clocks = 0u32;
    loop {
        let now = recorder.clock().now_us();
        while next_event <= now {
            let (i, value) = mix.next();
            let (category, name) = NAMES[i];
            recorded += 1;
            match recorder.record(category, &name, value) {
                Recorded::Written => {
                    totals[i].0 += 1;
                    totals[i].1 += value;
                }
                Recorded::Dropped => dropped += 1,
                Recorded::Filtered => {}
            }
            next_event += period_us;
        }
        if now >= next_drain {
            // UART0 writes cannot fail (the error type is `Infallible`).
            let Ok(_) = encoder.drain(&mut consumer, usize::MAX);
            next_drain += DRAIN_EVERY_US;
        }
        if now >= next_clock {
            recorder.clock().repair_pause();
            let Ok(()) = encoder.clock(recorder.clock().now_us());
            next_clock += CLOCK_EVERY_US;
            clocks += 1;
            if clocks % RESEND_EVERY_CLOCKS == 0 {
                // For a host that started listening after this device: the hello
                // and the name table again (not a new epoch).
                let Ok(()) = encoder.resend_definitions();
            }
            let byte = encoder.writer_mut().take_byte();
            if byte.is_some() || semihosting::fs::File::open(c"telering-stop").is_ok() {
                break;
            }
        }
    }
    // The recorder's last drop report, if any, then everything still in the ring.
    recorder.flush_drop_report();
    let Ok(_) = encoder.drain(&mut consumer, usize::MAX);
    let Ok(()) = encoder.clock(recorder.clock().now_us());
    for (i, (count, sum)) in totals.iter().enumerate() {
        if *count > 0 {
            semihosting::println!(
                "telering total: {} count={} sum={}",
                NAMES[i].1.as_str(),
                count,
                sum
            );
        }
    }
    semihosting::println!(
        "telering totals: recorded={} published={} dropped={} frames={} stack={}",
        recorded,
        recorder.producer().events_published(),
        dropped,
        encoder.frames_written(),
        crate::stack_used()
    );
    semihosting::process::exit(0)
}
