/*
 * A C agent whose exporter fails: it records 10 events, waits (up to 30 s) until its
 * statistics count `min_errors` failed attempts, prints them, then closes the
 * telemetry and prints the statistics after its last push. With "callback" as second argument its log records go to a callback
 * (printed as "log LEVEL TARGET: MESSAGE" lines) instead of stderr.
 *
 * usage: failing MIN_ERRORS [callback]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "telering.h"

#define MAX_LINES 64

static pthread_mutex_t lines_lock = PTHREAD_MUTEX_INITIALIZER;
static char *lines[MAX_LINES];
static int line_count;

static void on_log(void *user_data, telering_log_level_t level, const char *target,
                   const char *message) {
  int *calls = user_data;
  pthread_mutex_lock(&lines_lock);
  ++*calls;
  if (line_count < MAX_LINES) {
    size_t size = strlen(target) + strlen(message) + 32;
    char *line = malloc(size);
    if (line != NULL) {
      snprintf(line, size, "log %d %s: %s", (int)level, target, message);
      lines[line_count++] = line;
    }
  }
  pthread_mutex_unlock(&lines_lock);
}

static void check(telering_status_t status, const char *what) {
  if (status < 0) {
    fprintf(stderr, "%s: %s\n", what, telering_last_error());
    exit(1);
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: failing MIN_ERRORS [callback]\n");
    return 2;
  }
  unsigned long min_errors = strtoul(argv[1], NULL, 10);
  static int calls;
  if (argc > 2 && strcmp(argv[2], "callback") == 0) {
    check(telering_set_log_callback(on_log, &calls), "telering_set_log_callback");
  }

  telering_t *t = NULL;
  check(telering_create_from_env("c-failing", &t), "telering_create_from_env");
  for (int i = 0; i < 10; i++) {
    check(telering_update_tx_bytes(t, 64), "telering_update_tx_bytes");
  }
  telering_stats_t stats;
  time_t deadline = time(NULL) + 30;
  for (;;) {
    check(telering_flush(t), "telering_flush");
    check(telering_stats(t, &stats), "telering_stats");
    if (stats.export_errors >= min_errors) {
      break;
    }
    if (time(NULL) > deadline) {
      fprintf(stderr, "only %llu export errors\n", (unsigned long long)stats.export_errors);
      return 1;
    }
    struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  printf("stats recorded %llu exported %llu undelivered %llu errors %llu failing %u\n",
         (unsigned long long)stats.events_recorded, (unsigned long long)stats.events_exported,
         (unsigned long long)stats.events_undelivered,
         (unsigned long long)stats.export_errors, stats.exporter_failing);
  telering_stats_t last;
  check(telering_close(t, &last), "telering_close");
  printf("closed recorded %llu exported %llu undelivered %llu errors %llu failing %u\n",
         (unsigned long long)last.events_recorded, (unsigned long long)last.events_exported,
         (unsigned long long)last.events_undelivered,
         (unsigned long long)last.export_errors, last.exporter_failing);
  check(telering_set_log_callback(NULL, NULL), "telering_set_log_callback");

  pthread_mutex_lock(&lines_lock);
  for (int i = 0; i < line_count; i++) {
    printf("%s\n", lines[i]);
    free(lines[i]);
  }
  pthread_mutex_unlock(&lines_lock);
  return 0;
}
