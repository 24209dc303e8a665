/* Records through per-thread recorders (telering_recorder_t) and the telemetry
 * itself on the same threads, into a telemetry configured by NIXL_TELEMETRY_*; then
 * uses a recorder from a thread that does not own it. argv[1] is "checked" when the
 * library is a debug build (which refuses that call) and "unchecked" otherwise (the
 * misuse part is skipped). Prints "stats <recorded> <dropped>". Exits non-zero (with
 * a message) on any unexpected status. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "telering.h"

#define THREADS 4
#define PER_THREAD 1000

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

static void *work(void *arg) {
    const telering_t *t = arg;
    telering_recorder_t *r = NULL;
    EXPECT(telering_recorder_create(t, &r), TELERING_OK);
    for (int i = 0; i < PER_THREAD; i++) {
        /* The recorder and the telemetry share this thread's lane. */
        EXPECT(telering_recorder_update_tx_bytes(r, 1), TELERING_OK);
        EXPECT(telering_update_rx_bytes(t, 2), TELERING_OK);
        if (i < 100) EXPECT(telering_recorder_add_xfer_stats(r, 10, 1, 4096, 2), TELERING_OK);
        if (i < 10) EXPECT(telering_recorder_record(r, TELERING_CATEGORY_CUSTOM, "rec_events", 3), TELERING_OK);
    }
    EXPECT(telering_recorder_update_error_count(r, TELERING_NIXL_ERR_BACKEND), TELERING_OK);
    EXPECT(telering_recorder_update_error_count(r, 5), TELERING_ERR_INVALID_ARGUMENT);
    EXPECT(telering_recorder_record_len(r, TELERING_CATEGORY_CUSTOM, "rec_events", 10, 3), TELERING_OK);
    telering_xfer_t *x = NULL;
    EXPECT(telering_xfer_start(t, 0, 8192, 1, &x), TELERING_OK);
    EXPECT(telering_recorder_xfer_completed(r, x), TELERING_OK);
    EXPECT(telering_recorder_xfer_completed(r, x), TELERING_FILTERED); /* once only */
    EXPECT(telering_xfer_destroy(x), TELERING_OK);
    EXPECT(telering_recorder_destroy(r), TELERING_OK);
    return NULL;
}

struct misuse {
    const telering_recorder_t *recorder;
    telering_status_t recorded;
    telering_status_t destroyed;
};

static void *misuse(void *arg) {
    struct misuse *m = arg;
    m->recorded = telering_recorder_update_tx_bytes(m->recorder, 1);
    m->destroyed = telering_recorder_destroy((telering_recorder_t *)m->recorder);
    if (!strstr(telering_last_error(), "bound to the thread that created it")) {
        fprintf(stderr, "misuse message: %s\n", telering_last_error());
        __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    telering_t *t = NULL;
    EXPECT(telering_create_from_env("c-recorder", &t), TELERING_OK);
    if (t == NULL) return 2;
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++) pthread_create(&threads[i], NULL, work, t);
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    EXPECT(telering_recorder_create(t, NULL), TELERING_ERR_NULL_POINTER);
    EXPECT(telering_recorder_update_tx_bytes(NULL, 1), TELERING_ERR_NULL_POINTER);
    EXPECT(telering_recorder_update_tx_bytes((const telering_recorder_t *)t, 1), TELERING_ERR_INVALID_HANDLE);
    if (strcmp(argv[1], "checked") == 0) {
        telering_recorder_t *mine = NULL;
        EXPECT(telering_recorder_create(t, &mine), TELERING_OK);
        struct misuse m = {mine, TELERING_OK, TELERING_OK};
        pthread_t other;
        pthread_create(&other, NULL, misuse, &m);
        pthread_join(other, NULL);
        EXPECT(m.recorded, TELERING_ERR_INVALID_HANDLE);
        EXPECT(m.destroyed, TELERING_ERR_INVALID_HANDLE);
        /* Refused, not destroyed: its own thread still records and destroys it. */
        EXPECT(telering_recorder_update_tx_bytes(mine, 1), TELERING_OK);
        EXPECT(telering_recorder_destroy(mine), TELERING_OK);
    }
    EXPECT(telering_recorder_destroy(NULL), TELERING_OK);
    telering_stats_t stats;
    EXPECT(telering_flush(t), TELERING_OK);
    EXPECT(telering_stats(t, &stats), TELERING_OK);
    printf("stats %llu %llu\n", (unsigned long long)stats.events_recorded,
           (unsigned long long)stats.events_dropped);
    EXPECT(telering_destroy(t), TELERING_OK);
    return failures == 0 ? 0 : 1;
}
