/*
 * The C API's details, each printed as "NAME STATUS LAST_ERROR":
 * a backend handle used after its telemetry was destroyed, a reader opened on files
 * that are not rings, a batch read of capacity 0, the function an error names, an
 * empty `dir` option, a too-long name's advice in C terms, and a lane of 4 whose
 * flush runs on schedule only (`flush_on_schedule`): 3 of 10 events written.
 *
 * usage: details DIR
 */
#include <stdio.h>
#include <string.h>

#include "telering.h"

static void show(const char *name, telering_status_t status) {
  printf("%s %s %s\n", name, telering_status_name(status),
         status < 0 ? telering_last_error() : "-");
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: details DIR\n");
    return 2;
  }
  telering_options_t options;
  telering_options_init(&options);
  options.enabled = 1;
  options.capture_telemetry = 1;
  options.dir = argv[1];
  options.exporter = "buffer";
  telering_t *t = NULL;
  show("create", telering_create("c-details", &options, &t));

  telering_backend_t *ucx = NULL;
  show("backend_create", telering_backend_create(t, "UCX", &ucx));
  show("backend_add_live", telering_backend_add_event(ucx, "ucx_retries", 1));
  show("record_long_name",
       telering_record(t, TELERING_CATEGORY_CUSTOM, "a_name_that_is_much_longer_than_31_bytes", 1));
  show("update", telering_update_tx_bytes(t, 64));
  show("flush", telering_flush(t));

  char ring[4096];
  snprintf(ring, sizeof ring, "%s/c-details", argv[1]);
  telering_reader_t *reader = NULL;
  show("reader_open_ring", telering_reader_open(ring, TELERING_READ_DRAIN, &reader));
  telering_event_t events[4];
  size_t count = 99;
  show("read_batch_capacity_0", telering_reader_read_batch(reader, events, 0, &count));
  printf("count_after_capacity_0 %zu\n", count);
  show("reader_next_null_reader", telering_reader_next(NULL, events));
  show("reader_destroy", telering_reader_destroy(reader));

  show("destroy", telering_destroy(t));
  show("backend_add_after_destroy", telering_backend_add_event(ucx, "ucx_retries", 1));
  size_t pending = 0;
  show("backend_get_after_destroy", telering_backend_get_events(ucx, events, 4, &pending));
  show("backend_destroy", telering_backend_destroy(ucx));

  telering_reader_t *not_ring = NULL;
  show("reader_open_passwd", telering_reader_open("/etc/passwd", TELERING_READ_DRAIN, &not_ring));
  show("reader_open_maps",
       telering_reader_open("/proc/self/maps", TELERING_READ_OBSERVE_OLDEST, &not_ring));

  telering_options_init(&options);
  options.enabled = 1;
  options.exporter = "nop";
  options.dir = "";
  show("create_empty_dir", telering_create("c-details-2", &options, &t));
  show("destroy_2", telering_destroy(t));

  telering_options_init(&options);
  options.enabled = 1;
  options.exporter = "nop";
  options.lane_capacity = 4;
  options.run_interval_ms = 3600000;
  options.flush_on_schedule = 1;
  show("create_on_schedule", telering_create("c-details-3", &options, &t));
  int written = 0, dropped = 0;
  for (uint64_t v = 0; v < 10; v++) {
    telering_status_t s = telering_update_tx_bytes(t, v);
    written += s == TELERING_OK;
    dropped += s == TELERING_DROPPED;
  }
  printf("on_schedule_written %d %d\n", written, dropped);
  show("destroy_3", telering_destroy(t));
  return 0;
}
