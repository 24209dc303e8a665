/* Records from four threads, one transfer with per-transfer telemetry, backend
 * events and error counts into a telemetry configured by NIXL_TELEMETRY_*; then
 * checks the NO_TELEMETRY path on a disabled telemetry. Prints the transfer's
 * telemetry as "xfer <start> <post> <xfer> <bytes> <descs>" for the test to check
 * the ring's sums against. Exits non-zero (with a message) on any unexpected status. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telering.h"

#define THREADS 4
#define PER_THREAD 500
#define XFER_STATS_PER_THREAD 100

static int failures = 0;

#define EXPECT(call, want)                                                               \
    do {                                                                                 \
        telering_status_t got_ = (call);                                                 \
        if (got_ != (want)) {                                                            \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s: %s\n", __FILE__, __LINE__, \
                    #call, telering_status_name(got_), telering_status_name(want),       \
                    telering_last_error());                                              \
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);                          \
        }                                                                                \
    } while (0)

struct worker {
    const telering_t *telemetry;
    const telering_event_handle_t *hot;
    uint64_t index;
};

static void *work(void *arg) {
    const struct worker *w = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        EXPECT(telering_record(w->telemetry, TELERING_CATEGORY_CUSTOM, "worker_events", w->index + 1),
               TELERING_OK);
        EXPECT(telering_update_tx_bytes(w->telemetry, 100), TELERING_OK);
        EXPECT(telering_record_event(w->telemetry, w->hot, 2), TELERING_OK);
        if (i < XFER_STATS_PER_THREAD)
            EXPECT(telering_add_xfer_stats(w->telemetry, 10, 1, 4096, 2), TELERING_OK);
    }
    return NULL;
}

int main(void) {
    telering_t *t = NULL;
    EXPECT(telering_create_from_env("c-agent", &t), TELERING_OK);
    if (t == NULL) return 2;

    telering_event_handle_t *hot = NULL;
    EXPECT(telering_event_handle_create(TELERING_CATEGORY_CUSTOM, "hot_counter", &hot), TELERING_OK);

    pthread_t threads[THREADS];
    struct worker workers[THREADS];
    for (int i = 0; i < THREADS; i++) {
        workers[i] = (struct worker){t, hot, (uint64_t)i};
        if (pthread_create(&threads[i], NULL, work, &workers[i]) != 0) return 2;
    }
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);

    /* The other built-ins, once each (error counts three times). */
    EXPECT(telering_update_rx_bytes(t, 8192), TELERING_OK);
    EXPECT(telering_update_rx_requests_num(t, 1), TELERING_OK);
    EXPECT(telering_update_memory_registered(t, 65536), TELERING_OK);
    EXPECT(telering_update_memory_deregistered(t, 65536), TELERING_OK);
    for (int i = 0; i < 3; i++) EXPECT(telering_update_error_count(t, TELERING_NIXL_ERR_BACKEND), TELERING_OK);

    /* One transfer with its telemetry. */
    telering_xfer_t *x = NULL;
    EXPECT(telering_xfer_start(t, 1, 65536, 4, &x), TELERING_OK);
    EXPECT(telering_xfer_posted(t, x), TELERING_OK);
    EXPECT(telering_xfer_completed(t, x), TELERING_OK);
    EXPECT(telering_xfer_completed(t, x), TELERING_FILTERED); /* recorded once only */
    telering_xfer_telemetry_t tel;
    EXPECT(telering_xfer_get_telemetry(t, x, &tel), TELERING_OK);
    if (tel.total_bytes != 65536 || tel.desc_count != 4 || tel.start_time_us == 0 ||
        tel.post_duration_us > tel.xfer_duration_us) {
        fprintf(stderr, "unexpected transfer telemetry\n");
        failures++;
    }
    printf("xfer %llu %llu %llu %llu %llu\n", (unsigned long long)tel.start_time_us,
           (unsigned long long)tel.post_duration_us, (unsigned long long)tel.xfer_duration_us,
           (unsigned long long)tel.total_bytes, (unsigned long long)tel.desc_count);
    EXPECT(telering_xfer_destroy(x), TELERING_OK);

    /* A backend's events: pending until the (final) flush. */
    telering_backend_t *ucx = NULL;
    EXPECT(telering_backend_create(t, "UCX", &ucx), TELERING_OK);
    EXPECT(telering_backend_add_event(ucx, "ucx_rndv_count", 3), TELERING_OK);
    EXPECT(telering_backend_add_event(ucx, "ucx_rndv_count", 3), TELERING_OK);
    telering_event_t pending[4];
    size_t count = 0;
    EXPECT(telering_backend_get_events(ucx, pending, 4, &count), TELERING_OK);
    if (count != 2 || strcmp(pending[0].name, "ucx_rndv_count") != 0 ||
        pending[1].category != TELERING_CATEGORY_BACKEND || pending[1].value != 3) {
        fprintf(stderr, "unexpected backend events (count %zu)\n", count);
        failures++;
    }
    EXPECT(telering_backend_destroy(ucx), TELERING_OK);

    /* Capture off: per-transfer and backend telemetry answer NO_TELEMETRY. */
    telering_options_t off;
    EXPECT(telering_options_init(&off), TELERING_OK);
    telering_t *disabled = NULL;
    EXPECT(telering_create("c-agent-off", &off, &disabled), TELERING_OK);
    EXPECT(telering_update_tx_bytes(disabled, 1), TELERING_FILTERED);
    telering_xfer_t *y = NULL;
    EXPECT(telering_xfer_start(disabled, 0, 1, 1, &y), TELERING_OK);
    EXPECT(telering_xfer_completed(disabled, y), TELERING_ERR_NO_TELEMETRY);
    EXPECT(telering_xfer_get_telemetry(disabled, y, &tel), TELERING_ERR_NO_TELEMETRY);
    printf("no_telemetry %s\n", telering_last_error());
    /* A transfer belongs to the telering_t that started it: another one refuses it. */
    EXPECT(telering_xfer_posted(t, y), TELERING_ERR_INVALID_ARGUMENT);
    EXPECT(telering_xfer_completed(t, y), TELERING_ERR_INVALID_ARGUMENT);
    EXPECT(telering_xfer_get_telemetry(t, y, &tel), TELERING_ERR_INVALID_ARGUMENT);
    EXPECT(telering_xfer_destroy(y), TELERING_OK);
    EXPECT(telering_destroy(disabled), TELERING_OK);

    EXPECT(telering_event_handle_destroy(hot), TELERING_OK);
    telering_stats_t stats;
    EXPECT(telering_flush(t), TELERING_OK);
    EXPECT(telering_stats(t, &stats), TELERING_OK);
    printf("stats %llu %llu\n", (unsigned long long)stats.events_recorded,
           (unsigned long long)stats.events_dropped);
    EXPECT(telering_destroy(t), TELERING_OK);
    EXPECT(telering_destroy(t), TELERING_ERR_INVALID_HANDLE); /* detected, not a crash */
    return failures == 0 ? 0 : 1;
}
