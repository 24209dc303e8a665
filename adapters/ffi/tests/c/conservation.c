/* The conservation matrix's C source: records EVENTS agent_tx_bytes into a
 * telemetry configured by NIXL_TELEMETRY_* (argv[1] events, flushing every argv[2]),
 * destroys it with its final flush, and prints the counters telering_stats gave
 * just before, one "name value" pair per line. Exits non-zero on any unexpected
 * status. */
#include <stdio.h>
#include <stdlib.h>

#include "telering.h"

static int check(telering_status_t got, const char *what) {
    if (got != TELERING_OK) {
        fprintf(stderr, "%s returned %s: %s\n", what, telering_status_name(got), telering_last_error());
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    unsigned long long events = strtoull(argv[1], NULL, 10);
    unsigned long long every = strtoull(argv[2], NULL, 10);
    telering_t *t = NULL;
    if (check(telering_create_from_env("c-conservation", &t), "telering_create_from_env")) return 2;
    for (unsigned long long i = 1; i <= events; i++) {
        telering_status_t s = telering_update_tx_bytes(t, i);
        /* A full lane is a counted loss, not an error of the call. */
        if (s != TELERING_OK && s != TELERING_DROPPED) {
            check(s, "telering_update_tx_bytes");
            return 2;
        }
        if (every && i % every == 0 && check(telering_flush(t), "telering_flush")) return 2;
    }
    if (check(telering_flush(t), "telering_flush")) return 2;
    telering_stats_t s;
    if (check(telering_stats(t, &s), "telering_stats")) return 2;
    printf("events_recorded %llu\n", (unsigned long long)s.events_recorded);
    printf("events_exported %llu\n", (unsigned long long)s.events_exported);
    printf("events_dropped %llu\n", (unsigned long long)s.events_dropped);
    printf("exporter_dropped %llu\n", (unsigned long long)s.exporter_dropped);
    printf("events_not_in_layout %llu\n", (unsigned long long)s.events_not_in_layout);
    printf("events_undelivered %llu\n", (unsigned long long)s.events_undelivered);
    printf("exporter_failing %u\n", s.exporter_failing);
    return check(telering_destroy(t), "telering_destroy") ? 2 : 0;
}
