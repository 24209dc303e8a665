/* A recorder used after its telemetry was destroyed (telering_close): each of its
 * recording calls answers TELERING_CLOSED, never TELERING_OK for an event nothing
 * would export. Prints "before <recorded> <exported>" from the statistics at the
 * close and "after <status name>" per call made afterwards. Exits non-zero on any
 * unexpected status. usage: recorder_closed */
#include <stdio.h>

#include "telering.h"

static int failures = 0;

#define EXPECT(call, want)                                                              \
    do {                                                                                \
        telering_status_t got_ = (call);                                                \
        if (got_ != (want)) {                                                           \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s: %s\n", __FILE__,       \
                    __LINE__, #call, telering_status_name(got_),                        \
                    telering_status_name(want), telering_last_error());                 \
            failures++;                                                                 \
        }                                                                               \
    } while (0)

static void after(telering_status_t status) {
    printf("after %s\n", telering_status_name(status));
}

int main(void) {
    telering_options_t options;
    telering_options_init(&options);
    options.enabled = 1;
    options.exporter = "nop";
    telering_t *t = NULL;
    EXPECT(telering_create("c-closed", &options, &t), TELERING_OK);
    if (t == NULL) return 1;
    telering_recorder_t *r = NULL;
    EXPECT(telering_recorder_create(t, &r), TELERING_OK);
    for (int i = 0; i < 5; i++) EXPECT(telering_recorder_update_tx_bytes(r, 64), TELERING_OK);

    telering_stats_t stats;
    EXPECT(telering_close(t, &stats), TELERING_OK);
    printf("before %llu %llu\n", (unsigned long long)stats.events_recorded,
           (unsigned long long)stats.events_exported);

    after(telering_recorder_update_tx_bytes(r, 1));
    after(telering_recorder_update_rx_bytes(r, 1));
    after(telering_recorder_update_tx_requests_num(r, 1));
    after(telering_recorder_update_rx_requests_num(r, 1));
    after(telering_recorder_update_memory_registered(r, 1));
    after(telering_recorder_update_memory_deregistered(r, 1));
    after(telering_recorder_update_error_count(r, TELERING_NIXL_ERR_BACKEND));
    after(telering_recorder_add_xfer_stats(r, 10, 1, 4096, 2));
    after(telering_recorder_record(r, TELERING_CATEGORY_CUSTOM, "late", 1));
    EXPECT(telering_recorder_destroy(r), TELERING_OK);
    return failures == 0 ? 0 : 1;
}
