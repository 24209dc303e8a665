/* Instructions per telering_add_route_xfer_stats call through the C API, for
 * benches/callgrind_c_routes.sh (BENCHMARKS.md, "Routes"): the route number is
 * checked against the routes the telemetry handed out on every call. The first call
 * (which registers the thread's lane) is made before the measured loop; the loop
 * alternates a write and a read route. Exits non-zero if any call was not OK. */
#include <stdint.h>
#include <stdio.h>

#include "telering.h"

#define CALLS 50000

__attribute__((noinline)) uint64_t measure_route_calls(const telering_t *t, uint16_t a, uint16_t b,
                                                       uint64_t n) {
    uint64_t not_ok = 0;
    for (uint64_t i = 0; i < n; i++)
        not_ok += telering_add_route_xfer_stats(t, (i & 1) ? a : b, 10 + (i & 7), 4096, 2, 1) !=
                  TELERING_OK;
    return not_ok;
}

int main(void) {
    telering_options_t o;
    telering_options_init(&o);
    o.enabled = 1;
    o.exporter = "nop";
    o.buffer_size = 1 << 20; /* every record of the loop fits: no flush is needed */
    o.run_interval_ms = 3600000;
    telering_t *t;
    if (telering_create("route-bench", &o, &t) != TELERING_OK) return 1;
    uint16_t a, b;
    telering_route(t, TELERING_ROUTE_WRITE, "UCX", TELERING_MEM_VRAM, TELERING_MEM_VRAM, "p", &a);
    telering_route(t, TELERING_ROUTE_READ, "UCX", TELERING_MEM_VRAM, TELERING_MEM_VRAM, "q", &b);
    uint64_t bad = telering_add_route_xfer_stats(t, a, 1, 1, 1, 1) != TELERING_OK;
    bad += measure_route_calls(t, a, b, CALLS);
    telering_stats_t s;
    telering_close(t, &s);
    printf("calls %d, not OK %llu, dropped %llu\n", CALLS, (unsigned long long)bad,
           (unsigned long long)s.events_dropped);
    return bad != 0 || s.events_dropped != 0;
}
