/* Drains the ring file argv[1] (any generation) and prints one line per event:
 * "<flags> <category> <timestamp_us> <value> <name as hex bytes, or ->", then
 * "generation <n>". Exits 1 on any failed call. */
#include <stdio.h>

#include "telering.h"

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    telering_reader_t *r = NULL;
    telering_status_t s = telering_reader_open(argv[1], TELERING_READ_DRAIN, &r);
    if (s != TELERING_OK) {
        fprintf(stderr, "open: %s: %s\n", telering_status_name(s), telering_last_error());
        return 1;
    }
    telering_event_t e;
    while ((s = telering_reader_next(r, &e)) == TELERING_OK) {
        printf("%u %d %llu %llu ", e.flags, e.category, (unsigned long long)e.timestamp_us,
               (unsigned long long)e.value);
        if (e.name[0] == '\0') printf("-");
        for (const char *c = e.name; *c != '\0'; c++) printf("%02x", (unsigned)(unsigned char)*c);
        printf("\n");
    }
    if (s != TELERING_EMPTY) {
        fprintf(stderr, "read: %s: %s\n", telering_status_name(s), telering_last_error());
        return 1;
    }
    telering_ring_info_t info;
    if (telering_reader_stat(r, &info) != TELERING_OK) return 1;
    printf("generation %d\n", info.generation);
    return telering_reader_destroy(r) == TELERING_OK ? 0 : 1;
}
