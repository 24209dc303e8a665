/* Every event accounted for, with its cause, in telering_stats_t: a C agent whose
 * lane of 16 fills (4 rounds of 20 events, flushed on schedule only) and whose CSV
 * exporter's writes fail (run under a file size limit). Counts its own
 * TELERING_DROPPED answers, and prints
 *   "round <n> <dropped answers> <recorded> <dropped> <exported> <exporter_dropped>
 *    <not_in_layout> <undelivered> <errors> <failing>"
 * after each round and "close ..." with the same fields after telering_close.
 * usage: loss_identity DIR */
#include <stdio.h>

#include "telering.h"

static void print(const char *what, int n, unsigned long long answers,
                  const telering_stats_t *s) {
    printf("%s %d %llu %llu %llu %llu %llu %llu %llu %llu %u\n", what, n, answers,
           (unsigned long long)s->events_recorded, (unsigned long long)s->events_dropped,
           (unsigned long long)s->events_exported, (unsigned long long)s->exporter_dropped,
           (unsigned long long)s->events_not_in_layout,
           (unsigned long long)s->events_undelivered, (unsigned long long)s->export_errors,
           (unsigned)s->exporter_failing);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: loss_identity DIR\n");
        return 2;
    }
    telering_options_t options;
    telering_options_init(&options);
    options.enabled = 1;
    options.exporter = "csv";
    options.dir = argv[1];
    options.lane_capacity = 16;
    options.flush_on_schedule = 1;
    options.run_interval_ms = 3600000;
    telering_t *t = NULL;
    if (telering_create("c-identity", &options, &t) != TELERING_OK) {
        fprintf(stderr, "create: %s\n", telering_last_error());
        return 1;
    }
    unsigned long long answers = 0;
    telering_stats_t stats;
    for (int round = 1; round <= 4; round++) {
        for (int i = 0; i < 20; i++) {
            telering_status_t s = telering_update_tx_bytes(t, (uint64_t)i);
            if (s == TELERING_DROPPED) answers++;
            else if (s != TELERING_OK) {
                fprintf(stderr, "record: %s\n", telering_status_name(s));
                return 1;
            }
        }
        telering_flush(t); /* fails: the write is refused */
        telering_stats(t, &stats);
        print("round", round, answers, &stats);
    }
    telering_close(t, &stats);
    print("close", 0, answers, &stats);
    return 0;
}
