/* Continuous mode of the C firmware (build.sh continuous): the demo mix at
 * TELERING_FW_RATE events per second (a -D define, default 1000), without end, sent
 * on UART0 as link format version 2 (docs/LINK.md, the library's telering_link_*
 * encoder: a hello naming agent TELERING_FW_AGENT, default "c-fw", a batch every
 * 10 ms, a clock frame every 100 ms) or, built with TELERING_FW_LINK_V1, as version-1
 * frames; until the file `telering-stop` appears in QEMU's working directory
 * (semihosting SYS_OPEN, looked for every 100 ms). Then it drains, prints one
 * `telering total: NAME count=N sum=S` line per name it recorded into its ring and
 * `telering totals: recorded=R published=P dropped=D frames=F stack=B` (semihosting,
 * on QEMU's standard output; B: bytes of stack used at most), and exits with 0.
 *
 * Time: SysTick counts from the 50 MHz PLL clock (the Rust firmware's setup,
 * firmware/src/sysctl.rs); timestamps are microseconds since boot, made fast or slow
 * by TELERING_FW_CLOCK_PPM parts per million (a test build for the host's clock
 * alignment). The mix is the Rust firmware's continuous mix
 * (firmware/src/continuous.rs). */
#include <stdint.h>

#include "board.h"
#include "telering_firmware.h"

#ifndef TELERING_FW_RATE
#define TELERING_FW_RATE 1000
#endif
#ifndef TELERING_FW_CLOCK_PPM
#define TELERING_FW_CLOCK_PPM 0
#endif
#ifndef TELERING_FW_AGENT
#define TELERING_FW_AGENT "c-fw"
#endif
#define NAMES 8

#define REG(addr) (*(volatile uint32_t *)(addr))
#define CORE_HZ 50000000u

enum { MEMORY = 0, TRANSFER = 1, ERROR = 4, PERFORMANCE = 5, SYSTEM = 6, CUSTOM = 7 };

static const struct {
    int32_t category;
    const char *name;
} names[NAMES] = {
    {TRANSFER, "agent_tx_bytes"},  {TRANSFER, "agent_tx_requests_num"},
    {PERFORMANCE, "agent_xfer_time"}, {TRANSFER, "agent_rx_bytes"},
    {CUSTOM, "dpu_queue_depth"},   {SYSTEM, "dpu_temp_millicelsius"},
    {ERROR, "NIXL_ERR_REMOTE_DISCONNECT"}, {MEMORY, "agent_memory_registered"},
};

static uint64_t ring[TELERING_RING_BUFFER_SIZE(64) / 8];
#ifdef TELERING_FW_LINK_V1
static uint8_t line[8 * TELERING_RING_FRAME_SIZE + 1];
static uint64_t frames_sent;
#else
static uint64_t link[TELERING_LINK_SIZE / 8];
#endif
static uint64_t counts[NAMES], sums[NAMES];

/* The 50 MHz PLL clock from the 8 MHz crystal (LM3S6965 RCC, as sysctl.rs). */
static void clock_init(void) {
    uint32_t rcc = REG(0x400FE060);
    rcc = (rcc | (1u << 11)) & ~(1u << 22);
    REG(0x400FE060) = rcc;
    rcc = (rcc & ~((0x1Fu << 6) | (3u << 4) | 1u | (1u << 13))) | (0xEu << 6);
    REG(0x400FE060) = rcc;
    rcc = (rcc & ~(0xFu << 23)) | (3u << 23) | (1u << 22);
    REG(0x400FE060) = rcc;
    while ((REG(0x400FE050) & (1u << 6)) == 0) {
    }
    REG(0x400FE060) = rcc & ~(1u << 11);
    /* SysTick: free-running 24-bit down-counter at the core clock, no interrupt. */
    REG(0xE000E014) = 0xFFFFFFu;
    REG(0xE000E018) = 0;
    REG(0xE000E010) = 5u; /* CLKSOURCE = core, ENABLE */
}

/* Microseconds since clock_init: the 24-bit counter wraps every 335 ms, so it must be
 * read at least that often (the main loop does, far more often). */
static uint64_t now_us(void) {
    static uint32_t last = 0xFFFFFFu;
    static uint64_t ticks = 0;
    uint32_t current = REG(0xE000E018) & 0xFFFFFFu;
    ticks += (last - current) & 0xFFFFFFu;
    last = current;
    uint64_t t = ticks / (CORE_HZ / 1000000u);
    return t + (int64_t)(t / 1000) * TELERING_FW_CLOCK_PPM / 1000;
}

static uint32_t semihost(uint32_t op, const void *arg) {
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

static int stop_requested(void) {
    static const char path[] = "telering-stop";
    uint32_t open_args[3] = {(uint32_t)(uintptr_t)path, 0 /* "r" */, sizeof path - 1};
    uint32_t handle = semihost(0x01 /* SYS_OPEN */, open_args);
    if (handle == 0xFFFFFFFFu) return 0;
    semihost(0x02 /* SYS_CLOSE */, &handle);
    return 1;
}

/* Writes a NUL-terminated line to QEMU's standard output (semihosting SYS_OPEN of
 * ":tt" for writing, then SYS_WRITE; SYS_WRITE0 would go to its standard error). */
static void print(const char *text) {
    static uint32_t handle = 0xFFFFFFFFu;
    if (handle == 0xFFFFFFFFu) {
        static const char tt[] = ":tt";
        uint32_t open_args[3] = {(uint32_t)(uintptr_t)tt, 4 /* "w" */, sizeof tt - 1};
        handle = semihost(0x01 /* SYS_OPEN */, open_args);
    }
    uint32_t len = 0;
    while (text[len]) len++;
    uint32_t write_args[3] = {handle, (uint32_t)(uintptr_t)text, len};
    semihost(0x05 /* SYS_WRITE */, write_args);
}

/* Appends `text` to `out` at `*at` (bounded by `cap`). */
static void put(char *out, uint32_t *at, uint32_t cap, const char *text) {
    while (*text && *at + 1 < cap) out[(*at)++] = *text++;
    out[*at] = 0;
}

static void put_u64(char *out, uint32_t *at, uint32_t cap, uint64_t v) {
    char digits[21];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    char text[21];
    for (int i = 0; i < n; i++) text[i] = digits[n - 1 - i];
    text[n] = 0;
    put(out, at, cap, text);
}

static uint32_t rng = 0x2545F491u;
static uint32_t below(uint32_t n) {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng % n;
}

/* The next event of the mix: its name index and value (firmware/src/continuous.rs). */
static int next_event(uint64_t *value) {
    static uint32_t transfer = 0, step = 0;
    for (;;) {
        uint32_t s = step++, t = transfer;
        switch (s) {
        case 0: *value = 4096u * (1 + below(16)); return 0;
        case 1: *value = 1; return 1;
        case 2: *value = 20 + below(1980); return 2;
        case 3: if (t % 3 == 0) { *value = 4096u * (1 + below(16)); return 3; } break;
        case 4: if (t % 3 == 2) { *value = below(64); return 4; } break;
        case 5: if (t % 30 == 29) { *value = 40000 + below(6000); return 5; } break;
        case 6: if (t % 100 == 99) { *value = 65536u * (1 + below(16)); return 7; } break;
        default:
            step = 0;
            transfer++;
            if (t % 150 == 149) { *value = 1; return 6; }
        }
    }
}

#ifdef TELERING_FW_LINK_V1
static void drain(void) {
    for (;;) {
        size_t len = 0, frames = 0;
        if (telering_ring_encode_frames(ring, line, sizeof line, &len, &frames) != TELERING_RING_OK) board_exit(4);
        board_uart_write(line, len);
        frames_sent += frames;
        if (frames == 0) return;
    }
}

static void send_clock(void) {}

static uint64_t frames_written(void) { return frames_sent; }
#else
/* The link's write callback: the UART cannot fail. */
static int32_t uart_write(void *context, const uint8_t *bytes, size_t len) {
    (void)context;
    board_uart_write(bytes, len);
    return 0;
}

static void drain(void) {
    if (telering_link_drain(link, ring, SIZE_MAX, NULL) != TELERING_RING_OK) board_exit(4);
}

static void send_clock(void) {
    if (telering_link_clock(link, now_us()) != TELERING_RING_OK) board_exit(4);
}

static uint64_t frames_written(void) {
    telering_link_stats_t stats;
    telering_link_stats(link, &stats);
    return stats.frames_written;
}
#endif

int main(void) {
    board_uart_init();
    clock_init();
    if (telering_ring_init(ring, sizeof ring, 0) != TELERING_RING_OK) return 2;
#ifndef TELERING_FW_LINK_V1
    if (telering_link_init(link, sizeof link, TELERING_FW_AGENT, "0.2.0", 1000000, 64, uart_write, 0) !=
        TELERING_RING_OK)
        return 3;
#endif
    const uint64_t period = 1000000u / TELERING_FW_RATE;
    uint64_t recorded = 0, dropped = 0;
    uint64_t start = now_us(), next = start, next_drain = start, next_stop_check = start;
    for (;;) {
        uint64_t now = now_us();
        while (next <= now) {
            uint64_t value;
            int i = next_event(&value);
            recorded++;
            telering_ring_status_t st = telering_ring_record(ring, names[i].category, names[i].name, value, now);
            if (st == TELERING_RING_OK) {
                counts[i]++;
                sums[i] += value;
            } else if (st == TELERING_RING_DROPPED) {
                dropped++;
            } else {
                return 5;
            }
            next += period;
        }
        if (now >= next_drain) {
            drain();
            next_drain += 10000;
        }
        if (now >= next_stop_check) {
            next_stop_check += 100000;
            send_clock();
            if (stop_requested()) break;
        }
    }
    drain();
    send_clock();
    char text[128];
    for (int i = 0; i < NAMES; i++) {
        if (counts[i] == 0) continue;
        uint32_t at = 0;
        put(text, &at, sizeof text, "telering total: ");
        put(text, &at, sizeof text, names[i].name);
        put(text, &at, sizeof text, " count=");
        put_u64(text, &at, sizeof text, counts[i]);
        put(text, &at, sizeof text, " sum=");
        put_u64(text, &at, sizeof text, sums[i]);
        put(text, &at, sizeof text, "\n");
        print(text);
    }
    telering_ring_stats_t stats;
    telering_ring_stats(ring, &stats);
    uint32_t at = 0;
    put(text, &at, sizeof text, "telering totals: recorded=");
    put_u64(text, &at, sizeof text, recorded);
    put(text, &at, sizeof text, " published=");
    put_u64(text, &at, sizeof text, stats.published);
    put(text, &at, sizeof text, " dropped=");
    put_u64(text, &at, sizeof text, dropped);
    put(text, &at, sizeof text, " frames=");
    put_u64(text, &at, sizeof text, frames_written());
    put(text, &at, sizeof text, " stack=");
    put_u64(text, &at, sizeof text, board_stack_used());
    put(text, &at, sizeof text, "\n");
    print(text);
    board_uart_flush();
    return 0;
}
