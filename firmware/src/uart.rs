//! UART0 of the LM3S6965, an ARM PL011, as a blocking [`embedded_io::Write`].
//!
//! Registers (LM3S6965 data sheet, chapter "UART"): the PL011 block at `0x4000_C000`,
//! its clock gate in the system control block's `RCGC1`.

use core::convert::Infallible;
use core::ptr::{read_volatile, write_volatile};

const UART0: usize = 0x4000_C000;
const DR: usize = UART0;
const FR: usize = UART0 + 0x018;
const IBRD: usize = UART0 + 0x024;
const FBRD: usize = UART0 + 0x028;
const LCRH: usize = UART0 + 0x02C;
const CTL: usize = UART0 + 0x030;
/// Run-mode clock gating control 1: bit 0 clocks UART0.
const RCGC1: usize = 0x400F_E104;

const FR_BUSY: u32 = 1 << 3;
const FR_TXFF: u32 = 1 << 5;
const LCRH_FEN: u32 = 1 << 4;
const LCRH_WLEN_8: u32 = 0b11 << 5;
const CTL_UARTEN: u32 = 1 << 0;
const CTL_TXE: u32 = 1 << 8;
#[cfg(feature = "continuous")]
const CTL_RXE: u32 = 1 << 9;
#[cfg(feature = "continuous")]
const FR_RXFE: u32 = 1 << 4;

/// UART0 at 115 200 baud, 8N1, transmit only. The only handle to it.
#[derive(Debug)]
pub struct Uart0 {
    _private: (),
}

impl Uart0 {
    /// Clocks and configures UART0 for 115 200 baud from the 50 MHz core clock:
    /// divisor 50 MHz / (16 × 115 200) = 27.13, i.e. IBRD 27 and FBRD 0.13 × 64 ≈ 8.
    pub fn init() -> Uart0 {
        // SAFETY: these are the LM3S6965's UART0 and clock-gating registers; this
        // is called once, before anything else uses UART0, and the program is
        // single-threaded with no interrupt touching them.
        unsafe {
            write_volatile(RCGC1 as *mut u32, read_volatile(RCGC1 as *const u32) | 1);
            write_volatile(CTL as *mut u32, 0);
            write_volatile(IBRD as *mut u32, 27);
            write_volatile(FBRD as *mut u32, 8);
            write_volatile(LCRH as *mut u32, LCRH_WLEN_8 | LCRH_FEN);
            write_volatile(CTL as *mut u32, CTL_UARTEN | CTL_TXE);
        }
        Uart0 { _private: () }
    }

    /// Turns the receiver on too: continuous mode stops when a byte arrives.
    #[cfg(feature = "continuous")]
    pub fn enable_receiver(&mut self) {
        // SAFETY: UART0's control register; `&mut self` is the only handle to UART0
        // and the program is single-threaded with no interrupt touching it.
        unsafe { write_volatile(CTL as *mut u32, CTL_UARTEN | CTL_TXE | CTL_RXE) };
    }

    /// Takes one received byte, if any.
    #[cfg(feature = "continuous")]
    pub fn take_byte(&mut self) -> Option<u8> {
        if Self::flags() & FR_RXFE != 0 {
            return None;
        }
        // SAFETY: the receive FIFO holds a byte; reading the data register pops it, and
        // `&mut self` is the only handle to UART0.
        Some(unsafe { read_volatile(DR as *const u32) } as u8)
    }

    fn flags() -> u32 {
        // SAFETY: reading the flag register has no side effect.
        unsafe { read_volatile(FR as *const u32) }
    }
}

impl embedded_io::ErrorType for Uart0 {
    type Error = Infallible;
}

impl embedded_io::Write for Uart0 {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        for &byte in buf {
            while Self::flags() & FR_TXFF != 0 {}
            // SAFETY: the transmit FIFO has room; `Uart0` is the only handle to
            // the data register (`&mut self`).
            unsafe { write_volatile(DR as *mut u32, u32::from(byte)) };
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        while Self::flags() & FR_BUSY != 0 {}
        Ok(())
    }
}
