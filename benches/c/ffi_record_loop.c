/* The C side of benches/benches/ffi_recording.rs: loops that record through
 * libtelering's C API exactly as a C agent would, compiled by the C compiler (cc
 * crate, -O2) and linked into the benchmark. Each returns how many calls did not
 * return TELERING_OK, so the loop's result is used and errors are seen. */
#include <stdint.h>

#include "telering.h"

uint64_t c_record_builtin(const telering_t *t, uint64_t n) {
    uint64_t not_ok = 0;
    for (uint64_t i = 0; i < n; i++) not_ok += telering_update_tx_bytes(t, i) != TELERING_OK;
    return not_ok;
}

uint64_t c_record_named(const telering_t *t, uint64_t n) {
    uint64_t not_ok = 0;
    for (uint64_t i = 0; i < n; i++)
        not_ok += telering_record(t, TELERING_CATEGORY_CUSTOM, "queue_depth", i) != TELERING_OK;
    return not_ok;
}

uint64_t c_record_handle(const telering_t *t, const telering_event_handle_t *event, uint64_t n) {
    uint64_t not_ok = 0;
    for (uint64_t i = 0; i < n; i++) not_ok += telering_record_event(t, event, i) != TELERING_OK;
    return not_ok;
}
