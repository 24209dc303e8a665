//! A telering agent on a Cortex-M3 without OS, heap or allocator: the LM3S6965 of
//! QEMU's `lm3s6965evb` machine.
//!
//! It records built-in and custom events into a `static` 64-slot ring, timestamped
//! by a SysTick clock, and drains them through both firmware exporters: as
//! COBS/CRC-32 frames on UART0 (feature `frames`) and as defmt log lines over
//! semihosting (feature `defmt-log`). Then it exits through semihosting with status 0.
//!
//! The sequence is fixed so that a host can check every event and value
//! (`adapters/embedded-io/tests/qemu_firmware.rs` does):
//!
//! 1. eight events, built-in and custom — see [`PHASE_ONE`] — then a drain;
//! 2. 70 `dpu_doorbell` events (values 0..=69) into the ring that holds 63: the ring
//!    takes values 0..=62 and the producer counts 7 as dropped; a drain;
//! 3. one more `dpu_doorbell` (value 70): the recorder first writes an
//!    `agent_telemetry_events_dropped` event of value 7, then the event; a drain;
//! 4. `fw_stack_high_water` (category System): the bytes of stack used so far,
//!    measured by scanning the stack that cortex-m-rt painted at reset; a drain.
//!
//! The last defmt line is a summary with the recorder's counters.
//!
//! With feature `window`, it also writes a second ring laid out in a raw memory
//! window, as DPU firmware shares one with its host, and copies the window to the host
//! as the file `telering-window.bin` (see [`window`]).
#![no_std]
#![no_main]
// Continuous mode and the minimal program replace the fixed sequence: its items are
// left unused.
#![cfg_attr(
    any(feature = "continuous", feature = "minimal"),
    allow(dead_code, unused_imports)
)]

#[cfg(feature = "continuous")]
mod continuous;
mod sysctl;
#[cfg(feature = "frames")]
mod uart;
#[cfg(feature = "window")]
mod window;

// The device crate supplies the interrupt vector table and memory.x.
use lm3s6965 as _;
// The defmt global logger: frames go to the host over semihosting (SYS_WRITE).
#[cfg(feature = "defmt-log")]
use defmt_semihosting as _;

use core::sync::atomic::{AtomicU32, Ordering};
use cortex_m::peripheral::{SCB, SYST, syst::SystClkSource};
use cortex_m_rt::{entry, exception};
use telering_core::builtin::{self, BuiltinEvent, ErrorStatus};
use telering_core::{
    Allowlist, Category, Clock, Consumer, EventName, OverflowPolicy, Recorder, Ring, event_name,
};

/// The ring: 64 slots of 56 bytes in `.bss`, no allocator involved.
static RING: Ring<64> = Ring::new();

const TICKS_PER_MS: u32 = sysctl::CORE_HZ / 1_000;

/// Milliseconds since the clock started, counted by the SysTick exception.
static MILLIS: AtomicU32 = AtomicU32::new(0);

/// Microseconds since the clock started, from SysTick: the exception counts
/// milliseconds and the down-counter gives the microseconds within the current one.
///
/// The counter reloads, and the SysTick exception becomes pending, at the same
/// instant; the exception runs (and counts the millisecond) only later, once the core
/// takes it. A reading in between pairs the new millisecond's counter with the old
/// count and would go back by a millisecond, so [`Clock::now_us`] also reads the
/// pending bit:
///
/// 1. read the count, then the counter, then the pending bit;
/// 2. if the count changed meanwhile, the exception ran: read again;
/// 3. if the bit is set, the counter has reloaded at least once since the count was
///    read, and the reload is not counted yet: add that millisecond and re-read the
///    counter, which the bit guarantees is now in the new millisecond;
/// 4. if it is clear, no reload happened before it was read, so the counter read in
///    step 1 belongs to the counted millisecond.
///
/// This assumes that the exception is never held off for a whole millisecond (one
/// pending bit records one reload). It wraps after 49 days.
#[derive(Debug, Clone, Copy)]
struct SysTickClock;

impl SysTickClock {
    fn start(mut syst: SYST) -> SysTickClock {
        syst.set_clock_source(SystClkSource::Core);
        syst.set_reload(TICKS_PER_MS - 1);
        syst.clear_current();
        syst.enable_interrupt();
        syst.enable_counter();
        // The cleared counter reads 0 until it first loads the reload value (one tick
        // on silicon; QEMU's model takes up to a millisecond or two), and readings of 0
        // would place those instants at the end of a millisecond: wait for the load,
        // bounded by two ticks of the millisecond count.
        while SYST::get_current() == 0 && MILLIS.load(Ordering::Acquire) < 2 {}
        SysTickClock
    }
}

impl Clock for SysTickClock {
    fn now_us(&self) -> u64 {
        loop {
            let counted = MILLIS.load(Ordering::Acquire);
            let mut remaining = SYST::get_current();
            let reload_pending = SCB::is_pendst_pending();
            if MILLIS.load(Ordering::Acquire) != counted {
                continue;
            }
            let mut ms = counted;
            if reload_pending {
                ms = ms.wrapping_add(1);
                remaining = SYST::get_current();
            }
            let elapsed = (TICKS_PER_MS - 1).saturating_sub(remaining);
            return u64::from(ms) * 1_000 + u64::from(elapsed) * 1_000 / u64::from(TICKS_PER_MS);
        }
    }
}

#[exception]
fn SysTick() {
    MILLIS.fetch_add(1, Ordering::Release);
}

/// An event this program records: a built-in one, or one of its own.
#[derive(Debug, Clone, Copy)]
enum Recording {
    Builtin(BuiltinEvent, u64),
    Custom(Category, EventName, u64),
}

/// Phase 1: what a DPU agent reports about one registration and one transfer, plus
/// two figures of its own.
static PHASE_ONE: [Recording; 8] = [
    Recording::Builtin(builtin::AGENT_MEMORY_REGISTERED, 65_536),
    Recording::Builtin(builtin::AGENT_TX_BYTES, 4_096),
    Recording::Builtin(builtin::AGENT_TX_REQUESTS_NUM, 1),
    Recording::Builtin(builtin::AGENT_XFER_TIME, 250),
    Recording::Builtin(builtin::AGENT_RX_BYTES, 8_192),
    Recording::Custom(
        Category::Error,
        ErrorStatus::RemoteDisconnect.event().name,
        1,
    ),
    Recording::Custom(Category::Custom, event_name!("dpu_queue_depth"), 17),
    Recording::Custom(
        Category::System,
        event_name!("dpu_temp_millicelsius"),
        41_250,
    ),
];

const DOORBELL: EventName = event_name!("dpu_doorbell");
/// Phase 2 records this many doorbells into a ring that holds 63.
const DOORBELLS: u64 = 70;

/// The frame exporter: version 1, or version 2 with feature `link-v2`.
#[cfg(all(feature = "frames", not(feature = "link-v2")))]
type Frames = telering_embedded_io::FrameExporter<uart::Uart0>;
#[cfg(feature = "link-v2")]
type Frames = telering_embedded_io::link::LinkEncoder<'static, uart::Uart0, 8>;

#[cfg(all(feature = "frames", not(feature = "link-v2")))]
fn frames() -> Frames {
    telering_embedded_io::FrameExporter::new(uart::Uart0::init())
}

#[cfg(feature = "link-v2")]
fn frames() -> Frames {
    let hello = telering_embedded_io::link::Hello {
        agent: "lm3s6965-fw",
        firmware_version: env!("CARGO_PKG_VERSION"),
        ticks_per_second: 1_000_000,
        ring_capacity: 64,
    };
    telering_embedded_io::link::LinkEncoder::new(uart::Uart0::init(), hello)
}

/// Both exporters, each behind its feature.
struct Exporters {
    #[cfg(feature = "frames")]
    frames: Frames,
    #[cfg(feature = "defmt-log")]
    log: telering_defmt::DefmtExporter,
}

impl Exporters {
    /// Hands every waiting event to both exporters.
    fn drain(&mut self, consumer: &mut Consumer<&'static Ring<64>>) -> usize {
        let drained = consumer.read_batch(usize::MAX, |event| {
            // UART0 writes cannot fail (the error type is `Infallible`).
            #[cfg(all(feature = "frames", not(feature = "link-v2")))]
            {
                let Ok(()) = self.frames.export(event);
            }
            #[cfg(feature = "link-v2")]
            {
                let Ok(()) = self.frames.push(event);
            }
            #[cfg(feature = "defmt-log")]
            self.log.export(event);
            #[cfg(not(any(feature = "frames", feature = "defmt-log")))]
            let _ = event;
        });
        #[cfg(feature = "link-v2")]
        {
            let Ok(()) = self.frames.flush();
        }
        drained
    }
}

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fail()
    };
    sysctl::init();
    let Ok((producer, consumer)) = RING.split(OverflowPolicy::DropNewest) else {
        fail()
    };
    #[cfg(feature = "continuous")]
    {
        continuous::run(producer, consumer, peripherals.SYST)
    }
    #[cfg(all(feature = "minimal", not(feature = "continuous")))]
    {
        minimal_sequence(producer, consumer, SysTickClock::start(peripherals.SYST))
    }
    #[cfg(not(any(feature = "minimal", feature = "continuous")))]
    fixed_sequence(producer, consumer, SysTickClock::start(peripherals.SYST))
}

/// Feature `minimal`: the least program around the ring, the recorder and the
/// exporters (one built-in event, one of its own, one drain), so that
/// `footprint.sh` can show what they cost without the fixed sequence's own code and
/// data.
#[cfg(all(feature = "minimal", not(feature = "continuous")))]
fn minimal_sequence(
    producer: telering_core::Producer<&'static Ring<64>>,
    mut consumer: Consumer<&'static Ring<64>>,
    clock: SysTickClock,
) -> ! {
    let mut recorder = Recorder::new(producer, clock, Allowlist::all());
    let mut exporters = Exporters {
        #[cfg(feature = "frames")]
        frames: frames(),
        #[cfg(feature = "defmt-log")]
        log: telering_defmt::DefmtExporter::new(),
    };
    recorder.record_builtin(builtin::AGENT_TX_BYTES, 4_096);
    recorder.record(Category::Custom, &DOORBELL, 1);
    exporters.drain(&mut consumer);
    semihosting::process::exit(0)
}

/// The fixed sequence of the module docs, checked event by event by the tests.
#[cfg(not(any(feature = "minimal", feature = "continuous")))]
fn fixed_sequence(
    producer: telering_core::Producer<&'static Ring<64>>,
    mut consumer: Consumer<&'static Ring<64>>,
    clock: SysTickClock,
) -> ! {
    let mut recorder = Recorder::new(producer, clock, Allowlist::all());
    let mut exporters = Exporters {
        #[cfg(feature = "frames")]
        frames: frames(),
        #[cfg(feature = "defmt-log")]
        log: telering_defmt::DefmtExporter::new(),
    };
    #[cfg(feature = "defmt-log")]
    defmt::println!("telering firmware: ring of {=u32} slots", RING.capacity());

    for recording in &PHASE_ONE {
        match *recording {
            Recording::Builtin(event, value) => recorder.record_builtin(event, value),
            Recording::Custom(category, name, value) => recorder.record(category, &name, value),
        };
    }
    exporters.drain(&mut consumer);

    for value in 0..DOORBELLS {
        recorder.record(Category::Custom, &DOORBELL, value);
    }
    exporters.drain(&mut consumer);

    recorder.record(Category::Custom, &DOORBELL, DOORBELLS);
    exporters.drain(&mut consumer);

    recorder.record(
        Category::System,
        &event_name!("fw_stack_high_water"),
        u64::from(stack_used()),
    );
    exporters.drain(&mut consumer);

    #[cfg(feature = "window")]
    let (window_published, window_dropped) = window::run(recorder.clock());
    #[cfg(feature = "window")]
    defmt_line(window_published, window_dropped);

    #[cfg(feature = "frames")]
    {
        let Ok(()) = exporters.frames.flush();
    }
    #[cfg(feature = "defmt-log")]
    defmt::println!(
        "telering summary: published={=u64} dropped={=u64} unreported={=u64}",
        recorder.producer().events_published(),
        recorder.producer().events_dropped(),
        recorder.unreported_drops()
    );
    semihosting::process::exit(0)
}

/// Bytes of stack used so far: cortex-m-rt painted the whole stack with
/// `STACK_PAINT_VALUE` at reset; the stack grows down from `_stack_start`, so the
/// lowest overwritten word marks the deepest point reached.
fn stack_used() -> u32 {
    unsafe extern "C" {
        static _stack_start: u32;
        static _stack_end: u32;
    }
    let top = (&raw const _stack_start) as usize;
    let mut at = (&raw const _stack_end) as usize;
    while at < top {
        // SAFETY: `_stack_end.._stack_start` is RAM reserved for the stack (linker
        // script), word-aligned; words below the stack pointer belong to no Rust
        // object, and a volatile read of one is an ordinary load.
        let word = unsafe { core::ptr::read_volatile(at as *const u32) };
        if word != cortex_m_rt::STACK_PAINT_VALUE {
            break;
        }
        at += 4;
    }
    (top - at) as u32
}

/// Logs the window's counts when the defmt exporter is built in.
#[cfg(feature = "window")]
fn defmt_line(published: u64, dropped: u64) {
    #[cfg(feature = "defmt-log")]
    defmt::println!(
        "telering window: published={=u64} dropped={=u64}",
        published,
        dropped
    );
    #[cfg(not(feature = "defmt-log"))]
    let _ = (published, dropped);
}

fn fail() -> ! {
    semihosting::process::exit(1)
}

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    #[cfg(feature = "defmt-log")]
    defmt::println!("telering firmware: panic");
    fail()
}
