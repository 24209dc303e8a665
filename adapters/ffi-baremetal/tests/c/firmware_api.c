/* The bare-metal API from C on the host: argument checks, a 64-slot ring filled past
 * capacity, drop counting and the in-band report, draining into a callback, and
 * frames. Writes the frames (binary) to stdout for the test to decode; reports
 * problems on stderr and exits non-zero. */
#include <stdio.h>
#include <string.h>

#include "telering_firmware.h"

static int failures = 0;
#define EXPECT(cond)                                                          \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, "firmware_api.c:%d: %s failed\n", __LINE__, #cond); \
            failures++;                                                       \
        }                                                                     \
    } while (0)

static uint64_t ring[TELERING_RING_BUFFER_SIZE(64) / 8];

struct tally {
    unsigned count;
    unsigned long long sum;
    uint64_t last_timestamp;
};

static void count(void *context, const telering_ring_event_t *event) {
    struct tally *t = context;
    if (strcmp(event->name, "dpu_doorbell") == 0 && event->category == 7) {
        t->count++;
        t->sum += event->value;
    }
    t->last_timestamp = event->timestamp_us;
}

int main(void) {
    uint32_t capacity = 0;
    static uint8_t frames[64 * TELERING_RING_FRAME_SIZE + 1];
    size_t len = 0, n = 0;

    EXPECT(telering_ring_init(NULL, sizeof ring, NULL) == TELERING_RING_ERR_NULL_POINTER);
    EXPECT(telering_ring_init((char *)ring + 4, sizeof ring - 4, NULL) == TELERING_RING_ERR_MISALIGNED);
    EXPECT(telering_ring_init(ring, TELERING_RING_BUFFER_SIZE(2) - 1, NULL) == TELERING_RING_ERR_BUFFER_TOO_SMALL);
    EXPECT(telering_ring_record(ring, 7, "x", 1, 1) == TELERING_RING_ERR_NOT_INITIALISED);
    EXPECT(telering_ring_buffer_size(64) == sizeof ring);

    EXPECT(telering_ring_init(ring, sizeof ring, &capacity) == TELERING_RING_OK);
    EXPECT(capacity == 64);
    EXPECT(telering_ring_record(ring, 9, "x", 1, 1) == TELERING_RING_ERR_INVALID_CATEGORY);
    EXPECT(telering_ring_record(ring, 7, "a_forty_byte_event_name_is_too_long_xxxx", 1, 1) ==
           TELERING_RING_ERR_INVALID_NAME);
    EXPECT(telering_ring_record(ring, 7, "", 1, 1) == TELERING_RING_ERR_INVALID_NAME);
    EXPECT(telering_ring_record(ring, 7, NULL, 1, 1) == TELERING_RING_ERR_NULL_POINTER);
    EXPECT(telering_ring_drain(ring, NULL, NULL, 10, NULL) == TELERING_RING_ERR_NULL_POINTER);

    /* 70 doorbells into a ring that holds 63: 7 dropped and counted. */
    for (uint64_t v = 0; v < 70; v++) {
        telering_ring_status_t s = telering_ring_record(ring, 7, "dpu_doorbell", v, 100 + v);
        EXPECT(s == (v < 63 ? TELERING_RING_OK : TELERING_RING_DROPPED));
    }
    telering_ring_stats_t stats;
    EXPECT(telering_ring_stats(ring, &stats) == TELERING_RING_OK);
    EXPECT(stats.capacity == 64 && stats.waiting == 63 && stats.published == 63 && stats.dropped == 7 &&
           stats.unreported == 7);

    /* Drain 60 through the callback, then the rest as frames. */
    struct tally t = {0, 0, 0};
    EXPECT(telering_ring_drain(ring, count, &t, 60, &n) == TELERING_RING_OK);
    EXPECT(n == 60 && t.count == 60 && t.sum == 59 * 60 / 2 && t.last_timestamp == 159);

    /* The next event is preceded by the drop report. */
    EXPECT(telering_ring_record(ring, 7, "dpu_doorbell", 70, 200) == TELERING_RING_OK);
    EXPECT(telering_ring_stats(ring, &stats) == TELERING_RING_OK);
    EXPECT(stats.unreported == 0 && stats.published == 65 && stats.waiting == 5);

    /* Too small for one frame while events wait. */
    EXPECT(telering_ring_encode_frames(ring, frames, 10, &len, NULL) == TELERING_RING_ERR_BUFFER_TOO_SMALL);
    EXPECT(telering_ring_encode_frames(ring, frames, sizeof frames, &len, &n) == TELERING_RING_OK);
    EXPECT(n == 5 && len == 1 + 5 * TELERING_RING_FRAME_SIZE);
    fwrite(frames, 1, len, stdout);

    /* One event encoded without a ring, continuing the sequence (5). */
    telering_ring_event_t e = {.timestamp_us = 300, .value = 41250, .category = 6};
    strcpy(e.name, "dpu_temp_millicelsius");
    EXPECT(telering_ring_encode_event(5, &e, frames, sizeof frames, &len) == TELERING_RING_OK);
    EXPECT(len == TELERING_RING_FRAME_SIZE);
    fwrite(frames, 1, len, stdout);
    e.category = 8;
    EXPECT(telering_ring_encode_event(6, &e, frames, sizeof frames, &len) == TELERING_RING_ERR_INVALID_CATEGORY);
    EXPECT(telering_ring_encode_frames(ring, frames, sizeof frames, &len, &n) == TELERING_RING_OK && n == 0 &&
           len == 0);
    return failures == 0 ? 0 : 1;
}
