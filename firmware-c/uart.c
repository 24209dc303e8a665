/* UART0 of the LM3S6965, an ARM PL011 at 0x4000_C000: 115 200 baud 8N1 from the
 * 12 MHz reset clock (divisor 12e6 / (16 × 115200) = 6.51: IBRD 6, FBRD 33), transmit
 * only, blocking. Register map from the LM3S6965 data sheet, chapter "UART". */
#include "board.h"

#define REG(addr) (*(volatile uint32_t *)(addr))
#define UART0 0x4000C000u
#define UART_DR REG(UART0 + 0x000)
#define UART_FR REG(UART0 + 0x018)
#define UART_IBRD REG(UART0 + 0x024)
#define UART_FBRD REG(UART0 + 0x028)
#define UART_LCRH REG(UART0 + 0x02C)
#define UART_CTL REG(UART0 + 0x030)
#define SYSCTL_RCGC1 REG(0x400FE104u)

#define FR_BUSY (1u << 3)
#define FR_TXFF (1u << 5)

void board_uart_init(void) {
    SYSCTL_RCGC1 |= 1u; /* clock UART0 */
    UART_CTL = 0;
    UART_IBRD = 6;
    UART_FBRD = 33;
    UART_LCRH = (3u << 5) | (1u << 4); /* 8 bits, FIFOs on */
    UART_CTL = (1u << 0) | (1u << 8);  /* UART and transmitter on */
}

void board_uart_write(const uint8_t *bytes, size_t len) {
    for (size_t i = 0; i < len; i++) {
        while (UART_FR & FR_TXFF) {
        }
        UART_DR = bytes[i];
    }
}

void board_uart_flush(void) {
    while (UART_FR & FR_BUSY) {
    }
}
