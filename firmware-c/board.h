/* The few board services the example uses: UART0, exit, stack measurement. */
#ifndef BOARD_H
#define BOARD_H

#include <stddef.h>
#include <stdint.h>

/* The word cortex-m-rt paints the stack with too, so both firmware report alike. */
#define STACK_PAINT 0xCCCCCCCCu

void board_uart_init(void);
void board_uart_write(const uint8_t *bytes, size_t len);
void board_uart_flush(void);
void board_exit(int status) __attribute__((noreturn));
uint32_t board_stack_used(void);

#endif
