/*
 * Exporter lists a C agent gives, each printed as "HOW STATUS LAST_ERROR", where HOW
 * is `options` (`options.exporter` of `telering_create`) or `env`
 * (`NIXL_TELEMETRY_EXPORTER` for `telering_create_from_env`). Each list is tried
 * both ways; a telemetry that is created is destroyed again.
 *
 * usage: exporter_list DIR LIST...
 */
#include <stdio.h>
#include <stdlib.h>

#include "telering.h"

static void show(const char *how, telering_status_t status, telering_t *t) {
  printf("%s %s %s\n", how, telering_status_name(status),
         status < 0 ? telering_last_error() : "-");
  if (t != NULL) {
    telering_destroy(t);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: exporter_list DIR LIST...\n");
    return 2;
  }
  for (int i = 2; i < argc; i++) {
    telering_options_t options;
    telering_options_init(&options);
    options.enabled = 1;
    options.dir = argv[1];
    options.exporter = argv[i];
    telering_t *t = NULL;
    telering_status_t status = telering_create("c-list", &options, &t);
    show("options", status, t);

    setenv("NIXL_TELEMETRY_ENABLE", "y", 1);
    setenv("NIXL_TELEMETRY_DIR", argv[1], 1);
    setenv("NIXL_TELEMETRY_EXPORTER", argv[i], 1);
    t = NULL;
    status = telering_create_from_env("c-list", &t);
    show("env", status, t);
  }
  return 0;
}
