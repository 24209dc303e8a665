/* Reset and the vector table of the LM3S6965: copy .data, zero .bss, paint the
 * unused stack (so the program can measure how deep it went), run main, and exit
 * through semihosting with main's status. */
#include <stdint.h>

#include "board.h"

extern uint32_t _data_start, _data_end, _data_load, _bss_start, _bss_end, _stack_bottom, _stack_top;
extern int main(void);

void reset_handler(void);
static void fault_handler(void);

/* Cortex-M3 core vectors; the LM3S6965's interrupts are unused and left zero. */
__attribute__((section(".vector_table"), used)) static const void *const vector_table[16] = {
    &_stack_top,   reset_handler, fault_handler, fault_handler, fault_handler, fault_handler,
    fault_handler, 0,             0,             0,             0,             fault_handler,
    fault_handler, 0,             fault_handler, fault_handler,
};

void board_exit(int status) {
    /* Semihosting SYS_EXIT_EXTENDED: the debugger (QEMU) exits with `status`. */
    uint32_t block[2] = {0x20026 /* ADP_Stopped_ApplicationExit */, (uint32_t)status};
    register uint32_t op __asm__("r0") = 0x20;
    register uint32_t *arg __asm__("r1") = block;
    __asm__ volatile("bkpt 0xAB" : : "r"(op), "r"(arg) : "memory");
    for (;;) {
    }
}

uint32_t board_stack_used(void) {
    const uint32_t *at = &_stack_bottom;
    while (at < &_stack_top && *at == STACK_PAINT) at++;
    return (uint32_t)((uintptr_t)&_stack_top - (uintptr_t)at);
}

void reset_handler(void) {
    volatile uint32_t *dst = &_data_start;
    const volatile uint32_t *src = &_data_load;
    while (dst < &_data_end) *dst++ = *src++;
    for (dst = &_bss_start; dst < &_bss_end;) *dst++ = 0;
    /* Paint from the end of .bss up to a little below the current stack pointer. */
    uint32_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (dst = &_stack_bottom; dst < (volatile uint32_t *)(sp - 16);) *dst++ = STACK_PAINT;
    board_exit(main());
}

static void fault_handler(void) { board_exit(3); }
