//! The LM3S6965's system clock: 50 MHz from the PLL.
//!
//! At reset the core runs from an internal oscillator whose frequency the SysTick
//! clock cannot rely on, so the firmware sets the clock as TI's `SysCtlClockSet` does:
//! bypass the PLL, select the 8 MHz main crystal, power the PLL up, divide its
//! 200 MHz by 4, wait for lock, then leave bypass. QEMU's model computes the same
//! 200 MHz / (SYSDIV + 1) and only then starts the SysTick timer from it.

use core::ptr::{read_volatile, write_volatile};

/// Core clock after [`init`].
pub const CORE_HZ: u32 = 50_000_000;

const RIS: usize = 0x400F_E050;
const RCC: usize = 0x400F_E060;

const RIS_PLLLRIS: u32 = 1 << 6;
const RCC_MOSCDIS: u32 = 1 << 0;
const RCC_OSCSRC_MASK: u32 = 0b11 << 4;
const RCC_XTAL_MASK: u32 = 0b1_1111 << 6;
const RCC_XTAL_8MHZ: u32 = 0xE << 6;
const RCC_BYPASS: u32 = 1 << 11;
const RCC_PWRDN: u32 = 1 << 13;
const RCC_USESYSDIV: u32 = 1 << 22;
const RCC_SYSDIV_MASK: u32 = 0b1111 << 23;
/// 200 MHz PLL output / (3 + 1) = 50 MHz.
const RCC_SYSDIV_4: u32 = 3 << 23;

/// Runs the core at [`CORE_HZ`]. Called once at start, before any peripheral is used.
pub fn init() {
    // SAFETY: RCC and RIS are the system control block's clock configuration and
    // raw interrupt status registers; nothing else touches them, and this sequence
    // (from the data sheet) keeps the core clocked at every step.
    unsafe {
        let mut rcc = read_volatile(RCC as *const u32);
        rcc = (rcc | RCC_BYPASS) & !RCC_USESYSDIV;
        write_volatile(RCC as *mut u32, rcc);
        rcc = (rcc & !(RCC_XTAL_MASK | RCC_OSCSRC_MASK | RCC_MOSCDIS | RCC_PWRDN)) | RCC_XTAL_8MHZ;
        write_volatile(RCC as *mut u32, rcc);
        rcc = (rcc & !RCC_SYSDIV_MASK) | RCC_SYSDIV_4 | RCC_USESYSDIV;
        write_volatile(RCC as *mut u32, rcc);
        while read_volatile(RIS as *const u32) & RIS_PLLLRIS == 0 {}
        write_volatile(RCC as *mut u32, rcc & !RCC_BYPASS);
    }
}
