/* A telering agent in C on a Cortex-M3 without OS or heap: QEMU's lm3s6965evb.
 *
 * It records a fixed sequence into a 64-slot ring in a static buffer, through
 * libtelering_firmware.a, and sends every event as a telering-embedded-io frame on
 * UART0; the host pipes the UART into `telering decode` and checks every event
 * (.ci/run). The sequence is the Rust firmware's (firmware/src/main.rs), so both are
 * checked against the same expectations:
 *
 *   1. eight built-in and custom events, then a drain;
 *   2. 70 `dpu_doorbell` events (values 0..69) into a ring that holds 63: 63 written,
 *      7 dropped and counted; a drain;
 *   3. one more `dpu_doorbell` (70): first the `agent_telemetry_events_dropped`
 *      report of 7, then the event; a drain;
 *   4. `fw_stack_high_water`: the bytes of stack used so far; a drain.
 *
 * Timestamps: the board has no timer driver in this example, so a microsecond
 * counter advances by a fixed 25 µs per event; real firmware passes its timer's
 * reading. Exits through semihosting: 0 when every call returned what it should. */
#include <stdint.h>

#include "board.h"
#include "telering_firmware.h"

enum { MEMORY = 0, TRANSFER = 1, ERROR = 4, PERFORMANCE = 5, SYSTEM = 6, CUSTOM = 7 };

static uint64_t ring[TELERING_RING_BUFFER_SIZE(64) / 8];
static uint8_t line[8 * TELERING_RING_FRAME_SIZE + 1];
static uint64_t clock_us = 1000;
static int failures = 0;

static void record(int32_t category, const char *name, uint64_t value, telering_ring_status_t want) {
    clock_us += 25;
    if (telering_ring_record(ring, category, name, value, clock_us) != want) failures++;
}

/* Sends every waiting event on UART0, a buffer of frames at a time. */
static void drain(void) {
    for (;;) {
        size_t len = 0, frames = 0;
        if (telering_ring_encode_frames(ring, line, sizeof line, &len, &frames) != TELERING_RING_OK) {
            failures++;
            return;
        }
        board_uart_write(line, len);
        if (frames == 0) return;
    }
}

int main(void) {
    board_uart_init();
    uint32_t capacity = 0;
    if (telering_ring_init(ring, sizeof ring, &capacity) != TELERING_RING_OK || capacity != 64) return 2;

    record(MEMORY, "agent_memory_registered", 65536, TELERING_RING_OK);
    record(TRANSFER, "agent_tx_bytes", 4096, TELERING_RING_OK);
    record(TRANSFER, "agent_tx_requests_num", 1, TELERING_RING_OK);
    record(PERFORMANCE, "agent_xfer_time", 250, TELERING_RING_OK);
    record(TRANSFER, "agent_rx_bytes", 8192, TELERING_RING_OK);
    record(ERROR, "NIXL_ERR_REMOTE_DISCONNECT", 1, TELERING_RING_OK);
    record(CUSTOM, "dpu_queue_depth", 17, TELERING_RING_OK);
    record(SYSTEM, "dpu_temp_millicelsius", 41250, TELERING_RING_OK);
    drain();

    for (uint64_t v = 0; v < 70; v++) record(CUSTOM, "dpu_doorbell", v, v < 63 ? TELERING_RING_OK : TELERING_RING_DROPPED);
    telering_ring_stats_t stats;
    if (telering_ring_stats(ring, &stats) != TELERING_RING_OK || stats.dropped != 7 || stats.unreported != 7)
        failures++;
    drain();

    record(CUSTOM, "dpu_doorbell", 70, TELERING_RING_OK);
    drain();

    record(SYSTEM, "fw_stack_high_water", board_stack_used(), TELERING_RING_OK);
    drain();

    if (telering_ring_stats(ring, &stats) != TELERING_RING_OK || stats.published != 74 || stats.unreported != 0)
        failures++;
    board_uart_flush();
    return failures == 0 ? 0 : 1;
}
