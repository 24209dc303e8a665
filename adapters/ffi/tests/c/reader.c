/* Reads the ring file argv[1] until argv[2] events were read or counted as lost (or
 * 60 s passed), alternating telering_reader_next and telering_reader_read_batch,
 * while a writer fills it. argv[3] is "drain" (the draining reader) or "observe" (an
 * observer from the oldest event); with argv[4], the reader creates that file once it
 * has opened the ring. Prints one "name count sum" line per event name, then
 * "total <events> lost <n>" and the ring's stat. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "telering.h"

#define MAX_NAMES 16

struct tally {
    char name[32];
    unsigned long long count, sum;
};

static struct tally tallies[MAX_NAMES];
static int names = 0;

static int add(const telering_event_t *e) {
    for (int i = 0; i < names; i++) {
        if (strcmp(tallies[i].name, e->name) == 0) {
            tallies[i].count++;
            tallies[i].sum += e->value;
            return 0;
        }
    }
    if (names == MAX_NAMES) return -1;
    memcpy(tallies[names].name, e->name, sizeof e->name);
    tallies[names].count = 1;
    tallies[names].sum = e->value;
    names++;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    const int observe = strcmp(argv[3], "observe") == 0;
    unsigned long long want = strtoull(argv[2], NULL, 10), got = 0;
    telering_reader_t *r = NULL;
    /* The writer creates the file: wait for it. */
    time_t deadline = time(NULL) + 60;
    telering_status_t s;
    while ((s = telering_reader_open(argv[1], observe ? TELERING_READ_OBSERVE_OLDEST : TELERING_READ_DRAIN, &r)) ==
               TELERING_ERR_NOT_FOUND &&
           time(NULL) < deadline) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    if (s != TELERING_OK) {
        fprintf(stderr, "open: %s: %s\n", telering_status_name(s), telering_last_error());
        return 1;
    }
    if (argc > 4) {
        FILE *ready = fopen(argv[4], "w");
        if (ready == NULL || fclose(ready) != 0) return 1;
    }
    telering_event_t batch[100];
    telering_ring_info_t info;
    int turn = 0;
    unsigned long long lost = 0;
    while (got + lost < want && time(NULL) < deadline) {
        size_t n = 0;
        if (turn++ % 2 == 0) {
            s = telering_reader_next(r, &batch[0]);
            n = s == TELERING_OK ? 1 : 0;
        } else {
            s = telering_reader_read_batch(r, batch, 100, &n);
        }
        if (s < 0) {
            fprintf(stderr, "read: %s: %s\n", telering_status_name(s), telering_last_error());
            return 1;
        }
        for (size_t i = 0; i < n; i++) {
            if (!(batch[i].flags & TELERING_EVENT_HAS_TIMESTAMP) || add(&batch[i]) != 0) return 1;
        }
        got += n;
        if (telering_reader_stat(r, &info) != TELERING_OK) return 1;
        lost = info.events_lost;
        if (s == TELERING_EMPTY) {
            struct timespec us = {0, 100000};
            nanosleep(&us, NULL);
        }
    }
    for (int i = 0; i < names; i++) printf("%s %llu %llu\n", tallies[i].name, tallies[i].count, tallies[i].sum);
    if (telering_reader_stat(r, &info) != TELERING_OK) return 1;
    printf("total %llu lost %llu\n", got, (unsigned long long)info.events_lost);
    printf("stat capacity %llu fill %llu generation %d trailer %d\n", (unsigned long long)info.capacity,
           (unsigned long long)info.fill, info.generation, info.has_trailer);
    if (telering_reader_destroy(r) != TELERING_OK) return 1;
    return got + info.events_lost == want ? 0 : 1;
}
