/* Records 100 agent_tx_bytes into a telemetry configured by NIXL_TELEMETRY_* (a list
 * of exporters), flushes, waits (up to 30 s) until every exporter delivered them, and
 * prints each exporter's counters as "exporter <name> <delivered> <dropped>
 * <undelivered> <failing>". Exits non-zero on any unexpected status. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "telering.h"

#define EVENTS 100
#define MAX_EXPORTERS 8

static int check(telering_status_t got, const char *what) {
    if (got != TELERING_OK) {
        fprintf(stderr, "%s returned %s: %s\n", what, telering_status_name(got), telering_last_error());
        return 1;
    }
    return 0;
}

int main(void) {
    telering_t *t = NULL;
    if (check(telering_create_from_env("c-exporters", &t), "telering_create_from_env")) return 2;
    for (uint64_t i = 1; i <= EVENTS; i++)
        if (check(telering_update_tx_bytes(t, i), "telering_update_tx_bytes")) return 2;
    if (check(telering_flush(t), "telering_flush")) return 2;

    /* The number alone, then the counters. */
    size_t count = 0;
    if (check(telering_exporter_stats(t, NULL, 0, &count), "telering_exporter_stats(count)")) return 2;
    if (count == 0 || count > MAX_EXPORTERS) {
        fprintf(stderr, "unexpected exporter count %zu\n", count);
        return 2;
    }
    if (telering_exporter_stats(t, NULL, 1, &count) != TELERING_ERR_NULL_POINTER) {
        fprintf(stderr, "NULL stats with a capacity was not refused\n");
        return 2;
    }
    telering_exporter_stats_t stats[MAX_EXPORTERS];
    struct timespec start, now, pause = {0, 5 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        size_t n = 0;
        if (check(telering_exporter_stats(t, stats, MAX_EXPORTERS, &n), "telering_exporter_stats")) return 2;
        int done = 1;
        for (size_t i = 0; i < n; i++)
            if (stats[i].events_delivered + stats[i].events_dropped < EVENTS) done = 0;
        if (done) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - start.tv_sec > 30) {
            fprintf(stderr, "the exporters did not take every event within 30 s\n");
            return 2;
        }
        nanosleep(&pause, NULL);
    }
    for (size_t i = 0; i < count; i++)
        printf("exporter %s %llu %llu %llu %u\n", stats[i].name,
               (unsigned long long)stats[i].events_delivered,
               (unsigned long long)stats[i].events_dropped,
               (unsigned long long)stats[i].events_undelivered, stats[i].exporter_failing);
    return check(telering_destroy(t), "telering_destroy") ? 2 : 0;
}
