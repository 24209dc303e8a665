/* Every error path a C caller can hit, one line each:
 *   <case> <status name> <message>
 * argv[1] is a directory for ring files, argv[2] a corrupt ring file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "telering.h"

static void report(const char *name, telering_status_t s) {
    printf("%s %s %s\n", name, telering_status_name(s), s < 0 ? telering_last_error() : "");
}

int main(int argc, char **argv) {
    if (argc != 3) return 2;
    char missing[4096];
    snprintf(missing, sizeof missing, "%s/no-such-agent", argv[1]);

    telering_t *t = NULL;
    report("null_agent", telering_create_from_env(NULL, &t));
    report("null_out", telering_create_from_env("agent", NULL));
    report("null_telemetry", telering_record(NULL, TELERING_CATEGORY_CUSTOM, "x", 1));
    report("null_options", telering_create("agent", NULL, &t));

    setenv("NIXL_TELEMETRY_ENABLE", "y", 1);
    setenv("NIXL_TELEMETRY_BUFFER_SIZE", "1000", 1);
    report("bad_buffer_size", telering_create_from_env("agent", &t));
    report("bad_buffer_size_handle_is_null", t == NULL ? TELERING_OK : TELERING_ERR_INTERNAL);
    setenv("NIXL_TELEMETRY_BUFFER_SIZE", "abc", 1);
    report("buffer_size_not_a_number", telering_create_from_env("agent", &t));
    unsetenv("NIXL_TELEMETRY_BUFFER_SIZE");

    telering_options_t o;
    telering_options_init(&o);
    o.buffer_size = 1000;
    report("bad_buffer_size_option", telering_create("agent", &o, &t));
    telering_options_init(&o);
    o.struct_size = 8;
    report("bad_struct_size", telering_create("agent", &o, &t));

    telering_options_init(&o);
    o.capture_telemetry = 1;
    report("create", telering_create("agent", &o, &t));
    report("null_name", telering_record(t, TELERING_CATEGORY_CUSTOM, NULL, 1));
    report("long_name", telering_record(t, TELERING_CATEGORY_CUSTOM, "a_forty_byte_event_name_is_too_long_xxxx", 1));
    report("empty_name", telering_record(t, TELERING_CATEGORY_CUSTOM, "", 1));
    report("bad_utf8_name", telering_record(t, TELERING_CATEGORY_CUSTOM, "bad\xff", 1));
    report("control_name", telering_record(t, TELERING_CATEGORY_CUSTOM, "x\nValue: 9", 1));
    report("control_name_len", telering_record_len(t, TELERING_CATEGORY_CUSTOM, "t\x1b]0;pwned\x07", 11, 1));
    report("bidi_name_len", telering_record_len(t, TELERING_CATEGORY_CUSTOM, "a\xe2\x80\xae" "b", 5, 1));
    report("bad_category", telering_record(t, 9, "x", 1));
    report("bad_nixl_status", telering_update_error_count(t, 3));
    telering_event_handle_t *h = NULL;
    report("long_name_handle", telering_event_handle_create(TELERING_CATEGORY_CUSTOM,
                                                            "a_forty_byte_event_name_is_too_long_xxxx", &h));
    report("null_stats", telering_stats(t, NULL));

    telering_reader_t *r = NULL;
    report("missing_file", telering_reader_open(missing, TELERING_READ_DRAIN, &r));
    report("missing_file_stat", telering_stat(missing, &(telering_ring_info_t){0}));
    report("corrupt_file", telering_reader_open(argv[2], TELERING_READ_DRAIN, &r));
    report("corrupt_file_observer", telering_reader_open(argv[2], TELERING_READ_OBSERVE_OLDEST, &r));
    report("corrupt_file_stat", telering_stat(argv[2], &(telering_ring_info_t){0}));
    report("bad_mode", telering_reader_open(argv[2], 7, &r));

    /* A handle of the wrong type, and destroying twice. */
    telering_backend_t *b = NULL;
    report("backend", telering_backend_create(t, "UCX", &b));
    report("wrong_handle", telering_record((const telering_t *)b, TELERING_CATEGORY_CUSTOM, "x", 1));
    report("wrong_handle_destroy", telering_destroy((telering_t *)b));
    report("backend_destroy", telering_backend_destroy(b));
    report("backend_destroy_again", telering_backend_destroy(b));
    report("destroy_null", telering_destroy(NULL));
    report("destroy", telering_destroy(t));
    report("destroy_again", telering_destroy(t));
    return 0;
}
